"""Indexing ops: take, pick, gather_nd, scatter_nd, one_hot, where, and the hidden
``_getitem`` (NDArray.__getitem__ while recording) and ``_copyto`` (copies across
contexts), with MXNet 1.x's parameters.

Index arrays may be float (MXNet's default dtype): they are truncated to
integers. Every gather has a hidden scatter-add as its gradient and that
scatter's gradient is the gather again, so higher-order gradients work.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError, GpundaIndexError
from gpunda.ops.registry import OpDef, Param, get_op, register, declare_pointwise
from gpunda._core.deferred import DeferredOpError, undefined_like
from gpunda.ops._util import legacy_scalar, require_same_dtype
from gpunda.ops.tensor.reduce import put_along

# ----------------------------------------------------------------------------
# helpers


def _ints(xp, idx):
    return idx if idx.dtype.kind in "iu" else idx.astype(np.int64)


def scatter_add(xp, z, key, vals):
    """``z[key] += vals`` with repeated positions accumulating (in place on ``z``)."""
    # flat positions make every key numpy/cupy can index with (slices, None, masks,
    # integer arrays) a plain 1-D scatter, which both libraries support
    pos = xp.arange(z.size, dtype=np.int64).reshape(z.shape)[key]
    flat = z.reshape(-1)
    vals = xp.broadcast_to(vals, pos.shape).reshape(-1)
    if xp.__name__ == "numpy":
        np.add.at(flat, pos.reshape(-1), vals)
    else:
        flat.scatter_add(pos.reshape(-1), vals)
    return z


def _norm_axis(axis, ndim, where):
    if not -ndim <= axis < ndim:
        raise GpundaError(f"Operator {where}: axis={axis} is out of range for an array "
                          f"with {ndim} dimension(s)")
    return axis % ndim


def _fix_indices(xp, idx, n, mode, where):
    """Integer indices in [0, n) by MXNet's mode: clip, wrap, or raise."""
    i = _ints(xp, idx)
    if mode == "wrap":
        return xp.mod(i, n) if n else i
    if mode == "raise":
        if i.size and (int(i.min()) < 0 or int(i.max()) >= n):
            bad = int(i.min()) if int(i.min()) < 0 else int(i.max())
            raise GpundaError(f"Operator {where}: index {bad} is out of range for an axis of "
                              f"size {n} (mode='raise')")
        return i
    return xp.clip(i, 0, max(n - 1, 0))


_MODE = Param("mode", "enum", "clip", "out-of-range indices: clip, wrap or raise",
              choices=("clip", "wrap", "raise"))

# ----------------------------------------------------------------------------
# take


def _take(xp, p, a, idx):
    ax = _norm_axis(p.axis, a.ndim, "take")
    n = a.shape[ax]
    if n == 0 and idx.size:
        raise GpundaError(f"Operator take: cannot take from axis {p.axis} of size 0 "
                          f"(input shape {a.shape})")
    try:
        i = _fix_indices(xp, idx, n, p.mode, "take")
    except GpundaError as e:
        if p.mode != "raise":
            raise
        # MXNet's kernel finds the bad index on the engine: the error is deferred to the
        # next read of the result (NOTE [Deferred op errors] in _core/deferred.py)
        shape = a.shape[:ax] + tuple(idx.shape) + a.shape[ax + 1:]
        raise DeferredOpError(str(e), undefined_like(xp, shape, a.dtype)) from None
    return xp.take(a, i, axis=ax)


def _take_backward(xp, p, g, idx):
    shape = tuple(p.shape)
    ax = _norm_axis(p.axis, len(shape), "take")
    i = _fix_indices(xp, idx, shape[ax], p.mode, "take").reshape(-1)
    g2 = g.reshape(shape[:ax] + (i.size,) + shape[ax + 1:])
    z = xp.zeros(shape, g.dtype)
    return scatter_add(xp, z, (slice(None),) * ax + (i,), g2)


register(OpDef(
    "take", _take, inputs=("a", "indices"),
    params=[Param("axis", "int", 0), _MODE],
    gradient=lambda F, p, i, o, g: [F._take_backward(g[0], i[1], shape=i[0].shape, axis=p.axis,
                                                     mode=p.mode), None],
    save=("inputs",), family="indexing",
    doc="Elements of `a` at `indices` along `axis`; output shape "
        "a.shape[:axis] + indices.shape + a.shape[axis+1:]."))
register(OpDef(
    "_take_backward", _take_backward, inputs=("data", "indices"),
    params=[Param("shape", "shape"), Param("axis", "int", 0), _MODE],
    gradient=lambda F, p, i, o, g: [F.take(g[0], i[1], axis=p.axis, mode=p.mode), None],
    save=("inputs",), hidden=True, family="indexing",
    doc="Scatter-add of a take gradient into zeros of `shape`."))

# ----------------------------------------------------------------------------
# pick


def _pick_index(xp, p, shape, idx, where):
    """(integer index shaped for take_along_axis, axis) for pick on ``shape``."""
    if p.axis is None:
        n = int(np.prod(shape, dtype=np.int64))
        return _fix_indices(xp, idx, n, p.mode, where), None
    ax = _norm_axis(p.axis, len(shape), where)
    reduced = shape[:ax] + shape[ax + 1:]
    kept = shape[:ax] + (1,) + shape[ax + 1:]
    if idx.shape not in (reduced, kept):
        raise GpundaError(f"Operator {where}: index shape {idx.shape} does not fit data shape "
                          f"{shape} with axis={p.axis}; expected {reduced} or {kept}")
    i = _fix_indices(xp, idx, shape[ax], p.mode, where)
    return i.reshape(kept), ax


def _pick(xp, p, x, idx):
    i, ax = _pick_index(xp, p, x.shape, idx, "pick")
    if ax is None:
        return x.reshape(-1)[i]
    r = xp.take_along_axis(x, i, axis=ax)
    return r if p.keepdims else legacy_scalar(xp, r.squeeze(ax))


def _pick_backward(xp, p, g, idx):
    shape = tuple(p.shape)
    i, ax = _pick_index(xp, p, shape, idx, "pick")
    z = xp.zeros(shape, g.dtype)
    if ax is None:
        return scatter_add(xp, z.reshape(-1), i, g).reshape(shape)
    put_along(xp, z, i, g.reshape(i.shape), ax)    # one position per row: distinct
    return z


_PICK = [Param("axis", "int", -1, "axis to pick along; None picks from the flattened data",
               optional=True),
         Param("keepdims", "bool", False), _MODE]

register(OpDef(
    "pick", _pick, inputs=("data", "index"), params=_PICK, aliases=("choose_element_0index",),
    gradient=lambda F, p, i, o, g: [F._pick_backward(g[0], i[1], shape=i[0].shape, axis=p.axis,
                                                     keepdims=p.keepdims, mode=p.mode), None],
    save=("inputs",), family="indexing",
    doc="One element per position along `axis`, chosen by `index`."))
register(OpDef(
    "_pick_backward", _pick_backward, inputs=("data", "index"),
    params=[Param("shape", "shape")] + _PICK,
    gradient=lambda F, p, i, o, g: [F.pick(g[0], i[1], axis=p.axis, keepdims=p.keepdims,
                                           mode=p.mode), None],
    save=("inputs",), hidden=True, family="indexing",
    doc="Scatter of a pick gradient into zeros of `shape`."))

# ----------------------------------------------------------------------------
# gather_nd / scatter_nd


def _nd_key(xp, idx, ndim, where, shape):
    i = _ints(xp, idx)
    if i.ndim < 1 or i.shape[0] > ndim:
        raise GpundaError(f"Operator {where}: indices shape {idx.shape} needs a first "
                          f"dimension of at most {ndim} (the data/output rank, shape {shape})")
    return tuple(i[k] for k in range(i.shape[0]))


def _gather_nd(xp, p, x, idx):
    key = _nd_key(xp, idx, x.ndim, "gather_nd", x.shape)
    # MXNet checks bounds (negatives wrap) and raises IndexError; CuPy would wrap silently
    for ax, k in enumerate(key):
        n = x.shape[ax]
        if k.size and bool(((k < -n) | (k >= n)).any()):
            bad = int(k[(k < -n) | (k >= n)].ravel()[0])
            raise GpundaIndexError(f"Operator gather_nd: index {bad} is out of bounds for "
                                   f"axis {ax} with size {n}")
    return x[key]


def _scatter_check(data, idx, shape, where):
    want = tuple(idx.shape[1:]) + tuple(shape[idx.shape[0]:])
    if data.shape != want:
        raise GpundaError(f"Operator {where}: data shape {data.shape} does not match indices "
                          f"shape {idx.shape} and shape={shape}; expected {want}")


def _scatter_nd(xp, p, data, idx):
    shape = tuple(p.shape)
    key = _nd_key(xp, idx, len(shape), "scatter_nd", shape)
    _scatter_check(data, idx, shape, "scatter_nd")
    z = xp.zeros(shape, data.dtype)
    z[key] = data
    return z


def _backward_gather_nd(xp, p, g, idx):
    shape = tuple(p.shape)
    key = _nd_key(xp, idx, len(shape), "_backward_gather_nd", shape)
    _scatter_check(g, idx, shape, "_backward_gather_nd")
    return scatter_add(xp, xp.zeros(shape, g.dtype), key, g)


register(OpDef(
    "gather_nd", _gather_nd, inputs=("data", "indices"),
    gradient=lambda F, p, i, o, g: [F._backward_gather_nd(g[0], i[1], shape=i[0].shape), None],
    save=("inputs",), family="indexing",
    doc="data[indices[0], ..., indices[M-1]]: output shape indices.shape[1:] + data.shape[M:]."))
register(OpDef(
    "scatter_nd", _scatter_nd, inputs=("data", "indices"), params=[Param("shape", "shape")],
    gradient=lambda F, p, i, o, g: [F.gather_nd(g[0], i[1]), None],
    save=("inputs",), family="indexing",
    doc="Zeros of `shape` with `data` written at `indices` (the inverse of gather_nd)."))


def _scatter_set_nd(xp, p, lhs, rhs, idx):
    shape = tuple(lhs.shape)
    if tuple(p.shape) != shape:
        raise GpundaError(f"Operator _scatter_set_nd: shape={tuple(p.shape)} must be lhs's "
                          f"shape {shape}")
    key = _nd_key(xp, idx, len(shape), "_scatter_set_nd", shape)
    _scatter_check(rhs, idx, shape, "_scatter_set_nd")
    r = lhs.copy()
    r[key] = rhs
    return r


def _g_scatter_set_nd(F, p, i, o, g):
    # lhs's elements at indices are overwritten: no gradient flows to them
    hole = F._scatter_set_nd(F.ones_like(g[0]), F.zeros_like(i[1]), i[2], shape=p.shape)
    return [g[0] * hole, F.gather_nd(g[0], i[2]), None]


register(OpDef(
    "_scatter_set_nd", _scatter_set_nd, inputs=("lhs", "rhs", "indices"),
    params=[Param("shape", "shape")], gradient=_g_scatter_set_nd, save=("inputs",),
    hidden=True, family="indexing",
    doc="lhs with rhs written at indices (scatter_nd that keeps the other elements); MXNet "
        "writes lhs in place, so call it with out=lhs."))


register(OpDef(
    "_backward_gather_nd", _backward_gather_nd, inputs=("data", "indices"),
    params=[Param("shape", "shape")],
    gradient=lambda F, p, i, o, g: [F.gather_nd(g[0], i[1]), None],
    save=("inputs",), hidden=True, family="indexing",
    doc="Like scatter_nd, but repeated indices accumulate (the gradient of gather_nd)."))

# ----------------------------------------------------------------------------
# one_hot


def _one_hot(xp, p, idx):
    if p.depth < 0:
        raise GpundaError(f"Operator one_hot: depth={p.depth} must be >= 0")
    i = _ints(xp, idx)
    hit = i[..., None] == xp.arange(p.depth)
    # indices outside [0, depth) match nothing: an all-off row, as in MXNet
    on = xp.asarray(p.on_value).astype(p.dtype)
    off = xp.asarray(p.off_value).astype(p.dtype)
    return xp.where(hit, on, off)


register(OpDef(
    "one_hot", _one_hot, inputs=("indices",),
    params=[Param("depth", "int"), Param("on_value", "float", 1.0),
            Param("off_value", "float", 0.0), Param("dtype", "dtype", np.dtype("float32"))],
    nondiff=True, save=(), family="indexing",
    doc="One-hot rows of length `depth` for each index."))

# ----------------------------------------------------------------------------
# where


def _cond_mask(xp, c, x):
    if c.shape == x.shape:
        return c != 0
    if c.ndim == 1 and x.ndim >= 1 and c.shape[0] == x.shape[0]:
        return (c != 0).reshape((c.shape[0],) + (1,) * (x.ndim - 1))
    raise GpundaError(f"Operator where: condition shape {c.shape} must equal x shape {x.shape} "
                      f"or be 1-D of length x.shape[0]")


def _where(xp, p, c, x, y):
    if x.shape != y.shape:
        raise GpundaError(f"Operator where: x shape {x.shape} and y shape {y.shape} must be equal")
    require_same_dtype("where", ("x", "y"), x, y)
    return xp.where(_cond_mask(xp, c, x), x, y)


def _g_where(F, p, ins, outs, og):
    c, g = ins[0], og[0]
    z = F.zeros_like(g)
    return [None, F.where(c, g, z), F.where(c, z, g)]


register(OpDef(
    "where", _where, inputs=("condition", "x", "y"), gradient=_g_where, save=("inputs",),
    family="indexing",
    doc="x where condition is non-zero, else y (condition: same shape, or 1-D over rows)."))

# pointwise record (NOTE [Pointwise records]): a condition of x's shape; the 1-D row form
# leaves a group (the fusion pass checks shapes at launch)
declare_pointwise("where", "where(condition, x, y)", (None, "where(condition, g, 0)",
                                                      "where(condition, 0, g)"),
                  same_dtype=(1, 2), out_dtype=lambda p, dts: dts[1])

# ----------------------------------------------------------------------------
# _getitem: NDArray.__getitem__ under autograd.record()


def _raw_part(xp, k):
    data = getattr(k, "_data", None)
    if data is not None:                     # an NDArray that reached here unconverted
        k = data
    if isinstance(k, list):
        k = xp.asarray(k)
    if hasattr(k, "dtype") and hasattr(k, "shape") and not isinstance(k, np.generic):
        k = xp.asarray(k)
        if k.dtype.kind == "f":
            k = k.astype(np.int64)
    return k


def _raw_key(xp, key):
    if isinstance(key, tuple):
        return tuple(_raw_part(xp, k) for k in key)
    return _raw_part(xp, key)


def _getitem(xp, p, x):
    key = _raw_key(xp, p.key)
    try:
        r = x[key]
    except (IndexError, ValueError, TypeError) as e:
        raise GpundaError(f"Operator _getitem: index {p.key!r} does not fit an array of shape "
                          f"{x.shape}: {e}") from None
    if getattr(r, "base", None) is not None:
        r = r.copy()          # a recorded result must not alias its input
    return legacy_scalar(xp, xp.asarray(r))


def _getitem_backward(xp, p, g):
    key = _raw_key(xp, p.key)
    z = xp.zeros(tuple(p.shape), g.dtype)
    target = z[key].shape
    return scatter_add(xp, z, key, g.reshape(target))


register(OpDef(
    "_getitem", _getitem, params=[Param("key", "any", doc="a basic or advanced index", optional=True)],
    gradient=lambda F, p, i, o, g: [F._getitem_backward(g[0], key=p.key, shape=i[0].shape)],
    save=("inputs",), hidden=True, family="indexing",
    doc="x[key] with NumPy indexing (0-d results have shape (1,) in legacy mode)."))
register(OpDef(
    "_getitem_backward", _getitem_backward,
    params=[Param("key", "any", optional=True), Param("shape", "shape")],
    gradient=lambda F, p, i, o, g: [F._getitem(g[0], key=p.key)],
    save=(), hidden=True, family="indexing",
    doc="Zeros of `shape` with `data` added at `key` (repeated positions accumulate)."))

# ----------------------------------------------------------------------------
# _copyto: a copy onto another context


def _copyto(xp, p, x):
    from gpunda.context import Context
    host = x if isinstance(x, np.ndarray) else x.get()
    return Context(p.ctx).backend.from_host(host)


def _ctx_of(a):
    ctx = getattr(a, "context", None)
    if ctx is not None:
        return ctx
    from gpunda.context import cpu, gpu
    return cpu() if isinstance(a, np.ndarray) else gpu(a.device.id)


_COPYTO = register(OpDef(
    "_copyto", _copyto, params=[Param("ctx", "any", doc="target Context")],
    gradient=lambda F, p, i, o, g: [F._copyto(g[0], ctx=_ctx_of(i[0]))],
    save=("inputs",), hidden=True, family="indexing", capture="copies through the host",
    doc="A copy of the input on context `ctx` (through host memory)."))


def _out_ctx(p):
    from gpunda.context import Context
    return Context(p.ctx)


_COPYTO.out_ctx = _out_ctx

# ----------------------------------------------------------------------------
# batch_take, ravel/unravel, and contrib ops (boolean_mask, index_copy, index_array)


def _batch_take_check(a, idx):
    if a.ndim != 2 or idx.ndim != 1 or idx.shape[0] != a.shape[0]:
        raise GpundaError(f"Operator batch_take: needs a 2-D `a` and 1-D `indices` of the same "
                          f"length, got a shape {a.shape} and indices shape {idx.shape}")


def _batch_take(xp, p, a, idx):
    _batch_take_check(a, idx)
    return _pick(xp, _PICK_ROW, a, idx)


_PICK_ROW = get_op("pick").parse_params({"axis": 1})

# MXNet registers batch_take without FGradient: autograd through it and binding it with a
# grad_req other than 'null' fail (test_symbol::test_zero_prop2 checks the bind)
register(OpDef(
    "batch_take", _batch_take, inputs=("a", "indices"),
    family="indexing",
    doc="out[i] = a[i, indices[i]] for 2-D `a` (indices clipped into range)."))


def _fill_element_0index(xp, p, lhs, mhs, rhs):
    if lhs.ndim != 2 or mhs.shape != (lhs.shape[0],) or rhs.shape != (lhs.shape[0],):
        raise GpundaError(f"Operator fill_element_0index: needs a 2-D lhs and 1-D mhs, rhs of "
                          f"length lhs.shape[0]; got lhs {lhs.shape}, mhs {mhs.shape}, "
                          f"rhs {rhs.shape}")
    cols = _fix_indices(xp, rhs, lhs.shape[1], "clip", "fill_element_0index")
    out = lhs.copy()
    out[xp.arange(lhs.shape[0]), cols] = mhs
    return out


def _g_fill_element_0index(F, p, i, o, g):
    # the filled cells came from mhs: lhs's gradient is g with those cells zeroed
    zero = F.zeros_like(i[1])
    return [F.fill_element_0index(g[0], zero, i[2]), F.batch_take(g[0], i[2]), None]


register(OpDef(
    "fill_element_0index", _fill_element_0index, inputs=("lhs", "mhs", "rhs"),
    gradient=_g_fill_element_0index, save=("inputs",), family="indexing",
    doc="lhs with lhs[i, rhs[i]] = mhs[i] for each row i (a copy)."))


def _strides(shape):
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= d
    return st[::-1]


def _index_kernel_input(data, where):
    # MSHADOW_TYPE_SWITCH: MXNet's ravel kernels have no bool case
    if data.dtype == np.bool_:
        raise GpundaError(f"Operator {where}: input dtype bool is not supported "
                          f"(Unknown type enum 7)")


def _trunc_int(xp, v):
    """Float ``v`` to int64 as C's ``index_t(v)`` (truncation toward zero)."""
    return xp.trunc(v).astype(np.int64)


def _ravel(xp, p, data):
    """MXNet 1.9.1's ravel_index kernel: ``ret = index_t(ret * shape[j] + x[j])`` step by
    step, with no bounds check or wrapping; for float input the sum is a float and each step
    truncates toward zero ([[0.5], [-1.7]] into (1, 2) is index_t(0 * 2 - 1.7) = -1)."""
    shape = tuple(p.shape)
    _index_kernel_input(data, "_ravel_multi_index")
    if data.ndim != 2:
        raise GpundaError(f"Operator _ravel_multi_index: input to ravel operator must be "
                          f"two-dimensional, got shape {data.shape}")
    if data.shape[0] != len(shape):
        raise GpundaError(f"Operator _ravel_multi_index: data shape {data.shape} needs a first "
                          f"dimension equal to len(shape)={len(shape)}")
    fl = data.dtype.kind == "f"
    acc = (np.float32 if data.dtype == np.float16 else data.dtype) if fl else np.int64
    ret = xp.zeros(data.shape[1:], np.int64)
    for k, d in enumerate(shape):
        if fl:
            ret = _trunc_int(xp, (ret * d).astype(acc) + data[k].astype(acc))
        else:
            ret = ret * d + data[k].astype(np.int64)
    return ret.astype(data.dtype)


def _unravel(xp, p, data):
    """MXNet 1.9.1's unravel_index kernel on a 1-D input: ``idx = index_t(x)`` (truncated),
    then for the axes after the first ``r = idx - (idx / shape[j]) * shape[j]`` with C's
    truncating division; the first coordinate is what is left, unwrapped (-8 into (2, 3) is
    [-2, -2], 7 is [2, 1])."""
    shape = tuple(p.shape)
    _index_kernel_input(data, "_unravel_index")
    if data.ndim != 1 and data.size != data.shape[0]:
        # the output is (len(shape), data.shape[0]) but the kernel walks all data.size
        # entries: it writes past the output (a heap corruption in MXNet)
        raise GpundaError(f"Operator _unravel_index: input of shape {data.shape} is not "
                          f"supported: the indices must be a 1-D array (MXNet 1.9.1 writes "
                          f"past its ({len(shape)}, {data.shape[0]}) output)")
    idx = data.reshape(-1)
    idx = _trunc_int(xp, idx) if idx.dtype.kind == "f" else idx.astype(np.int64)
    parts = [None] * len(shape)
    for j in range(len(shape) - 1, 0, -1):
        d = shape[j]
        if d == 0:
            raise GpundaError(f"Operator _unravel_index: shape {shape} has a zero dimension "
                              f"(integer division by zero)")
        q = idx // d
        q = q + ((q * d != idx) & ((idx < 0) != (d < 0))).astype(np.int64)   # C truncation
        parts[j] = idx - q * d
        idx = q
    parts[0] = idx
    return xp.stack(parts).astype(data.dtype)


_SHAPE_P = Param("shape", "shape", doc="the array shape the indices refer to")
register(OpDef("_ravel_multi_index", _ravel, params=[_SHAPE_P], nondiff=True, save=(),
               aliases=("ravel_multi_index",), family="indexing",
               doc="Flat indices from (ndim, ...) multi-indices into `shape`."))
register(OpDef("_unravel_index", _unravel, params=[_SHAPE_P], nondiff=True, save=(),
               aliases=("unravel_index",), family="indexing",
               doc="(ndim, ...) multi-indices from flat indices into `shape`."))


def _mask_positions(xp, index, n, axis, where):
    if index.ndim != 1 or index.shape[0] != n:
        raise GpundaError(f"Operator {where}: index shape {index.shape} must be ({n},) to match "
                          f"axis {axis} of the data")
    return xp.nonzero(index != 0)[0]


def _boolean_mask(xp, p, x, index):
    ax = _norm_axis(p.axis, x.ndim, "_contrib_boolean_mask")
    pos = _mask_positions(xp, index, x.shape[ax], p.axis, "_contrib_boolean_mask")
    return xp.take(x, pos, axis=ax)


def _boolean_mask_backward(xp, p, g, index):
    shape = tuple(p.shape)
    ax = _norm_axis(p.axis, len(shape), "_contrib_boolean_mask")
    pos = _mask_positions(xp, index, shape[ax], p.axis, "_contrib_boolean_mask")
    z = xp.zeros(shape, g.dtype)
    z[(slice(None),) * ax + (pos,)] = g
    return z


register(OpDef(
    "_contrib_boolean_mask", _boolean_mask, inputs=("data", "index"),
    params=[Param("axis", "int", 0)], aliases=("boolean_mask",),
    gradient=lambda F, p, i, o, g: [F._contrib_boolean_mask_backward(g[0], i[1], axis=p.axis,
                                                                     shape=i[0].shape), None],
    save=("inputs",), family="indexing", capture="output shape depends on the data",
    doc="The slices along `axis` whose `index` entry is non-zero."))
register(OpDef(
    "_contrib_boolean_mask_backward", _boolean_mask_backward, inputs=("data", "index"),
    params=[Param("axis", "int", 0), Param("shape", "shape")],
    gradient=lambda F, p, i, o, g: [F._contrib_boolean_mask(g[0], i[1], axis=p.axis), None],
    save=("inputs",), hidden=True, family="indexing", capture="data-dependent positions",
    doc="Zeros of `shape` with the masked slices filled in (boolean_mask's adjoint)."))


def _index_rows(xp, idx, where):
    i = _ints(xp, idx)
    if i.ndim != 1:
        raise GpundaError(f"Operator {where}: index_vector must be 1-D, got shape {idx.shape}")
    return i


def _index_copy(xp, p, old, idx, new):
    i = _index_rows(xp, idx, "_contrib_index_copy")
    if new.shape != (i.shape[0],) + old.shape[1:]:
        raise GpundaError(f"Operator _contrib_index_copy: new_tensor shape {new.shape} must be "
                          f"{(i.shape[0],) + old.shape[1:]}")
    # MXNet writes row ``index_t(idx[k])`` with no check: a negative or too large index
    # writes outside the output (other memory), so gpunda refuses it
    if i.size and (int(i.min()) < 0 or int(i.max()) >= old.shape[0]):
        bad = int(i.min()) if int(i.min()) < 0 else int(i.max())
        raise GpundaError(f"Operator _contrib_index_copy: index_vector holds {bad}, outside "
                          f"[0, {old.shape[0]}) for old_tensor of shape {old.shape}")
    out = old.copy()
    out[i] = new
    return out


def _zero_rows(xp, p, g, idx):
    out = g.copy()
    out[_index_rows(xp, idx, "_contrib_index_copy")] = 0
    return out


register(OpDef(
    "_contrib_index_copy", _index_copy, inputs=("old_tensor", "index_vector", "new_tensor"),
    aliases=("index_copy",),
    gradient=lambda F, p, i, o, g: [F._index_zero_rows(g[0], i[1]), None,
                                    F.take(g[0], i[1], axis=0)],
    save=("inputs",), family="indexing",
    doc="A copy of old_tensor with rows index_vector replaced by new_tensor."))
register(OpDef(
    "_index_zero_rows", _zero_rows, inputs=("data", "index"),
    gradient=lambda F, p, i, o, g: [F._index_zero_rows(g[0], i[1]), None],
    save=("inputs",), hidden=True, family="indexing",
    doc="The input with the listed rows set to zero (self-adjoint)."))


def _index_array(xp, p, x):
    axes = tuple(range(x.ndim)) if p.axes is None else tuple(
        _norm_axis(a, x.ndim, "_contrib_index_array") for a in p.axes)
    grids = xp.indices(x.shape, dtype=np.int64) if x.ndim else xp.zeros((0,), np.int64)
    return xp.stack([grids[a] for a in axes], axis=-1) if axes else \
        xp.zeros(x.shape + (0,), np.int64)


register(OpDef("_contrib_index_array", _index_array,
               params=[Param("axes", "shape", None, "axes whose indices to return; None: all")],
               aliases=("index_array",), nondiff=True, save=(), family="indexing",
               doc="For each element, its index along `axes` (int64, last axis holds them)."))
