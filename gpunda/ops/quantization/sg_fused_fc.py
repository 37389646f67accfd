"""MXNet's oneDNN fused ``_sg_mkldnn_fully_connected`` node, float and quantized (MXNet
1.9.1's src/operator/subgraph/mkldnn/mkldnn_fc.cc is the spec): FullyConnected [+ one
elementwise op] as its subgraph. The arithmetic it shares with ``_sg_mkldnn_conv`` (weight
scales and rounding, calibrated rescaling, int16 pairs) lives in sg_fused.py, whose NOTE
[Fused INT8 arithmetic] describes both.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.quantization import int16_pairs as _pairs
from gpunda.ops.quantization.nn import _product_range, _saturate
from gpunda.ops.quantization.quantize import _range_out, _scalar
from gpunda.ops.quantization.sg_fused import (
    _F32, _FC, _I32, _I8, _INT32_MAX, _U8, _UINT8_ACTS, _act_kind, _apply, _bool, _calib,
    _calibrated, _int16_pairs, _layers, _named, _quantize_weight, _round_out, _weight_scales,
    quantize_scale)
from gpunda.ops.registry import OpDef, Param, get_op, register


# -- _sg_mkldnn_fully_connected ----------------------------------------------------------

_FC_PARAMS = (
    _bool("quantized", "int8/uint8 data with its range"),
    _bool("enable_float_output", "a quantized node's output dequantized to float32"),
    _bool("with_eltwise", "an elementwise op after FullyConnected"),
    _calib("min_calib_range"), _calib("max_calib_range"),
    Param("channel_wise_quantize", "bool", None, "float weights quantized per channel",
          optional=True),
    Param("with_relu", "bool", None, "old name of with_eltwise", optional=True),
)


def _eltwise(p):
    return p.with_eltwise if p.with_relu is None else p.with_relu


def _fc_inputs(p):
    fcp = _layers(p, _FC).main.p
    base = ["data", "weight"] + ([] if fcp.no_bias else ["bias"])
    if not p.quantized:
        return tuple(base)
    extra = ["min_data", "max_data"]
    if not p.channel_wise_quantize:
        extra += ["min_weight", "max_weight"] + ([] if fcp.no_bias else ["min_bias",
                                                                         "max_bias"])
    return tuple(base + extra)


def _fc_out_type(p):
    if p.enable_float_output:
        return _F32
    if not _calibrated(p):
        return _I32
    node = _layers(p, _FC).act
    uint8 = _eltwise(p) and node is not None and _act_kind(node) in _UINT8_ACTS
    return _U8 if uint8 else _I8


def _round_half_away(xp, y):
    return xp.sign(y) * xp.floor(xp.abs(y) + 0.5)


def _sg_fc(xp, p, *arrays):
    lay = _layers(p, _FC)
    a = _named(_FC, _fc_inputs(p), arrays)
    x, w, b = a["data"], a["weight"], a.get("bias")
    fc, fcp = get_op("FullyConnected").compute, lay.main.p
    elt = lay.act if _eltwise(p) else None
    if not p.quantized:
        y = fc(xp, fcp, x, w, b) if b is not None else fc(xp, fcp, x, w)
        return y if elt is None else _apply(xp, elt, y)
    if x.dtype not in (_I8, _U8):
        raise GpundaError(f"Operator {_FC}: quantized data must be int8 or uint8, got "
                          f"{x.dtype.name}")
    d_lo, d_hi = _scalar(xp, a["min_data"]), _scalar(xp, a["max_data"])
    data_scale = quantize_scale(x.dtype, d_lo, d_hi)
    calibrated = _calibrated(p)
    if p.channel_wise_quantize:
        if not (calibrated or p.enable_float_output):
            raise GpundaError(f"Operator {_FC}: channel-wise quantization needs the "
                              f"requantize or dequantize fused (min_calib_range and "
                              f"max_calib_range, or enable_float_output)")
        w_host = np.asarray(w.get() if hasattr(w, "get") else w)
        b_host = None if b is None else np.asarray(b.get() if hasattr(b, "get") else b)
        scales = _weight_scales(w_host, b_host, data_scale, True)
        wq, bq = _quantize_weight(xp, w, b, data_scale, scales)
    else:
        w_lo, w_hi = _scalar(xp, a["min_weight"]), _scalar(xp, a["max_weight"])
        ws = np.float32(quantize_scale(w.dtype, w_lo, w_hi))
        wq, bq = w, None
        if b is not None:
            b_lo, b_hi = _scalar(xp, a["min_bias"]), _scalar(xp, a["max_bias"])
            b_scale = np.float32(quantize_scale(_I8, b_lo, b_hi))
            rescale = np.float32(data_scale) * ws / b_scale
            b_abs = np.float32(max(abs(b_lo), abs(b_hi)))
            with np.errstate(divide="ignore"):      # an all-zero bias: no cap
                cap = np.float32(_INT32_MAX // 2) / b_abs / b_scale
            if rescale > cap:       # keep the int32 bias under 2**30 (MXNet's workaround)
                w_re = cap * b_scale / np.float32(data_scale) / ws
                wq = _round_half_away(xp, w.astype(np.float32) * w_re).astype(np.int8)
                ws, rescale = ws * w_re, cap
            bq = _saturate(xp, _round_half_away(xp, b.astype(np.float32) * rescale),
                           np.int32)
        scales = np.array([ws], np.float64)
    f64 = np.float64
    xf, wf = x.astype(f64), wq.astype(f64)
    exact = lambda: fc(xp, fcp.replace(no_bias=True), xf, wf)       # noqa: E731
    if _int16_pairs(xp):
        lead = xf.shape[:1] if fcp.flatten else xf.shape[:-1]
        shift = 128.0 if x.dtype == _I8 else 0.0
        acc = _pairs.fc(xf.reshape(int(np.prod(lead)), -1), wf, shift, exact)
        acc = acc.reshape(*lead, wf.shape[0])
    else:
        acc = exact()
    if bq is not None:
        acc = acc + bq.astype(f64)
    out_type = _fc_out_type(p)
    if not (calibrated or p.enable_float_output):
        w_abs = max(abs(_scalar(xp, a["min_weight"])), abs(_scalar(xp, a["max_weight"])))
        hi = _product_range(x.dtype, max(abs(d_lo), abs(d_hi)), w_abs)
        y = acc if elt is None else _apply(xp, elt, acc)
        return (_round_out(xp, y, _I32),) + _range_out(xp, -hi, hi)
    elt_scale = np.float32(1.0)
    if calibrated:
        lo, hi = float(p.min_calib_range), float(p.max_calib_range)
        out_scale = np.float32(quantize_scale(out_type, lo, hi))
        if elt is not None:
            tmp, elt_scale = np.float32(1.0 / data_scale), out_scale
        else:
            tmp = out_scale / np.float32(data_scale)
    else:
        tmp = np.float32(1.0 / data_scale)
    oscale = tmp / scales.astype(np.float32)
    y = (acc.astype(np.float32) * xp.asarray(oscale)).astype(f64)     # float32, as oneDNN
    if elt is not None:
        y = _apply(xp, elt, y) * float(elt_scale)
    out = _round_out(xp, y, out_type)
    if p.enable_float_output:
        return out
    return (out,) + _range_out(xp, lo, hi)


def _fc_nout(p):
    return 3 if p.quantized and not p.enable_float_output else 1


def _fc_shape(p, in_shapes):
    fcp = _layers(p, _FC).main.p
    nb = 2 if fcp.no_bias else 3
    shapes, outs = get_op("FullyConnected").infer_shape(fcp, list(in_shapes[:nb]))
    shapes = list(shapes) + [(1,)] * (len(in_shapes) - nb)
    if outs is None:
        return shapes, None
    return shapes, [outs[0]] + [(1,), (1,)] * (_fc_nout(p) == 3)


def _fc_type(p, in_types):
    names = _fc_inputs(p)
    if not p.quantized:
        t = in_types[0] or next((d for d in in_types if d is not None), _F32)
        return [t] * len(names), [t]
    nb = 2 if _layers(p, _FC).main.p.no_bias else 3
    wt = _F32 if p.channel_wise_quantize else _I8
    ins = [in_types[0] or _I8] + [wt] * (nb - 1) + [_F32] * (len(names) - nb)
    return ins, [_fc_out_type(p)] + [_F32, _F32] * (_fc_nout(p) == 3)


register(OpDef(
    _FC, _sg_fc, params=_FC_PARAMS, inputs=_fc_inputs, num_outputs=_fc_nout,
    output_names=lambda p: ("output", "min_output", "max_output") if _fc_nout(p) == 3
    else ("output",),
    nondiff=True, save=(), family="quantize", infer_shape=_fc_shape, infer_type=_fc_type,
    doc="MXNet's oneDNN fused FullyConnected [+ elementwise op], float or quantized "
        "(NOTE [Fused INT8 arithmetic])."))
