"""MXNet's oneDNN fused subgraph nodes ``_sg_mkldnn_conv`` (here) and
``_sg_mkldnn_fully_connected`` (sg_fused_fc.py, on this file's shared arithmetic), float and
quantized (MXNet 1.9.1's src/operator/subgraph/mkldnn/mkldnn_conv.cc and mkldnn_fc.cc are
the spec).

Each node carries its float layers as its subgraph (the node's "subgraphs" in JSON):
Convolution [+ BatchNorm] [+ act] [+ elemwise_add of the ``sum`` input] [+ act], or
FullyConnected [+ one elementwise op]. The node reads its layers' params from there, as
MXNet's attribute parser does, and computes them directly.

NOTE [Fused INT8 arithmetic]
A quantized node takes int8/uint8 data with its real range and computes what oneDNN
does with MXNet's scales (``scale(range) = L / max(|lo|, |hi|)``, ``L`` = 127.5 for int8,
255.5 for uint8, quantization_utils.h GetQuantizeScale):
- conv: BatchNorm is folded into float weights and bias first; the weights are quantized
  here, per output channel when the node is calibrated (each channel's scale capped so
  that its int32 bias stays under 2**30), over the whole tensor otherwise;
- FC: the weights come quantized (int8 with their range) or, with
  ``channel_wise_quantize``, in float to be quantized per channel here;
- weights round half to even into int8, the bias into int32 steps of data x weight;
  the int32 accumulator is exact, except that on a CPU without VNNI u8 x s8 products
  are summed in saturating int16 pairs as oneDNN does there (NOTE [int16 pair
  saturation], int16_pairs.py);
- a calibrated node (``min_calib_range``/``max_calib_range``) rescales to its output
  type (uint8 after relu-like acts, int8 otherwise) in float32, as oneDNN, the
  activation applied on the rescaled value, then ``sum`` (rescaled from its own range,
  added in float32), then the post-sum act, rounding half to even and saturating; an uncalibrated one gives int32 with MXNet's
  product range; an FC with ``enable_float_output`` gives float32.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.quantization import int16_pairs as _pairs
from gpunda.ops.quantization.nn import _product_range, _saturate
from gpunda.ops.quantization.quantize import _range_out, _scalar
from gpunda.ops.registry import OpDef, Param, get_op, register

_CONV = "_sg_mkldnn_conv"
_FC = "_sg_mkldnn_fully_connected"
_I8, _U8, _I32, _F32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.float32))
_INT32_MAX = 2147483647
_ACTS = ("Activation", "LeakyReLU", "clip")
_FC_ELTWISE = _ACTS + ("square", "sqrt", "exp", "abs")
# oneDNN algorithms after which MXNet's fused node outputs uint8 (IsOutputUInt8)
_UINT8_ACTS = {"relu", "sigmoid", "softrelu", "clip", "square", "sqrt", "exp", "abs"}


def quantize_scale(dtype, lo, hi):
    """MXNet's GetQuantizeScale: levels per real unit of a range for int8 or uint8."""
    levels = 127.5 if np.dtype(dtype) == _I8 else 255.5
    r = max(abs(float(lo)), abs(float(hi)))
    return float(np.float32(levels) / np.float32(r)) if r else float(_INT32_MAX)


_ADJUST = []


def s8s8_weight_adjust():
    """The factor oneDNN scales int8 weights by for a conv of int8 (signed) data: 0.5 on a
    CPU without AVX-512 VNNI, whose int8 dot product could overflow int16 otherwise, 1
    with it; the output scales undo it, at the cost of one bit of weight precision. So
    MXNet's quantized conv gives different numbers on different CPUs; gpunda takes the
    CPU it runs on, as oneDNN does, or ``GPUNDA_MKLDNN_S8S8_ADJUST`` (1 or 0.5). 0.5 (no
    VNNI) also makes u8 x s8 products sum in saturating int16 pairs (_int16_pairs)."""
    import os
    env = os.environ.get("GPUNDA_MKLDNN_S8S8_ADJUST")
    if env is not None:
        if env not in ("1", "0.5"):
            raise GpundaError(f"GPUNDA_MKLDNN_S8S8_ADJUST={env!r}: expected 1 or 0.5")
        return float(env)
    if not _ADJUST:
        try:
            with open("/proc/cpuinfo") as f:
                vnni = "avx512_vnni" in f.read()
        except OSError:
            vnni = True
        _ADJUST.append(1.0 if vnni else 0.5)
    return _ADJUST[0]


def _int16_pairs(xp):
    """Whether oneDNN on this CPU sums u8 x s8 products in saturating int16 pairs (NOTE
    [int16 pair saturation]): a CPU without VNNI, the same trait as the half-scale s8s8
    weights; only on the CPU, where MXNet runs these nodes."""
    return xp is np and s8s8_weight_adjust() != 1.0


def _subgraph(p, opname):
    subs = p.__dict__.get("_subgraphs")
    if not subs:
        raise GpundaError(f"Operator {opname}: the node has no subgraph; it is made by "
                          f"MXNet's MKLDNN graph pass (the node's \"subgraphs\" in JSON) or "
                          f"by mx.contrib.quantization.quantize_model_mkldnn")
    return subs[0]


def _act_kind(node):
    """The oneDNN algorithm name of an act node, as IsOutputUInt8 sorts them."""
    name = node.op.name
    if name == "Activation":
        return str(node.p.act_type)
    if name == "LeakyReLU":
        return "relu" if node.p.act_type == "leaky" and float(node.p.slope) == 0.0 \
            else str(node.p.act_type)
    return name


class _Layers:
    """The float layers of a fused node's subgraph, in order."""

    __slots__ = ("main", "bn", "act", "postsum_act", "sub")

    def __init__(self, sym, main_op, opname, eltwise_ops):
        self.sub, self.main, self.bn, self.act, self.postsum_act = sym, None, None, None, None
        seen_sum = False
        for n in sym._topo():
            if n.op is None:
                continue
            name = n.op.name
            if name == main_op:
                self.main = n
            elif name == "BatchNorm" and main_op == "Convolution":
                self.bn = n
            elif name == "elemwise_add" and main_op == "Convolution":
                seen_sum = True
            elif name in eltwise_ops:
                if seen_sum:
                    self.postsum_act = n
                else:
                    self.act = n
            else:
                raise GpundaError(f"Operator {opname}: its subgraph holds {name} "
                                  f"({n.name!r}), which this fused op does not fuse")
        if self.main is None:
            raise GpundaError(f"Operator {opname}: its subgraph has no {main_op}")


def _layers(p, opname):
    lay = p.__dict__.get("_layers")
    sub = _subgraph(p, opname)
    if lay is None or lay.sub is not sub:
        if opname == _CONV:
            lay = _Layers(sub, "Convolution", opname, _ACTS)
        else:
            lay = _Layers(sub, "FullyConnected", opname, _FC_ELTWISE)
        p.__dict__["_layers"] = lay
    return lay


def _apply(xp, node, y):
    """The float op of an act/eltwise ``node`` on ``y`` (its visible output)."""
    r = get_op(node.op.name).compute(xp, node.p, y)
    return r[0] if isinstance(r, (tuple, list)) else r


def _round_out(xp, y, dtype):
    if dtype == _F32:
        return y.astype(np.float32)
    return _saturate(xp, xp.rint(y), dtype)


def _weight_scales(w, bias, data_scale, channel_wise):
    """MXNet's GetWeightScales: per-channel scales (capped for the bias) or one scale."""
    flat = np.asarray(w, dtype=np.float32).reshape(w.shape[0], -1)
    lo, hi = flat.min(axis=1), flat.max(axis=1)
    if not channel_wise:
        return np.array([quantize_scale(_I8, lo.min(), hi.max())], np.float64)
    scales = np.empty(w.shape[0], np.float64)
    for c in range(w.shape[0]):
        s = np.float32(quantize_scale(_I8, lo[c], hi[c]))
        if bias is not None and bias[c] != 0:
            limit = np.float32(_INT32_MAX if bias[c] > 0 else -_INT32_MAX - 1)
            s = min(s, limit / np.float32(2) / np.float32(bias[c]) / np.float32(data_scale))
        scales[c] = s
    return scales


def _quantize_weight(xp, w, b, data_scale, scales, adjust=1.0):
    shape = (-1,) + (1,) * (w.ndim - 1)
    s = xp.asarray(scales.astype(np.float32))
    ws = s * np.float32(adjust)
    wq = _saturate(xp, xp.rint(w.astype(np.float32) * ws.reshape(shape)), np.int8)
    bq = None
    if b is not None:
        bq = _saturate(xp, xp.rint(b.astype(np.float32) * (s * np.float32(data_scale))),
                       np.int32)
    return wq, bq


def _named(opname, names, arrays):
    """The inputs by name; their count checked."""
    if len(arrays) != len(names):
        raise GpundaError(f"Operator {opname}: expects {len(names)} inputs "
                          f"({', '.join(names)}), got {len(arrays)}")
    return dict(zip(names, arrays))


def _bool(name, doc):
    return Param(name, "bool", False, doc)


def _calib(name):
    return Param(name, "float", None, f"{name[:3]} of the calibrated output range", optional=True)


# -- _sg_mkldnn_conv ---------------------------------------------------------------------

_CONV_PARAMS = (
    _bool("with_bn", "BatchNorm folded into the weights"),
    _bool("with_act", "an activation after conv (and BatchNorm)"),
    _bool("with_sum", "the 'sum' input added after that"),
    _bool("with_postsum_act", "an activation after the sum"),
    _bool("quantized", "int8/uint8 data with its range"),
    _calib("min_calib_range"), _calib("max_calib_range"),
    # MXNet's old names, renamed on parsing (SgMKLDNNConvParamParser)
    Param("with_relu", "bool", None, "old name of with_act", optional=True),
    Param("with_postsum_relu", "bool", None, "old name of with_postsum_act", optional=True),
)


def _conv_flags(p):
    act = p.with_act if p.with_relu is None else p.with_relu
    post = p.with_postsum_act if p.with_postsum_relu is None else p.with_postsum_relu
    return act, post


def _conv_inputs(p):
    lay = _layers(p, _CONV)
    names = ["data", "weight"] + ([] if lay.main.p.no_bias else ["bias"])
    if p.with_bn:
        names += ["gamma", "beta", "mean", "var"]
    if p.with_sum:
        names.append("sum")
    if p.quantized:
        names += ["data_min", "data_max"] + (["sum_min", "sum_max"] if p.with_sum else [])
    return tuple(names)


def _calibrated(p):
    return p.min_calib_range is not None and p.max_calib_range is not None


def _conv_out_type(p):
    """int8/uint8 for a calibrated quantized node (MXNet's IsOutputUInt8), else int32."""
    if not _calibrated(p):
        return _I32
    lay = _layers(p, _CONV)
    act, post = _conv_flags(p)
    node = lay.act if (act and not p.with_sum) else (lay.postsum_act if post else None)
    return _U8 if node is not None and _act_kind(node) in _UINT8_ACTS else _I8


def _fold_bn(xp, lay, w, b, gamma, beta, mean, var):
    """Weights and bias with the inference BatchNorm folded in (UpdateConvWeightBias)."""
    bnp = lay.bn.p
    g = xp.ones(gamma.shape, np.float64) if bnp.fix_gamma else gamma.astype(np.float64)
    alpha = (g / xp.sqrt(var.astype(np.float64) + float(bnp.eps))).astype(np.float32)
    w2 = w * alpha.reshape((-1,) + (1,) * (w.ndim - 1)).astype(w.dtype)
    if b is None:
        b2 = beta - alpha * mean
    else:
        b2 = beta + alpha * (b.astype(np.float32) - mean)
    return w2, b2.astype(w.dtype)


def _sg_conv(xp, p, *arrays):
    lay = _layers(p, _CONV)
    a = _named(_CONV, _conv_inputs(p), arrays)
    x, w, b = a["data"], a["weight"], a.get("bias")
    if p.with_bn:
        w, b = _fold_bn(xp, lay, w, b, a["gamma"], a["beta"], a["mean"], a["var"])
    conv = get_op("Convolution").compute
    cp = lay.main.p.replace(no_bias=b is None)
    act, post = _conv_flags(p)
    if not p.quantized:
        y = conv(xp, cp, x, w, b) if b is not None else conv(xp, cp, x, w)
        if act and lay.act is not None:
            y = _apply(xp, lay.act, y)
        if p.with_sum:
            y = y + a["sum"]
        if post and lay.postsum_act is not None:
            y = _apply(xp, lay.postsum_act, y)
        return y
    if x.dtype not in (_I8, _U8):
        raise GpundaError(f"Operator {_CONV}: quantized data must be int8 or uint8, got "
                          f"{x.dtype.name}")
    d_lo, d_hi = _scalar(xp, a["data_min"]), _scalar(xp, a["data_max"])
    if d_lo < 0 and x.dtype != _I8:
        raise GpundaError(f"Operator {_CONV}: data_min={d_lo} < 0 needs int8 data, got "
                          f"{x.dtype.name} (quantize the model with int8)")
    calibrated = _calibrated(p)
    data_scale = quantize_scale(x.dtype, d_lo, d_hi)
    w_host = np.asarray(w.get() if hasattr(w, "get") else w)
    b_host = None if b is None else np.asarray(b.get() if hasattr(b, "get") else b)
    scales = _weight_scales(w_host, b_host, data_scale, calibrated)
    adj = s8s8_weight_adjust() if x.dtype == _I8 else 1.0
    wq, bq = _quantize_weight(xp, w, b, data_scale, scales, adj)
    f64 = np.float64
    xf, wf = x.astype(f64), wq.astype(f64)
    exact = lambda: conv(xp, cp.replace(no_bias=True), xf, wf)      # noqa: E731
    if x.dtype == _U8 and _int16_pairs(xp):
        from gpunda.ops.nn.conv import _conv_geo
        _, stride, dilate, pad = _conv_geo(cp, xf.ndim, _CONV)
        acc = _pairs.conv(xf, wf, stride, dilate, pad, int(cp.num_group), exact)
    else:
        acc = exact()
    shape = (1, -1) + (1,) * (acc.ndim - 2)
    if bq is not None:
        acc = acc + bq.astype(f64).reshape(shape) * adj
    out_type = _conv_out_type(p)
    if calibrated:
        lo, hi = float(p.min_calib_range), float(p.max_calib_range)
        out_scale = quantize_scale(out_type, lo, hi)
        rq = np.float32(out_scale) / np.float32(data_scale) / scales.astype(np.float32)
        # oneDNN scales the int32 sum in float32 (by 1/adj too, for the halved weights)
        rq = rq / np.float32(adj)
        y = (acc.astype(np.float32) * xp.asarray(rq).reshape(shape)).astype(f64)
    else:
        acc = acc / adj
        flat = w_host.astype(np.float32)
        w_abs = max(abs(float(flat.min())), abs(float(flat.max())))
        hi = _product_range(x.dtype, max(abs(d_lo), abs(d_hi)), w_abs)
        lo, out_scale, y = -hi, data_scale * float(scales[0]), acc
    if act and lay.act is not None:
        if lay.act.op.name != "clip":
            y = _apply(xp, lay.act, y)
        elif p.with_sum:    # bounded relu at a_max in output steps (MXNet's alpha *= scale)
            y = xp.clip(y, 0.0, float(lay.act.p.a_max) * out_scale)
        # conv + clip alone: the output range cuts it off (MXNet drops the post-op)
    if p.with_sum:
        s = a["sum"]
        sum_scale = out_scale / quantize_scale(s.dtype, _scalar(xp, a["sum_min"]),
                                               _scalar(xp, a["sum_max"]))
        # oneDNN's sum post-op adds in float32: above 2**17 its steps are coarser than .5
        f32 = np.float32
        y = (y.astype(f32) + s.astype(f32) * f32(sum_scale)).astype(f64)
    if post and lay.postsum_act is not None:
        y = _apply(xp, lay.postsum_act, y)
    return (_round_out(xp, y, out_type),) + _range_out(xp, lo, hi)


def _conv_shape(p, in_shapes):
    names = _conv_inputs(p)
    lay = _layers(p, _CONV)
    nb = 2 if lay.main.p.no_bias else 3
    shapes, outs = get_op("Convolution").infer_shape(lay.main.p, list(in_shapes[:nb]))
    shapes = list(shapes) + list(in_shapes[nb:])
    if outs is None:
        return shapes, None
    if p.with_bn:
        c = (outs[0][1],)
        shapes[nb:nb + 4] = [c] * 4
    for i, n in enumerate(names):
        if n == "sum":
            shapes[i] = tuple(outs[0])
        elif n.endswith(("_min", "_max")):
            shapes[i] = (1,)
    return shapes, [outs[0]] + ([(1,), (1,)] if p.quantized else [])


def _conv_type(p, in_types):
    names = _conv_inputs(p)
    if not p.quantized:
        t = in_types[0] or next((d for d in in_types if d is not None), _F32)
        return [t] * len(names), [t]
    ins = []
    for n, d in zip(names, in_types):
        if n == "data":
            ins.append(d or _I8)
        elif n == "sum":
            ins.append(d or _I8)
        else:
            ins.append(_F32)
    return ins, [_conv_out_type(p), _F32, _F32]


register(OpDef(
    _CONV, _sg_conv, params=_CONV_PARAMS, inputs=_conv_inputs,
    num_outputs=lambda p: 3 if p.quantized else 1,
    output_names=lambda p: ("output", "output_min", "output_max") if p.quantized
    else ("output",),
    aux_inputs=lambda p: ("mean", "var") if p.with_bn else (),
    nondiff=True, save=(), family="quantize", infer_shape=_conv_shape, infer_type=_conv_type,
    doc="MXNet's oneDNN fused Convolution [+ BatchNorm] [+ act] [+ sum] [+ act], float or "
        "quantized (NOTE [Fused INT8 arithmetic])."))
