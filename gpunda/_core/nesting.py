"""Nested lists of arrays or Symbols as a flat list plus a format, and back: the encoding
MXNet's control-flow operators use for their inputs, states and outputs. A format is 0 for a
single leaf, n > 1 for a Symbol with n outputs (it stands for n flat entries) and a list of
formats for a list. (Gluon's HybridBlock keeps its own copy with None leaves, because it runs
on every call of a hybridized block.)"""
from __future__ import annotations


def flatten(args, leaf_format, what, kind):
    """``(flat list, format)`` of nested ``args``; ``leaf_format(x)`` is a leaf's format, or
    None when ``x`` is not a leaf. Anything else than a leaf or a list/tuple is an
    AssertionError naming ``what`` and the ``kind`` of leaf it takes, as in MXNet."""
    fmt = leaf_format(args)
    if fmt is not None:
        return [args], fmt
    if not isinstance(args, (list, tuple)):
        raise AssertionError(f"{what} must be (nested) list of {kind}, but got {args!r} of "
                             f"type {type(args).__name__}")
    flat, fmts = [], []
    for a in args:
        f, sub = flatten(a, leaf_format, what, kind)
        flat.extend(f)
        fmts.append(sub)
    return flat, fmts


def regroup(flat, fmt):
    """``(nested, rest)``: the first entries of ``flat`` nested as ``fmt`` says, and the
    entries left over."""
    if isinstance(fmt, int):
        return (flat[0], flat[1:]) if fmt == 0 else (flat[:fmt], flat[fmt:])
    out = []
    for f in fmt:
        r, flat = regroup(flat, f)
        out.append(r)
    return out, flat
