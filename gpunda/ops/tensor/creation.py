"""Creation ops with no inputs (``_zeros``, ``_ones``, ``_full``, ``_arange``, ``_eye``).

``nd.zeros`` and friends are plain functions for speed; these ops exist so that
symbols (``sym.zeros``) and graphs loaded from JSON can create arrays too.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register

_CTX = [Param("ctx", "any", None, "device; the current one when None"),
        Param("dtype", "dtype", np.dtype("float32"))]


def _shape_ok(name, shape):
    if any(d < 0 for d in shape):
        raise GpundaError(f"Operator {name}: shape={shape} has a negative dimension")
    return shape


def _mk(name, fill, extra=(), doc=""):
    register(OpDef(name, fill, inputs=(), wants_ctx=True, nondiff=True, hidden=True,
                   params=[Param("shape", "shape", ())] + list(extra) + _CTX, doc=doc,
                   family="creation"))


_mk("_zeros", lambda xp, p, ctx: xp.zeros(_shape_ok("_zeros", p.shape), p.dtype), doc="Zeros.")
_mk("_ones", lambda xp, p, ctx: xp.ones(_shape_ok("_ones", p.shape), p.dtype), doc="Ones.")
_mk("_full", lambda xp, p, ctx: xp.full(_shape_ok("_full", p.shape), p.value, p.dtype),
    extra=[Param("value", "float", 0.0)], doc="An array filled with `value`.")


def range_bounds(where, start, stop, step, infer_range, empty_ok=False):
    """(start, stop) of MXNet's arange: no ``stop`` means [0, start). A zero step is
    refused, and so is ``infer_range`` without a stop outside a graph (MXNet takes stop
    from the output size the graph around infers: ``open_range``/``closed_range``)."""
    if step == 0:
        raise GpundaError(f"{where}: step=0 is not allowed")
    if stop is None and infer_range:
        raise GpundaError(f"{where}: infer_range=True without stop takes its length from "
                          f"the graph around it (a Symbol or hybridized block); called "
                          f"alone it has none: give stop (start={start}, step={step})")
    start, stop = (0.0, start) if stop is None else (start, stop)
    # MXNet's RangeShape refuses an empty range (mx.np.arange's op allows it: empty_ok)
    if not empty_ok and ((step > 0 and not start < stop) or (step < 0 and not start > stop)):
        raise GpundaError(f"{where}: Invalid range (start, stop, step) = ({start:g}, "
                          f"{stop:g}, {step:g}): it holds no value")
    return start, stop


def open_range(node):
    """Whether graph node ``node`` is an ``_arange(infer_range=True)`` without stop, whose
    length shape inference takes from the ops around it, as MXNet's."""
    return (node.op is not None and node.op.name == "_arange" and not node.inputs
            and node.p.infer_range and node.p.stop is None)


def closed_range(p, size):
    """``_arange`` params ``p`` with the stop that gives ``size`` outputs: half a step past
    the last value, so the kernel's ceil() counts exactly size // repeat whatever the
    rounding."""
    return p.replace(stop=p.start + (size // p.repeat - 0.5) * p.step)


def _arange(xp, p, ctx):
    start, stop = range_bounds("Operator _arange", p.start, p.stop, p.step, p.infer_range)
    return range_values(xp, start, stop, p.step, p.repeat, p.dtype)


def np_arange(xp, p, ctx):
    """``_npi_arange``: as ``_arange``, an empty range giving an empty array (NumPy's)."""
    start, stop = range_bounds("Operator _npi_arange", p.start, p.stop, p.step,
                               p.infer_range, empty_ok=True)
    return range_values(xp, start, stop, p.step, p.repeat, p.dtype)


def range_values(xp, start, stop, step, repeat, dtype):
    """MXNet's range kernel: ceil((stop - start) / step) values, each ``repeat`` times.

    ``start`` and ``step`` are taken in the dtype first (an integer dtype truncates them
    toward zero, an unsigned one wraps) and the values computed in it, as MXNet's kernel:
    int32 arange(1.3, 456.6, 1.3) is 1, 2, ..., 351, not the truncated 1, 2, 3, 5, ..."""
    dt = np.dtype(dtype)
    n = max(int(np.ceil((stop - start) / step)), 0)
    cast = int if dt.kind in "iu" else float
    first, delta = (np.array(cast(v)).astype(dt)[()] for v in (start, step))  # scalars
    r = first + xp.arange(n, dtype=dt) * delta      # in dtype arithmetic, as the kernel
    if repeat != 1:
        r = xp.repeat(r, repeat)
    return r.astype(dt)


register(OpDef("_arange", _arange, inputs=(), wants_ctx=True, nondiff=True, hidden=True,
               params=[Param("start", "float", 0.0), Param("stop", "float", None),
                       Param("step", "float", 1.0), Param("repeat", "int", 1),
                       Param("infer_range", "bool", False)] + _CTX,
               doc="Evenly spaced values in [start, stop).", family="creation"))
register(OpDef("_eye", lambda xp, p, ctx: xp.eye(p.N, p.M or p.N, p.k, dtype=p.dtype), inputs=(),
               wants_ctx=True, nondiff=True, hidden=True,
               params=[Param("N", "int"), Param("M", "int", 0), Param("k", "int", 0)] + _CTX,
               doc="Identity-like matrix with ones on diagonal k.", family="creation"))


def _linspace(xp, p, ctx):
    if p.num < 0:
        raise GpundaError(f"Operator _linspace: num={p.num} must be non-negative")
    r = xp.linspace(p.start, p.stop, p.num, endpoint=p.endpoint, dtype=np.float64)
    return r.astype(p.dtype)


register(OpDef("_linspace", _linspace, inputs=(), wants_ctx=True, nondiff=True, hidden=True,
               params=[Param("start", "float"), Param("stop", "float"),
                       Param("num", "int"), Param("endpoint", "bool", True)] + _CTX,
               doc="`num` evenly spaced values from start to stop (stop included unless "
                   "endpoint=False); the op behind nd.linspace and sym.linspace.",
               family="creation"))

# MXNet's type codes, as _zeros_without_dtype's integer dtype gives them
_TYPE_CODES = {0: "float32", 1: "float64", 2: "float16", 3: "uint8", 4: "int32", 5: "int8",
               6: "int64", 7: "bool", 8: "int16", 9: "uint16", 10: "uint32", 11: "uint64"}


def _code_dtype(p):
    v = p.dtype
    if v == -1:      # MXNet leaves it to type inference around the node; standalone: float32
        return np.dtype("float32")
    if v not in _TYPE_CODES:
        raise GpundaError(f"Operator _zeros_without_dtype: dtype={v} is not a type code; "
                          f"valid: -1 or {sorted(_TYPE_CODES)}")
    return np.dtype(_TYPE_CODES[v])


register(OpDef("_zeros_without_dtype",
               lambda xp, p, ctx: xp.zeros(_shape_ok("_zeros_without_dtype", p.shape),
                                           _code_dtype(p)),
               inputs=(), wants_ctx=True, nondiff=True, hidden=True,
               params=[Param("shape", "shape", ()),
                       Param("ctx", "any", None, "device; the current one when None"),
                       Param("dtype", "int", -1, "an MXNet type code; -1 for float32")],
               doc="Zeros of `shape` with the dtype given as MXNet's integer type code "
                   "(the zeros MXNet's gradient passes insert).", family="creation"))
