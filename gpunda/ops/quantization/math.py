"""MXNet's quantized arithmetic and calibration ops: ``_contrib_quantized_elemwise_add``,
``_contrib_quantized_elemwise_mul``, ``_contrib_quantize_asym`` and
``_contrib_calibrate_entropy`` (the KL-divergence threshold search behind
``mx.contrib.quant``'s entropy calibration). None has a gradient (as MXNet's).
Range conventions: NOTE [Quantized ranges] in quantized_nn.py.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.quantization.entropy import ALL_ZERO, NON_POSITIVE, divergences
from gpunda.ops.quantization.quantize import _range_out
from gpunda.ops.quantization.nn import _F32, _I8, _I32, _MKLDNN_LEVELS, _U8, _absmax, _nearest, _require
from gpunda.ops.registry import OpDef, Param, register

_INT32_LEVELS = 2147483647.0
_QOUTS = ("output", "min_output", "max_output")
_PAIR_INPUTS = ("lhs", "rhs", "lhs_min", "lhs_max", "rhs_min", "rhs_max")
_CALIB = [Param("min_calib_range", "float", None, "calibrated minimum of the output"),
          Param("max_calib_range", "float", None, "calibrated maximum of the output")]


def _calibrated(p):
    return p.min_calib_range is not None and p.max_calib_range is not None


def _pair_shapes(op):
    def infer(p, s):
        a, b = s[0], s[1]
        if a is not None and b is not None and tuple(a) != tuple(b):
            raise GpundaError(f"Operator {op}: lhs {tuple(a)} and rhs {tuple(b)} must have "
                              f"the same shape (no broadcasting)")
        d = a if a is not None else b
        n_out = 1 if getattr(p, "enable_float_output", False) else 3
        return [d, d, (1,), (1,), (1,), (1,)], None if d is None else [d, (1,), (1,)][:n_out]
    return infer


# -- elemwise add ------------------------------------------------------------------------

def _add_out_type(p, ta, tb):
    if not _calibrated(p):
        return _I32
    return ta if ta == tb else _I8


def _quantized_add(xp, p, a, b, a_lo, a_hi, b_lo, b_hi):
    for what, x in (("lhs", a), ("rhs", b)):
        _require("_contrib_quantized_elemwise_add", what, x, (_I8, _U8))
    if a.shape != b.shape:
        raise GpundaError(f"Operator _contrib_quantized_elemwise_add: lhs {tuple(a.shape)} and "
                          f"rhs {tuple(b.shape)} must have the same shape")
    a_abs, b_abs = _absmax(a_lo, a_hi), _absmax(b_lo, b_hi)
    out_t = _add_out_type(p, a.dtype, b.dtype)
    if _calibrated(p):
        lo, hi = p.min_calib_range, p.max_calib_range
    else:
        hi = a_abs + b_abs
        lo = -hi
    out_levels = np.float32(_INT32_LEVELS if out_t == _I32 else _MKLDNN_LEVELS[out_t])
    f = np.float32
    # MKL-DNN's sum: one float32 scale per input (from MXNet's formulas), summed in float32
    if _calibrated(p):
        out_scale = out_levels / f(max(abs(lo), abs(hi)))
        scales = [out_scale / (f(_MKLDNN_LEVELS[x.dtype]) / f(m)) for x, m in
                  ((a, a_abs), (b, b_abs))]
    else:
        total = f(a_abs) + f(b_abs)
        scales = [f(m) * out_levels / (total * f(_MKLDNN_LEVELS[x.dtype])) for x, m in
                  ((a, a_abs), (b, b_abs))]
    xa, xb = a.astype(np.float32), b.astype(np.float32)
    if a.dtype != b.dtype and _calibrated(p):
        # MKL-DNN first reorders the uint8 side into int8 steps of the output (rounded)
        if a.dtype == _U8:
            xa, scales[0] = _nearest(xp, xa * scales[0], np.int8).astype(np.float32), f(1)
        else:
            xb, scales[1] = _nearest(xp, xb * scales[1], np.int8).astype(np.float32), f(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = xa * scales[0] + xb * scales[1]
    return (_nearest(xp, y, out_t),) + _range_out(xp, lo, hi)


register(OpDef(
    "_contrib_quantized_elemwise_add", _quantized_add, inputs=_PAIR_INPUTS, params=_CALIB,
    num_outputs=3, output_names=_QOUTS, nondiff=True, save=(), family="quantize",
    infer_shape=_pair_shapes("_contrib_quantized_elemwise_add"),
    infer_type=lambda p, t: ([t[0] or _U8, t[1] or _U8] + [_F32] * 4,
                             [_add_out_type(p, t[0] or _U8, t[1] or _U8), _F32, _F32]),
    doc="lhs + rhs of int8/uint8 arrays with ranges: int32 over the range |lhs| + |rhs|, or "
        "int8/uint8 over the calibrated range."))


# -- elemwise mul ------------------------------------------------------------------------

def _quantized_mul(xp, p, a, b, a_lo, a_hi, b_lo, b_hi):
    for what, x in (("lhs", a), ("rhs", b)):
        _require("_contrib_quantized_elemwise_mul", what, x, (_I8,))
    if a.shape != b.shape:
        raise GpundaError(f"Operator _contrib_quantized_elemwise_mul: lhs {tuple(a.shape)} and "
                          f"rhs {tuple(b.shape)} must have the same shape (no broadcasting)")
    a_step, b_step = _absmax(a_lo, a_hi) / 127.5, _absmax(b_lo, b_hi) / 127.5
    prod = a.astype(np.int32) * b.astype(np.int32)
    if p.enable_float_output:
        return (prod.astype(np.float32) * np.float32(a_step * b_step),)
    if _calibrated(p):
        lo, hi = p.min_calib_range, p.max_calib_range
        scale = np.float32(127.5 / max(abs(lo), abs(hi)) * a_step * b_step)
        y = xp.trunc(prod.astype(np.float32) * scale)   # MXNet's static_cast
        return (xp.clip(y, -128, 127).astype(np.int8),) + _range_out(xp, lo, hi)
    # int32 steps of the int8 x int8 product range: the products themselves
    hi = _absmax(a_lo, a_hi) / 127.0 * (_absmax(b_lo, b_hi) / 127.0) * _INT32_LEVELS
    return (prod,) + _range_out(xp, -hi, hi)


register(OpDef(
    "_contrib_quantized_elemwise_mul", _quantized_mul, inputs=_PAIR_INPUTS,
    params=_CALIB + [Param("enable_float_output", "bool", False,
                           "write float32 (and no range outputs) instead of int8/int32")],
    num_outputs=lambda p: 1 if p.enable_float_output else 3,
    output_names=lambda p: _QOUTS[:1] if p.enable_float_output else _QOUTS,
    nondiff=True, save=(), family="quantize",
    infer_shape=_pair_shapes("_contrib_quantized_elemwise_mul"),
    infer_type=lambda p, t: ([_I8, _I8] + [_F32] * 4,
                             [_F32] if p.enable_float_output else
                             [_I8 if _calibrated(p) else _I32, _F32, _F32]),
    doc="lhs * rhs of int8 arrays with ranges: int32 products, int8 over the calibrated "
        "range, or float32 with enable_float_output."))


# -- quantize_asym -----------------------------------------------------------------------

def _quantize_asym(xp, p, x):
    if x.dtype != _F32:
        raise GpundaError(f"Operator _contrib_quantize_asym: data must be float32, got "
                          f"{x.dtype.name}")
    if _calibrated(p):
        lo, hi = float(p.min_calib_range), float(p.max_calib_range)
    elif x.size:
        lo, hi = float(x.min()), float(x.max())
    else:
        lo = hi = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.float32(255.0) / np.float32(hi - lo)
        shift = np.float32(255.0) - np.float32(hi) * scale
        q = xp.trunc(x * scale + shift + np.float32(0.5))
    q = xp.where(xp.isfinite(q), q, 0)
    out = xp.clip(q, 0, 255).astype(np.uint8)
    return out, xp.asarray([scale], np.float32), xp.asarray([shift], np.float32)


register(OpDef(
    "_contrib_quantize_asym", _quantize_asym, params=_CALIB, num_outputs=3,
    output_names=("output", "scale", "shift"), nondiff=True, save=(), family="quantize",
    infer_shape=lambda p, s: ([s[0]], None if s[0] is None else [s[0], (1,), (1,)]),
    infer_type=lambda p, t: ([_F32], [_U8, _F32, _F32]),
    doc="Asymmetric uint8 quantization: out = x * scale + shift + 0.5 (truncated) with "
        "scale = 255 / (max - min), shift = 255 - max * scale, over the calibrated or the "
        "data's own range; returns (output, scale, shift)."))


# -- calibrate_entropy -------------------------------------------------------------------

def _calibrate_entropy(xp, p, hist, edges):
    if hist.dtype != _F32:
        raise GpundaError(f"Operator _contrib_calibrate_entropy: hist must be float32, got "
                          f"{hist.dtype.name}")
    h = np.asarray(hist.get() if hasattr(hist, "get") else hist, np.float32).reshape(-1)
    e = np.asarray(edges.get() if hasattr(edges, "get") else edges, np.float32).reshape(-1)
    if e.size != h.size + 1:
        raise GpundaError(f"Operator _contrib_calibrate_entropy: hist_edges has {e.size} "
                          f"entries; it must have len(hist) + 1 = {h.size + 1}")
    nq = p.num_quantized_bins
    zero = h.size // 2
    if nq < 1 or nq // 2 > zero:
        raise GpundaError(f"Operator _contrib_calibrate_entropy: num_quantized_bins={nq} "
                          f"must be in [1, {2 * zero + 1}] for {h.size} bins")
    div, code = divergences(h, nq)
    bad = np.flatnonzero((code == ALL_ZERO) | (code == NON_POSITIVE))
    if bad.size:                    # MXNet's CHECK fails at the first such candidate
        raise GpundaError(
            "Operator _contrib_calibrate_entropy: the histogram is all zeros"
            if code[bad[0]] == ALL_ZERO else
            "Operator _contrib_calibrate_entropy: a smoothed distribution has a "
            "non-positive entry (the histogram is too sparse)")
    # the first least divergence below float32's max (inf and NaN never win), as
    # MXNet's strict-< scan from min_divergence = FLT_MAX
    below = np.flatnonzero(div < np.finfo(np.float32).max)
    best_i = int(below[np.argmin(div[below])]) if below.size else 0
    best = div[best_i] if below.size else np.float32(np.finfo(np.float32).max)
    if zero + nq // 2 + best_i + 1 >= e.size:      # MXNet reads past hist_edges here
        raise GpundaError(f"Operator _contrib_calibrate_entropy: the best threshold is the "
                          f"edge past the end of hist_edges ({h.size} bins, an even count)")
    threshold = e[zero + nq // 2 + best_i + 1]
    return (xp.asarray([threshold], np.float32), xp.asarray([best], np.float32))


register(OpDef(
    "_contrib_calibrate_entropy", _calibrate_entropy, inputs=("hist", "hist_edges"),
    params=[Param("num_quantized_bins", "int", 255, "number of quantized bins")],
    num_outputs=2, output_names=("threshold", "divergence"), nondiff=True, save=(),
    family="quantize", capture="host-side search over candidate thresholds",
    infer_shape=lambda p, s: (list(s), [(1,), (1,)]),
    infer_type=lambda p, t: ([_F32, _F32], [_F32, _F32]),
    doc="The threshold (a histogram edge) whose clipped, num_quantized_bins-level "
        "quantization has the least KL divergence from the histogram; returns "
        "(threshold, divergence)."))
