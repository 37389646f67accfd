"""``mx.np`` reductions: sum, prod, mean, max/min, std/var, argmax/argmin, all/any,
cumsum, with NumPy's axis (None, int or tuple), keepdims, dtype and ddof.

Output dtypes are MXNet's (NOTE [np dtype rules] in np_elemwise.py): sum, prod and
cumsum keep an int dtype (int8 stays int8, NumPy would give int64) and make bool
float32; mean and std/var of ints are float32 / the int dtype as MXNet gives them.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops._util import c_cast_float, wrapped_int

_F32 = np.dtype("float32")
_BOOL = np.dtype("bool")


def norm_np_axes(axis, ndim, where):
    """A sorted tuple of axes (NumPy's ``axis``: None = all); AxisError-like errors."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    out = []
    for a in axis:
        if not -ndim <= a < max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
            raise GpundaError(f"Operator {where}: axis {a} is out of bounds for array of "
                              f"dimension {ndim}")
        a = a % ndim if ndim else 0
        if a in out:
            raise GpundaError(f"Operator {where}: duplicate value in axis {axis}")
        out.append(a)
    return tuple(sorted(out)) if ndim else ()


def kept_shape(shape, axes):
    """``shape`` with the reduced ``axes`` set to 1 (keepdims=True)."""
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def expand_back(F, g, shape, axes, dtype=None):
    """Gradient ``g`` of a reduction over ``axes`` broadcast back to input ``shape`` (cast
    to ``dtype`` first, so the scaling that follows rounds as the input's dtype does)."""
    if dtype is not None and g.dtype != dtype:
        g = F.Cast(g, dtype=dtype)
    ks = kept_shape(shape, axes)
    if tuple(g.shape) != ks:
        g = F._np_reshape(g, newshape=ks)
    if ks == tuple(shape):
        return g
    return F._broadcast_back(g, like_shape=tuple(shape))


_AX = Param("axis", "axis", None)
_KEEP = Param("keepdims", "bool", False)
# MXNet's NumpyReduceAxesParam and NumpyMomentsParam/CumsumParam dtype enums (no unsigned)
_DT = Param("dtype", "dtype", None, choices=("float16", "float32", "float64", "int8", "int32",
                                             "int64", "bool"))
_DT_MOMENTS = Param("dtype", "dtype", None, choices=("float16", "float32", "float64", "int8",
                                                     "int32", "int64"))


def _out(xp, r, dt):
    r = xp.asarray(r)
    return r if dt is None or r.dtype == dt else r.astype(dt)


def _sum_dtype(x, p):
    if p.dtype is not None:
        return p.dtype
    return np.dtype("int64") if x.dtype == _BOOL else x.dtype


def _reducer(name, fn, dtype_rule, grad, params=(), save=("inputs", "outputs"), extra=None):
    def compute(xp, p, x):
        if getattr(p, "initial", None) is not None:
            # MXNet 1.9.1's own refusal, word for word (NumpyReduceAxesCompute and
            # NumpyReduceAxesNoDTypeCompute): the parameter parses, the kernel refuses it
            raise GpundaError(f"Operator {name}: initial is not supported yet "
                              f"(initial={p.initial}; MXNet 1.9.1 takes only None)")
        axes = norm_np_axes(p.axis, x.ndim, name)
        dt = dtype_rule(x, p)
        kw = extra(p) if extra else {}
        src = x if x.dtype != _BOOL or fn in ("all", "any", "max", "min") else x.astype(dt)
        if fn in ("sum", "prod", "mean") and dt.kind == "f" and src.dtype != dt and \
                (src.dtype.kind != "f" or dt.itemsize > src.dtype.itemsize):
            src = src.astype(dt)      # accumulate in the wider of the two, then cast
        if fn in ("sum", "prod", "mean") and src.dtype == np.float16:
            src = src.astype(_F32)       # MXNet accumulates float16 in float32
        if x.size == 0 and fn in ("max", "min") and any(x.shape[a] == 0 for a in axes):
            raise GpundaError(f"Operator {name}: zero-size array to reduction operation "
                              f"{fn} which has no identity")
        if fn == "mean" and dt.kind in "iu":
            return _int_mean(xp, src, axes, p.keepdims, dt)
        r = getattr(xp, fn)(src, axis=axes, keepdims=p.keepdims, **kw)
        return _out(xp, r, dt)
    def refused_initial_shape(p, in_s):
        # a graph holding initial=... binds as in MXNet (whose shape rule ignores it) and
        # fails when run; without initial the shapes come from a dummy run as usual
        if getattr(p, "initial", None) is None or in_s[0] is None:
            return None
        x = tuple(in_s[0])
        axes = norm_np_axes(p.axis, len(x), name)
        out = tuple(1 if i in axes else d for i, d in enumerate(x)) if p.keepdims else \
            tuple(d for i, d in enumerate(x) if i not in axes)
        return [x], [out]

    has_initial = any(q.name == "initial" for q in params)
    register(OpDef(name, compute, inputs=("a",), params=[_AX, _KEEP] + list(params),
                   gradient=grad, nondiff=grad is None, save=save, family="np_reduce",
                   infer_shape=refused_initial_shape if has_initial else None,
                   hidden=True, doc=f"NumPy's {fn} over ``axis`` (mx.np.{fn})."))


def _int_mean(xp, x, axes, keepdims, dt):
    """NumPy's mean with an integer ``dtype`` as MXNet 1.9.1 computes it: the sum
    accumulates in the input's accumulation type (float64 for float32, int32 for int8, ...),
    is cast to ``dt`` (truncating a float, wrapping an int) and divided by the count in
    ``dt`` (C integer division). So the mean of [0.6, 1.7, -0.4, 2.2] with dtype=int64 is
    int(4.1) // 4 = 1, where casting each element first would give 0."""
    s = xp.sum(x, axis=axes, dtype=_acc_dtype(x.dtype), keepdims=keepdims)
    s = c_cast_float(xp, s, dt) if s.dtype.kind == "f" else s.astype(dt)
    return _c_div(xp, s, _count(x, axes), dt, "_npi_mean")


# MXNET_ACC_TYPE_SWITCH: the type MXNet's "safe" reductions accumulate in
_ACC = {"float16": "float32", "float32": "float64", "float64": "float64", "uint8": "uint32",
        "int8": "int32", "int32": "int64", "int64": "int64", "bool": "int64"}


def _acc_dtype(dt):
    return np.dtype(_ACC.get(np.dtype(dt).name, dt))


def _c_div(xp, a, n, dt, where):
    """``a /= scalar<dt>(n)`` as MXNet's reductions normalize: in ``dt``, the count cast
    to ``dt`` first; integer division truncates toward zero (C)."""
    dt = np.dtype(dt)
    if dt.kind == "f":
        with np.errstate(divide="ignore", invalid="ignore"):
            return _out(xp, a / dt.type(n), dt)
    d = int(wrapped_int(dt, n))
    if d == 0:
        raise GpundaError(f"Operator {where}: integer division by zero: the count {n} "
                          f"is 0 in dtype {dt.name}")
    q = a // d
    q = q + ((q * d != a) & ((a < 0) != (d < 0))).astype(dt)   # floor -> truncation
    return _out(xp, q, dt)


def _axes_of(p, x):
    return norm_np_axes(p.axis, x.ndim, "reduce")


def _g_sum(F, p, i, o, g):
    x = i[0]
    return [_cast(F, expand_back(F, g[0], x.shape, _axes_of(p, x), _gdt(x)), x)]


def _count(x, axes):
    n = 1
    for a in axes:
        n *= x.shape[a]
    return n


def _g_mean(F, p, i, o, g):
    x = i[0]
    axes = _axes_of(p, x)
    return [_cast(F, expand_back(F, g[0], x.shape, axes, _gdt(x)) * (1.0 / max(_count(x, axes), 1)),
                  x)]


def _g_prod(F, p, i, o, g):
    x = i[0]
    axes = _axes_of(p, x)
    full = expand_back(F, g[0] * o[0], x.shape, axes)
    return [_cast(F, full / x, x)]


def _g_extreme(F, p, i, o, g):
    x = i[0]
    axes = _axes_of(p, x)
    ob = expand_back(F, o[0], x.shape, axes)
    mask = F.Cast(F._npi_equal(x, ob), dtype=g[0].dtype)
    return [_cast(F, expand_back(F, g[0], x.shape, axes) * mask, x)]


def _gdt(x):
    dt = np.dtype(x.dtype)
    return dt if dt.kind == "f" else None


def _cast(F, g, x):
    return g if g.dtype == x.dtype else F.Cast(g, dtype=x.dtype)


def _mean_dtype(x, p):
    if p.dtype is not None:
        return p.dtype
    return x.dtype if x.dtype.kind == "f" else _F32


_reducer("_np_sum", "sum", _sum_dtype, _g_sum, [_DT, Param("initial", "float", None)],
         save=("inputs",), extra=lambda p: {} if p.initial is None else {"initial": p.initial})
_reducer("_np_prod", "prod", _sum_dtype, _g_prod, [_DT, Param("initial", "float", None)],
         extra=lambda p: {} if p.initial is None else {"initial": p.initial})
_reducer("_npi_mean", "mean", _mean_dtype, _g_mean, [_DT], save=("inputs",))
_reducer("_np_max", "max", lambda x, p: x.dtype, _g_extreme, [Param("initial", "float", None)])
_reducer("_np_min", "min", lambda x, p: x.dtype, _g_extreme, [Param("initial", "float", None)])
_reducer("_np_all", "all", lambda x, p: _BOOL, None, save=())
_reducer("_np_any", "any", lambda x, p: _BOOL, None, save=())


def _moment(name, fn):
    def compute(xp, p, x):
        if x.dtype == _BOOL:     # MXNet's kernel has no bool case
            raise GpundaError(f"Operator {name}: input dtype bool is not supported "
                              f"(Unknown type enum 7)")
        axes = norm_np_axes(p.axis, x.ndim, name)
        dt = p.dtype if p.dtype is not None else x.dtype
        return _moment_value(xp, x, axes, p.keepdims, p.ddof, np.dtype(dt), fn == "std", name)

    def grad(F, p, i, o, g):
        x = i[0]
        axes = _axes_of(p, x)
        n = _count(x, axes) - p.ddof
        mean = expand_back(F, F._npi_mean(x, axis=axes, keepdims=True), x.shape, axes)
        d = (x - mean) * (2.0 / n if fn == "var" else 1.0 / n)
        if fn == "std":
            d = d / expand_back(F, o[0], x.shape, axes)
        return [_cast(F, expand_back(F, g[0], x.shape, axes) * d, x)]
    register(OpDef(name, compute, inputs=("a",),
                   params=[_AX, _DT_MOMENTS, Param("ddof", "int", 0), _KEEP], gradient=grad,
                   save=("inputs", "outputs"), family="np_reduce", hidden=True,
                   doc=f"NumPy's {fn} with ``ddof``."))


def _moment_value(xp, x, axes, keepdims, ddof, dt, sqrt, where):
    """MXNet 1.9.1's NumpyMomentsForward step by step: the mean in the input's dtype (sum in
    the accumulation type, cast, divided by the count), ``(x - mean) ** 2`` in the input's
    dtype (an integer dtype wraps: var of uint8 [1, 200, 3, 4, 50, 6, 7, 8] is 14, not
    4118), its sum in the accumulation type cast to ``dt``, divided by ``n - ddof`` in
    ``dt``, then the square root for std. For float input this is the textbook variance."""
    acc = _acc_dtype(x.dtype)
    n = _count(x, axes)
    s = xp.sum(x, axis=axes, dtype=acc, keepdims=True)
    mean = _c_div(xp, _cast_to(xp, s, x.dtype), n, x.dtype, where)
    d = x - mean
    d = d * d
    s2 = _cast_to(xp, xp.sum(d, axis=axes, dtype=acc, keepdims=keepdims), dt)
    # the divisor is a size_t: ddof > n wraps (var of 4 floats with ddof=5 is ~0, not < 0)
    r = _c_div(xp, s2, (n - ddof) % (1 << 64), dt, where)
    if sqrt:
        r = xp.sqrt(r) if dt.kind == "f" else c_cast_float(xp, xp.sqrt(r.astype(np.float64)), dt)
    return _out(xp, r, dt)


def _cast_to(xp, a, dt):
    dt = np.dtype(dt)
    if a.dtype == dt:
        return a
    if a.dtype.kind == "f" and dt.kind in "iu":
        return c_cast_float(xp, a, dt)
    return a.astype(dt)


_moment("_npi_std", "std")
_moment("_npi_var", "var")


def _arg(name, fn):
    def compute(xp, p, x):
        if x.size == 0 and (p.axis is None or x.ndim == 0 or x.shape[p.axis] == 0):
            raise GpundaError(f"Operator {name}: attempt to get {fn} of an empty sequence")
        if p.axis is None or x.ndim == 0:
            if x.ndim == 0 and p.axis not in (None, 0, -1):
                raise GpundaError(f"Operator {name}: axis {p.axis} is out of bounds for "
                                  f"array of dimension 0")
            r = getattr(xp, fn)(x.reshape(-1))
            if p.keepdims:
                r = xp.reshape(r, (1,) * x.ndim)
        else:
            ax = norm_np_axes(p.axis, x.ndim, name)[0]
            r = getattr(xp, fn)(x, axis=ax)
            if p.keepdims:
                r = xp.expand_dims(r, ax)
        return _out(xp, r, np.dtype("int64"))
    register(OpDef(name, compute, inputs=("data",),
                   params=[Param("axis", "int", None), _KEEP], nondiff=True,
                   family="np_reduce", hidden=True, doc=f"NumPy's {fn} (int64 indices)."))


_arg("_npi_argmax", "argmax")
_arg("_npi_argmin", "argmin")


def _cumsum(xp, p, x):
    dt = p.dtype if p.dtype is not None else (np.dtype("int64") if x.dtype == _BOOL else x.dtype)
    if p.axis is None:
        x = x.reshape(-1)
        ax = 0
    else:
        ax = norm_np_axes(p.axis, x.ndim, "_np_cumsum")[0]
    return _out(xp, xp.cumsum(x, axis=ax, dtype=dt), dt)


def _g_cumsum(F, p, i, o, g):
    x = i[0]
    ax = 0 if p.axis is None else norm_np_axes(p.axis, x.ndim, "_np_cumsum")[0]
    flipped = F._npi_flip(g[0], axis=(ax,))
    r = F._npi_flip(F._np_cumsum(flipped, axis=ax), axis=(ax,))
    return [_cast(F, F._np_reshape(r, newshape=x.shape), x)]


register(OpDef("_np_cumsum", _cumsum, inputs=("a",),
               params=[Param("axis", "int", None), _DT_MOMENTS], gradient=_g_cumsum,
               save=("inputs",),
               family="np_reduce", hidden=True,
               doc="Cumulative sum along ``axis`` (None: over the flattened array)."))
