"""``mx.npx`` ops whose semantics no ``nd`` op has: ``_npx_reshape`` (MXNet's NumPy-mode
special shape codes). ``_npx_nonzero`` is an alias of ``_npi_nonzero`` (ops/numpy/sort.py),
as in MXNet."""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError, GpundaValueError
from gpunda.ops.registry import OpDef, Param, register


def npx_reshape_shape(src, codes, reverse=False):
    """The output shape of ``npx.reshape(x, codes)`` for input shape ``src``.

    Codes: -1 infers one size; -2 copies this input axis; -3 skips this input axis, which
    must have size 1; -4 copies all remaining input axes; -5 multiplies two consecutive
    input axes; -6 splits one input axis into the next two codes (one may be -1).
    ``reverse`` reads both shapes right to left."""
    src, codes = list(src), list(codes)
    if reverse:
        src, codes = src[::-1], codes[::-1]
    out, i, j, infer = [], 0, 0, None

    def need(n):
        if i + n > len(src):
            raise GpundaError(f"Operator _npx_reshape: newshape={tuple(codes)} asks for more "
                              f"axes than the input shape {tuple(src)} has")
    while j < len(codes):
        c = codes[j]
        if c >= 0:
            out.append(c)
            i += 1
        elif c == -1:
            if infer is not None:
                raise GpundaError(f"Operator _npx_reshape: newshape={tuple(codes)} may "
                                  f"contain -1 only once")
            infer = len(out)
            out.append(-1)
            i += 1
        elif c == -2:
            need(1)
            out.append(src[i])
            i += 1
        elif c == -3:
            need(1)
            if src[i] != 1:
                raise GpundaError(f"Operator _npx_reshape: -3 skips input axis {i}, which "
                                  f"must have size 1, but has size {src[i]}")
            i += 1
        elif c == -4:
            out.extend(src[i:])
            i = len(src)
        elif c == -5:
            need(2)
            out.append(src[i] * src[i + 1])
            i += 2
        elif c == -6:
            need(1)
            if j + 2 >= len(codes):
                raise GpundaError("Operator _npx_reshape: -6 must be followed by two sizes")
            a, b = codes[j + 1], codes[j + 2]
            d = src[i]
            if a == -1:
                a = d // b if b else 0
            elif b == -1:
                b = d // a if a else 0
            if a * b != d:
                raise GpundaError(f"Operator _npx_reshape: -6 splits axis {i} of size {d} "
                                  f"into {a} x {b}, which does not multiply to {d}")
            out.extend([a, b])
            i += 1
            j += 2
        else:
            raise GpundaError(f"Operator _npx_reshape: code {c} in newshape={tuple(codes)} "
                              f"is not one of -1..-6")
        j += 1
    total = int(np.prod(src)) if src else 1
    if infer is not None:
        known = int(np.prod([d for k, d in enumerate(out) if k != infer])) if len(out) > 1 \
            else 1
        if known == 0 or total % known:
            raise GpundaError(f"Operator _npx_reshape: cannot infer -1 in newshape="
                              f"{tuple(codes)} for input shape {tuple(src)}")
        out[infer] = total // known
    if int(np.prod(out)) != total:
        raise GpundaError(f"Operator _npx_reshape: newshape={tuple(codes)} gives shape "
                          f"{tuple(out[::-1] if reverse else out)} of another size than the "
                          f"input shape {tuple(src[::-1] if reverse else src)}")
    return tuple(out[::-1] if reverse else out)


def _reshape(xp, p, x):
    # a copy, as MXNet's op writes its own output (writes to it never reach ``x``)
    return x.reshape(npx_reshape_shape(x.shape, p.newshape, p.reverse)).copy()


register(OpDef("_npx_reshape", _reshape, inputs=("a",),
               params=[Param("newshape", "shape"), Param("reverse", "bool", False),
                       Param("order", "str", "C")],
               gradient=lambda F, p, i, o, g: [F._np_reshape(g[0], newshape=i[0].shape)],
               save=("inputs",), family="np_extension", hidden=True,
               doc="Reshape with MXNet's NumPy-mode codes -1..-6 (npx.reshape)."))


def _constraint_check(xp, p, x):
    if x.dtype.kind != "b":
        raise GpundaError(f"Operator _npx_constraint_check: input must be a boolean array, "
                          f"got {x.dtype.name}")
    ok = x.all()
    if not bool(ok):
        raise GpundaValueError(p.msg)
    return xp.asarray(ok)


register(OpDef("_npx_constraint_check", _constraint_check, inputs=("input",),
               params=[Param("msg", "str", "Constraint violated.",
                             "the ValueError's message when an element is false")],
               infer_shape=lambda p, s: (list(s), [()]),
               infer_type=lambda p, t: ([np.dtype(np.bool_)], [np.dtype(np.bool_)]),
               nondiff=True, save=(), family="np_extension", hidden=True,
               capture="the check reads the result on the host to raise",
               doc="A 0-d True when every element of ``input`` is true; else ValueError(msg) "
                   "(npx.constraint_check)."))
