"""``mx.np`` sorting and searching (ops in ops/np_sort.py): sort, argsort, unique,
nonzero, argwhere, flatnonzero."""
from __future__ import annotations

from gpunda.numpy._helpers import to_tensor, invoke

__all__ = ["sort", "argsort", "unique", "nonzero", "argwhere", "flatnonzero"]


def sort(a, axis=-1, kind=None, order=None):
    """A sorted copy along ``axis`` (None: the flattened array); differentiable."""
    if order is not None:
        raise NotImplementedError("sort: order is not supported (as in MXNet)")
    return invoke("_npi_sort", [to_tensor(a)], axis=axis)


def argsort(a, axis=-1, kind=None, order=None):
    """Indices (int64) that sort ``a`` along ``axis`` (stable)."""
    if order is not None:
        raise NotImplementedError("argsort: order is not supported (as in MXNet)")
    return invoke("_npi_argsort", [to_tensor(a)], axis=axis)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    """Sorted unique elements; with the flags also first indices, inverse and counts."""
    r = invoke("_npi_unique", [to_tensor(ar)], return_index=return_index,
               return_inverse=return_inverse, return_counts=return_counts, axis=axis)
    return tuple(r) if isinstance(r, list) else r


def nonzero(a):
    """A tuple of index arrays (int64), one per axis, of the non-zero elements."""
    from gpunda.numpy._manip import transpose, split, reshape
    a = to_tensor(a)
    idx = invoke("_npi_nonzero", [a])
    nd = max(a.ndim, 1)
    cols = split(transpose(idx), nd, axis=0) if idx.shape[0] else \
        [reshape(transpose(idx)[k:k + 1], (0,)) for k in range(nd)]
    return tuple(reshape(c, (-1,)) for c in cols)


def argwhere(a):
    """Indices of the non-zero elements, one row per element."""
    return invoke("_npi_nonzero", [to_tensor(a)])


def flatnonzero(a):
    """Indices of the non-zero elements of the flattened array."""
    from gpunda.numpy._manip import ravel
    return nonzero(ravel(to_tensor(a)))[0]
