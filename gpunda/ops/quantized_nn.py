"""MXNet's quantized layers (``_contrib_quantized_conv``, ``_fully_connected``, ``_pooling``,
``_act``, ``_flatten``, ``_concat``, ``_embedding``, ``_batch_norm``).

Each takes int8/uint8 data with its real range as two (1,) float32 arrays (``min_*``,
``max_*``) per quantized input and returns (data, min_output, max_output). The params are
those of the float layer (Convolution, FullyConnected, ...), and no op has a gradient
(MXNet registers zero gradients: inference only).

NOTE [Quantized ranges]
A quantized tensor ``q`` with range ``(lo, hi)`` stands for ``q * max(|lo|, |hi|) / L``
with ``L`` = 127 for int8 and 255 for uint8. Conv and FC accumulate in int32, whose range
is the product of one level of each input times 2**31 - 1 (MXNet's
QuantizationRangeForMultiplication); a bias (int8, with its own range) is rescaled into
those int32 steps and truncated. Integer products are summed exactly here (float64 holds
every int32 sum), so the int32 outputs are MXNet's bit for bit where MXNet's kernels are
exact; ops that rescale (concat, batch_norm) round to nearest and saturate, as MKL-DNN's.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.quantization.quantize import _range_out, _scalar
from gpunda.ops.registry import OpDef, Param, get_op, register

_INT32_MAX = 2147483647.0
_LEVELS = {np.dtype(np.int8): 127.0, np.dtype(np.uint8): 255.0}
# MKL-DNN's scales (quantization_utils.h kInt8Range / kUint8Range)
_MKLDNN_LEVELS = {np.dtype(np.int8): 127.5, np.dtype(np.uint8): 255.5}
_QOUTS = ("output", "min_output", "max_output")
_I8, _U8, _I32, _F32 = (np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.float32))


def _absmax(lo, hi):
    return max(abs(_scalar(None, lo)), abs(_scalar(None, hi)))


def _require(op, what, x, allowed):
    if x.dtype not in allowed:
        names = " or ".join(np.dtype(t).name for t in allowed)
        raise GpundaError(f"Operator {op}: {what} must be {names}, got {x.dtype.name}")


def _saturate(xp, y, dtype):
    info = np.iinfo(dtype)
    return xp.clip(y, info.min, info.max).astype(dtype)


def _nearest(xp, y, dtype):
    """Round half to even and saturate: MKL-DNN's float -> int conversion."""
    return _saturate(xp, xp.rint(y), dtype)


def _product_range(data_dtype, d_range, w_range):
    """max of the int32 range of data (data_dtype) times int8 weights, in float32 as
    MXNet's QuantizationRangeForMultiplication computes it."""
    f = np.float32
    one = (f(d_range) / f(_LEVELS[data_dtype])) * (f(w_range) / f(127.0))
    return float(one * f(_INT32_MAX))


def _bias_steps(xp, bias, b_range, out_range):
    """int8 bias values in int32 output steps, truncated (MXNet's QuantizedSumInitKernel)."""
    if out_range == 0:
        return xp.zeros(bias.shape, np.int64)
    scale = np.float32(b_range / 127.0) / np.float32(out_range / _INT32_MAX)
    return xp.trunc(bias.astype(np.float32) * scale).astype(np.int64)


def _split(p, arrays, n_data):
    """(tensors, ranges): the first n_data inputs, then their (lo, hi) pairs."""
    return arrays[:n_data], [arrays[n_data + 2 * i: n_data + 2 * i + 2] for i in range(n_data)]


def _bias_inputs(p):
    if p.no_bias:
        return ("data", "weight", "min_data", "max_data", "min_weight", "max_weight")
    return ("data", "weight", "bias", "min_data", "max_data", "min_weight", "max_weight",
            "min_bias", "max_bias")


def _types_rule(out_type):
    """infer_type for ops whose data/weight/bias are int8 (data also uint8) and ranges float32."""
    def infer(p, in_t):
        n = 2 if p.no_bias else 3
        ins = [in_t[0] or _I8] + [_I8] * (n - 1) + [_F32] * (2 * n)
        return ins, [out_type, _F32, _F32]
    return infer


def _range_shapes(shapes, start):
    return shapes[:start] + [(1,)] * (len(shapes) - start)


# -- conv / fully connected -----------------------------------------------------------

def _quantized_conv(xp, p, *arrays):
    n = 2 if p.no_bias else 3
    (x, w, *b), ranges = _split(p, arrays, n)
    _require("_contrib_quantized_conv", "data", x, (_I8, _U8))
    _require("_contrib_quantized_conv", "weight", w, (_I8,))
    if p.num_group != 1:
        raise GpundaError(f"Operator _contrib_quantized_conv: num_group={p.num_group}; only "
                          f"num_group=1 is supported (as MXNet's)")
    acc = get_op("Convolution").compute(xp, p, x.astype(np.float64), w.astype(np.float64))
    # MXNet's CPU kernel reports the int8 x int8 range whatever the data's dtype
    out_range = _product_range(_I8, _absmax(*ranges[0]), _absmax(*ranges[1]))
    acc = xp.rint(acc).astype(np.int64)
    if b:
        _require("_contrib_quantized_conv", "bias", b[0], (_I8,))
        steps = _bias_steps(xp, b[0], _absmax(*ranges[2]), out_range)
        acc = acc + steps.reshape((1, -1) + (1,) * (acc.ndim - 2))
    return (_saturate(xp, acc, np.int32),) + _range_out(xp, -out_range, out_range)


def _infer_qconv(p, in_shapes):
    shapes, outs = get_op("Convolution").infer_shape(p, list(in_shapes[:2 if p.no_bias else 3]))
    shapes = list(shapes) + [(1,)] * (len(in_shapes) - len(shapes))
    return shapes, None if outs is None else [outs[0], (1,), (1,)]


_CONV_PARAMS = get_op("Convolution").params
register(OpDef(
    "_contrib_quantized_conv", _quantized_conv, params=_CONV_PARAMS, inputs=_bias_inputs,
    num_outputs=3, output_names=_QOUTS, nondiff=True, save=(), family="quantize",
    infer_shape=_infer_qconv, infer_type=_types_rule(_I32),
    doc="Convolution of int8/uint8 data with int8 weight (and int8 bias), accumulated in "
        "int32; returns (int32 output, min_output, max_output)."))


def _quantized_fc(xp, p, *arrays):
    n = 2 if p.no_bias else 3
    (x, w, *b), ranges = _split(p, arrays, n)
    _require("_contrib_quantized_fully_connected", "data", x, (_I8, _U8))
    _require("_contrib_quantized_fully_connected", "weight", w, (_I8,))
    acc = get_op("FullyConnected").compute(xp, p, x.astype(np.float64), w.astype(np.float64))
    out_range = _product_range(x.dtype, _absmax(*ranges[0]), _absmax(*ranges[1]))
    acc = xp.rint(acc).astype(np.int64)
    if b:
        _require("_contrib_quantized_fully_connected", "bias", b[0], (_I8,))
        acc = acc + _bias_steps(xp, b[0].reshape(-1), _absmax(*ranges[2]), out_range)
    return (_saturate(xp, acc, np.int32),) + _range_out(xp, -out_range, out_range)


def _infer_qfc(p, in_shapes):
    shapes, outs = get_op("FullyConnected").infer_shape(
        p, list(in_shapes[:2 if p.no_bias else 3]))
    shapes = list(shapes) + [(1,)] * (len(in_shapes) - len(shapes))
    return shapes, None if outs is None else [outs[0], (1,), (1,)]


register(OpDef(
    "_contrib_quantized_fully_connected", _quantized_fc,
    params=get_op("FullyConnected").params, inputs=_bias_inputs, num_outputs=3,
    output_names=_QOUTS, nondiff=True, save=(), family="quantize",
    infer_shape=_infer_qfc, infer_type=_types_rule(_I32),
    doc="FullyConnected of int8/uint8 data with int8 weight (and int8 bias), accumulated "
        "in int32; returns (int32 output, min_output, max_output)."))


# -- ops that keep the data's dtype and range ------------------------------------------

def _pass_range_shape(out_of):
    def infer(p, s):
        shapes = [s[0], (1,), (1,)] + list(s[3:])
        return shapes, None if s[0] is None else [out_of(p, s[0]), (1,), (1,)]
    return infer


def _same_type(out_fn=None):
    def infer(p, t):
        out = t[0] if out_fn is None else out_fn(p, t[0])
        return [t[0], _F32, _F32], [out, _F32, _F32]
    return infer


def _quantized_pooling(xp, p, x, lo, hi):
    _require("_contrib_quantized_pooling", "data", x, (_I8, _U8))
    if p.pool_type not in ("max", "avg"):
        raise GpundaError(f"Operator _contrib_quantized_pooling: pool_type={p.pool_type!r}; "
                          f"only 'max' and 'avg' are supported (as MXNet's)")
    if x.ndim not in (4, 5):
        raise GpundaError(f"Operator _contrib_quantized_pooling: data must be 4-D or 5-D "
                          f"(NCHW/NCDHW), got shape {tuple(x.shape)}")
    pool = get_op("Pooling").compute
    if (p.pool_type == "avg" and p.pooling_convention == "full" and not p.global_pool
            and p.count_include_pad in (None, True)):
        # MXNet's int8 kernel counts the cells a 'full' window hangs past the edge as
        # padding: every window divides by the kernel's size
        y = pool(xp, p.replace(pool_type="sum"), x.astype(np.float64)) / float(
            np.prod(p.kernel))
    else:
        y = pool(xp, p, x.astype(np.float64))
    return (_nearest(xp, y, x.dtype),) + _range_out(xp, _scalar(xp, lo), _scalar(xp, hi))


register(OpDef(
    "_contrib_quantized_pooling", _quantized_pooling, params=get_op("Pooling").params,
    inputs=("data", "min_data", "max_data"), num_outputs=3, output_names=_QOUTS,
    nondiff=True, save=(), family="quantize", infer_type=_same_type(),
    infer_shape=lambda p, s: (get_op("Pooling").infer_shape(p, s[:1])[0] + [(1,), (1,)],
                              None if s[0] is None else
                              get_op("Pooling").infer_shape(p, s[:1])[1] + [(1,), (1,)]),
    doc="Max or avg pooling of int8/uint8 data (averages round to nearest); the range "
        "passes through."))


def _quantized_act(xp, p, x, lo, hi):
    _require("_contrib_quantized_act", "data", x, (_I8, _U8))
    if p.act_type != "relu":
        raise GpundaError(f"Operator _contrib_quantized_act: act_type={p.act_type!r}; only "
                          f"'relu' is supported (as MXNet's)")
    # MXNet types the output int8 even for uint8 data (relu is then the identity)
    y = xp.maximum(x, 0) if x.dtype == _I8 else x
    return (y.astype(np.int8),) + _range_out(xp, _scalar(xp, lo), _scalar(xp, hi))


register(OpDef(
    "_contrib_quantized_act", _quantized_act, params=get_op("Activation").params,
    inputs=("data", "min_data", "max_data"), num_outputs=3, output_names=_QOUTS,
    nondiff=True, save=(), family="quantize", infer_type=_same_type(lambda p, t: _I8),
    infer_shape=_pass_range_shape(lambda p, s: s),
    doc="relu of int8 data (output int8); the range passes through."))


def _quantized_flatten(xp, p, x, lo, hi):
    _require("_contrib_quantized_flatten", "data", x, (_I8, _U8))
    n = int(np.prod(x.shape[1:], dtype=np.int64)) if x.ndim else 1
    return (x.reshape(x.shape[0] if x.ndim else 1, n).copy(),) + \
        _range_out(xp, _scalar(xp, lo), _scalar(xp, hi))


register(OpDef(
    "_contrib_quantized_flatten", _quantized_flatten, inputs=("data", "min_data", "max_data"),
    num_outputs=3, output_names=_QOUTS, nondiff=True, save=(), family="quantize",
    infer_type=_same_type(),
    infer_shape=_pass_range_shape(lambda p, s: (s[0], int(np.prod(s[1:], dtype=np.int64)))),
    doc="Flatten int8/uint8 data to 2-D; the range passes through."))


def _quantized_embedding(xp, p, data, w, lo, hi):
    _require("_contrib_quantized_embedding", "weight", w, (_I8,))
    y = get_op("Embedding").compute(xp, p, data, w)
    return (y,) + _range_out(xp, _scalar(xp, lo), _scalar(xp, hi))


def _infer_qemb(p, s):
    shapes, outs = get_op("Embedding").infer_shape(p, list(s[:2]))
    return list(shapes) + [(1,), (1,)], None if outs is None else [outs[0], (1,), (1,)]


register(OpDef(
    "_contrib_quantized_embedding", _quantized_embedding, params=get_op("Embedding").params,
    inputs=("data", "weight", "min_weight", "max_weight"), num_outputs=3,
    output_names=_QOUTS, nondiff=True, save=(), family="quantize", infer_shape=_infer_qemb,
    infer_type=lambda p, t: ([t[0] or _F32, _I8, _F32, _F32], [_I8, _F32, _F32]),
    doc="Rows of an int8 weight picked by the indices in data; the weight's range "
        "passes through."))


# -- concat ---------------------------------------------------------------------------

def _quantized_concat(xp, p, *arrays):
    n = p.num_args
    if len(arrays) != 3 * n:
        raise GpundaError(f"Operator _contrib_quantized_concat: num_args={n} needs {3 * n} "
                          f"inputs (data, then min/max per input), got {len(arrays)}")
    xs, ranges = _split(p, arrays, n)
    for k, x in enumerate(xs):
        _require("_contrib_quantized_concat", f"arg{k}", x, (_I8, _U8))
    out_t = _I8 if any(x.dtype == _I8 for x in xs) else _U8
    lo = min([0.0] + [_scalar(xp, r[0]) for r in ranges])
    hi = max([0.0] + [_scalar(xp, r[1]) for r in ranges])
    out_scale = _MKLDNN_LEVELS[out_t] / max(abs(lo), abs(hi))
    parts = []
    for x, (a, b) in zip(xs, ranges):
        scale = _MKLDNN_LEVELS[x.dtype] / _absmax(a, b)
        if scale == out_scale and x.dtype == out_t:
            parts.append(x)
        else:   # MKL-DNN's reorder: rescale, round to nearest, saturate
            parts.append(_nearest(xp, x.astype(np.float32) * np.float32(out_scale / scale),
                                  out_t))
    y = get_op("Concat").compute(xp, p, *parts)
    return (y,) + _range_out(xp, lo, hi)


def _infer_qconcat(p, s):
    n = p.num_args
    shapes, outs = get_op("Concat").infer_shape(p, list(s[:n])) \
        if get_op("Concat").infer_shape else (list(s[:n]), None)
    if outs is None:
        known = [x for x in s[:n] if x is not None]
        if len(known) < n:
            return list(s[:n]) + [(1,)] * (2 * n), None
        ax = p.dim % len(known[0])
        out = list(known[0])
        out[ax] = sum(x[ax] for x in known)
        outs = [tuple(out)]
    return list(shapes) + [(1,)] * (2 * n), [outs[0], (1,), (1,)]


register(OpDef(
    "_contrib_quantized_concat", _quantized_concat, params=get_op("Concat").params,
    inputs=lambda p: tuple(f"arg{i}" for i in range(p.num_args)) + tuple(
        f"arg{i}_{m}" for i in range(p.num_args) for m in ("min", "max")),
    key_var_num_args="num_args", num_outputs=3, output_names=_QOUTS, nondiff=True, save=(),
    family="quantize", infer_shape=_infer_qconcat,
    infer_type=lambda p, t: (
        [x or _U8 for x in t[:p.num_args]] + [_F32] * (2 * p.num_args),
        [_I8 if any(x == _I8 for x in t[:p.num_args]) else _U8, _F32, _F32]),
    doc="Concat of int8/uint8 arrays: the output range spans every input's (and 0); inputs "
        "are rescaled to it. Any int8 input makes the output int8, else uint8."))


# -- batch norm ------------------------------------------------------------------------

def _quantized_batch_norm(xp, p, x, gamma, beta, mean, var, lo, hi):
    _require("_contrib_quantized_batch_norm", "data", x, (_I8, _U8))
    if p.min_calib_range is None or p.max_calib_range is None:
        raise GpundaError("Operator _contrib_quantized_batch_norm: min_calib_range and "
                          "max_calib_range are required (MXNet's quantized BatchNorm has no "
                          "calib_mode=None)")
    ax = p.axis % x.ndim
    if x.dtype == _U8:   # MKL-DNN first moves uint8 data to int8 steps
        x = _nearest(xp, x.astype(np.float32) * np.float32(127.5 / 255.5), np.int8)
    out_abs = max(abs(p.min_calib_range), abs(p.max_calib_range))
    invstd = 1.0 / xp.sqrt(var.astype(np.float32) + np.float32(p.eps))
    scale = gamma * invstd * np.float32(_absmax(lo, hi) / out_abs)
    shift = (beta - mean * gamma * invstd) * np.float32(127.5 / out_abs)
    shape = tuple(-1 if i == ax else 1 for i in range(x.ndim))
    y = x.astype(np.float32) * scale.reshape(shape) + shift.reshape(shape)
    return (_nearest(xp, y, np.int8),) + _range_out(xp, p.min_calib_range, p.max_calib_range)


def _infer_qbn(p, s):
    d = s[0]
    if d is None:
        return list(s), None
    c = (d[p.axis % len(d)],)
    return [d, c, c, c, c, (1,), (1,)], [d, (1,), (1,)]


register(OpDef(
    "_contrib_quantized_batch_norm", _quantized_batch_norm, params=get_op("BatchNorm").params,
    inputs=("data", "gamma", "beta", "moving_mean", "moving_var", "min_data", "max_data"),
    num_outputs=3, output_names=_QOUTS, aux_inputs=("moving_mean", "moving_var"),
    nondiff=True, save=(), family="quantize", infer_shape=_infer_qbn,
    infer_type=lambda p, t: ([t[0] or _I8] + [_F32] * 6, [_I8, _F32, _F32]),
    doc="Inference BatchNorm of int8/uint8 data with moving statistics, written as int8 "
        "over the calibrated output range (min_calib_range, max_calib_range)."))
