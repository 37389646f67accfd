"""Making sparse NDArrays (``mx.nd.sparse.csr_matrix``, ``row_sparse_array``,
``zeros``, ``empty``, ``array``) and checking their format.

MXNet's rules, which these follow:

* Built from parts (``(data, indices, indptr)`` / ``(data, indices)``), an
  array is only checked for what MXNet checks at creation: the parts' ranks
  and an inferable shape (``ValueError('invalid shape')``), and part lengths
  that cannot fit together. Parts whose *values* are wrong (indptr not
  monotone, indices out of range or unsorted, indptr not matching the shape)
  still make an array, and ``check_format()`` reports the problem, as in
  MXNet. gpunda records that problem on the storage holder, and any
  computation with the array refuses it (MXNet would read out of bounds).
* A shape given next to a source of another shape, a tuple of the wrong
  length, a CSRNDArray given to ``row_sparse_array`` (and the reverse), or an
  unknown stype in ``zeros`` are ``ValueError`` s, as in MXNet.
* Default dtype: that of an NDArray / NumPy / SciPy source, else float32.
  Default context: the current context (not the source's).
"""
from __future__ import annotations

import math

import numpy as np

from gpunda.base import GpundaError, integer_types
from gpunda.context import current_context
from gpunda.ops.sparse import ops as _so
from gpunda.ops.registry import parse_dtype
from gpunda.ops.sparse.ops import CSRData, RSPData, INDEX, to_stype
from gpunda.ndarray.ndarray import NDArray, _ctx_of, _check_shape
from gpunda.ndarray.ndarray import zeros as _dense_zeros
from gpunda.ndarray.sparse import CSRNDArray, RowSparseNDArray, _wrap, _CLS

# ----------------------------------------------------------------------------
# format checks: each returns the first problem as text, or None


def _show(a, limit=8):
    h = np.asarray(a if isinstance(a, np.ndarray) else a.get())
    s = np.array2string(h[:limit], separator=", ")
    return s[:-1] + ", ...]" if h.size > limit else s


def csr_size_problem(data, indices, indptr, shape):
    """What MXNet's ``check_format(full_check=False)`` rejects for csr parts."""
    if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1:
        return (f"csr data, indices and indptr must be 1-D, got shapes {tuple(data.shape)}, "
                f"{tuple(indices.shape)}, {tuple(indptr.shape)}")
    if indptr.shape[0] != shape[0] + 1:
        return (f"indptr has length {indptr.shape[0]} but shape {tuple(shape)} needs "
                f"{shape[0] + 1} (rows + 1)")
    if data.shape[0] != indices.shape[0]:
        return (f"data has length {data.shape[0]} but indices has length {indices.shape[0]}; "
                f"they must match")
    return None


def csr_value_problem(xp, data, indices, indptr, shape, order=True):
    """What the full check adds: indptr and column indices (parts of consistent sizes);
    with ``order=False`` column indices out of order within a row pass."""
    nnz = indices.shape[0]
    if int(indptr[0]) != 0:
        return f"indptr[0]={int(indptr[0])} must be 0"
    i = _so._first_true(xp, indptr < 0)
    if i >= 0:
        return f"indptr[{i}]={int(indptr[i])} must not be negative (indptr={_show(indptr)})"
    i = _so._first_true(xp, xp.diff(indptr) < 0)
    if i >= 0:
        return (f"indptr must be non-decreasing, but indptr[{i}]={int(indptr[i])} > "
                f"indptr[{i + 1}]={int(indptr[i + 1])} (indptr={_show(indptr)})")
    if int(indptr[-1]) != nnz:
        return f"indptr[-1]={int(indptr[-1])} must equal the number of stored values {nnz}"
    if not nnz:
        return None
    ncols = shape[1]
    i = _so._first_true(xp, (indices < 0) | (indices >= ncols))
    if i >= 0:
        return (f"indices[{i}]={int(indices[i])} is out of range for {ncols} columns "
                f"(shape {tuple(shape)})")
    return csr_order_problem(xp, indices, indptr) if order else None


def csr_order_problem(xp, indices, indptr, strict=True):
    """The first row whose column indices are not ascending and unique (``strict``), or,
    with ``strict=False``, the first row holding a column twice in any order."""
    nnz = indices.shape[0]
    if not nnz:
        return None
    rows = xp.searchsorted(indptr[1:], xp.arange(nnz), side="right")
    if not strict:      # unique in each row: the row-sorted indices must be ascending
        order = xp.lexsort(xp.stack([indices, rows]))
        indices, rows = indices[order], rows[order]
    i = _so._first_true(xp, (xp.diff(indices) <= 0) & (rows[1:] == rows[:-1]))
    if i < 0:
        return None
    if not strict:
        return f"row {int(rows[i])} holds column {int(indices[i])} twice"
    return (f"column indices of row {int(rows[i])} must be sorted and unique, got "
            f"indices[{i}]={int(indices[i])} then indices[{i + 1}]={int(indices[i + 1])}")


def rsp_size_problem(values, indices, shape):
    """What MXNet's ``check_format(full_check=False)`` rejects for row_sparse parts."""
    if indices.ndim != 1:
        return f"row_sparse indices must be 1-D, got shape {tuple(indices.shape)}"
    if values.ndim != len(shape) or tuple(values.shape[1:]) != tuple(shape[1:]):
        return (f"data has shape {tuple(values.shape)} but rows of an array of shape "
                f"{tuple(shape)} need shape (k,) + {tuple(shape[1:])}")
    if values.shape[0] != indices.shape[0]:
        return (f"data has {values.shape[0]} rows but indices has length {indices.shape[0]}; "
                f"they must match")
    return None


def rsp_value_problem(xp, indices, shape):
    """What the full check adds: row ids in range, ascending and unique."""
    if not indices.shape[0]:
        return None
    i = _so._first_true(xp, (indices < 0) | (indices >= shape[0]))
    if i >= 0:
        return (f"indices[{i}]={int(indices[i])} is out of range for {shape[0]} rows "
                f"(shape {tuple(shape)})")
    i = _so._first_true(xp, xp.diff(indices) <= 0)
    if i >= 0:
        return (f"row_sparse indices must be sorted ascending and unique (as MXNet's "
                f"check_format requires), but indices[{i}]={int(indices[i])} is followed by "
                f"{int(indices[i + 1])} (indices={_show(indices)})")
    return None


def check_format(raw, full_check=True):
    """Raise GpundaError naming the first problem of storage holder ``raw``."""
    xp = raw.xp
    if raw.stype == "csr":
        why = csr_size_problem(raw.data, raw.indices, raw.indptr, raw.shape)
        if why is None and full_check:
            why = csr_value_problem(xp, raw.data, raw.indices, raw.indptr, raw.shape)
    else:
        why = rsp_size_problem(raw.values, raw.indices, raw.shape)
        if why is None and full_check:
            why = rsp_value_problem(xp, raw.indices, raw.shape)
    if why is not None:
        raise GpundaError(f"check_format: {why}")


# ----------------------------------------------------------------------------
# parts


def _backend_array(x, ctx, dtype=None, where="", part=""):
    """``x`` (NDArray, NumPy/CuPy array, list) as a new backend array on ``ctx``."""
    if isinstance(x, NDArray):
        if x.stype != "default":
            raise GpundaError(f"{where}: {part} must be dense, got stype {x.stype}")
        r = ctx.backend.xp.array(x.as_in_context(ctx)._data, copy=True)
    elif hasattr(x, "__cuda_array_interface__") and ctx.device_type == "gpu":
        with ctx.backend.device_scope():
            r = ctx.backend.xp.array(x, copy=True)
    else:
        if hasattr(x, "__cuda_array_interface__"):
            import cupy
            x = cupy.asnumpy(x)
        try:
            h = np.array(x)
        except (TypeError, ValueError) as e:
            raise GpundaError(f"{where}: {part} cannot be made an array: {e}") from None
        if h.dtype == object:
            raise GpundaError(f"{where}: {part} is not numeric")
        r = h if ctx._xp is np else ctx.backend.from_host(h)
    if dtype is not None and r.dtype != dtype:
        r = r.astype(dtype)
    return r


def _index_part(x, ctx, where, part):
    r = _backend_array(x, ctx, None, where, part)
    if r.dtype.kind not in "iu" and r.size:
        if r.dtype.kind != "f" or bool((r != r.astype(INDEX)).any()):
            raise GpundaError(f"{where}: {part} must hold integers, got {_show(r.reshape(-1))}")
    return r.astype(INDEX, copy=False)


def _default_dtype(src, dtype):
    if dtype is not None:
        return parse_dtype(dtype, "dtype")
    if hasattr(src, "dtype") and not isinstance(src, (list, tuple)):
        return np.dtype(src.dtype)
    return np.dtype(np.float32)


def _is_shape(t):
    return isinstance(t, tuple) and len(t) > 0 and all(
        isinstance(d, integer_types) and not isinstance(d, bool) for d in t)


def _is_scipy_sparse(x):
    return hasattr(x, "tocsr") and hasattr(x, "nnz") and not isinstance(x, NDArray)


def _same_shape(given, shape, where):
    """MXNet's rule: a ``shape`` given beside a source of another shape is a ValueError."""
    if given is not None and tuple(given) != tuple(shape):
        raise ValueError(f"{where}: shape mismatch: shape={tuple(given)} but the source has "
                         f"shape {tuple(shape)}")


def _with_problem(raw, why):
    raw._bad = why
    return raw


def _dense_source(arg1, shape, ctx, dtype, stype, where):
    dt = _default_dtype(arg1, dtype)
    with ctx.backend.device_scope():
        d = _backend_array(arg1, ctx, dt, where, "source")
    _same_shape(shape, d.shape, where)
    if stype == "csr" and d.ndim != 2:
        raise ValueError(f"{where}: a dense source must be 2-D for csr, got shape "
                         f"{tuple(d.shape)}")
    if stype == "row_sparse" and d.ndim < 1:
        raise ValueError(f"{where}: a dense source must have at least 1 dimension")
    with ctx.backend.device_scope():
        return _wrap(to_stype(d, stype), ctx)


# ----------------------------------------------------------------------------
# the creation functions


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A CSRNDArray (MXNet's ``mx.nd.sparse.csr_matrix``).

    ``arg1`` is one of: ``(data, indices, indptr)`` (``shape`` defaults to
    ``(len(indptr) - 1, max(indices) + 1)``); ``(data, (row, col))``
    coordinates; a SciPy (or cupyx) sparse matrix or a CSRNDArray (copied,
    canonicalised); a dense NumPy array / NDArray / nested list; or a shape
    ``(M, N)`` for an all-zero array. Parts are not required to be valid
    (see the module docstring); ``check_format()`` says. Example::

        a = nd.sparse.csr_matrix(([1., 2.], [0, 2], [0, 1, 1, 2]), shape=(3, 3))
    """
    where = "csr_matrix"
    if shape is not None:
        shape = _check_shape(shape, where)
    if isinstance(arg1, tuple):
        if len(arg1) == 2 and isinstance(arg1[1], tuple) and len(arg1[1]) == 2:
            return _csr_from_coo(arg1[0], arg1[1], shape, ctx, dtype, where)
        if len(arg1) == 2:
            _same_shape(shape, arg1, where)
            return empty("csr", _check_shape(arg1, where), ctx=ctx, dtype=dtype)
        if len(arg1) == 3:
            return _csr_from_parts(arg1, shape, _ctx_of(ctx), dtype, where)
        raise ValueError(f"{where}: unexpected length of input tuple: {len(arg1)}")
    if isinstance(arg1, CSRNDArray) or _is_scipy_sparse(arg1):
        _same_shape(shape, arg1.shape, where)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        raise ValueError(f"{where}: unexpected input type: RowSparseNDArray (use "
                         f"tostype('csr'))")
    return _dense_source(arg1, shape, _ctx_of(ctx), dtype, "csr", where)


def _csr_from_coo(data, rc, shape, ctx, dtype, where):
    import scipy.sparse as sps

    def host(v):
        return v.asnumpy() if isinstance(v, NDArray) else np.asarray(v)
    try:
        m = sps.coo_matrix((host(data), (host(rc[0]), host(rc[1]))), shape=shape)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{where}: bad (data, (row, col)) input: {e}") from None
    return array(m.tocsr(), ctx=ctx, dtype=dtype)


def _csr_from_parts(parts, shape, ctx, dtype, where):
    dt = _default_dtype(parts[0], dtype)
    with ctx.backend.device_scope():
        data = _backend_array(parts[0], ctx, dt, where, "data")
        indices = _index_part(parts[1], ctx, where, "indices")
        indptr = _index_part(parts[2], ctx, where, "indptr")
        if shape is None:
            if indices.ndim != 1 or indices.shape[0] == 0:
                raise ValueError(f"{where}: invalid shape: cannot infer the shape from empty "
                                 f"indices; pass shape=")
            shape = (indptr.shape[0] - 1, max(int(indices.max()) + 1, 0))
        if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1 or indptr.shape[0] == 0 \
                or len(shape) != 2:
            raise ValueError(f"{where}: invalid shape: data, indices and indptr must be 1-D "
                             f"(indptr not empty) and shape 2-D, got shapes "
                             f"{tuple(data.shape)}, {tuple(indices.shape)}, "
                             f"{tuple(indptr.shape)} and shape={shape}")
        if data.shape[0] != indices.shape[0]:
            raise GpundaError(f"{where}: data has length {data.shape[0]} but indices has length "
                              f"{indices.shape[0]}; they must match")
        xp = ctx.backend.xp
        why = csr_size_problem(data, indices, indptr, shape) or \
            csr_value_problem(xp, data, indices, indptr, shape, order=False)
        raw = CSRData(data, indices, indptr, shape)
        if why is None and csr_order_problem(xp, indices, indptr) is not None:
            # NOTE [Unsorted csr columns]: MXNet keeps and computes with column indices in
            # any order within a row (only check_format(full_check=True) refuses them);
            # a column held twice in one row is malformed
            why = csr_order_problem(xp, indices, indptr, strict=False)
            raw._unsorted = why is None
    return _wrap(_with_problem(raw, why), ctx)


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A RowSparseNDArray (MXNet's ``mx.nd.sparse.row_sparse_array``).

    ``arg1`` is one of: ``(data, indices)`` where ``data[i]`` is row
    ``indices[i]`` (ascending row ids; ``shape`` defaults to
    ``(indices[-1] + 1,) + data.shape[1:]``); a dense NumPy array / NDArray /
    nested list; a RowSparseNDArray (copied); or a shape for an all-zero array.
    Example::

        w = nd.sparse.row_sparse_array(([[1., 2.], [3., 4.]], [1, 3]), shape=(5, 2))
    """
    where = "row_sparse_array"
    if shape is not None:
        shape = _check_shape(shape, where)
    if isinstance(arg1, tuple):
        if len(arg1) < 2:
            raise ValueError(f"{where}: unexpected length of input tuple: {len(arg1)}")
        if len(arg1) > 2 or _is_shape(arg1):
            _same_shape(shape, arg1, where)
            return empty("row_sparse", _check_shape(arg1, where), ctx=ctx, dtype=dtype)
        return _rsp_from_parts(arg1, shape, _ctx_of(ctx), dtype, where)
    if isinstance(arg1, RowSparseNDArray):
        _same_shape(shape, arg1.shape, where)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, CSRNDArray):
        raise ValueError(f"{where}: unexpected input type: CSRNDArray (use "
                         f"tostype('row_sparse'))")
    return _dense_source(arg1, shape, _ctx_of(ctx), dtype, "row_sparse", where)


def _rsp_from_parts(parts, shape, ctx, dtype, where):
    dt = _default_dtype(parts[0], dtype)
    with ctx.backend.device_scope():
        values = _backend_array(parts[0], ctx, dt, where, "data")
        indices = _index_part(parts[1], ctx, where, "indices")
        if shape is None:
            if indices.ndim != 1 or indices.shape[0] == 0:
                raise ValueError(f"{where}: invalid shape: cannot infer the shape from empty "
                                 f"indices; pass shape=")
            # MXNet takes the last row id (ids are meant to be ascending)
            shape = (max(int(indices[-1]) + 1, 0),) + tuple(values.shape[1:])
        if values.ndim != len(shape) or indices.ndim != 1 or math.prod(shape[1:]) == 0:
            raise ValueError(f"{where}: invalid shape: data of shape {tuple(values.shape)} and "
                             f"indices of shape {tuple(indices.shape)} do not make an array of "
                             f"shape {shape} (rows must not be empty)")
        why = rsp_size_problem(values, indices, shape)
        if why is not None:
            raise GpundaError(f"{where}: {why}")
        why = rsp_value_problem(ctx.backend.xp, indices, shape)
    return _wrap(_with_problem(RSPData(indices, values, shape), why), ctx)


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """An all-zero array of storage ``stype`` ('default', 'csr', 'row_sparse')."""
    if stype in (None, "default"):
        return _dense_zeros(shape, ctx=ctx, dtype=dtype)
    if stype not in _CLS:
        raise ValueError(f"zeros: unknown storage type stype={stype!r}; use 'default', 'csr' "
                         f"or 'row_sparse'")
    shape = _check_shape(shape, "zeros")
    if stype == "csr" and len(shape) != 2:
        raise GpundaError(f"zeros: a csr array needs a 2-D shape, got shape={shape}")
    if stype == "row_sparse" and len(shape) < 1:
        raise GpundaError(f"zeros: a row_sparse array needs at least 1 dimension, got shape={shape}")
    ctx = _ctx_of(ctx)
    dt = np.dtype(np.float32) if dtype is None else parse_dtype(dtype, "zeros")
    with ctx.backend.device_scope():
        return _wrap(_so.empty_like_stype(ctx.backend.xp, stype, shape, dt), ctx)


def empty(stype, shape, ctx=None, dtype=None):
    """An array of storage ``stype`` 'csr' or 'row_sparse' (all zeros: sparse storage
    holds no garbage)."""
    if stype not in _CLS:
        raise ValueError(f"empty: unknown stype={stype!r}; use 'csr' or 'row_sparse'")
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """A sparse copy of a CSRNDArray / RowSparseNDArray or a SciPy sparse matrix
    (canonicalised: duplicates summed, column indices sorted), on ``ctx`` (default:
    the current context) with ``dtype`` (default: the source's)."""
    ctx = current_context() if ctx is None else _ctx_of(ctx)
    if isinstance(source_array, (CSRNDArray, RowSparseNDArray)):
        raw = source_array._data
        raw.refuse_if_malformed("sparse.array")
        dt = _default_dtype(source_array, dtype)
        src = source_array if source_array._ctx is ctx else source_array.as_in_context(ctx)
        return _wrap(to_stype(src._data, raw.stype, copy=True, dtype=dt), ctx)
    if _is_scipy_sparse(source_array):
        m = source_array.tocsr(copy=True)
        m.sum_duplicates()
        m.sort_indices()
        if hasattr(m.data, "get") and ctx.device_type == "cpu":
            parts = (m.data.get(), m.indices.get(), m.indptr.get())
        else:
            parts = (m.data, m.indices, m.indptr)
        return _csr_from_parts(parts, m.shape, ctx, _default_dtype(m, dtype), "sparse.array")
    if isinstance(source_array, NDArray):
        raise ValueError("sparse.array: source_array is a dense NDArray; use tostype('csr') or "
                         "tostype('row_sparse') to make a sparse array from it")
    raise ValueError(f"sparse.array: source_array must be a CSRNDArray, RowSparseNDArray or "
                     f"scipy.sparse matrix, got {type(source_array).__name__}; use "
                     f"csr_matrix/row_sparse_array (or mx.nd.array) for dense sources")



# ----------------------------------------------------------------------------
# MXNet's C-API way of building a sparse array: allocate the parts, then copy into each


def _aux_shape(s, where):
    s = (int(s),) if np.ndim(s) == 0 else tuple(int(d) for d in s)
    if len(s) != 1 or s[0] < 0:
        raise GpundaError(f"{where}: an aux shape must be 1-D, got {s}")
    return s


def allocate_parts(stype, shape, ctx, dtype, aux_shapes):
    """A sparse NDArray whose parts have MXNet's shapes for ``aux_shapes`` (zeros):
    csr ``[indptr, indices]`` with data shaped as indices, row_sparse ``[indices]`` with
    data ``(k,) + shape[1:]``."""
    where = "sparse._new_alloc_handle"
    ctx = _ctx_of(ctx)
    dt = parse_dtype(dtype if dtype is not None else np.float32, "dtype")
    need = {"csr": 2, "row_sparse": 1}.get(stype)
    if need is None:
        raise GpundaError(f"{where}: stype={stype!r} must be 'csr' or 'row_sparse'")
    aux = [_aux_shape(s, where) for s in aux_shapes]
    if len(aux) != need:
        raise GpundaError(f"{where}: a {stype} array has {need} aux arrays, got "
                          f"aux_shapes={list(aux_shapes)}")
    xp = ctx.backend.xp
    with ctx.backend.device_scope():
        if stype == "csr":
            if len(shape) != 2:
                raise GpundaError(f"{where}: a csr array is 2-D, got shape {shape}")
            raw = CSRData(xp.zeros(aux[1], dt), xp.zeros(aux[1], INDEX),
                          xp.zeros(aux[0], INDEX), shape)
        else:
            raw = RSPData(xp.zeros(aux[0], INDEX), xp.zeros(aux[0] + tuple(shape[1:]), dt),
                          shape)
    return _wrap(_revalidated(raw), ctx)


def _revalidated(raw):
    """``raw`` with its format state (``_bad``, ``_unsorted``) derived from its parts, as
    creation from parts derives it."""
    xp = raw.xp
    raw._bad = None
    if raw.stype == "csr":
        raw._unsorted, raw._canon = False, None
        why = csr_size_problem(raw.data, raw.indices, raw.indptr, raw.shape) or \
            csr_value_problem(xp, raw.data, raw.indices, raw.indptr, raw.shape, order=False)
        if why is None and csr_order_problem(xp, raw.indices, raw.indptr) is not None:
            why = csr_order_problem(xp, raw.indices, raw.indptr, strict=False)
            raw._unsorted = why is None
    else:
        why = rsp_size_problem(raw.values, raw.indices, raw.shape) or \
            rsp_value_problem(xp, raw.indices, raw.shape)
    raw._bad = why
    return raw


def sync_copy_from_ndarray(dst, src, j):
    """MXNet's ``MXNDArraySyncCopyFromNDArray(dst, src, j)``: the values of ``src`` (its
    data) copied into the start of part ``j`` of ``dst`` (-1: the data; csr 0: indptr,
    1: indices; row_sparse 0: indices), cast to that part's dtype. The part must hold at
    least ``src.size`` values; a dense ``dst`` takes only ``j=-1`` and ``src``'s shape."""
    where = "_LIB.MXNDArraySyncCopyFromNDArray"
    for name, a in (("handle_dst", dst), ("handle_src", src)):
        if not isinstance(a, NDArray):
            raise GpundaError(f"{where}: {name} does not name an NDArray")
    if src is dst:
        return      # MXNet skips a copy to itself (with a warning)
    s = src._data
    values = s if src.stype == "default" else (s.data if src.stype == "csr" else s.values)
    j = int(j)
    if dst.stype == "default":
        if j >= 0:
            raise GpundaError(f"{where}: a dense destination has no aux array {j}")
        if tuple(values.shape) != tuple(dst.shape):
            raise GpundaError(f"{where}: a dense destination of shape {dst.shape} takes a "
                              f"source of its shape, got {tuple(values.shape)}")
        dst[:] = src if src.stype == "default" else values
        return
    raw = dst._data
    names = {"csr": {-1: "data", 0: "indptr", 1: "indices"},
             "row_sparse": {-1: "values", 0: "indices"}}[dst.stype]
    if j < -1 or j not in names:
        raise GpundaError(f"{where}: a {dst.stype} array has no part {j} (-1: data, "
                          f"{', '.join(f'{k}: {v}' for k, v in names.items() if k >= 0)})")
    part = getattr(raw, names[j])
    flat = dst.context.backend.from_host(
        np.ascontiguousarray(src.context.backend.to_host(values)).reshape(-1))
    if flat.size > part.size:
        raise GpundaError(f"{where}: the source holds {flat.size} values but part {j} "
                          f"({names[j]}) of the destination holds {part.size}")
    with dst.context.backend.device_scope():
        new = part.copy()
        new.reshape(-1)[:flat.size] = flat.astype(part.dtype)
    parts = {k: getattr(raw, k) for k in names.values()}
    parts[names[j]] = new
    if dst.stype == "csr":
        fresh = CSRData(parts["data"], parts["indices"], parts["indptr"], raw.shape)
    else:
        fresh = RSPData(parts["indices"], parts["values"], raw.shape)
    raw._rebind(_revalidated(fresh))
