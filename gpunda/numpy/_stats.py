"""``mx.np`` statistics and numerical helpers (ops in ops/numpy/stats.py): average,
percentile/quantile/median, histogram, bincount, diff/ediff1d, polyval, windows,
unravel_index, diag_indices_from, shares_memory."""
from __future__ import annotations

import numbers

import numpy as _onp

from gpunda.context import current_context
from gpunda.ndarray.ndarray import NDArray
from gpunda.numpy._helpers import is_tensor, to_tensor, tensors, invoke

__all__ = ["average", "percentile", "quantile", "median", "histogram", "bincount", "diff",
           "ediff1d", "polyval", "hanning", "hamming", "blackman", "unravel_index",
           "diag_indices_from", "shares_memory", "may_share_memory"]


def _np():
    from gpunda import numpy as np
    return np


def average(a, axis=None, weights=None, returned=False, out=None):
    """Weighted mean over ``axis`` (1-D weights run along ``axis``); with ``returned``
    also the sum of the weights."""
    a = to_tensor(a)
    if isinstance(axis, list):
        axis = tuple(axis)
    ins = [a] if weights is None else [a, to_tensor(weights, a)]
    r = invoke("_npi_average", ins, out=out, axis=axis, returned=returned,
               weighted=weights is not None)
    return tuple(r) if returned else r


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
    """Differences of the flattened array, with optional values before and after."""
    ary = to_tensor(ary)
    ins, kw = [ary], {}
    for name, v in (("to_begin", to_begin), ("to_end", to_end)):
        if v is None:
            continue
        if is_tensor(v) or _onp.ndim(v) > 0:
            kw[f"{name}_arr"] = True
        else:
            kw[f"{name}_scalar"] = float(v)
    if kw.get("to_begin_arr"):
        ins.append(to_tensor(to_begin, ary))
    if kw.get("to_end_arr"):
        ins.append(to_tensor(to_end, ary))
    return invoke("_npi_ediff1d", ins, **kw)


def polyval(p, x):
    """The polynomial with coefficients ``p`` (highest power first) at ``x``."""
    if not is_tensor(p) and not is_tensor(x):
        return _onp.polyval(p, x)
    p, x = tensors([p, x])
    if isinstance(getattr(p, "shape", None), tuple) and len(p.shape) != 1:
        # MXNet's shape check is typed "ValueError:" (a plain ValueError in Python)
        raise ValueError(f"polyval: p has to be an 1-D array, got shape {p.shape}")
    return invoke("_npi_polyval", [p, x])


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
    if not isinstance(r, NDArray):    # a Symbol: one (ndim, ...) array, split by the caller
        return r
    return tuple(r[k] for k in range(len(shape)))


def diag_indices_from(arr):
    """Indices of the main diagonal of an n-d array with equal dimensions."""
    shape = getattr(arr, "shape", None)
    if isinstance(shape, tuple) and (len(shape) < 2 or len(set(shape)) != 1):
        # MXNet's shape check is typed "ValueError:" and surfaces as a plain ValueError
        raise ValueError(f"diag_indices_from: the input must be at least 2-d with all "
                         f"dimensions equal, got shape {shape}")
    r = invoke("_npi_diag_indices_from", [to_tensor(arr)])
    if not isinstance(r, NDArray):    # a Symbol: one (ndim, n) array
        return r
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
