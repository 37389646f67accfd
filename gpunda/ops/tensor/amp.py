"""Mixed-precision helper ops: amp_cast, amp_multicast, all_finite, multi_all_finite,
and reset_arrays (zeroing gradient buffers in place)."""
from __future__ import annotations

import numpy as np

from gpunda._core import bf16 as _bf16
from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops._util import not_real

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _is_float(t):
    return t.kind == "f" or _bf16.is_bf16(t)


def _amp_cast(xp, p, x):
    # only floating inputs are cast, as MXNet's AMPCast: integer data passes unchanged; to
    # bfloat16 it rounds to nearest even, as MXNet's (ml_dtypes' astype)
    if not _is_float(x.dtype):
        return x.copy()
    return x.astype(p.dtype)


def _is_amp_float(t):
    return t is not None and (t in (np.float16, np.float32) or _bf16.is_bf16(t))


def _amp_cast_type(p, in_t):
    # as MXNet's AMPCastType: float16/float32/bfloat16 data becomes `dtype`, other types pass
    t = in_t[0]
    return [t], [p.dtype if _is_amp_float(t) else t]


def _amp_multicast_type(p, in_t):
    # as MXNet's AMPMultiCastType: the low-precision floats widen to float32 when one input
    # is float32 (narrow to the 16-bit type with cast_narrow); unknown inputs stay unknown
    widest = np.dtype(np.float32) if p.cast_narrow else in_t[0]
    for t in in_t:
        if not p.cast_narrow and t == np.float32:
            widest = np.dtype(np.float32)
        elif p.cast_narrow and t is not None and (t == np.float16 or _bf16.is_bf16(t)):
            widest = t
    return list(in_t), [widest if _is_amp_float(t) else t for t in in_t]


register(OpDef(
    "amp_cast", _amp_cast, params=[Param("dtype", "dtype_bf16")], infer_type=_amp_cast_type,
    gradient=lambda F, p, i, o, g: [F.Cast(g[0], dtype=i[0].dtype)], save=("inputs",),
    family="amp", doc="Cast floating data to `dtype` (integer data is left unchanged)."))


def _multicast_target(p, xs):
    floats = [x.dtype for x in xs if _is_float(x.dtype)]
    if not floats:
        return None
    pick = min if p.cast_narrow else max
    return pick(floats, key=lambda d: d.itemsize)


def _amp_multicast(xp, p, *xs):
    if len(xs) != p.num_outputs:
        raise GpundaError(f"Operator amp_multicast: num_outputs={p.num_outputs} but got "
                          f"{len(xs)} inputs")
    t = _multicast_target(p, xs)
    return tuple(x.astype(t) if t is not None and _is_float(x.dtype) else x.copy() for x in xs)


register(OpDef(
    "amp_multicast", _amp_multicast,
    inputs=lambda p: tuple(f"data_{i}" for i in range(p.num_outputs)),
    key_var_num_args="num_outputs",
    params=[Param("num_outputs", "int"), Param("cast_narrow", "bool", False)],
    num_outputs=lambda p: p.num_outputs, infer_type=_amp_multicast_type,
    gradient=lambda F, p, i, o, g: [None if gk is None else F.Cast(gk, dtype=x.dtype)
                                    for x, gk in zip(i, g)],
    save=("inputs",), family="amp",
    doc="Cast all floating inputs to the widest floating type among them (the narrowest "
        "with cast_narrow)."))


def _all_finite(xp, p, x):
    if x.dtype.kind != "f" and not _bf16.is_bf16(x.dtype):   # NOTE [Dtypes a kernel ...]
        raise not_real("all_finite", "data", x.dtype)
    return _finite(xp, [x])


def _finite(xp, xs):
    ok = True
    for x in xs:
        ok = ok and bool(xp.isfinite(x).all()) if _is_float(x.dtype) else ok
    return xp.asarray([1.0 if ok else 0.0], dtype=np.float32)


register(OpDef(
    "all_finite", _all_finite,
    params=[Param("init_output", "bool", True, "accepted; the output is always initialised")],
    nondiff=True, family="amp",
    infer_shape=lambda p, s: (list(s), [(1,)]),
    doc="float32 array [1.] when every element is finite, else [0.]."))
register(OpDef(
    "multi_all_finite", lambda xp, p, *xs: _finite(xp, xs),
    inputs=lambda p: tuple(f"array_{i}" for i in range(p.num_arrays)),
    key_var_num_args="num_arrays",
    params=[Param("num_arrays", "int", 1),
            Param("init_output", "bool", True, "accepted; the output is always initialised")],
    nondiff=True, family="amp",
    infer_shape=lambda p, s: (list(s), [(1,)]),
    doc="float32 array [1.] when every element of every input is finite, else [0.]."))
