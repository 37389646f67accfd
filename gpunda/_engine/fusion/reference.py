"""The NumPy evaluator of a fused kernel: the same Program, element for element.

Used by the CPU tests (fused against unfused values) and, registered under the kernel's
name, as the test stand-in GPU's emulation of the generated kernel (backends/_standin.py
``_RawModule.emulations``), so ``pytest --standin-gpu`` runs the fused path end to end.
Values are computed in the compute type (float32 for float16 and float32 data, float64
for float64) and inputs are read through the kernel's element strides.
"""
from __future__ import annotations

import numpy as np

__all__ = ["evaluate", "make_emulation"]

_NP_CT = {"float": np.float32, "double": np.float64}


def _erf(a):
    from scipy.special import erf
    return erf(a).astype(a.dtype, copy=False)


def _sigmoid(a):
    e = np.exp(-np.abs(a))
    one = a.dtype.type(1)
    return np.where(a >= 0, one / (one + e), e / (one + e))


def _sign(a):
    return np.where(a > 0, a.dtype.type(1), np.where(a < 0, a.dtype.type(-1), a))


_FN = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt,
       "rsqrt": lambda a: a.dtype.type(1) / np.sqrt(a), "tanh": np.tanh, "erf": _erf,
       "abs": np.abs, "floor": np.floor, "sin": np.sin, "cos": np.cos, "pow": np.power,
       "max": np.maximum, "min": np.minimum,
       "sign": _sign, "sigmoid": _sigmoid, "where": lambda c, a, b: np.where(c != 0, a, b)}
_CMP = {">": np.greater, ">=": np.greater_equal, "<": np.less, "<=": np.less_equal,
        "==": np.equal, "!=": np.not_equal}
_ROW = {"rsum": np.sum, "rmax": np.max, "rmean": np.mean}
_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


def _last_uses(prog):
    """For each instruction, the values whose last reader it is (outputs are kept)."""
    last = {}
    for i, (kind, args, _) in enumerate(prog.instrs):
        if kind in ("conv", "round16") or kind in _ROW:
            last[args] = i
        elif kind in ("cmp", "call"):
            for v in args[1:]:
                last[v] = i
        elif kind not in ("load", "const"):
            for v in args:
                last[v] = i
    for v in prog.outputs:
        last.pop(v, None)
    dies = [[] for _ in prog.instrs]
    for v, i in last.items():
        dies[i].append(v)
    return dies


def evaluate(prog, arrays, shape, in_strides, out_dtypes):
    """The outputs of ``prog`` (arrays of ``shape``) for NumPy ``arrays`` read through
    element strides ``in_strides``, as the generated kernel computes them. Like the
    kernel, it keeps few full-size values alive: inputs are read as strided views, a value
    is dropped after its last reader, and an element-wise result is written into an
    operand that dies with it (the stand-in GPU's memory then resembles the kernel's)."""
    shape = tuple(int(d) for d in shape)
    vals = [None] * len(prog.instrs)
    owned = set()           # values that are arrays of their own (not views of inputs)
    dies = _last_uses(prog)

    def reuse(i, *ops):     # an operand buffer that dies here and can take the result
        for v in ops:
            a = vals[v]
            if v in owned and v in dies[i] and a.shape == shape and a.dtype == _NP_CT[ct]:
                return a
        return None
    with np.errstate(all="ignore"):
        for i, (kind, args, ct) in enumerate(prog.instrs):
            t = _NP_CT[ct]
            own = True
            if kind == "load":
                a = arrays[args]
                st = tuple(int(s) * a.itemsize for s in in_strides[args])
                v = np.lib.stride_tricks.as_strided(a, shape, st, writeable=False)
                own = v.dtype != t
                v = v.astype(t, copy=False)
            elif kind == "const":
                v = np.asarray(args, t)
                own = False
            elif kind == "neg":
                v = np.negative(vals[args[0]], out=reuse(i, args[0]))
            elif kind in _OPS:
                v = _OPS[kind](vals[args[0]], vals[args[1]], out=reuse(i, *args))
            elif kind == "cmp":
                v = _CMP[args[0]](vals[args[1]], vals[args[2]]).astype(t)
            elif kind == "call":
                v = _FN[args[0]](*(vals[a] for a in args[1:]))
            elif kind == "conv":
                v = vals[args].astype(t)
            elif kind == "round16":
                v = vals[args].astype(np.float16).astype(t)
            elif kind in _ROW:         # along the last axis, broadcast back over the row
                v = _ROW[kind](np.broadcast_to(vals[args], shape), axis=-1, keepdims=True)
            else:
                raise AssertionError(kind)
            vals[i] = np.asarray(v, t)
            if own:
                owned.add(i)
            for d in dies[i]:
                if d != i:
                    vals[d] = None
        return [np.broadcast_to(vals[v], shape).astype(np.dtype(d), copy=False)
                for v, d in zip(prog.outputs, out_dtypes)]


def make_emulation(prog, shape, in_strides, out_dtypes, columns=None):
    """An emulation of the kernel for the stand-in's ``RawModule``: ``emu(grid, block,
    args)`` with args = inputs, outputs, n (NumPy arrays, written in place); with
    ``columns`` (C, flags: NOTE [Column sums]) a flagged output is its value summed over
    rows of C elements, and the workspaces and counter after the outputs go unread."""
    nin = len(prog.in_ctypes)
    nout = len(out_dtypes)
    cols, flags = columns if columns is not None else (None, [False] * nout)
    from gpunda._engine.fusion.codegen import contiguous_strides
    contig = contiguous_strides(shape)
    # a kernel whose inputs are all read at the flat index has no shape in its source,
    # so one compiled kernel (one name) serves every shape: then so does its emulation
    loaded = {args for kind, args, _ in prog.instrs if kind == "load"}
    flat = all(tuple(in_strides[k]) == contig for k in loaded)

    def emu(grid, block, args):
        ins, outs = args[:nin], args[nin:nin + nout]
        shp, strides = shape, in_strides
        n = int(args[-1])
        if flat:        # a row program keeps its row length (baked into its source)
            shp = (n // int(shape[-1]), int(shape[-1])) if prog.is_row and shape else (n,)
            strides = [contiguous_strides(shp)] * len(in_strides)
        elif shape:
            # the source bakes every axis but the first (the index decomposition leaves
            # the first coordinate as what remains), so kernels of shapes that differ in
            # their first axis share one name: the launch's n gives it
            inner = int(np.prod(shape[1:], dtype=np.int64))
            shp = (n // max(inner, 1),) + tuple(shape[1:])
        for o, r, f in zip(outs, evaluate(prog, ins, shp, strides, out_dtypes), flags):
            if f:       # rows in order, as the kernel's blocks add theirs
                o[...] = r.reshape(-1, cols).sum(axis=0)
            else:
                o.reshape(r.shape)[...] = r
    emu.out_index = tuple(range(nin, nin + nout))
    return emu
