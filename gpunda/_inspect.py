"""``python -m gpunda inspect FILE``: show what an MXNet checkpoint file holds.

For an NDArray file (``.params``, ``.nd``): one line per array with its name,
dtype, shape, storage type and a sha256 of the raw stored bytes (the same
digest MXNet fixture manifests use), read without building NDArrays.
For a symbol JSON: the operators with their inputs and attributes, the
arguments and auxiliary states, and with ``--shape data=1,3,32,32`` the
inferred shape of every output.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys

from gpunda.base import GpundaError

_ND_MAGIC = struct.pack("<Q", 0x112)


def _parse_shape(text):
    name, sep, dims = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        shape = tuple(int(d) for d in dims.replace("(", "").replace(")", "").split(",") if d.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape {text!r}: expected NAME=D1,D2,... "
                                         f"such as data=1,3,32,32") from None
    return name.strip(), shape


def _digest(rec, full):
    h = hashlib.sha256()
    for part in (rec.data,) + tuple(rec.aux):
        h.update(memoryview(part.reshape(-1).view("u1")))
    d = h.hexdigest()
    return d if full else d[:16]


def _fmt_shape(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def inspect_ndarray_file(path, full_hash=False, out=None):
    """Print the arrays of an NDArray file."""
    out = out or sys.stdout
    from gpunda.ndarray.io import load_raw
    records, names = load_raw(path)
    versions = sorted({f"V{r.version}" for r in records})
    kind = "dict" if names is not None else "list"
    print(f"{path}: MXNet NDArray file, {len(records)} arrays saved from a {kind} "
          f"(records {'/'.join(versions) or '-'}), {os.path.getsize(path)} bytes", file=out)
    rows = []
    total_vals = total_bytes = 0
    for i, r in enumerate(records):
        label = names[i] if names is not None else f"[{i}]"
        if r.data is None:
            rows.append((label, "-", "(none)", r.stype, "-", "-"))
            continue
        nbytes = r.data.nbytes + sum(a.nbytes for a in r.aux)
        total_vals += r.data.size
        total_bytes += nbytes
        stored = "" if r.stype == "default" else f" stored {_fmt_shape(r.data.shape)}"
        rows.append((label, str(r.dtype), _fmt_shape(r.shape) + stored, r.stype, str(nbytes),
                     _digest(r, full_hash)))
    head = ("name", "dtype", "shape", "stype", "bytes", "sha256 (raw bytes)")
    widths = [max(len(row[k]) for row in rows + [head]) for k in range(5)]
    for row in [head] + rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(row[:5], widths)) + "  " + row[5], file=out)
    print(f"total: {len(records)} arrays, {total_vals} values, {total_bytes} bytes of data", file=out)
    return 0


def _load_symbol(text):
    try:
        from gpunda import symbol as sym
        return sym.load_json(text), None
    except ImportError as e:
        return None, f"gpunda.symbol is not available ({e})"
    except GpundaError as e:
        return None, str(e)


def inspect_symbol_file(path, shapes=(), out=None):
    """Print the operators and arguments of a symbol JSON, with shapes when given."""
    out = out or sys.stdout
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        g = json.loads(text)
    except ValueError as e:
        raise GpundaError(f"inspect: {path!r} is not valid JSON ({e})") from None
    missing = [k for k in ("nodes", "heads") if not isinstance(g, dict) or k not in g]
    if missing:
        raise GpundaError(f"inspect: {path!r} is not an MXNet symbol JSON: it has no "
                          f"{' and no '.join(repr(k) for k in missing)} entry")
    nodes, heads = g["nodes"], g["heads"]
    if not isinstance(nodes, list) or not isinstance(heads, list):
        raise GpundaError(f"inspect: {path!r} is not an MXNet symbol JSON: 'nodes' and 'heads' "
                          f"must be lists")
    try:
        v = int(g.get("attrs", {}).get("mxnet_version", [None, 0])[1])
        version = f"{v // 10000}.{v // 100 % 100}.{v % 100}" if v else None
    except (TypeError, ValueError, IndexError, AttributeError):
        version = None
    ops = [n for n in nodes if n.get("op", "null") != "null"]
    print(f"{path}: MXNet symbol JSON, {len(nodes)} nodes ({len(ops)} operators), "
          f"{len(heads)} outputs" + (f", written by MXNet {version}" if version else ""), file=out)

    def entry_name(e):
        src = nodes[e[0]]
        return src["name"] if src.get("op", "null") == "null" else f"{src['name']}[{e[1]}]"

    print("operators:", file=out)
    for k, n in enumerate(nodes):
        if n.get("op", "null") == "null":
            continue
        attrs = n.get("attrs") or n.get("attr") or n.get("param") or {}
        astr = " ".join(f"{a}={v}" for a, v in attrs.items())
        ins = ", ".join(entry_name(e) for e in n.get("inputs", []))
        print(f"  {k:4d} {n['op']:<18s} {n['name']:<24s} ({ins})" + (f"  {astr}" if astr else ""),
              file=out)

    symbol, why = _load_symbol(text)
    if symbol is None:
        variables = [n["name"] for n in nodes if n.get("op", "null") == "null"]
        print(f"variables: {', '.join(variables)}", file=out)
        print(f"note: cannot build the graph with gpunda ({why}); arguments are not split into "
              f"args/aux and shapes are not inferred", file=out)
        return 0 if not shapes else 1
    args, auxs = symbol.list_arguments(), symbol.list_auxiliary_states()
    print(f"arguments: {', '.join(args)}", file=out)
    print(f"auxiliary states: {', '.join(auxs) or '(none)'}", file=out)
    print(f"outputs: {', '.join(symbol.list_outputs())}", file=out)
    if not shapes:
        return 0
    return _print_shapes(symbol, dict(shapes), out)


def _print_shapes(symbol, given, out):
    infer = getattr(symbol, "infer_shape_partial", None) or getattr(symbol, "infer_shape", None)
    if infer is None:
        print("note: shapes not inferred: this gpunda Symbol has no infer_shape", file=out)
        return 1
    try:
        arg_s, out_s, aux_s = infer(**given)
        internals = symbol.get_internals()
        int_s = internals.infer_shape_partial(**given)[1]
        int_names = internals.list_outputs()
    except GpundaError as e:
        given_s = ", ".join(f"{k}={_fmt_shape(v)}" for k, v in given.items())
        raise GpundaError(f"inspect: the shapes {given_s} do not fit the graph: {e}") from None
    except (AttributeError, NotImplementedError) as e:
        print(f"note: shapes not inferred: shape inference is not available ({e})", file=out)
        return 1
    show = lambda s: "?" if not s else _fmt_shape(s)  # noqa: E731
    print(f"shapes given {', '.join(f'{k}={_fmt_shape(v)}' for k, v in given.items())}:", file=out)
    for title, names, vals in (("arguments", symbol.list_arguments(), arg_s),
                               ("auxiliary states", symbol.list_auxiliary_states(), aux_s),
                               ("operator outputs", *_op_outputs(symbol, int_names, int_s)),
                               ("outputs", symbol.list_outputs(), out_s)):
        if not names:
            continue
        print(f"{title}:", file=out)
        width = max(len(n) for n in names)
        for n, s in zip(names, vals or [None] * len(names)):
            print(f"  {n:<{width}s}  {show(s)}", file=out)
    return 0


def _op_outputs(symbol, names, shapes):
    inputs = set(symbol.list_inputs())
    keep = [(n, s) for n, s in zip(names, shapes or [None] * len(names)) if n not in inputs]
    return [n for n, _ in keep], [s for _, s in keep]


def main(argv=None):
    """Entry point of ``python -m gpunda inspect``; returns the exit status."""
    ap = argparse.ArgumentParser(prog="python -m gpunda inspect",
                                 description="Show the arrays of an MXNet NDArray file "
                                             "(.params/.nd) or the graph of a symbol JSON.")
    ap.add_argument("file", help="an MXNet NDArray file (.params, .nd) or a symbol JSON "
                                 "(-symbol.json)")
    ap.add_argument("--shape", action="append", type=_parse_shape, default=[],
                    metavar="NAME=D1,D2,...",
                    help="input shape for a symbol JSON, e.g. data=1,3,32,32, to infer and "
                         "show every node's shape; repeatable (default: none, no inference)")
    ap.add_argument("--full-hash", action="store_true",
                    help="print full sha256 digests (default: the first 16 hex digits)")
    a = ap.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        with open(a.file, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise GpundaError(f"inspect: cannot read {a.file!r}: {e.strerror or e}") from None
    if head == _ND_MAGIC:
        if a.shape:
            print("note: --shape applies to symbol JSON files only; ignored", file=sys.stderr)
        return inspect_ndarray_file(a.file, a.full_hash)
    if head.lstrip()[:1] == b"{":
        return inspect_symbol_file(a.file, a.shape)
    raise GpundaError(f"inspect: {a.file!r} is neither an MXNet NDArray file (magic 0x112) nor "
                      f"a symbol JSON")
