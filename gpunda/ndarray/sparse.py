"""Sparse NDArrays (MXNet 1.x ``mx.nd.sparse``) and the storage-type dispatcher.

``CSRNDArray`` (2-D compressed rows) and ``RowSparseNDArray`` (a subset of rows
of an array of any rank >= 1) are NDArray subclasses whose ``_data`` slot holds
a storage holder (``CSRData`` / ``RSPData`` from gpunda/ops/sparse_ops.py).

Dispatch: ``imperative.invoke_parsed`` sends every call with a sparse input to
``_sparse_invoke``: it looks the input stypes up in ``op.sparse`` (NOTE [Sparse
kernels] in sparse_ops.py), runs the native kernel, or falls back (densify,
compute, dense output) and logs that once per op on the ``gpunda`` logger
(``GPUNDA_STORAGE_FALLBACK_LOG=0`` silences it). Under ``autograd.record()``
the call is recorded like a dense one; its node gets a per-node rule that
handles sparse values and hands each input a gradient of the stype that input
can take (sparse for sparse-aware nodes and sparse gradient buffers, dense
otherwise).

Two ops produce sparse output from dense inputs (``cast_storage``,
``_embedding_rsp_grad``); they set ``OpDef.sparse_out``, so invoke sends every
call of theirs through ``_sparse_invoke`` (``nd.cast_storage`` also checks its
arguments here). Raw storage holders
offer ``_gpunda_wrap(ctx)`` (the matching NDArray class), which
``autograd.grad`` uses for sparse gradients.
"""
from __future__ import annotations

import logging
import os
import sys
import types

import numpy as np

from .. import autograd as _ag
from .. import imperative as _imp
from ..base import GpundaError
from ..context import Context, current_context
from ..ops import sparse_ops as _so
from ..ops.registry import get_op, parse_dtype
from ..ops.sparse_ops import CSRData, RSPData, INDEX, to_stype, to_dense, stype_of
from .ndarray import NDArray, _new, _ctx_of, _check_shape
from .ndarray import array as _dense_array, zeros as _dense_zeros

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix",
           "row_sparse_array", "zeros", "empty", "array", "add", "subtract", "multiply",
           "divide", "cast_storage", "retain"]

_log = logging.getLogger("gpunda")
_is_rec = _ag._is_rec


# ----------------------------------------------------------------------------
# the classes

class BaseSparseNDArray(NDArray):
    """Common part of CSRNDArray and RowSparseNDArray (MXNet's BaseSparseNDArray)."""

    __slots__ = ()

    def __repr__(self):
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n<{type(self).__name__} {shape_info} @{self._ctx}>"

    def __len__(self):
        return self.shape[0]

    def asnumpy(self):
        """A dense NumPy copy of the values."""
        d = to_dense(self._data)
        if d is self._data:
            d = d.copy()
        return d if isinstance(d, np.ndarray) else self._ctx.backend.to_host(d)

    @property
    def data(self):
        """The stored values as a dense NDArray (a copy)."""
        return _new(self._data.data.copy(), self._ctx)

    @property
    def indices(self):
        """The int64 index array as an NDArray (a copy)."""
        return _new(self._data.indices.copy(), self._ctx)

    def _sparse_unsupported(self, what):
        raise GpundaError(f"{what} is not supported for {type(self).__name__} "
                          f"(stype {self.stype}); convert with tostype('default') first")

    def reshape(self, *shape, **kwargs):
        """Not supported on sparse storage (as in MXNet): GpundaError."""
        self._sparse_unsupported("reshape")

    def __dlpack__(self, *args, **kwargs):
        self._sparse_unsupported("DLPack export")

    def to_dlpack_for_read(self):
        self._sparse_unsupported("DLPack export")

    to_dlpack_for_write = to_dlpack_for_read

    def __reduce__(self):
        d = self._data
        host = self._ctx.backend.to_host
        parts = tuple(host(a) for a in ((d.data, d.indices, d.indptr) if d.stype == "csr"
                                        else (d.values, d.indices)))
        return (_unpickle, (self.stype, parts, d.shape, self._ctx.device_type,
                            self._ctx.device_id))

    def detach(self):
        """The same storage, cut from the autograd graph."""
        a = _wrap(self._data, self._ctx)
        a._base = self._base if self._base is not None else self
        return a

    def _assign_from(self, src):
        raw = src._data if isinstance(src, NDArray) else src
        if not isinstance(raw, (CSRData, RSPData)) and not hasattr(raw, "shape"):
            raw = self._ctx.backend.xp.full(self.shape, raw, self._data.dtype)
        if tuple(raw.shape) != tuple(self.shape):
            raise GpundaError(f"assign: source has shape {tuple(raw.shape)} but the "
                              f"{type(self).__name__} has shape {self.shape}")
        self._data[...] = raw
        _ag.bump_version(self)

    def __setitem__(self, key, value):
        if not (key is Ellipsis or key == slice(None)):
            raise GpundaError(f"__setitem__: {type(self).__name__} only supports x[:] = value, "
                              f"got key={key!r}")
        _ag.check_writable(self, "__setitem__")
        if isinstance(value, NDArray):
            if value._ctx is not self._ctx:
                value = value.as_in_context(self._ctx)
        elif hasattr(value, "tocsr"):
            value = csr_matrix(value, ctx=self._ctx, dtype=self.dtype)
        elif isinstance(value, (np.ndarray, list, tuple)):
            value = _dense_array(value, ctx=self._ctx, dtype=self.dtype)
        else:
            raise GpundaError(f"__setitem__: cannot assign a {type(value).__name__} to a "
                              f"{type(self).__name__}; use an NDArray, NumPy array or SciPy matrix")
        self._assign_from(value)

    def _copy_into(self, other):
        """Copy into NDArray ``other``, converted to its stype (``copyto`` checks first)."""
        src = self.as_in_context(other._ctx)
        raw = to_stype(src._data, other.stype, dtype=np.dtype(other.dtype))
        if other.stype == "default":
            other._assign_from(_new(raw, other._ctx))
        else:
            other._assign_from(raw)

    def _to_ctx(self, ctx):
        return _transfer(self, ctx)

    def check_format(self, full_check=True):
        """Raise GpundaError when the parts do not form a valid array of this stype.

        ``full_check=False`` checks only the sizes (cheap); the full check also
        checks index ranges and ordering.
        """
        d = self._data
        if d.stype == "csr":
            _check_csr(d.xp, d.data, d.indices, d.indptr, d.shape, "check_format", full_check)
        else:
            _check_rsp(d.xp, d.values, d.indices, d.shape, "check_format", full_check)


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format (MXNet's CSRNDArray).

    Parts: ``data`` (values), ``indices`` (column ids, int64), ``indptr`` (row
    starts, int64). ``asscipy()`` gives a ``scipy.sparse.csr_matrix``.
    """

    __slots__ = ()
    stype = "csr"

    @property
    def indptr(self):
        """The int64 row-pointer array as an NDArray (a copy)."""
        return _new(self._data.indptr.copy(), self._ctx)

    def asscipy(self):
        """A ``scipy.sparse.csr_matrix`` copy (on the host)."""
        import scipy.sparse as sps
        d = self._data
        host = self._ctx.backend.to_host
        return sps.csr_matrix((np.array(host(d.data)), np.array(host(d.indices)),
                               np.array(host(d.indptr))), shape=d.shape)

    def __getitem__(self, key):
        n = self.shape[0]
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            k = int(key)
            if not -n <= k < n:
                raise GpundaError(f"__getitem__: row {key} is out of range for a CSRNDArray "
                                  f"with {n} rows")
            k %= n
            start, stop = k, k + 1
        elif isinstance(key, slice):
            if key.step not in (None, 1):
                raise GpundaError(f"__getitem__: CSRNDArray slicing needs step 1, got {key!r}")
            start, stop, _ = key.indices(n)
            stop = max(stop, start)
        else:
            raise GpundaError(f"__getitem__: CSRNDArray supports an int or a row slice, got "
                              f"{key!r}")
        d = self._data
        xp = d.xp
        lo, hi = int(d.indptr[start]), int(d.indptr[stop])
        return _wrap(CSRData(d.data[lo:hi].copy(), d.indices[lo:hi].copy(),
                             d.indptr[start:stop + 1] - lo, (stop - start, self.shape[1])),
                     self._ctx)


class RowSparseNDArray(BaseSparseNDArray):
    """A subset of rows of an array (MXNet's RowSparseNDArray): ``indices``
    (sorted unique int64 row ids) and ``data`` (those rows, dense)."""

    __slots__ = ()
    stype = "row_sparse"

    def __getitem__(self, key):
        if key is Ellipsis or key == slice(None):
            return self
        raise GpundaError(f"__getitem__: RowSparseNDArray only supports [:], got {key!r}")

    def retain(self, indices):
        """Keep only the rows whose ids are in ``indices`` (``nd.sparse.retain``)."""
        from . import _op
        return _op._sparse_retain(self, indices)


_alloc = object.__new__
_CLS = {"csr": CSRNDArray, "row_sparse": RowSparseNDArray}


def _wrap(raw, ctx):
    """An NDArray of the class matching raw storage ``raw``."""
    st = stype_of(raw)
    if st == "default":
        return _new(raw, ctx)
    a = _alloc(_CLS[st])
    a._data = raw
    a._ctx = ctx
    return a


def _rewrap(x):
    """A plain NDArray that autograd made around sparse storage -> the sparse class."""
    if x is None or type(x) is not NDArray or stype_of(x._data) == "default":
        return x
    a = _wrap(x._data, x._ctx)
    a._ag = x._ag
    return a


def _transfer(src, ctx):
    d = src._data
    host = src._ctx.backend.to_host
    b = ctx.backend

    def mv(a):
        return b.from_host(host(a))
    with b.device_scope():
        if d.stype == "csr":
            raw = CSRData(mv(d.data), mv(d.indices), mv(d.indptr), d.shape)
        else:
            raw = RSPData(mv(d.indices), mv(d.values), d.shape)
    return _wrap(raw, ctx)


def _unpickle(stype, parts, shape, dev_type, dev_id):
    try:
        ctx = Context(dev_type, dev_id)
        ctx.backend
    except GpundaError:
        ctx = Context("cpu", 0)
    if stype == "csr":
        return csr_matrix(tuple(parts), shape=shape, ctx=ctx)
    return row_sparse_array(tuple(parts), shape=shape, ctx=ctx)


# ----------------------------------------------------------------------------
# validation (each message names the function, the part and the value)

def _show(a, limit=8):
    h = np.asarray(a if isinstance(a, np.ndarray) else a.get())
    s = np.array2string(h[:limit], separator=", ")
    return s[:-1] + ", ...]" if h.size > limit else s


def _check_csr(xp, data, indices, indptr, shape, where, full=True):
    nrows, ncols = shape
    if data.ndim != 1 or indices.ndim != 1 or indptr.ndim != 1:
        raise GpundaError(f"{where}: csr data, indices and indptr must be 1-D, got shapes "
                          f"{tuple(data.shape)}, {tuple(indices.shape)}, {tuple(indptr.shape)}")
    if indptr.shape[0] != nrows + 1:
        raise GpundaError(f"{where}: indptr has length {indptr.shape[0]} but shape {tuple(shape)} "
                          f"needs {nrows + 1} (rows + 1)")
    if data.shape[0] != indices.shape[0]:
        raise GpundaError(f"{where}: data has length {data.shape[0]} but indices has length "
                          f"{indices.shape[0]}; they must match")
    if int(indptr[0]) != 0:
        raise GpundaError(f"{where}: indptr[0]={int(indptr[0])} must be 0")
    if int(indptr[-1]) != indices.shape[0]:
        raise GpundaError(f"{where}: indptr[-1]={int(indptr[-1])} must equal the number of "
                          f"stored values {indices.shape[0]}")
    if not full:
        return
    i = _so._first_true(xp, xp.diff(indptr) < 0)
    if i >= 0:
        raise GpundaError(f"{where}: indptr must be non-decreasing, but indptr[{i}]="
                          f"{int(indptr[i])} > indptr[{i + 1}]={int(indptr[i + 1])} "
                          f"(indptr={_show(indptr)})")
    if indices.shape[0]:
        i = _so._first_true(xp, (indices < 0) | (indices >= ncols))
        if i >= 0:
            raise GpundaError(f"{where}: indices[{i}]={int(indices[i])} is out of range for "
                              f"{ncols} columns (shape {tuple(shape)})")
        rows = xp.searchsorted(indptr[1:], xp.arange(indices.shape[0]), side="right")
        bad = (xp.diff(indices) <= 0) & (rows[1:] == rows[:-1])
        i = _so._first_true(xp, bad)
        if i >= 0:
            raise GpundaError(f"{where}: column indices of row {int(rows[i])} must be sorted "
                              f"and unique, got indices[{i}]={int(indices[i])} then "
                              f"indices[{i + 1}]={int(indices[i + 1])}")


def _check_rsp(xp, values, indices, shape, where, full=True):
    if indices.ndim != 1:
        raise GpundaError(f"{where}: row_sparse indices must be 1-D, got shape {tuple(indices.shape)}")
    if values.ndim != len(shape) or tuple(values.shape[1:]) != tuple(shape[1:]):
        raise GpundaError(f"{where}: data has shape {tuple(values.shape)} but rows of an array "
                          f"of shape {tuple(shape)} need shape (k,) + {tuple(shape[1:])}")
    if values.shape[0] != indices.shape[0]:
        raise GpundaError(f"{where}: data has {values.shape[0]} rows but indices has length "
                          f"{indices.shape[0]}; they must match")
    if not full or not indices.shape[0]:
        return
    i = _so._first_true(xp, (indices < 0) | (indices >= shape[0]))
    if i >= 0:
        raise GpundaError(f"{where}: indices[{i}]={int(indices[i])} is out of range for "
                          f"{shape[0]} rows (shape {tuple(shape)})")
    i = _so._first_true(xp, xp.diff(indices) <= 0)
    if i >= 0:
        raise GpundaError(f"{where}: row_sparse indices must be sorted ascending and unique "
                          f"(as MXNet's check_format requires), but indices[{i}]="
                          f"{int(indices[i])} is followed by {int(indices[i + 1])} "
                          f"(indices={_show(indices)})")


# ----------------------------------------------------------------------------
# creation

def _backend_array(x, ctx, dtype=None, where="", part=""):
    """``x`` (NDArray, NumPy/CuPy array, list) as a backend array on ``ctx``."""
    if isinstance(x, NDArray):
        if x.stype != "default":
            raise GpundaError(f"{where}: {part} must be dense, got stype {x.stype}")
        x = x.as_in_context(ctx)._data
        xp = ctx.backend.xp
        r = xp.array(x, copy=True)
    elif hasattr(x, "__cuda_array_interface__") and ctx.device_type == "gpu":
        xp = ctx.backend.xp
        with ctx.backend.device_scope():
            r = xp.array(x, copy=True)
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
    if r.ndim != 1:
        raise GpundaError(f"{where}: {part} must be 1-D, got shape {tuple(r.shape)}")
    if r.dtype.kind not in "iu":
        if r.dtype.kind == "f" and r.size and bool((r != r.astype(INDEX)).any()):
            raise GpundaError(f"{where}: {part} must hold integers, got {_show(r)}")
        if r.dtype.kind not in "fiu" and r.size:
            raise GpundaError(f"{where}: {part} must hold integers, got dtype {r.dtype.name}")
    return r.astype(INDEX, copy=False)


def _default_dtype(src, dtype):
    if dtype is not None:
        return parse_dtype(dtype, "dtype")
    if isinstance(src, NDArray) or hasattr(src, "dtype"):
        return np.dtype(src.dtype)
    return np.dtype(np.float32)


def _is_shape(t):
    return isinstance(t, tuple) and all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                                        for d in t) and len(t) > 0


def _is_scipy_sparse(x):
    return hasattr(x, "tocsr") and hasattr(x, "nnz") and not isinstance(x, NDArray)


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A CSRNDArray (MXNet's ``mx.nd.sparse.csr_matrix``).

    ``arg1`` is one of: ``(data, indices, indptr)`` (with ``shape``, else it is
    inferred); ``(data, (row, col))`` coordinates; a SciPy (or cupyx) sparse
    matrix; a dense NumPy array / NDArray; a CSRNDArray (copied); or a shape
    ``(M, N)`` for an all-zero array. Parts are checked; a malformed part
    raises GpundaError naming it. Example::

        a = nd.sparse.csr_matrix(([1., 2.], [0, 2], [0, 1, 1, 2]), shape=(3, 3))
    """
    where = "csr_matrix"
    ctx = _ctx_of(ctx)
    if shape is not None:
        shape = _check_shape(shape, where)
        if len(shape) != 2:
            raise GpundaError(f"{where}: shape={shape} must have 2 dimensions")
    if isinstance(arg1, tuple) and _is_shape(arg1):
        if len(arg1) != 2:
            raise GpundaError(f"{where}: shape={arg1} must have 2 dimensions")
        return zeros("csr", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, CSRNDArray):
        r = arg1.as_in_context(ctx).copy() if arg1._ctx is not ctx else arg1.copy()
        return r if dtype is None else r.astype(dtype)
    if isinstance(arg1, RowSparseNDArray):
        arg1 = arg1.as_in_context(ctx)
        return _wrap(to_stype(arg1._data, "csr", dtype=None if dtype is None else
                              parse_dtype(dtype, where)), ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], (tuple, list)) \
            and len(arg1[1]) == 2:
        import scipy.sparse as sps
        data = np.asarray(arg1[0].asnumpy() if isinstance(arg1[0], NDArray) else arg1[0])
        row, col = (np.asarray(v.asnumpy() if isinstance(v, NDArray) else v) for v in arg1[1])
        try:
            m = sps.coo_matrix((data, (row, col)), shape=shape)
        except (ValueError, TypeError) as e:
            raise GpundaError(f"{where}: bad (data, (row, col)) input: {e}") from None
        return csr_matrix(m, ctx=ctx, dtype=_default_dtype(arg1[0], dtype))
    if isinstance(arg1, tuple) and len(arg1) == 3:
        dt = _default_dtype(arg1[0], dtype)
        with ctx.backend.device_scope():
            data = _backend_array(arg1[0], ctx, dt, where, "data")
            indices = _index_part(arg1[1], ctx, where, "indices")
            indptr = _index_part(arg1[2], ctx, where, "indptr")
            if data.ndim != 1:
                raise GpundaError(f"{where}: data must be 1-D, got shape {tuple(data.shape)}")
            if shape is None:
                ncols = int(indices.max()) + 1 if indices.shape[0] else 0
                shape = (max(indptr.shape[0] - 1, 0), ncols)
            _check_csr(ctx.backend.xp, data, indices, indptr, shape, where)
        return _wrap(CSRData(data, indices, indptr, shape), ctx)
    if _is_scipy_sparse(arg1):
        m = arg1.tocsr()
        if shape is not None and tuple(m.shape) != shape:
            raise GpundaError(f"{where}: shape={shape} does not match the matrix shape {m.shape}")
        m = m.copy()
        m.sum_duplicates()
        m.sort_indices()
        dt = _default_dtype(m, dtype)
        if hasattr(m.data, "get") and ctx.device_type == "cpu":
            parts = (m.data.get(), m.indices.get(), m.indptr.get())
        else:
            parts = (m.data, m.indices, m.indptr)
        return csr_matrix(parts, shape=m.shape, ctx=ctx, dtype=dt)
    if isinstance(arg1, (NDArray, np.ndarray, list)) or hasattr(arg1, "__cuda_array_interface__"):
        dt = _default_dtype(arg1, dtype)
        with ctx.backend.device_scope():
            d = _backend_array(arg1, ctx, dt, where, "source")
            if d.ndim != 2:
                raise GpundaError(f"{where}: a dense source must be 2-D, got shape {tuple(d.shape)}")
            if shape is not None and tuple(d.shape) != shape:
                raise GpundaError(f"{where}: shape={shape} does not match the source shape "
                                  f"{tuple(d.shape)}")
            return _wrap(to_stype(d, "csr"), ctx)
    raise GpundaError(f"{where}: cannot make a CSRNDArray from {type(arg1).__name__}")


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A RowSparseNDArray (MXNet's ``mx.nd.sparse.row_sparse_array``).

    ``arg1`` is one of: ``(data, indices)`` where ``indices`` are sorted unique
    row ids and ``data[i]`` is row ``indices[i]`` (``shape`` defaults to
    ``(max(indices) + 1,) + data.shape[1:]``); a dense NumPy array / NDArray; a
    RowSparseNDArray (copied); or a shape for an all-zero array. Unsorted or
    duplicated indices are rejected (MXNet's check_format rejects them too).
    Example::

        w = nd.sparse.row_sparse_array(([[1., 2.], [3., 4.]], [1, 3]), shape=(5, 2))
    """
    where = "row_sparse_array"
    ctx = _ctx_of(ctx)
    if shape is not None:
        shape = _check_shape(shape, where)
        if len(shape) < 1:
            raise GpundaError(f"{where}: shape={shape} must have at least 1 dimension")
    if isinstance(arg1, tuple) and _is_shape(arg1):
        return zeros("row_sparse", arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        r = arg1.as_in_context(ctx).copy() if arg1._ctx is not ctx else arg1.copy()
        return r if dtype is None else r.astype(dtype)
    if isinstance(arg1, CSRNDArray):
        arg1 = arg1.as_in_context(ctx)
        return _wrap(to_stype(arg1._data, "row_sparse", dtype=None if dtype is None else
                              parse_dtype(dtype, where)), ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        dt = _default_dtype(arg1[0], dtype)
        with ctx.backend.device_scope():
            values = _backend_array(arg1[0], ctx, dt, where, "data")
            indices = _index_part(arg1[1], ctx, where, "indices")
            if values.ndim < 1:
                raise GpundaError(f"{where}: data must have at least 1 dimension")
            if shape is None:
                n = int(indices.max()) + 1 if indices.shape[0] else 0
                shape = (n,) + tuple(values.shape[1:])
            _check_rsp(ctx.backend.xp, values, indices, shape, where)
        return _wrap(RSPData(indices, values, shape), ctx)
    if isinstance(arg1, (NDArray, np.ndarray, list)) or hasattr(arg1, "__cuda_array_interface__"):
        dt = _default_dtype(arg1, dtype)
        with ctx.backend.device_scope():
            d = _backend_array(arg1, ctx, dt, where, "source")
            if shape is not None and tuple(d.shape) != shape:
                raise GpundaError(f"{where}: shape={shape} does not match the source shape "
                                  f"{tuple(d.shape)}")
            return _wrap(to_stype(d, "row_sparse"), ctx)
    raise GpundaError(f"{where}: cannot make a RowSparseNDArray from {type(arg1).__name__}")


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """An all-zero array of storage ``stype`` ('default', 'csr', 'row_sparse')."""
    if stype in (None, "default"):
        return _dense_zeros(shape, ctx=ctx, dtype=dtype)
    if stype not in _CLS:
        raise GpundaError(f"zeros: stype={stype!r} is not one of ['default', 'csr', 'row_sparse']")
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
    """An array of storage ``stype`` (all zeros: sparse storage has no garbage)."""
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """A sparse array from a CSRNDArray/RowSparseNDArray (copied) or a SciPy sparse matrix."""
    if isinstance(source_array, CSRNDArray) or _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, RowSparseNDArray):
        return row_sparse_array(source_array, ctx=ctx, dtype=dtype)
    raise GpundaError(f"sparse.array: source_array must be a CSRNDArray, RowSparseNDArray or "
                      f"scipy.sparse matrix, got {type(source_array).__name__}; use "
                      f"csr_matrix/row_sparse_array for dense sources")


# ----------------------------------------------------------------------------
# dispatch

_fallback_logged = set()


def _log_fallback(op, stypes, p, ctx):
    if op.name in _fallback_logged:
        return
    if os.environ.get("GPUNDA_STORAGE_FALLBACK_LOG", "1") == "0":
        return
    _fallback_logged.add(op.name)
    _log.warning("Operator %s has no sparse kernel for input stypes (%s) with params %s on %s; "
                 "falling back to dense compute (densify the inputs, dense output). Logged once "
                 "per op; set GPUNDA_STORAGE_FALLBACK_LOG=0 to silence.",
                 op.name, ", ".join(stypes), p._given if p is not None else {}, ctx)


def find_kernel(op, stypes):
    """The kernel ``op.sparse`` declares for input ``stypes``, or None."""
    table = op.sparse
    if not table:
        return None
    k = table.get(stypes)
    if k is not None:
        return k
    for key, fn in table.items():
        if isinstance(key, tuple) and len(key) == len(stypes) and "*" in key and \
                all(a == "*" or a == b for a, b in zip(key, stypes)):
            return fn
    return table.get("*")


def _compute(op, p, stypes, raws, ctx):
    backend = ctx.backend
    xp = backend.xp
    kern = find_kernel(op, stypes)
    if kern is not None:
        res = kern(xp, backend.sp, p, *raws)
        if res is not NotImplemented:
            return res
    _log_fallback(op, stypes, p, ctx)
    dense = [to_dense(r) for r in raws]
    res = op.compute(xp, p, *dense, ctx=ctx) if op.wants_ctx else op.compute(xp, p, *dense)
    for i in op.mutates:
        if stypes[i] != "default":      # the op wrote into a densified copy: store it back
            raws[i][...] = dense[i]
    return res


def _sparse_invoke(op, inputs, p, out=None):
    """``invoke_parsed`` for calls involving sparse storage (see the module docstring)."""
    ctx = None
    for x in inputs:
        if not isinstance(x, NDArray) or (ctx is not None and x._ctx is not ctx):
            _imp._check_inputs(op, p, inputs)
        if ctx is None:
            ctx = x._ctx
    if ctx is None:
        ctx = current_context()
    stypes = tuple(x.stype for x in inputs)
    raws = tuple(x._data for x in inputs)
    try:
        with ctx.backend.device_scope():
            res = _compute(op, p, stypes, raws, ctx)
    except GpundaError:
        raise
    except Exception as e:
        raise _imp._op_error(op, inputs, p, e) from e
    if op.n_outputs(p) == 1:
        outs = [_wrap(res, ctx)]
    else:
        outs = [_wrap(r, ctx) for r in res]
    for i in op.mutates:
        x = inputs[i]
        _ag.bump_version(x)
    if _is_rec() and not op.nondiff:
        _ag._record(op, p, inputs, outs)
        e = outs[0]._ag
        if e is not None:
            e[0].fn = _node_rule(op, e[0])
    if out is not None:
        return _write_out(op, p, outs, out, inputs)
    nvis = op.n_visible(p)
    return outs[0] if nvis == 1 else outs[:nvis]


def _write_out(op, p, outs, out, inputs=()):
    targets = [out] if isinstance(out, NDArray) else list(out)
    fixed = []
    for t, r in zip(targets, outs):
        if isinstance(t, NDArray) and t.stype != r.stype and t.shape == r.shape:
            r2 = _wrap(to_stype(r._data, t.stype), r._ctx)
            r2._ag = r._ag
            r = r2
        fixed.append(r)
    fixed.extend(outs[len(fixed):])
    return _imp._write_out(op, p, fixed, out, inputs)


# ----------------------------------------------------------------------------
# autograd through sparse calls

def _takes_sparse(entry):
    """Whether the producer of ``entry`` can take a sparse gradient."""
    node = entry[0]
    if node.is_leaf:
        g = node.grad
        return g is not None and g.stype != "default"
    return getattr(node.fn, "_sparse_aware", False)


def _node_rule(op, node):
    """The gradient rule of one sparse-path node (see the module docstring)."""
    def rule(F, p, ins, outs, ograds):
        nd_mode = isinstance(F, types.ModuleType)
        ctx = node.ctx
        if nd_mode:
            ins_n = list(ins) if ins is not None else None
            outs_n = [_rewrap(o) for o in outs] if outs is not None else None
            g_n = [_rewrap(g) for g in ograds]
        else:
            ins_n = [_wrap(r, ctx) for r in ins] if ins is not None else None
            outs_n = [_wrap(r, ctx) for r in outs] if outs is not None else None
            g_n = [None if g is None else _wrap(g, ctx) for g in ograds]
        need = [e is not None for e in node.inputs]
        grads = NotImplemented
        srule = op.sparse.get("grad") if op.sparse else None
        if srule is not None:
            grads = srule(p, ins_n, outs_n, g_n, need)
        if grads is NotImplemented:
            if op.gradient is None:
                raise GpundaError(f"Operator {op.name} has no gradient rule; it cannot be "
                                  f"differentiated")
            if nd_mode:
                def dn(a):
                    return a if a is None or a.stype == "default" else F.cast_storage(a, stype="default")
                grads = op.gradient(F, p, None if ins_n is None else [dn(a) for a in ins_n],
                                    None if outs_n is None else [dn(a) for a in outs_n],
                                    [dn(a) for a in g_n])
            else:
                def dr(a):
                    return None if a is None else to_dense(a)
                grads = op.gradient(F, p, None if ins is None else [dr(a) for a in ins],
                                    None if outs is None else [dr(a) for a in outs],
                                    [dr(a) for a in ograds])
        res = []
        for e, g in zip(node.inputs, grads):
            if e is None or g is None:
                res.append(None)
                continue
            if nd_mode:
                if not isinstance(g, NDArray):
                    g = _wrap(g, ctx)
                if g.stype != "default" and not _takes_sparse(e):
                    g = F.cast_storage(g, stype="default")
            else:
                if isinstance(g, NDArray):
                    g = g._data
                if stype_of(g) != "default" and not _takes_sparse(e):
                    g = to_dense(g)
            res.append(g)
        return res
    rule._sparse_aware = True
    return rule


# ----------------------------------------------------------------------------
# namespace: nd.sparse.<op> and the functions that must reach the sparse path

def cast_storage(data, stype=None, out=None, name=None, **kwargs):
    """``data`` converted to storage type ``stype`` ('default', 'csr', 'row_sparse').

    Always goes through the storage dispatcher, so dense -> sparse gives the
    sparse classes (and is recorded for autograd)."""
    op = get_op("cast_storage")
    if stype is None:
        stype = kwargs.pop("stype", None)
    if kwargs:
        raise GpundaError(f"Operator cast_storage: unknown parameters {sorted(kwargs)}")
    if not isinstance(data, NDArray):
        raise GpundaError(f"Operator cast_storage: input data must be an NDArray, got "
                          f"{type(data).__name__}")
    p = op.parse_params({"stype": stype})
    return _sparse_invoke(op, (data,), p, out)


cast_storage.op = get_op("cast_storage")


def retain(data, indices, out=None, name=None):
    """Rows of row_sparse ``data`` whose ids are in ``indices`` (``_sparse_retain``)."""
    from . import _op
    return _op._sparse_retain(data, indices, out=out)


def _elemwise_or_broadcast(kind, lhs, rhs):
    from . import _op
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        if lhs.shape == rhs.shape:
            return getattr(_op, "elemwise_" + kind)(lhs, rhs)
        return getattr(_op, "broadcast_" + kind)(lhs, rhs)
    import operator
    f = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
         "div": operator.truediv}[kind]
    return f(lhs, rhs)


def add(lhs, rhs):
    """lhs + rhs; rsp+rsp -> rsp and csr+csr -> csr for equal shapes."""
    return _elemwise_or_broadcast("add", lhs, rhs)


def subtract(lhs, rhs):
    """lhs - rhs; rsp-rsp -> rsp and csr-csr -> csr for equal shapes."""
    return _elemwise_or_broadcast("sub", lhs, rhs)


def multiply(lhs, rhs):
    """lhs * rhs; sparse * dense keeps the sparse storage."""
    return _elemwise_or_broadcast("mul", lhs, rhs)


def divide(lhs, rhs):
    """lhs / rhs (dense unless rhs is a scalar)."""
    return _elemwise_or_broadcast("div", lhs, rhs)


def __getattr__(name):
    # every op is reachable as nd.sparse.<name>, as in MXNet
    from . import _op
    fn = getattr(_op, name, None)
    if fn is None or name.startswith("__"):
        raise AttributeError(f"module 'gpunda.ndarray.sparse' has no attribute {name!r}")
    return fn


def _embedding_rsp_grad(data, ograd, out=None, name=None, **params):
    """Embedding's row_sparse weight gradient (hidden op used by its gradient rule);
    always dispatched as sparse because its output is sparse from dense inputs."""
    op = get_op("_embedding_rsp_grad")
    return _sparse_invoke(op, (data, ograd), op.parse_params(params), out)


_embedding_rsp_grad.op = get_op("_embedding_rsp_grad")


def _install():
    _so.install()
    _imp._sparse_invoke = _sparse_invoke
    from . import _op
    pkg = sys.modules.get("gpunda.ndarray")
    # ops whose output is sparse from dense inputs must not take the dense fast path
    for name, fn in (("cast_storage", cast_storage),
                     ("_embedding_rsp_grad", _embedding_rsp_grad)):
        setattr(_op, name, fn)
        if pkg is not None and not name.startswith("_"):
            setattr(pkg, name, fn)


_install()
