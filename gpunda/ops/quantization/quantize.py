"""MXNet's quantization ops: ``contrib.quantize``, ``quantize_v2``, ``dequantize`` and
``requantize``, with MXNet's rounding and ranges (zero gradients, as MXNet's).

On the CPU they compute what MXNet's CPU build computes through oneDNN (quantize_cpu.py,
NOTE [CPU quantization through oneDNN]); what follows is MXNet's plain kernel, which its
GPU build runs and gpunda runs on the GPU. There int8 is zero-centred: a real range
``r = max(|min|, |max|)`` maps to [-127, 127] as ``sign(x) * min(|x| * 127 / r + 0.5, 127)``
truncated toward zero; uint8 outputs are refused there, as MXNet's GPU build refuses them.
int32 (the accumulators of quantized matrix products) spans ``r`` with 2**31 - 1 steps. The
ranges travel as two (1,) float32 arrays beside the data. The quantized layers themselves
(quantized_conv, quantized_fully_connected, ...) are MKL-DNN/cuDNN kernels and are not
built.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.quantization import quantize_cpu as _cpu
from gpunda.ops.registry import OpDef, Param, register

_INT8_RANGE = 127.0
_INT32_RANGE = 2147483647.0


def _scalar(xp, v):
    return float(v.reshape(-1)[0]) if hasattr(v, "reshape") else float(v)


def _range_out(xp, lo, hi):
    return xp.asarray([lo], dtype=np.float32), xp.asarray([hi], dtype=np.float32)


def _to_int8(xp, x, real_range):
    scale = _INT8_RANGE / real_range if real_range else 0.0
    q = xp.sign(x) * xp.minimum(xp.abs(x) * np.float32(scale) + np.float32(0.5), _INT8_RANGE)
    return xp.trunc(q).astype(np.int8)


def _refuse_gpu_uint8(name, xp, out_type):
    """MXNet's GPU build has no uint8 kernels: quantize, quantize_v2 and requantize stop
    with this message on a GPU context (before looking at the data)."""
    if xp is not np and np.dtype(out_type) == _U8:
        raise GpundaError(f"Operator {name}: currently, uint8 quantization is only supported "
                          "by CPU, please switch to the context of CPU or int8 data type for "
                          "GPU.")


def _check_float(name, x):
    if x.dtype != np.float32:
        raise GpundaError(f"Operator {name}: data must be float32, got {x.dtype}")


def _quantize(xp, p, x, min_range, max_range):
    _refuse_gpu_uint8("_contrib_quantize", xp, p.out_type)
    _check_float("_contrib_quantize", x)
    lo, hi = _scalar(xp, min_range), _scalar(xp, max_range)
    if xp is np:
        return _cpu.quantize(xp, x, lo, hi, _U8 if p.out_type == "uint8" else _I8)
    r = max(abs(lo), abs(hi))
    return (_to_int8(xp, x, r),) + _range_out(xp, -r, r)


def _quantize_v2_out_type(p, calibrated):
    """MXNet's GetQuantizeOutputType: 'auto' is uint8 only for a calibrated range with
    min >= 0, int8 otherwise; the data's dtype plays no part."""
    if p.out_type == "auto":
        return "uint8" if calibrated and float(p.min_calib_range) >= 0.0 else "int8"
    return p.out_type


def _quantize_v2(xp, p, x):
    calibrated = p.min_calib_range is not None and p.max_calib_range is not None
    out_type = _quantize_v2_out_type(p, calibrated)
    _refuse_gpu_uint8("_contrib_quantize_v2", xp, out_type)
    if x.dtype in (np.int8, np.uint8):
        # already quantized: MXNet copies the bytes into an output of out_type's dtype
        # (uint8 200 read as int8 is -56)
        q = x.copy() if x.dtype == np.dtype(out_type) else x.view(np.dtype(out_type)).copy()
        if xp is np:
            calib = (p.min_calib_range, p.max_calib_range) if calibrated else None
            return (q,) + _range_out(xp, *_cpu.passthrough_range(x.dtype, calib))
        if calibrated:
            return (q,) + _range_out(xp, p.min_calib_range, p.max_calib_range)
        return (q,) + _range_out(xp, *((0.0, 255.0) if x.dtype == np.uint8
                                       else (-127.0, 127.0)))
    _check_float("_contrib_quantize_v2", x)
    if xp is np:
        calib = (p.min_calib_range, p.max_calib_range) if calibrated else None
        return _cpu.quantize_v2(xp, x, calib, np.dtype(out_type))
    if calibrated:
        lo, hi = float(p.min_calib_range), float(p.max_calib_range)
    elif x.size:
        lo, hi = float(x.min()), float(x.max())
    else:
        lo = hi = 0.0
    r = max(abs(lo), abs(hi))
    return (_to_int8(xp, x, r),) + _range_out(xp, -r, r)


def _dequantize(xp, p, q, min_range, max_range):
    lo, hi = _scalar(xp, min_range), _scalar(xp, max_range)
    if xp is np and q.dtype in (_I8, _U8):
        return _cpu.dequantize(xp, q, lo, hi)
    if q.dtype == np.uint8:
        return q.astype(np.float32) * np.float32((hi - lo) / 255.0) + np.float32(lo)
    if q.dtype == np.int8:
        return q.astype(np.float32) * np.float32(max(abs(lo), abs(hi)) / _INT8_RANGE)
    raise GpundaError(f"Operator _contrib_dequantize: data must be uint8 or int8, got {q.dtype}")


def _requantize(xp, p, q, min_range, max_range):
    if q.dtype != np.int32:
        raise GpundaError(f"Operator _contrib_requantize: data must be int32, got {q.dtype}")
    out_dtype = _out_dtype(p)
    _refuse_gpu_uint8("_contrib_requantize", xp, out_dtype)
    if xp is np:
        calibrated = p.min_calib_range is not None and p.max_calib_range is not None
        calib = (p.min_calib_range, p.max_calib_range) if calibrated else None
        return _cpu.requantize(xp, q, _scalar(xp, min_range), _scalar(xp, max_range), calib,
                               out_dtype)
    r_in = max(abs(_scalar(xp, min_range)), abs(_scalar(xp, max_range)))
    x = q.astype(np.float32) * np.float32(r_in / _INT32_RANGE)
    if p.min_calib_range is not None and p.max_calib_range is not None:
        r = max(abs(float(p.min_calib_range)), abs(float(p.max_calib_range)))
    elif x.size:
        r = max(abs(float(x.min())), abs(float(x.max())))
    else:
        r = 0.0
    return (_to_int8(xp, x, r),) + _range_out(xp, -r, r)


_I8, _U8, _I32, _F32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.float32))


def _out_dtype(p):
    """GetQuantizeOutputType: 'auto' is uint8 for a calibrated non-negative range."""
    if p.out_type == "auto":
        calibrated = p.min_calib_range is not None and p.max_calib_range is not None
        return _U8 if calibrated and float(p.min_calib_range) >= 0.0 else _I8
    return _U8 if p.out_type == "uint8" else _I8


def _type_quantize_v2(p, t):
    if t[0] is not None and np.dtype(t[0]) in (_I8, _U8):     # passes quantized data
        return [t[0]], [t[0], _F32, _F32]
    return [_F32], [_out_dtype(p), _F32, _F32]


# MXNet lists no output names for these three: they are output0, output1, output2
_OUTS = dict(num_outputs=3)
_CALIB = [Param("min_calib_range", "float", None),
          Param("max_calib_range", "float", None)]

register(OpDef(
    "_contrib_quantize", _quantize, inputs=("data", "min_range", "max_range"),
    params=[Param("out_type", "enum", "uint8", choices=("int8", "uint8"))], nondiff=True,
    family="quantize", **_OUTS,
    infer_type=lambda p, t: ([_F32] * 3, [_U8 if p.out_type == "uint8" else _I8, _F32, _F32]),
    doc="Quantize float32 data with the given (1,) min/max ranges to int8 (zero-centred) or "
        "uint8 (affine); returns (data, min, max)."))
register(OpDef(
    "_contrib_quantize_v2", _quantize_v2, inputs=("data",),
    params=[Param("out_type", "enum", "int8", choices=("auto", "int8", "uint8"))] + _CALIB,
    nondiff=True, family="quantize", **_OUTS, infer_type=_type_quantize_v2,
    doc="Quantize float32 data with calibrated ranges, or the data's own min/max; 'auto' "
        "picks uint8 for a non-negative calibrated range."))
register(OpDef(
    "_contrib_dequantize", _dequantize, inputs=("data", "min_range", "max_range"),
    params=[Param("out_type", "enum", "float32", choices=("float32",))], nondiff=True,
    family="quantize", infer_type=lambda p, t: ([t[0], _F32, _F32], [_F32]), doc="Dequantize uint8/int8 data to float32 with its ranges."))
register(OpDef(
    "_contrib_requantize", _requantize, inputs=("data", "min_range", "max_range"),
    params=[Param("out_type", "enum", "int8", choices=("auto", "int8", "uint8"))] + _CALIB,
    nondiff=True, family="quantize", **_OUTS,
    infer_type=lambda p, t: ([_I32, _F32, _F32], [_out_dtype(p), _F32, _F32]),
    doc="Requantize int32 data (with its ranges) to int8 over the calibrated range or the "
        "data's own range."))
