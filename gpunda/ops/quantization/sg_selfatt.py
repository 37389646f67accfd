"""MXNet's oneDNN fused self-attention nodes ``_sg_mkldnn_selfatt_qk`` and
``_sg_mkldnn_selfatt_valatt`` (src/operator/subgraph/mkldnn/mkldnn_transformer.cc), which
MXNet's MKLDNN backend makes from ``_contrib_interleaved_matmul_selfatt_qk`` / ``_valatt``
(GluonNLP's BERT), float and quantized.

``qkv`` is (seq_len, batch, 3 * embed) with each head's q, k and v interleaved; the
attention batches are (batch, head) pairs. qk gives (batch * heads, L, L) = q.k^T scaled
by 1/sqrt(head_dim); valatt gives (L, batch, embed) = att.v. Quantized, qk takes int8 qkv
and valatt int8 qkv with uint8 att, each with its range; the int32 products are scaled in
float32 to int8 (calibrated), to float32 (``enable_float_output``) or kept in int32
(uncalibrated; qk's int32 keeps the 1/sqrt(head_dim) scale and reports the range (0, 0), as
MXNet's kernel, which reads its range from zeroed locals). On a CPU without VNNI the products
sum in saturating int16 pairs (NOTE [int16 pair saturation]).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.quantization import int16_pairs as _pairs
from gpunda.ops.quantization.quantize import _range_out, _scalar
from gpunda.ops.quantization.sg_fused import _calibrated, _int16_pairs, quantize_scale
from gpunda.ops.registry import OpDef, Param, register

_I8, _U8, _I32, _F32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.float32))
_QK, _VALATT = "_sg_mkldnn_selfatt_qk", "_sg_mkldnn_selfatt_valatt"
_PARAMS = [Param("heads", "int", None, "number of heads"),
           Param("quantized", "bool", False, "int8 qkv (uint8 att) with ranges"),
           Param("enable_float_output", "bool", False, "quantized node's output in float32"),
           Param("min_calib_range", "float", None, "min of the calibrated output range",
                 optional=True),
           Param("max_calib_range", "float", None, "max of the calibrated output range",
                 optional=True)]


def _split(p, qkv, op):
    """(batch*heads, L, head_dim) views of q, k and v."""
    L, B, E3 = qkv.shape
    if E3 % (3 * p.heads):
        raise GpundaError(f"Operator {op}: qkv's last dim {E3} is not 3 * heads * head_dim "
                          f"(heads={p.heads})")
    hd = E3 // 3 // p.heads
    x = qkv.reshape(L, B * p.heads, 3, hd).transpose(2, 1, 0, 3)
    return x[0], x[1], x[2], hd


def _matmul(xp, a, b, shift, saturate):
    """Batched int products a (n, M, K) . b (n, N, K)^T as float64."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    if not saturate:
        return xp.matmul(a, b.transpose(0, 2, 1))
    return np.stack([_pairs.fc(a[i], b[i], shift, lambda i=i: a[i] @ b[i].T)
                     for i in range(a.shape[0])])


def _out(xp, p, y, scale, out_dtype):
    y = y.astype(np.float32) * np.float32(scale)
    if out_dtype == _F32:
        return y
    lo, hi = (-128, 127) if out_dtype == _I8 else (-2 ** 31, 2 ** 31 - 1)
    return xp.clip(xp.rint(y.astype(np.float64)), lo, hi).astype(out_dtype)


def _out_dtype(p):
    if not p.quantized or p.enable_float_output:
        return _F32
    return _I8 if _calibrated(p) else _I32


def _selfatt_qk(xp, p, qkv, *ranges):
    q, k, _, hd = _split(p, qkv, _QK)
    root = np.sqrt(float(hd))      # MXNet divides its float scale by a double sqrt
    if not p.quantized:
        return xp.matmul(q, k.transpose(0, 2, 1)) * np.float32(1.0 / root)
    if qkv.dtype != _I8:
        raise GpundaError(f"Operator {_QK}: quantized qkv must be int8, got {qkv.dtype.name}")
    ds = np.float32(quantize_scale(_I8, _scalar(xp, ranges[0]), _scalar(xp, ranges[1])))
    lo = hi = 0.0
    if _calibrated(p):
        lo, hi = float(p.min_calib_range), float(p.max_calib_range)
        scale = np.float32(quantize_scale(_I8, lo, hi)) / (ds * ds)
    elif p.enable_float_output:
        scale = np.float32(1) / (ds * ds)
    else:
        scale, lo = np.float32(1), -0.0
    acc = _matmul(xp, q, k, 128.0, _int16_pairs(xp))
    out = _out(xp, p, acc, np.float32(float(scale) / root), _out_dtype(p))
    return out if p.enable_float_output else (out,) + _range_out(xp, lo, hi)


def _selfatt_valatt(xp, p, qkv, att, *ranges):
    _, _, v, hd = _split(p, qkv, _VALATT)
    L, B = qkv.shape[:2]
    if not p.quantized:
        y = xp.matmul(att, v)
    else:
        if qkv.dtype != _I8 or att.dtype != _U8:
            raise GpundaError(f"Operator {_VALATT}: quantized qkv must be int8 and att uint8, "
                              f"got {qkv.dtype.name} and {att.dtype.name}")
        r = [_scalar(xp, a) for a in ranges]
        qs = np.float32(quantize_scale(_I8, r[0], r[1]))
        as_ = np.float32(quantize_scale(_U8, r[2], r[3]))
        if _calibrated(p):
            lo, hi = float(p.min_calib_range), float(p.max_calib_range)
            scale = np.float32(quantize_scale(_I8, lo, hi)) / (qs * as_)
        elif p.enable_float_output:
            scale = np.float32(1) / (qs * as_)
        else:       # QuantizationRangeForS8U8Multiplication: 127 and 255 levels
            step = (np.float32(max(abs(r[0]), abs(r[1]))) / np.float32(127)) * \
                (np.float32(max(abs(r[2]), abs(r[3]))) / np.float32(255))
            hi = float(step * np.float32(2147483647))
            lo, scale = -hi, np.float32(1)
        acc = _matmul(xp, att, v.transpose(0, 2, 1), 0.0, _int16_pairs(xp))
        y = _out(xp, p, acc, scale, _out_dtype(p))
    y = y.reshape(B, p.heads, L, hd).transpose(2, 0, 1, 3).reshape(L, B, p.heads * hd)
    if not p.quantized or p.enable_float_output:
        return y.astype(np.float32)
    return (y,) + _range_out(xp, lo, hi)


def _qk_shape(p, s):
    L, B, _ = s[0]
    ins = [s[0]] + ([(1,), (1,)] if p.quantized else [])
    outs = [(B * p.heads, L, L)]
    return ins, outs + ([(1,), (1,)] if p.quantized and not p.enable_float_output else [])


def _valatt_shape(p, s):
    L, B, E3 = s[0]
    ins = [s[0], (B * p.heads, L, L)] + ([(1,)] * 4 if p.quantized else [])
    outs = [(L, B, E3 // 3)]
    return ins, outs + ([(1,), (1,)] if p.quantized and not p.enable_float_output else [])


def _types(att):
    def infer(p, t):
        if not p.quantized:
            return [_F32] * (2 if att else 1), [_F32]
        ins = [_I8, _U8] + [_F32] * 4 if att else [_I8, _F32, _F32]
        return ins, [_out_dtype(p)] + ([] if p.enable_float_output else [_F32, _F32])
    return infer


def _n_out(p):
    return 3 if p.quantized and not p.enable_float_output else 1


register(OpDef(
    _QK, _selfatt_qk, params=_PARAMS,
    inputs=lambda p: ("queries_keys_values",) + (("min_qkv", "max_qkv") if p.quantized
                                                  else ()),
    num_outputs=_n_out, nondiff=True, save=(), family="quantize",
    infer_shape=_qk_shape, infer_type=_types(False),
    doc="MXNet's oneDNN fused q.k^T / sqrt(head_dim) of interleaved q/k/v, float or int8."))
register(OpDef(
    _VALATT, _selfatt_valatt, params=_PARAMS,
    inputs=lambda p: ("queries_keys_values", "attention") + (
        ("min_qkv", "max_qkv", "min_att", "max_att") if p.quantized else ()),
    num_outputs=_n_out, nondiff=True, save=(), family="quantize",
    infer_shape=_valatt_shape, infer_type=_types(True),
    doc="MXNet's oneDNN fused attention x values of interleaved q/k/v, float or int8/uint8."))
