"""MXNet's ``mx.nd.utils``: creation and file functions that take any storage type."""
from __future__ import annotations

from gpunda.ndarray.ndarray import NDArray, zeros as _dense_zeros, empty as _dense_empty, array as _dense_array
from gpunda.ndarray.io import load, load_frombuffer, save  # noqa: F401

__all__ = ["zeros", "empty", "array", "load", "load_frombuffer", "save"]


def zeros(shape, ctx=None, dtype=None, stype=None, **kwargs):
    """Zeros of storage type ``stype`` ('default', 'csr' or 'row_sparse')."""
    return _dense_zeros(shape, ctx=ctx, dtype=dtype, stype=stype, **kwargs)


def empty(shape, ctx=None, dtype=None, stype=None):
    """An uninitialised array; a sparse ``stype`` gives an empty (all-zero) sparse array."""
    if stype is None or stype == "default":
        return _dense_empty(shape, ctx=ctx, dtype=dtype)
    from gpunda.ndarray import sparse
    return sparse.empty(stype, shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """An NDArray from ``source_array``; a sparse NDArray or SciPy sparse matrix gives a
    sparse NDArray of the same storage type."""
    if (isinstance(source_array, NDArray) and source_array.stype != "default") \
            or type(source_array).__module__.startswith("scipy.sparse"):
        from gpunda.ndarray import sparse
        return sparse.array(source_array, ctx=ctx, dtype=dtype)
    return _dense_array(source_array, ctx=ctx, dtype=dtype)
