"""MXNet's ``_contrib_quantized_rnn``: an LSTM over uint8 data quantized by
``quantize_asym`` (``q = x * data_scale + data_shift``), with float32 parameters and states.

MXNet's MKL-DNN kernel also rounds the weights to int8 per gate row; gpunda runs the
float LSTM (ops/rnn.py) on the dequantized data ``(q - data_shift) / data_scale``, so its
outputs are the float layer's on that data (MXNet's own test allows a mean squared
difference of 1e-3 between the two). No gradient, as MXNet's.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.quantization.quantize import _scalar
from gpunda.ops.registry import OpDef, get_op, register

_INPUTS = ("data", "parameters", "state", "state_cell", "data_scale", "data_shift")
_F32 = np.dtype(np.float32)


def _check_lstm(p):
    get_op("RNN").check(p)
    if p.mode != "lstm":
        raise GpundaError(f"Operator _contrib_quantized_rnn: mode={p.mode!r}; only 'lstm' is "
                          f"supported (as MXNet's)")
    if p.use_sequence_length:
        raise GpundaError("Operator _contrib_quantized_rnn: use_sequence_length=True is not "
                          "supported (MXNet's takes no sequence_length input)")


def _quantized_rnn(xp, p, data, params, state, cell, scale, shift, ctx=None):
    _check_lstm(p)
    if data.dtype != np.uint8:
        raise GpundaError(f"Operator _contrib_quantized_rnn: data must be uint8, got "
                          f"{data.dtype.name}")
    s, b = _scalar(xp, scale), _scalar(xp, shift)
    if s == 0:
        raise GpundaError("Operator _contrib_quantized_rnn: data_scale is 0")
    x = (data.astype(np.float32) - np.float32(b)) / np.float32(s)
    outs = get_op("RNN").compute(xp, p, x, params, state, cell, ctx=ctx)
    return tuple(outs[:3]) if p.state_outputs else outs[0]


def _infer(p, s):
    _check_lstm(p)
    r = get_op("RNN").infer_shape(p, list(s[:4]))
    if r is None:
        return list(s), None
    shapes, outs = r
    return list(shapes[:4]) + [(1,), (1,)], list(outs[:3 if p.state_outputs else 1])


register(OpDef(
    "_contrib_quantized_rnn", _quantized_rnn, params=get_op("RNN").params, check=_check_lstm,
    inputs=_INPUTS, wants_ctx=True, num_outputs=lambda p: 3 if p.state_outputs else 1,
    output_names=lambda p: ("output", "state_output", "statecell_ouput")[
        :3 if p.state_outputs else 1],
    nondiff=True, save=(), family="quantize", infer_shape=_infer,
    infer_type=lambda p, t: ([np.dtype(np.uint8)] + [_F32] * 5,
                             [_F32] * (3 if p.state_outputs else 1)),
    capture="host loop over time steps",
    doc="LSTM (MXNet's RNN params, mode='lstm') over uint8 data with its quantize_asym "
        "scale and shift; float32 outputs."))
