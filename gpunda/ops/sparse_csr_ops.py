"""Structure ops on csr storage, all csr -> csr as in MXNet: ``take`` of rows
(TakeOpForwardCsrImpl), ``slice`` with unit steps, ``concat`` along rows; and
``_contrib_getnnz`` (stored-value counts).

Both follow NOTE [Sparse kernels] in sparse_ops.py: one body for NumPy and
CuPy, working on the parts only (no densifying).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register, get_op
from gpunda.ops.sparse.ops import CSRData, INDEX, empty_like_stype, stype_of


def _take_csr(xp, sp, p, a, idx):
    """take(csr, dense indices, axis=0) with mode clip or wrap -> csr, as MXNet."""
    if not isinstance(a, CSRData) or p.axis != 0 or p.mode not in ("clip", "wrap") or \
            stype_of(idx) != "default":
        return NotImplemented       # MXNet falls back to dense for everything else
    if idx.ndim != 1:
        raise GpundaError(f"Operator take: a csr input needs 1-D indices, got indices of shape "
                          f"{tuple(idx.shape)}")
    from gpunda.ops.tensor.indexing import _fix_indices
    n = a.shape[0]
    out_shape = (int(idx.shape[0]), a.shape[1])
    if n == 0 or a.nnz == 0:
        return empty_like_stype(xp, "csr", out_shape, a.dtype)
    rows = _fix_indices(xp, idx, n, p.mode, "take").astype(INDEX, copy=False)
    counts = (a.indptr[1:] - a.indptr[:-1])[rows]
    indptr = xp.zeros(out_shape[0] + 1, INDEX)
    indptr[1:] = xp.cumsum(counts)
    total = int(indptr[-1])
    # for each output value: its output row, then its position in the source parts
    k = xp.arange(total, dtype=INDEX)
    out_row = xp.searchsorted(indptr[1:], k, side="right")
    src = k - indptr[out_row] + a.indptr[rows][out_row]
    return CSRData(a.data[src], a.indices[src], indptr, out_shape)


def _slice_csr(xp, sp, p, a):
    """slice(csr) with unit steps -> csr (MXNet's SliceCsrImpl); other steps fall back."""
    if not isinstance(a, CSRData) or any(s not in (None, 1) for s in (p.step or ())):
        return NotImplemented
    from gpunda.ops.tensor.matrix import _slice_tuple
    key = _slice_tuple("slice", a.shape, p.begin, p.end, p.step) + (slice(None),) * 2
    r0, r1, _ = key[0].indices(a.shape[0])
    c0, c1, _ = key[1].indices(a.shape[1])
    r1, c1 = max(r1, r0), max(c1, c0)
    lo, hi = int(a.indptr[r0]), int(a.indptr[r1])
    data, idx, ptr = a.data[lo:hi], a.indices[lo:hi], a.indptr[r0:r1 + 1] - lo
    shape = (r1 - r0, c1 - c0)
    if c0 == 0 and c1 == a.shape[1]:
        return CSRData(data.copy(), idx.copy(), ptr, shape)
    keep = (idx >= c0) & (idx < c1)
    row = xp.searchsorted(ptr[1:], xp.arange(idx.shape[0], dtype=INDEX), side="right")
    indptr = xp.zeros(shape[0] + 1, INDEX)
    if idx.shape[0]:
        indptr[1:] = xp.cumsum(xp.bincount(row[keep], minlength=shape[0]))
    return CSRData(data[keep], idx[keep] - c0, indptr, shape)


def _concat_csr(xp, sp, p, *xs):
    """Concat of csr arrays along rows (dim=0) -> csr, as MXNet; otherwise fallback."""
    if not xs or not all(isinstance(x, CSRData) for x in xs) or p.dim not in (0, -2) or \
            len(xs) != p.num_args or len({(x.shape[1], x.dtype) for x in xs}) != 1:
        return NotImplemented
    offsets = np.cumsum([0] + [x.nnz for x in xs])
    indptr = xp.concatenate([xs[0].indptr[:1]] + [x.indptr[1:] + int(o)
                                                   for x, o in zip(xs, offsets[:-1])])
    return CSRData(xp.concatenate([x.data for x in xs]),
                   xp.concatenate([x.indices for x in xs]), indptr.astype(INDEX, copy=False),
                   (sum(x.shape[0] for x in xs), xs[0].shape[1]))


def _getnnz_dense(xp, p, x):
    raise GpundaError("Operator _contrib_getnnz: input data must be csr (MXNet counts the "
                      f"stored values of a CSRNDArray), got a dense array of shape "
                      f"{tuple(x.shape)}")


def _getnnz_csr(xp, sp, p, x):
    if not isinstance(x, CSRData):
        return NotImplemented
    if p.axis is None:
        return xp.asarray([x.nnz], dtype=np.int64)
    if p.axis == 1:         # per row
        return (x.indptr[1:] - x.indptr[:-1]).astype(np.int64)
    if p.axis == 0:         # per column (MXNet 1.9.1 refuses this one; SciPy's meaning)
        return xp.bincount(x.indices, minlength=x.shape[1]).astype(np.int64) if x.nnz else \
            xp.zeros(x.shape[1], np.int64)
    raise GpundaError(f"Operator _contrib_getnnz: axis={p.axis} is not one of None, 0, 1")


register(OpDef(
    "_contrib_getnnz", _getnnz_dense, family="sparse", nondiff=True, save=(),
    params=[Param("axis", "int", None, "None: the whole matrix, 0: per column, 1: per row",
                  optional=True)],
    sparse={("csr",): _getnnz_csr},
    doc="Number of stored values (explicit zeros included) of a csr matrix, in int64:\n"
        "one count (axis=None), per column (axis=0) or per row (axis=1)."))


def install():
    """Attach the csr kernels once their ops are registered (idempotent)."""
    for name, key, kernel in (("take", ("csr", "default"), _take_csr),
                              ("slice", ("csr",), _slice_csr), ("Concat", "*", _concat_csr)):
        try:
            get_op(name).sparse.setdefault(key, kernel)
        except GpundaError:
            continue


install()
