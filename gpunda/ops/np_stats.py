"""``mx.np`` statistics and misc ops: percentile/quantile, histogram, bincount, diff,
window functions, unravel_index, diag_indices_from."""
from __future__ import annotations

import numpy as np

from ..base import GpundaError
from .registry import OpDef, Param, register

_I64 = np.dtype("int64")
_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _percentile(xp, p, a, q=None):
    qs = q if q is not None else xp.asarray(p.q_scalar)
    r = xp.percentile(a.astype(np.float64) if a.dtype.kind != "f" else a, qs, axis=p.axis,
                      method=p.interpolation, keepdims=p.keepdims)
    dt = a.dtype if a.dtype.kind == "f" else np.dtype("float64")
    return xp.asarray(r).astype(dt)


register(OpDef("_npi_percentile", _percentile,
               inputs=lambda p: ("a",) if p.q_scalar is not None else ("a", "q"),
               params=[Param("axis", "axis", None), Param("interpolation", "enum", "linear",
                                                          choices=_METHODS),
                       Param("keepdims", "bool", False), Param("q_scalar", "float", None)],
               nondiff=True, family="np_stats", hidden=True,
               doc="The q-th percentile(s) along ``axis``."))


def _histogram(xp, p, a, bins=None):
    host = a.get() if hasattr(a, "get") else a
    if bins is not None:
        b = bins.get() if hasattr(bins, "get") else bins
    else:
        b = p.bin_cnt
    h, edges = np.histogram(host, bins=b, range=p.range)
    return xp.asarray(h.astype(_I64)), xp.asarray(edges.astype(a.dtype if a.dtype.kind == "f"
                                                                else np.float32))


register(OpDef("_npi_histogram", _histogram,
               inputs=lambda p: ("data",) if p.bin_cnt is not None else ("data", "bins"),
               params=[Param("bin_cnt", "int", None), Param("range", "float_or_tuple", None)],
               num_outputs=2, nondiff=True, family="np_stats", hidden=True,
               doc="Histogram counts and bin edges."))


def _bincount(xp, p, x, weights=None):
    if x.size and int(x.min()) < 0:
        raise ValueError("bincount: input must be non-negative integers")
    if x.dtype.kind == "f":
        raise TypeError("bincount: input must be an integer array")
    r = xp.bincount(x.reshape(-1).astype(_I64), weights=None if weights is None else weights.reshape(-1),
                    minlength=p.minlength)
    return r.astype(weights.dtype if weights is not None else _I64)


register(OpDef("_npi_bincount", _bincount,
               inputs=lambda p: ("data", "weights") if p.has_weights else ("data",),
               params=[Param("minlength", "int", 0), Param("has_weights", "bool", False)],
               nondiff=True, family="np_stats", hidden=True,
               doc="Count of each value in a non-negative integer array (weighted)."))


def _diff(xp, p, a):
    if p.n == 0:
        return a.copy()
    return xp.diff(a, n=p.n, axis=p.axis)


def _g_diff(F, p, i, o, g):
    x = i[0]
    gx = g[0]
    ax = p.axis % x.ndim
    for _ in range(p.n):
        pw = [0] * (2 * gx.ndim)
        pw[2 * ax] = pw[2 * ax + 1] = 1
        gx = -F._npi_diff(F._npi_pad(gx, pad_width=tuple(pw)), n=1, axis=ax)
    return [gx]


register(OpDef("_npi_diff", _diff, inputs=("a",),
               params=[Param("n", "int", 1), Param("axis", "int", -1)], gradient=_g_diff,
               save=("inputs",), family="np_stats", hidden=True,
               doc="n-th discrete difference along ``axis``."))


def _window(fn):
    def compute(xp, p, ctx):
        return xp.asarray(getattr(xp, fn)(p.M)).astype(p.dtype)
    register(OpDef(f"_npi_{fn}", compute, inputs=(), wants_ctx=True, nondiff=True,
                   params=[Param("M", "int"), Param("ctx", "any", None),
                           Param("dtype", "dtype", np.dtype("float32"))],
                   family="np_stats", hidden=True, doc=f"The {fn} window of M points."))


for _fn in ("hanning", "hamming", "blackman"):
    _window(_fn)


def _unravel(xp, p, idx):
    total = int(np.prod(p.shape))
    if idx.size and (int(idx.max()) >= total or int(idx.min()) < 0):
        raise ValueError(f"index {int(idx.max())} is out of bounds for array with size {total}")
    return xp.stack(xp.unravel_index(idx.astype(_I64), p.shape), axis=0).astype(_I64)


register(OpDef("_npi_unravel_index_fallback", _unravel, inputs=("indices",),
               params=[Param("shape", "shape")], nondiff=True, family="np_stats", hidden=True,
               doc="Coordinates of flat indices in an array of ``shape`` (one row per axis)."))


def _diag_indices_from(xp, p, a):
    if a.ndim < 2 or len(set(a.shape)) != 1:
        raise GpundaError("_npi_diag_indices_from: input must be at least 2-d with all "
                          f"dimensions equal, got shape {a.shape}")
    return xp.stack([xp.arange(a.shape[0], dtype=_I64)] * a.ndim, axis=0)


register(OpDef("_npi_diag_indices_from", _diag_indices_from, inputs=("a",), nondiff=True,
               family="np_stats", hidden=True, doc="Indices of the main diagonal (ndim rows)."))
