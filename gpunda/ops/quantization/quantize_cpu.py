"""The CPU arithmetic of MXNet's quantize, quantize_v2, dequantize and requantize.

NOTE [CPU quantization through oneDNN]
MXNet 1.9.1's CPU build (the pip wheel, built with oneDNN) dispatches all four ops on a
CPU context to oneDNN (their FInferStorageType picks FComputeEx whenever the device is the
CPU; src/operator/quantization/mkldnn/mkldnn_{quantize,quantize_v2,dequantize,
requantize}-inl.h). Each is a oneDNN reorder with one output scale: ``y = x * s`` in
float32, rounded half to even and saturated to the output type (int8 at -128 and 127,
uint8 at 0 and 255; NaN becomes 127 in int8 and 0 in uint8). There is no zero point:
uint8 spans [0, max(|min|, |max|)] too. The scales differ from MXNet's plain (GPU)
kernels, which round half away from zero, keep int8 within +-127 and make uint8 affine:
- quantize_v2: ``127.5 / r`` for int8, ``255.5 / r`` for uint8 (quantization_utils.h's
  kInt8Range/kUint8Range), ``r = max(|min|, |max|)`` of the calibrated range or of the
  data (NaN skipped); int8 reports (-r, r), uint8 the range itself. Already quantized
  data passes through with its calibrated range, or (0, 255.5) / (-127.5, 127.5).
- quantize: ``127 / r`` for int8, ``255 / r`` for uint8; ranges as quantize_v2's.
- dequantize: ``r / 127.5`` for int8, ``r / 255.5`` for uint8.
- requantize: ``(r_in / 2**31) * (L / r_out)``, ``L`` 127 or 255; uncalibrated, ``r_out``
  comes from the int32 data's largest magnitude, held in an int32 as MXNet does (a
  magnitude that rounds to 2**31 in float32 wraps to -2**31 and flips the sign).
The GPU keeps MXNet's plain kernels (quantize.py), as MXNet's GPU build does; these
functions take NumPy arrays (``xp`` is numpy).
"""
from __future__ import annotations

import numpy as np

_F32 = np.float32
_I8, _U8 = np.dtype(np.int8), np.dtype(np.uint8)
_FLT_MAX = np.finfo(np.float32).max
_LIMITS = {_I8: (-128, 127, 127), _U8: (0, 255, 0)}     # low, high, NaN becomes
_V2_LEVELS = {_I8: _F32(127.5), _U8: _F32(255.5)}        # kInt8Range, kUint8Range
_LEVELS = {_I8: _F32(127.0), _U8: _F32(255.0)}
_INT32_SPAN = _F32(2147483648.0)                          # |INT32_MIN| as a float


def maxabs(lo, hi):
    """MXNet's MaxAbs in float32."""
    return max(abs(_F32(lo)), abs(_F32(hi)))


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _F32(a) / _F32(b)


def reorder(xp, x, scale, dtype):
    """oneDNN's reorder with an output scale: float32 ``x * scale``, rounded half to even
    and saturated to ``dtype`` (int8/uint8), or float32 when ``dtype`` is float32."""
    dtype = np.dtype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        y = x.astype(np.float32) * _F32(scale)
        if dtype == np.float32:
            return y
        lo, hi, nan = _LIMITS[dtype]
        y = xp.rint(xp.clip(y, lo, hi))
        y = xp.where(xp.isnan(y), _F32(nan), y)
    return y.astype(dtype)


def _ranges(xp, lo, hi):
    return xp.asarray([lo], dtype=np.float32), xp.asarray([hi], dtype=np.float32)


def _data_range(x):
    """The data's min and max as MXNet's CPU loop finds them: NaN never compares, and
    an empty array leaves (FLT_MAX, -FLT_MAX)."""
    if x.size:
        lo, hi = x.min(), x.max()
        if not (np.isnan(lo) or np.isnan(hi)):
            return _F32(lo), _F32(hi)
        x = x[~np.isnan(x)]
        if x.size:
            return _F32(x.min()), _F32(x.max())
    return _F32(_FLT_MAX), _F32(-_FLT_MAX)


def quantize(xp, x, lo, hi, out_dtype):
    """``_contrib_quantize`` on the CPU (mkldnn_quantize-inl.h)."""
    r = maxabs(lo, hi)
    q = reorder(xp, x, _div(_LEVELS[out_dtype], r), out_dtype)
    return (q,) + (_ranges(xp, lo, hi) if out_dtype == _U8 else _ranges(xp, -r, r))


def quantize_v2(xp, x, calib, out_dtype):
    """``_contrib_quantize_v2`` of float data on the CPU (mkldnn_quantize_v2-inl.h);
    ``calib`` is the (min, max) calibrated range or None."""
    lo, hi = (_F32(calib[0]), _F32(calib[1])) if calib else _data_range(x)
    r = maxabs(lo, hi)
    q = reorder(xp, x, _div(_V2_LEVELS[out_dtype], r), out_dtype)
    return (q,) + (_ranges(xp, lo, hi) if out_dtype == _U8 else _ranges(xp, -r, r))


def passthrough_range(in_dtype, calib):
    """The range quantize_v2 reports for data that is already int8/uint8."""
    if calib:
        return calib
    return (0.0, 255.5) if np.dtype(in_dtype) == _U8 else (-127.5, 127.5)


def dequantize(xp, q, lo, hi):
    """``_contrib_dequantize`` on the CPU (mkldnn_dequantize-inl.h)."""
    return reorder(xp, q, _div(maxabs(lo, hi), _V2_LEVELS[np.dtype(q.dtype)]), np.float32)


def _int32_magnitude(q):
    """MXNet's ``int32 data_range = MaxAbs(min, max)``: the float32 magnitude converted
    back to int32, where 2**31 wraps to -2**31 (x86's conversion of an overflow)."""
    if q.size:
        m = maxabs(q.min(), q.max())
    else:
        m = maxabs(np.iinfo(np.int32).max, np.iinfo(np.int32).min)
    return _F32(-_INT32_SPAN) if m >= _INT32_SPAN else m


def requantize(xp, q, lo, hi, calib, out_dtype):
    """``_contrib_requantize`` on the CPU (mkldnn_requantize-inl.h)."""
    r_in = maxabs(lo, hi)
    if calib:
        r = maxabs(*calib)
    else:
        r = _div(_int32_magnitude(q) * r_in, _INT32_SPAN)
    with np.errstate(invalid="ignore", over="ignore"):
        scale = _div(r_in, _INT32_SPAN) * _div(_LEVELS[out_dtype], r)
    out = reorder(xp, q, scale, out_dtype)
    return (out,) + (_ranges(xp, 0.0, r) if out_dtype == _U8 else _ranges(xp, -r, r))
