"""``mx.np`` statistics and misc ops: percentile/quantile, histogram, bincount, diff,
window functions, unravel_index, diag_indices_from."""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register

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


# MXNet's window kernels (src/operator/numpy/np_window_op.h): coefficients and the cosine
# argument are cast to the output DType first, so an integer window is all zeros and
# float32 is computed in float32 (hanning(4) is [0, 0.75, 0.74999994, 0])
_WINDOWS = {"hanning": ((0.5, 0.5, 0.0), 2), "hamming": ((0.54, 0.46, 0.0), 2),
            "blackman": ((0.42, 0.5, 0.08), 2)}


def _window_values(fn, m, dtype):
    dt = np.dtype(dtype)
    if m == 1:
        return np.ones(1, dt)
    if m < 1:
        return np.zeros(0, dt)
    if dt.kind != "f":
        # DType(0.5) etc. truncate to 0 (bool: true, true, true as in C)
        return np.asarray(getattr(np, fn)(m)).astype(dt) if dt.kind == "b" else np.zeros(m, dt)
    (a, b, c), _ = _WINDOWS[fn]
    i = np.arange(m, dtype=np.float64)
    t1 = (2 * np.pi * i / (m - 1)).astype(dt)
    t2 = (4 * np.pi * i / (m - 1)).astype(dt)
    # math::cos runs in float32 even for float64 here (hamming(5, float64)[1] is 0.54000002)
    c1, c2 = (np.cos(t.astype(np.float32)).astype(dt) for t in (t1, t2))
    return (dt.type(a) - dt.type(b) * c1 + dt.type(c) * c2).astype(dt)


def _window(fn):
    def compute(xp, p, ctx):
        return xp.asarray(_window_values(fn, p.M, p.dtype))
    register(OpDef(f"_npi_{fn}", compute, inputs=(), wants_ctx=True, nondiff=True,
                   params=[Param("M", "int"), Param("ctx", "any", None),
                           Param("dtype", "dtype", np.dtype("float32"))],
                   family="np_stats", hidden=True, doc=f"The {fn} window of M points."))


for _fn in ("hanning", "hamming", "blackman"):
    _window(_fn)


def _unravel(xp, p, idx):
    if idx.dtype.kind not in "iu":
        # MXNet's fallback hands the array to numpy.unravel_index, which refuses it
        raise GpundaError(f"Operator _npi_unravel_index_fallback: only int indices permitted, "
                          f"got dtype {idx.dtype.name}")
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


# ---------------------------------------------------------------------------
# ediff1d, polyval, average


def _ediff1d(xp, p, a, *ends):
    it = iter(ends)
    flat = a.reshape(-1)
    parts = [xp.diff(flat)] if flat.size else [flat[:0]]
    for has_arr, scalar, front in ((p.to_begin_arr, p.to_begin_scalar, True),
                                   (p.to_end_arr, p.to_end_scalar, False)):
        if has_arr:
            v = next(it).reshape(-1).astype(a.dtype)
        elif scalar is not None:
            v = xp.asarray([scalar], dtype=a.dtype)
        else:
            continue
        parts.insert(0, v) if front else parts.append(v)
    return xp.concatenate(parts)


def _ediff1d_args(p):
    return ("ary",) + (("to_begin",) if p.to_begin_arr else ()) + (("to_end",) if p.to_end_arr else ())


def _g_ediff1d(F, p, i, o, g):
    a = i[0]
    ends = list(i[1:])
    nb = ends[0].size if p.to_begin_arr else (1 if p.to_begin_scalar is not None else 0)
    n = a.size
    nd = max(n - 1, 0)
    parts = F._npi_split(g[0], indices_or_sections=(nb, nb + nd))
    mid = parts[1]
    if n == 0:
        ga = F._np_reshape(mid, newshape=a.shape)
    else:
        ga = F._np_reshape(-F._npi_diff(F._npi_pad(mid, pad_width=(1, 1)), n=1, axis=0),
                           newshape=a.shape)
    out = [ga]
    if p.to_begin_arr:
        out.append(F._np_reshape(parts[0], newshape=ends[0].shape))
    if p.to_end_arr:
        out.append(F._np_reshape(parts[2], newshape=ends[-1].shape))
    return out


register(OpDef("_npi_ediff1d", _ediff1d, inputs=_ediff1d_args,
               params=[Param("to_begin_arr", "bool", False), Param("to_end_arr", "bool", False),
                       Param("to_begin_scalar", "float", None), Param("to_end_scalar", "float", None)],
               gradient=_g_ediff1d, save=("inputs",), family="np_stats", hidden=True,
               doc="Differences of the flattened array, with values before and after."))


def _polyval(xp, p, coeffs, x):
    r = xp.zeros_like(x) if coeffs.shape[0] == 0 else xp.full_like(x, coeffs[0])
    for c in coeffs[1:]:
        r = r * x + c
    return r.astype(np.result_type(coeffs.dtype, x.dtype))


def _polyval_backward(xp, p, g, coeffs, x):
    n = coeffs.shape[0]
    powers = xp.stack([x ** (n - 1 - k) for k in range(n)], axis=0) if n else xp.zeros((0,) + x.shape)
    gp = (powers * g).reshape(n, -1).sum(axis=1).astype(coeffs.dtype)
    deriv = xp.zeros_like(x)
    for k in range(n - 1):
        deriv = deriv * x + coeffs[k] * (n - 1 - k)
    return gp, (g * deriv).astype(x.dtype)


register(OpDef("_npi_polyval", _polyval, inputs=("p", "x"),
               gradient=lambda F, q, i, o, g: list(F._npi_polyval_backward(g[0], i[0], i[1])),
               save=("inputs",), family="np_stats", hidden=True,
               doc="The polynomial with coefficients p (highest power first) at x."))
register(OpDef("_npi_polyval_backward", _polyval_backward, inputs=("g", "p", "x"),
               num_outputs=2, nondiff=True, family="np_stats", hidden=True,
               doc="Gradient of _npi_polyval (once differentiable)."))


def _avg_weights(xp_reshape, a, w, axis):
    if w.shape == a.shape:
        return w
    shape = [1] * a.ndim
    shape[axis] = w.shape[0]
    return xp_reshape(w, tuple(shape))


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % ndim for a in axes))


def _average(xp, p, a, w=None):
    if w is None:
        avg = xp.asarray(xp.mean(a, axis=p.axis))
        cnt = a.size / max(avg.size, 1) if a.size else 0
        return avg.astype(a.dtype), xp.full(avg.shape, cnt, dtype=a.dtype)
    if w.shape != a.shape:
        if p.axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if w.ndim != 1:
            raise TypeError("1D weights expected when shapes of a and weights differ.")
        if w.shape[0] != a.shape[p.axis]:
            raise ValueError("Length of weights not compatible with specified axis.")
    wb = _avg_weights(lambda v, s: v.reshape(s), a, w, p.axis if not isinstance(p.axis, tuple) else 0)
    wsum = xp.sum(xp.broadcast_to(wb, a.shape), axis=p.axis)
    if bool((wsum == 0).any()):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = xp.sum(a * wb, axis=p.axis) / wsum
    dt = np.result_type(a.dtype, w.dtype)
    return xp.asarray(avg).astype(dt), xp.asarray(wsum).astype(dt)


def _g_average(F, p, i, o, g):
    from gpunda.ops.numpy.reduce import expand_back
    a = i[0]
    axes = _axes(p.axis, a.ndim)
    gavg = expand_back(F, g[0], a.shape, axes)
    gsum = expand_back(F, g[1], a.shape, axes)
    wsum = expand_back(F, o[1], a.shape, axes)
    if not p.weighted:
        return [gavg / wsum]
    w = i[1]
    wb = _avg_weights(lambda v, s: F._np_reshape(v, newshape=s), a, w,
                      p.axis if not isinstance(p.axis, tuple) else 0)
    avg = expand_back(F, o[0], a.shape, axes)
    ga = gavg * wb / wsum
    gw = F._sum_to(gavg * (a - avg) / wsum + gsum, shape=tuple(wb.shape))
    return [ga, F._np_reshape(gw, newshape=w.shape)]


register(OpDef("_npi_average", _average,
               inputs=lambda p: ("a", "weights") if p.weighted else ("a",),
               params=[Param("axis", "axis", None), Param("returned", "bool", False),
                       Param("weighted", "bool", False)],
               num_outputs=2, num_visible=lambda p: 2 if p.returned else 1,
               gradient=_g_average, save=("inputs", "outputs"), family="np_stats", hidden=True,
               doc="Weighted average over axis (and the sum of the weights)."))
