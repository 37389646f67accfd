"""Reductions and orderings: sum/mean/prod/max/min/nansum/nanprod, norm, moments,
argmax/argmin, sort/argsort/topk, with MXNet 1.x's parameters and shapes.

Axis semantics follow MXNet's ``ReduceAxesShapeImpl``: ``axis=None`` and
``axis=()`` both reduce every axis (``exclude`` is then ignored), a full
reduction without ``keepdims`` gives shape ``(1,)`` in legacy shape mode,
duplicate or out-of-range axes are errors.

Gradients broadcast the output gradient back with the hidden pair
``_broadcast_reduced`` / ``_sum_reduced`` (each the gradient of the other, so
any order of derivative works). Orderings route gradients through the hidden
pair ``_take_along_axis`` / ``_put_along_axis``.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops._util import legacy_scalar, no_bool

# ----------------------------------------------------------------------------
# axis handling


def reduce_axes(axis, exclude, ndim, where):
    """The sorted tuple of axes an MXNet reduction with ``axis``/``exclude`` reduces."""
    if axis is None or axis == ():
        return tuple(range(ndim))
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    norm = []
    for a in items:
        if not -ndim <= a < ndim:
            raise GpundaError(f"Operator {where}: axis={axis} is out of range for an array "
                              f"with {ndim} dimension(s)")
        norm.append(a % ndim)
    if len(set(norm)) != len(norm):
        raise GpundaError(f"Operator {where}: axis={axis} has duplicate axes")
    if exclude:
        return tuple(a for a in range(ndim) if a not in norm)
    return tuple(sorted(norm))


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _finish(xp, r, dtype):
    # MXNet's legacy reductions keep the input dtype, bool included (nd.sum, nd.mean and
    # nd.prod of a bool array are bool: any / any / all)
    if r.dtype != dtype:
        r = r.astype(dtype)
    return legacy_scalar(xp, r)


def _acc_dtype(x):
    # float16 sums lose too much precision; MXNet accumulates them in float32
    return np.float32 if x.dtype == np.float16 else None


def _count(shape, axes):
    n = 1
    for a in axes:
        n *= shape[a]
    return n


# ----------------------------------------------------------------------------
# hidden helpers used by gradient rules


def _broadcast_reduced(xp, p, g):
    shape = tuple(p.shape)
    kept = _kept_shape(shape, tuple(p.axes))
    return xp.broadcast_to(g.reshape(kept), shape).copy()


def _sum_reduced(xp, p, y):
    axes = tuple(p.axes)
    r = y.sum(axis=axes, keepdims=True, dtype=_acc_dtype(y)) if axes else y
    return r.astype(y.dtype, copy=False).reshape(tuple(p.shape))


register(OpDef(
    "_broadcast_reduced", _broadcast_reduced,
    params=[Param("shape", "shape"), Param("axes", "shape")],
    gradient=lambda F, p, i, o, g: [F._sum_reduced(g[0], axes=p.axes, shape=i[0].shape)],
    save=("inputs",), hidden=True, family="reduce",
    doc="Broadcast a reduced gradient back over `axes` to `shape` (gradient of a reduction)."))
register(OpDef(
    "_sum_reduced", _sum_reduced,
    params=[Param("axes", "shape"), Param("shape", "shape")],
    gradient=lambda F, p, i, o, g: [F._broadcast_reduced(g[0], shape=i[0].shape, axes=p.axes)],
    save=("inputs",), hidden=True, family="reduce",
    doc="Sum over `axes` and reshape to `shape` (the adjoint of _broadcast_reduced)."))


def _bcast(F, g, x, axes):
    return F._broadcast_reduced(g, shape=x.shape, axes=axes)


def put_along(xp, z, idx, vals, axis):
    """``z`` with ``vals`` written at ``idx`` along ``axis`` (positions distinct), in place.

    Plain fancy indexing with open grids, so it works on CuPy versions without
    ``put_along_axis``.
    """
    axis = axis % z.ndim
    key = []
    for d, n in enumerate(idx.shape):
        if d == axis:
            key.append(idx)
        else:
            shape = [1] * idx.ndim
            shape[d] = n
            key.append(xp.arange(n).reshape(shape))
    z[tuple(key)] = vals
    return z


def _as_index(idx):
    return idx if idx.dtype.kind in "iu" else idx.astype(np.int64)


def _take_along_axis(xp, p, x, idx):
    idx = _as_index(idx)
    if p.axis is None:
        return x.reshape(-1)[idx]
    return xp.take_along_axis(x, idx, axis=p.axis)


def _put_along_axis(xp, p, g, idx):
    idx = _as_index(idx)
    shape = tuple(p.shape)
    if p.axis is None:
        z = xp.zeros(int(np.prod(shape, dtype=np.int64)), g.dtype)
        z[idx] = g
        return z.reshape(shape)
    z = xp.zeros(shape, g.dtype)
    # the indices come from a sort, so positions are distinct: assignment is a scatter
    put_along(xp, z, idx, g, p.axis)
    return z


register(OpDef(
    "_take_along_axis", _take_along_axis, inputs=("data", "index"),
    params=[Param("axis", "int", None, optional=True)],
    gradient=lambda F, p, i, o, g: [F._put_along_axis(g[0], i[1], axis=p.axis, shape=i[0].shape),
                                    None],
    save=("inputs",), hidden=True, family="reduce",
    doc="x gathered along `axis` (flattened when None) at the positions in `index`."))
register(OpDef(
    "_put_along_axis", _put_along_axis, inputs=("data", "index"),
    params=[Param("axis", "int", None, optional=True), Param("shape", "shape")],
    gradient=lambda F, p, i, o, g: [F._take_along_axis(g[0], i[1], axis=p.axis), None],
    save=("inputs",), hidden=True, family="reduce",
    doc="Zeros of `shape` with `data` placed at distinct positions `index` along `axis`."))

# ----------------------------------------------------------------------------
# axis reductions

_REDUCE_PARAMS = [
    Param("axis", "axis", None, "axis or axes to reduce; None or () reduces all"),
    Param("keepdims", "bool", False, "keep reduced axes with size 1"),
    Param("exclude", "bool", False, "reduce the axes NOT listed in axis"),
]


def _reduction(name, body, grad, *, aliases=(), save=("inputs",), doc=""):
    def compute(xp, p, x):
        axes = reduce_axes(p.axis, p.exclude, x.ndim, name)
        return _finish(xp, body(xp, x, axes, p.keepdims), x.dtype)

    def rule(F, p, ins, outs, og):
        x = ins[0]
        axes = reduce_axes(p.axis, p.exclude, x.ndim, name)
        return [grad(F, x, outs[0] if outs is not None else None, og[0], axes)]

    return register(OpDef(name, compute, params=_REDUCE_PARAMS, gradient=rule, aliases=aliases,
                          save=save, family="reduce", doc=doc))


def _sum(xp, x, axes, kd):
    return x.sum(axis=axes, keepdims=kd, dtype=_acc_dtype(x))


def _mean(xp, x, axes, kd):
    # integer means come back in the input dtype, truncated like MXNet's integer division
    return x.mean(axis=axes, keepdims=kd, dtype=_acc_dtype(x))


def _g_sum(F, x, y, g, axes):
    return _bcast(F, g, x, axes)


def _g_mean(F, x, y, g, axes):
    n = _count(x.shape, axes)
    return _bcast(F, g, x, axes) * (1.0 / n if n else float("nan"))


def _g_prod(F, x, y, g, axes):
    # MXNet's rule out/in: a zero input gives inf/nan, as in MXNet
    return _bcast(F, g * y, x, axes) / x


def _g_extreme(F, x, y, g, axes):
    # like MXNet, every element equal to the extreme gets the full gradient (ties are not split)
    return _bcast(F, g, x, axes) * F.broadcast_equal(x, _bcast(F, y, x, axes))


def _not_nan(F, x):
    return F.broadcast_equal(x, x)


def _g_nansum(F, x, y, g, axes):
    return _bcast(F, g, x, axes) * _not_nan(F, x)


def _g_nanprod(F, x, y, g, axes):
    m = _not_nan(F, x)
    return F.where(m, _bcast(F, g * y, x, axes) / x, F.zeros_like(x))


_reduction("sum", _sum, _g_sum, aliases=("sum_axis",), doc="Sum over the given axes.")
_reduction("mean", _mean, _g_mean, doc="Mean over the given axes.")
_reduction("prod", lambda xp, x, a, kd: x.prod(axis=a, keepdims=kd, dtype=_acc_dtype(x)), _g_prod,
           save=("inputs", "outputs"), doc="Product over the given axes.")
_reduction("max", lambda xp, x, a, kd: x.max(axis=a, keepdims=kd), _g_extreme,
           aliases=("max_axis",), save=("inputs", "outputs"), doc="Maximum over the given axes.")
_reduction("min", lambda xp, x, a, kd: x.min(axis=a, keepdims=kd), _g_extreme,
           aliases=("min_axis",), save=("inputs", "outputs"), doc="Minimum over the given axes.")
_reduction("nansum", lambda xp, x, a, kd: xp.nansum(x, axis=a, keepdims=kd, dtype=_acc_dtype(x)),
           _g_nansum, doc="Sum over the given axes, treating NaN as 0.")
_reduction("nanprod", lambda xp, x, a, kd: xp.nanprod(x, axis=a, keepdims=kd, dtype=_acc_dtype(x)),
           _g_nanprod, save=("inputs", "outputs"),
           doc="Product over the given axes, treating NaN as 1.")

# ----------------------------------------------------------------------------
# norm


def _norm_check(p):
    if p.ord not in (1, 2):
        raise GpundaError(f"Operator norm: ord={p.ord} is not supported; use 1 or 2")
    od = p.out_dtype
    if od is not None and od.name not in _NORM_OUT_DTYPES:
        # NormParam.out_dtype is an enum of these (no unsigned or bool type)
        raise GpundaError(f"Operator norm: Invalid Input: out_dtype={od.name!r}, valid values "
                          f"are: None, {', '.join(_NORM_OUT_DTYPES)}")


_NORM_OUT_DTYPES = ("float16", "float32", "float64", "int32", "int64", "int8")


def _norm(xp, p, x):
    axes = reduce_axes(p.axis, False, x.ndim, "norm")
    if p.ord == 1:
        r = xp.abs(x).sum(axis=axes, keepdims=p.keepdims, dtype=_acc_dtype(x))
    else:
        a = x.astype(np.float32) if x.dtype == np.float16 else x
        r = xp.sqrt((a * a).sum(axis=axes, keepdims=p.keepdims))
    r = _finish(xp, r, x.dtype)
    return r if p.out_dtype is None else r.astype(p.out_dtype)


def _g_norm(F, p, ins, outs, og):
    x, y, g = ins[0], outs[0], og[0]
    if p.out_dtype is not None and g.dtype != x.dtype:
        g, y = F.Cast(g, dtype=x.dtype), F.Cast(y, dtype=x.dtype)
    axes = reduce_axes(p.axis, False, x.ndim, "norm")
    if p.ord == 1:
        return [_bcast(F, g, x, axes) * F.sign(x)]
    return [_bcast(F, g / y, x, axes) * x]


register(OpDef(
    "norm", _norm,
    params=[Param("ord", "int", 2, "1 or 2"),
            Param("axis", "axis", None, "axis or axes; None reduces all"),
            Param("out_dtype", "dtype", None, "dtype of the result (default: input's)"),
            Param("keepdims", "bool", False)],
    gradient=_g_norm, save=("inputs", "outputs"), family="reduce", check=_norm_check,
    doc="L1 or L2 norm over the given axes (Frobenius norm for two axes)."))

# ----------------------------------------------------------------------------
# moments


def _moments_axes(p):
    if p.axes is None or p.axes == ():    # MXNet's MomentsShape checks this first
        raise GpundaError("Operator moments: axes must be given: Empty axes is not supported, "
                          "if you would like to do global moments, please pass all axes to "
                          "axes argument")


def _moments(xp, p, x):
    _moments_axes(p)
    if x.dtype.kind == "b":     # NOTE [Dtypes a kernel is instantiated for]
        raise no_bool('moments', "data")
    axes = reduce_axes(p.axes, False, x.ndim, "moments")
    acc = _acc_dtype(x)
    m = x.mean(axis=axes, keepdims=True, dtype=acc)
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True, dtype=acc)
    if not p.keepdims:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        m, v = m.reshape(shape), v.reshape(shape)
    return _finish(xp, m, x.dtype), _finish(xp, v, x.dtype)


def _g_moments(F, p, ins, outs, og):
    x = ins[0]
    axes = reduce_axes(p.axes, False, x.ndim, "moments")
    n = _count(x.shape, axes)
    inv = 1.0 / n if n else float("nan")
    mean_b = _bcast(F, outs[0], x, axes)
    return [_bcast(F, og[0], x, axes) * inv + _bcast(F, og[1], x, axes) * (x - mean_b) * (2 * inv)]


register(OpDef(
    "moments", _moments,
    params=[Param("axes", "axis", None, "axes to reduce; None reduces all"),
            Param("keepdims", "bool", False)],
    num_outputs=2, gradient=_g_moments,     # no names in MXNet: output0, output1
    save=("inputs", "outputs"), family="reduce",
    doc="Mean and (biased) variance over the given axes: two outputs."))

# ----------------------------------------------------------------------------
# argmax / argmin

_ARG_PARAMS = [Param("axis", "int", None, "axis; None uses the flattened input"),
               Param("keepdims", "bool", False)]


def _arg(name, fn):
    def compute(xp, p, x):
        if x.dtype.kind == "b":     # NOTE [Dtypes a kernel is instantiated for]
            raise no_bool(name, "data")
        if p.axis is None:
            r = fn(x.reshape(-1))
            r = xp.reshape(xp.asarray(r), (1,) * x.ndim if p.keepdims else (1,))
        else:
            ax = _norm_axis(p.axis, x.ndim, name)
            r = fn(x, axis=ax)
            if p.keepdims:
                r = xp.expand_dims(r, ax)
            r = legacy_scalar(xp, r)
        # MXNet returns indices in the input dtype (float by default)
        return r.astype(x.dtype)
    register(OpDef(name, compute, params=_ARG_PARAMS, nondiff=True, save=(), family="reduce",
                   doc=f"Indices of the {name[3:]}imum along an axis, in the input dtype."))


def _norm_axis(axis, ndim, where):
    if not -ndim <= axis < max(ndim, 1):
        raise GpundaError(f"Operator {where}: axis={axis} is out of range for an array "
                          f"with {ndim} dimension(s)")
    return axis % ndim if ndim else 0


_arg("argmax", lambda x, axis=None: x.argmax(axis=axis))
_arg("argmin", lambda x, axis=None: x.argmin(axis=axis))
# MXNet's argmax_channel is argmax with axis=1 (its parser fixes ReduceAxisParam.axis), so
# a 1-D input is an axis error and (2, 1, 3) gives (2, 3)
def _argmax_channel(xp, p, x):
    if x.dtype.kind == "b":     # NOTE [Dtypes a kernel is instantiated for]
        raise no_bool("argmax_channel", "data")
    r = x.argmax(axis=_norm_axis(1, x.ndim, "argmax_channel"))
    return legacy_scalar(xp, r).astype(x.dtype)


register(OpDef("argmax_channel", _argmax_channel,
               nondiff=True, save=(), family="reduce",
               doc="Indices of the maximum along axis 1, in the input dtype."))

# ----------------------------------------------------------------------------
# sort / argsort / topk


def _stable_argsort(xp, x, axis, ascend):
    if ascend:
        return xp.argsort(x, axis=axis, kind="stable")
    # descending, ties in their original order (MXNet's stable sort with a greater-than
    # comparator): sort the reversed array ascending and map the positions back
    n = x.shape[axis]
    rev = xp.flip(x, axis=axis)
    idx = xp.argsort(rev, axis=axis, kind="stable")
    return xp.flip(n - 1 - idx, axis=axis)


def _order_axis(p, x, where):
    """(array to sort, axis) — the flattened input when axis is None."""
    if x.dtype.kind == "b":     # NOTE [Dtypes a kernel is instantiated for]
        raise no_bool(where, "data")
    if p.axis is None:
        return x.reshape(-1), 0
    return x, _norm_axis(p.axis, x.ndim, where)


_ORDER = [Param("axis", "int", -1, "axis to sort along; None sorts the flattened input",
                optional=True),
          Param("is_ascend", "bool", True, "ascending order")]


def _sort(xp, p, x):
    a, ax = _order_axis(p, x, "sort")
    idx = _stable_argsort(xp, a, ax, p.is_ascend)
    return xp.take_along_axis(a, idx, axis=ax), idx


def _g_sort(F, p, ins, outs, og):
    return [F._put_along_axis(og[0], outs[1], axis=p.axis, shape=ins[0].shape)]


register(OpDef("sort", _sort, params=_ORDER, num_outputs=2, num_visible=1, gradient=_g_sort,
               save=("inputs", "outputs"), family="reduce",
               doc="Sorted copy along an axis (stable)."))


def _argsort(xp, p, x):
    a, ax = _order_axis(p, x, "argsort")
    return _stable_argsort(xp, a, ax, p.is_ascend).astype(p.dtype)


register(OpDef("argsort", _argsort,
               params=_ORDER + [Param("dtype", "dtype", np.dtype("float32"),
                                      "dtype of the indices")],
               nondiff=True, save=(), family="reduce",
               doc="Indices that sort the input along an axis (stable)."))


def _topk(xp, p, x):
    a, ax = _order_axis(p, x, "topk")
    n = a.shape[ax]
    k = p.k if p.k >= 1 else n
    if k > n:
        raise GpundaError(f"Operator topk: k={p.k} is larger than the {n} element(s) along "
                          f"axis {p.axis} of an input of shape {x.shape}")
    idx = _stable_argsort(xp, a, ax, p.is_ascend)
    idx = xp.take(idx, xp.arange(k), axis=ax)
    if p.ret_typ == "indices":
        return idx.astype(p.dtype)
    if p.ret_typ == "mask":
        m = xp.zeros(a.shape, x.dtype)
        put_along(xp, m, idx, 1, ax)
        return m.reshape(x.shape)
    vals = xp.take_along_axis(a, idx, axis=ax)
    if p.ret_typ == "both":
        return vals, idx.astype(p.dtype)
    return vals, idx


def _g_topk(F, p, ins, outs, og):
    if p.ret_typ in ("indices", "mask"):
        return [None]
    return [F._put_along_axis(og[0], outs[1], axis=p.axis, shape=ins[0].shape)]


def _topk_nout(p):
    return 1 if p.ret_typ in ("indices", "mask") else 2


register(OpDef(
    "topk", _topk,
    params=[Param("axis", "int", -1, "axis; None uses the flattened input", optional=True),
            Param("k", "int", 1, "how many; k < 1 means all"),
            Param("ret_typ", "enum", "indices", choices=("value", "indices", "mask", "both")),
            Param("is_ascend", "bool", False, "the k smallest instead of the k largest"),
            Param("dtype", "dtype", np.dtype("float32"), "dtype of returned indices")],
    num_outputs=_topk_nout, num_visible=lambda p: 2 if p.ret_typ == "both" else 1,
    gradient=_g_topk, save=("inputs", "outputs"), family="reduce",
    doc="The k largest (or smallest) elements along an axis: values, indices, a mask, or both."))

# ----------------------------------------------------------------------------
# histogram


def _histogram(xp, p, data, bins=None):
    flat = data.reshape(-1)
    if bins is not None:
        edges = bins
    else:
        if p.bin_cnt is None or p.range is None:
            raise GpundaError("Operator _histogram: give a bins input, or bin_cnt and range")
        lo, hi = p.range
        if lo > hi:
            raise GpundaError(f"Operator _histogram: range={p.range} must have low <= high")
        edges = xp.linspace(lo, hi, p.bin_cnt + 1).astype(data.dtype)
    counts, _ = xp.histogram(flat, bins=edges)
    return counts.astype(np.int64), edges.astype(data.dtype, copy=False)


register(OpDef(
    "_histogram", _histogram,
    inputs=lambda p: ("data",) if p.bin_cnt is not None else ("data", "bins"),
    params=[Param("bin_cnt", "int", None, "number of equal bins over range"),
            Param("range", "float_or_tuple", None, "(low, high) of the bins")],
    num_outputs=2, nondiff=True, save=(), family="reduce",
    doc="Counts of the flattened data per bin (int64) and the bin edges; values outside the "
        "edges are ignored, the last bin includes its right edge."))
