"""``mx.np`` statistics and numerical helpers (ops in ops/np_stats.py): average,
percentile/quantile/median, histogram, bincount, diff/ediff1d, polyval, windows,
unravel_index, diag_indices_from, shares_memory."""
from __future__ import annotations

import numbers

import numpy as _onp

from ..context import current_context
from ._helpers import is_tensor, to_tensor, tensors, invoke

__all__ = ["average", "percentile", "quantile", "median", "histogram", "bincount", "diff",
           "ediff1d", "polyval", "hanning", "hamming", "blackman", "unravel_index",
           "diag_indices_from", "shares_memory", "may_share_memory"]


def _np():
    from .. import numpy as np
    return np


def average(a, axis=None, weights=None, returned=False, out=None):
    """Weighted mean over ``axis`` (1-D weights run along ``axis``); with ``returned``
    also the sum of the weights."""
    np = _np()
    a = to_tensor(a)
    if weights is None:
        avg = np.mean(a, axis=axis, out=out)
        if not returned:
            return avg
        n = a.size if axis is None else _count(a.shape, axis)
        return avg, np.full_like(avg, n) if hasattr(np, "full_like") else avg * 0 + n
    w = to_tensor(weights, a)
    if w.shape != a.shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if w.ndim != 1:
            raise TypeError("1D weights expected when shapes of a and weights differ.")
        if w.shape[0] != a.shape[axis]:
            raise ValueError("Length of weights not compatible with specified axis.")
        shape = [1] * a.ndim
        shape[axis] = w.shape[0]
        w = np.reshape(w, tuple(shape))
    wsum = np.sum(w * np.ones_like(a) if w.shape != a.shape else w, axis=axis)
    if bool((wsum == 0).asnumpy().any()):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = np.true_divide(np.sum(a * w, axis=axis), wsum)
    return (avg, wsum) if returned else avg


def _count(shape, axis):
    axes = (axis,) if isinstance(axis, numbers.Integral) else axis
    n = 1
    for ax in axes:
        n *= shape[ax]
    return n


def percentile(a, q, axis=None, out=None, overwrite_input=None, interpolation="linear",
               keepdims=False):
    """The q-th percentile(s) (0..100) along ``axis``."""
    a = to_tensor(a)
    if isinstance(axis, list):
        axis = tuple(axis)
    if is_tensor(q) or isinstance(q, (_onp.ndarray, list, tuple)):
        qt = to_tensor(q, a)
        return invoke("_npi_percentile", [a, qt], out=out, axis=axis,
                      interpolation=interpolation, keepdims=keepdims)
    if not 0 <= q <= 100:
        raise ValueError("Percentiles must be in the range [0, 100]")
    return invoke("_npi_percentile", [a], out=out, axis=axis, interpolation=interpolation,
                  keepdims=keepdims, q_scalar=float(q))


def quantile(a, q, axis=None, out=None, overwrite_input=None, interpolation="linear",
             keepdims=False):
    """The q-th quantile(s) (0..1) along ``axis``."""
    if is_tensor(q):
        q = q * 100
    elif isinstance(q, (_onp.ndarray, list, tuple)):
        q = _onp.asarray(q) * 100
    else:
        if not 0 <= q <= 1:
            raise ValueError("Quantiles must be in the range [0, 1]")
        q = q * 100
    return percentile(a, q, axis, out, overwrite_input, interpolation, keepdims)


def median(a, axis=None, out=None, overwrite_input=None, keepdims=False):
    """The median along ``axis``."""
    return percentile(a, 50, axis, out, overwrite_input, "linear", keepdims)


def histogram(a, bins=10, range=None, normed=None, weights=None, density=None):  # noqa: A002
    """``(hist, bin_edges)``: counts of ``a`` in ``bins`` (a count or an edge array)."""
    if normed or density or weights is not None:
        raise NotImplementedError("histogram: normed, weights and density are not supported "
                                  "(as in MXNet)")
    a = to_tensor(a)
    if isinstance(bins, numbers.Integral):
        if range is None:
            raise NotImplementedError("histogram: with an integer bins, range must be given "
                                      "(as in MXNet)")
        return tuple(invoke("_npi_histogram", [a], bin_cnt=int(bins), range=tuple(range)))
    return tuple(invoke("_npi_histogram", [a, to_tensor(bins, a)]))


def bincount(x, weights=None, minlength=0):
    """Count of each value of a non-negative integer array (weighted)."""
    if minlength < 0:
        raise ValueError("minlength must be non-negative")
    x = to_tensor(x)
    if weights is None:
        return invoke("_npi_bincount", [x], minlength=minlength)
    return invoke("_npi_bincount", [x, to_tensor(weights, x)], minlength=minlength,
                  has_weights=True)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The n-th discrete difference along ``axis``."""
    if prepend is not None or append is not None:
        raise NotImplementedError("diff: prepend and append are not supported (as in MXNet)")
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    return invoke("_npi_diff", [to_tensor(a)], n=n, axis=axis)


def ediff1d(ary, to_end=None, to_begin=None):
    """Differences of the flattened array, with optional values at the ends."""
    np = _np()
    ary = to_tensor(ary)
    parts = [diff(np.ravel(ary))]
    if to_begin is not None:
        parts.insert(0, np.ravel(to_tensor(to_begin, ary, dtype=ary.dtype)))
    if to_end is not None:
        parts.append(np.ravel(to_tensor(to_end, ary, dtype=ary.dtype)))
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def polyval(p, x):
    """The polynomial with coefficients ``p`` (highest power first) at ``x`` (Horner)."""
    np = _np()
    p, x = tensors([p, x])
    n = p.shape[0]
    coeffs = np.split(p, n, axis=0) if n else []
    y = np.zeros_like(x) if n == 0 else np.reshape(coeffs[0], ()) + x * 0
    for c in coeffs[1:]:
        y = y * x + np.reshape(c, ())
    return y


def _window(name):
    def f(M, dtype=None, ctx=None):
        return invoke(f"_npi_{name}", [], M=int(M), dtype=dtype or "float32",
                      ctx=ctx or current_context())
    f.__name__ = name
    f.__doc__ = f"The {name} window of M points (float32 by default)."
    return f


hanning, hamming, blackman = (_window(n) for n in ("hanning", "hamming", "blackman"))


def unravel_index(indices, shape, order="C"):
    """A tuple of coordinate arrays for flat ``indices`` in an array of ``shape``."""
    if order != "C":
        raise NotImplementedError("unravel_index: only order='C' is supported")
    shape = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(shape)
    if not is_tensor(indices) and _onp.ndim(indices) == 0:
        return tuple(int(v) for v in _onp.unravel_index(int(indices), shape))
    idx = to_tensor(indices)
    r = invoke("_npi_unravel_index_fallback", [idx], shape=tuple(shape))
    return tuple(r[k] for k in range(len(shape)))


def diag_indices_from(arr):
    """Indices of the main diagonal of an n-d array with equal dimensions."""
    r = invoke("_npi_diag_indices_from", [to_tensor(arr)])
    return tuple(r[k] for k in range(r.shape[0]))


def _bounds(a):
    data = a._data
    base = data.__array_interface__["data"][0] if hasattr(data, "__array_interface__") else \
        data.data.ptr
    return base, base + data.nbytes


def shares_memory(a, b, max_work=None):
    """Whether the two arrays' buffers overlap."""
    if not (is_tensor(a) and is_tensor(b)):
        return _onp.shares_memory(a, b)
    if a.size == 0 or b.size == 0:
        return False
    (a0, a1), (b0, b1) = _bounds(a), _bounds(b)
    return a0 < b1 and b0 < a1


may_share_memory = shares_memory
