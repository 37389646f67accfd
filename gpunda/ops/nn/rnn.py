"""The fused ``RNN`` operator (MXNet's ``src/operator/rnn.cc``): rnn_relu, rnn_tanh, lstm, gru.

Inputs: ``data`` (T, N, I) in TNC layout, ``parameters`` (one flat vector), ``state``
(L*D, N, P or H), ``state_cell`` (lstm only), ``sequence_length`` (N,) with
``use_sequence_length``. Outputs: ``out`` (T, N, D*(P or H)) and, with ``state_outputs``,
the final hidden (and cell) states.

# NOTE [RNN parameter layout]
The flat ``parameters`` vector is MXNet's, so weights saved by MXNet load: first every
weight, then every bias. Weights go layer by layer, within a layer direction by direction
(left to right, then right to left), each as ``W_i2h`` (G*H, in), ``W_h2h`` (G*H, P or H)
and, for LSTMP (``projection_size`` P), ``W_h2r`` (P, H); biases in the same order as
``b_i2h`` (G*H), ``b_h2h`` (G*H). G is 1, 4 (gates i, f, g, o) or 3 (gates r, z, n). The GRU is
cuDNN's: n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).

The backward is a hand-written backpropagation through time (``_rnn_grad``) over the
intermediate values the forward keeps in a hidden ``reserve`` output (MXNet's reserve
space), so it is once-differentiable. The LSTM's step kernels are in _rnn_lstm.py (NOTE
[LSTM step kernels]); the reserve also keeps tanh of its cell states. Dropout (``p``)
applies to the outputs of every layer but the last, in training. The reverse direction of a batch with ``sequence_length`` runs
over each sequence's valid steps only (cuDNN's semantics; MXNet's CPU kernel lacks the
option), and steps past a sequence's end output zeros and keep the state.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda._core import modes as _modes
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops._util import matmul, not_differentiable
from gpunda.ops.kernels.lstm import lstm_backward, lstm_forward
from gpunda.backends.generators import generator as _generator

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}

_PARAMS = [
    Param("state_size", "int", doc="hidden units per layer (H)"),
    Param("num_layers", "int", doc="stacked layers (L)"),
    Param("bidirectional", "bool", False),
    Param("mode", "enum", choices=tuple(_GATES)),
    Param("p", "float", 0.0, "dropout on the outputs of each layer but the last"),
    Param("state_outputs", "bool", False, "also output the final states"),
    Param("projection_size", "int", None, "LSTMP: project the hidden state to this size"),
    Param("lstm_state_clip_min", "float", None),
    Param("lstm_state_clip_max", "float", None),
    Param("lstm_state_clip_nan", "bool", False),
    Param("use_sequence_length", "bool", False),
]


def _check(p):
    where = "Operator RNN"
    if p.state_size <= 0 or p.num_layers <= 0:
        raise GpundaError(f"{where}: state_size={p.state_size} and num_layers={p.num_layers} "
                          f"must be positive")
    if not 0 <= p.p < 1:
        raise GpundaError(f"{where}: p={p.p} must be in [0, 1)")
    if p.projection_size is not None:
        if p.mode != "lstm":
            raise GpundaError(f"{where}: projection_size={p.projection_size} is only "
                              f"supported for mode='lstm', got mode={p.mode!r}")
        if not 0 < p.projection_size <= p.state_size:
            raise GpundaError(f"{where}: projection_size={p.projection_size} must be in "
                              f"[1, state_size={p.state_size}]")
    clip = (p.lstm_state_clip_min, p.lstm_state_clip_max)
    if (clip[0] is None) != (clip[1] is None):
        raise GpundaError(f"{where}: lstm_state_clip_min={clip[0]} and lstm_state_clip_max="
                          f"{clip[1]} must be given together")
    if clip[0] is not None and (p.mode != "lstm" or clip[1] < clip[0]):
        raise GpundaError(f"{where}: state clipping needs mode='lstm' and lstm_state_clip_max "
                          f">= lstm_state_clip_min, got mode={p.mode!r}, {clip}")


def _input_names(p):
    names = ["data", "parameters", "state"]
    if p.mode == "lstm":
        names.append("state_cell")
    if p.use_sequence_length:
        names.append("sequence_length")
    return names


def _n_visible(p):
    if not p.state_outputs:
        return 1
    return 3 if p.mode == "lstm" else 2


def _output_names(p):
    # all outputs: the final states are computed (hidden without state_outputs) and the
    # reserve keeps what the backward needs
    if p.mode == "lstm":
        return ["output", "state_output", "statecell_output", "reserve"]
    return ["output", "state_output", "reserve"]


def _dims(p):
    d = 2 if p.bidirectional else 1
    h = p.state_size
    out = p.projection_size or h
    return d, h, out, _GATES[p.mode]


def param_layout(p, input_size):
    """[(layer, dir, {name: (offset, shape)})] and the total size (NOTE [RNN parameter layout])."""
    d, h, out, g = _dims(p)
    entries, off = [], 0
    for layer in range(p.num_layers):
        n_in = input_size if layer == 0 else out * d
        for direction in range(d):
            parts = {"wx": (g * h, n_in), "wh": (g * h, out)}
            if p.projection_size:
                parts["whr"] = (p.projection_size, h)
            slots = {}
            for name, shape in parts.items():
                slots[name] = (off, shape)
                off += shape[0] * shape[1]
            entries.append((layer, direction, slots))
    for _, _, slots in entries:
        for name in ("bx", "bh"):
            slots[name] = (off, (g * h,))
            off += g * h
    return entries, off


def _views(flat, slots):
    return {k: flat[o:o + int(np.prod(s))].reshape(s) for k, (o, s) in slots.items()}


def _infer_shape(p, in_shapes):
    data = in_shapes[0]
    if data is None or len(data) != 3 or 0 in data:
        return None
    t, n, i = data
    d, h, out, _ = _dims(p)
    shapes = [tuple(data), (param_layout(p, i)[1],), (p.num_layers * d, n, out)]
    if p.mode == "lstm":
        shapes.append((p.num_layers * d, n, h))
    if p.use_sequence_length:
        shapes.append((n,))
    outs = [(t, n, d * out), (p.num_layers * d, n, out)]
    if p.mode == "lstm":
        outs.append((p.num_layers * d, n, h))
    return shapes, outs + [(_reserve_size(p, data),)]


# ---------------------------------------------------------------------------
# one direction of one layer


def _steps_index(xp, t, n, lengths, reverse):
    """(T, N) time index each step reads: reversed within each sequence's valid length."""
    steps = xp.arange(t)[:, None]
    if not reverse:
        return xp.broadcast_to(steps, (t, n))
    if lengths is None:
        return xp.broadcast_to(t - 1 - steps, (t, n))
    last = lengths[None, :] - 1
    return xp.where(steps <= last, last - steps, steps)


def _gather(xp, a, idx):
    return xp.take_along_axis(a, idx[:, :, None], axis=0)


def _sigmoid(xp, x):
    return 1 / (1 + xp.exp(-x))


def _layer_forward(xp, p, x, w, h0, valid, hs, gates, extra):
    """Run one GRU or vanilla-RNN direction over time-ordered ``x`` (T, N, I): returns y;
    the values the backward needs go straight into the reserve's views ``hs``, ``gates``,
    ``extra`` (the LSTM has its own kernels, in _rnn_lstm.py)."""
    t_len, n, _ = x.shape
    mode = p.mode
    _, hsz, _, g = _dims(p)
    xw = matmul(xp, x.reshape(t_len * n, -1), w["wx"].T).reshape(t_len, n, g * hsz)
    xw += w["bx"]
    # a C-contiguous transpose: OpenBLAS multiplies small blocks by a transposed view slower
    wh_t = xp.ascontiguousarray(w["wh"].T)
    h = h0
    # without lengths the outputs are the saved states themselves
    ys = hs[1:] if valid is None else xp.empty((t_len, n, h0.shape[1]), dtype=x.dtype)
    hs[0] = h0
    for step in range(t_len):
        hw = matmul(xp, h, wh_t)
        hw += w["bh"]
        if mode == "gru":
            xr, xz, xn = (xw[step][:, k * hsz:(k + 1) * hsz] for k in range(3))
            hr, hz, hn = (hw[:, k * hsz:(k + 1) * hsz] for k in range(3))
            r, z = _sigmoid(xp, xr + hr), _sigmoid(xp, xz + hz)
            nn = xp.tanh(xn + r * hn)
            h_new = (1 - z) * nn + z * h
            gates[step] = xp.concatenate([r, z, nn], axis=1)
            extra[step + 1] = hn
        else:
            a = xw[step] + hw
            h_new = xp.maximum(a, 0) if mode == "rnn_relu" else xp.tanh(a)
        if valid is not None:
            h_new = xp.where(valid[step][:, None], h_new, h)
        h = h_new
        hs[step + 1] = h
        if valid is not None:
            ys[step] = xp.where(valid[step][:, None], h, 0)
    return ys


def _layer_backward(xp, p, x, w, hs, gates, extra, dy, dh, valid, want_dx=True):
    """BPTT over one GRU or vanilla-RNN direction: returns dx, the weight gradients (dict
    like ``w``) and the initial state's gradient; dx is None unless ``want_dx``."""
    t_len, n, _ = x.shape
    mode = p.mode
    _, hsz, _, g = _dims(p)
    dgw = {}
    da_all = xp.empty((t_len, n, g * hsz), dtype=x.dtype)
    # the recurrent weight gradients are summed over time after the loop, by one GEMM each
    dhw_all = da_all if mode != "gru" else xp.empty_like(da_all)
    wh = w["wh"]
    for step in range(t_len - 1, -1, -1):
        m = None if valid is None else valid[step][:, None]
        dh_t = dh + (dy[step] if m is None else xp.where(m, dy[step], 0))
        # past a sequence's end the step only passes the state (and its gradient) through
        dh_in = dh_t if m is None else xp.where(m, dh_t, 0)
        if mode == "gru":
            gt = gates[step]
            r, z, nn = (gt[:, k * hsz:(k + 1) * hsz] for k in range(3))
            hn = extra[step + 1]
            dan = dh_in * (1 - z) * (1 - nn * nn)
            dar = dan * hn * r * (1 - r)
            daz = dh_in * (hs[step] - nn) * z * (1 - z)
            da = da_all[step]
            da[:, :hsz] = dar
            da[:, hsz:2 * hsz] = daz
            da[:, 2 * hsz:] = dan
            dhw = dhw_all[step]
            dhw[:, :2 * hsz] = da[:, :2 * hsz]
            xp.multiply(dan, r, out=dhw[:, 2 * hsz:])
        else:
            h_new = hs[step + 1]
            act = (h_new > 0).astype(x.dtype) if mode == "rnn_relu" else 1 - h_new * h_new
            dhw = da_all[step]
            xp.multiply(dh_in, act, out=dhw)
        dh_prev = matmul(xp, dhw, wh)
        if mode == "gru":
            dh_prev += dh_in * z
        if m is not None:       # a step past the end passes the state's gradient through
            dh_prev += xp.where(m, 0, dh_t)
        dh = dh_prev
    flat = da_all.reshape(t_len * n, g * hsz)
    dgw["wx"] = matmul(xp, flat.T, x.reshape(t_len * n, -1))
    dgw["bx"] = flat.sum(axis=0)
    hflat = dhw_all.reshape(t_len * n, g * hsz)
    dgw["wh"] = matmul(xp, hflat.T, hs[:-1].reshape(t_len * n, -1))
    dgw["bh"] = hflat.sum(axis=0)
    dx = matmul(xp, flat, w["wx"]).reshape(x.shape) if want_dx else None
    return dx, dgw, dh


# ---------------------------------------------------------------------------
# the whole stack


def _reserve_parts(p, data_shape):
    """Named pieces of the reserve vector and their shapes, in order."""
    t, n, _ = data_shape
    d, hsz, out, g = _dims(p)
    parts = []
    for layer in range(p.num_layers):
        if layer > 0:
            parts.append((("in", layer), (t, n, out * d)))
            if p.p > 0:
                parts.append((("mask", layer), (t, n, out * d)))
        for direction in range(d):
            key = (layer, direction)
            parts.append((("hs",) + key, (t + 1, n, out)))
            parts.append((("gates",) + key, (t, n, g * hsz)))
            if p.mode in ("lstm", "gru"):
                parts.append((("extra",) + key, (t + 1, n, hsz)))
            if p.mode == "lstm":
                parts.append((("tanhc",) + key, (t, n, hsz)))
    return parts


def _reserve_size(p, data_shape):
    return int(sum(np.prod(s) for _, s in _reserve_parts(p, data_shape)))


def _unpack(reserve, p, data_shape):
    out, off = {}, 0
    for key, shape in _reserve_parts(p, data_shape):
        size = int(np.prod(shape))
        out[key] = reserve[off:off + size].reshape(shape)
        off += size
    return out


def _lengths(xp, p, inputs, t):
    if not p.use_sequence_length:
        return None, None
    lengths = inputs[-1].astype(np.int64)
    if lengths.size and (int(lengths.min()) < 1 or int(lengths.max()) > t):
        raise GpundaError(f"Operator RNN: sequence_length values must be in [1, {t}], got "
                          f"min {int(lengths.min())}, max {int(lengths.max())}")
    valid = xp.arange(t)[:, None] < lengths[None, :]
    return lengths, valid


def _validate(p, data, params, state, cell):
    where = "Operator RNN"
    if data.ndim != 3:
        raise GpundaError(f"{where}: input data must be (seq_len, batch, input_size), got shape "
                          f"{tuple(data.shape)}")
    shapes, _ = _infer_shape(p, [tuple(data.shape)])
    for name, arr, want in (("parameters", params, shapes[1]), ("state", state, shapes[2]),
                            ("state_cell", cell, shapes[3] if cell is not None else None)):
        if arr is not None and tuple(arr.shape) != want:
            raise GpundaError(f"{where}: input {name} has shape {tuple(arr.shape)}, expected "
                              f"{want} for data {tuple(data.shape)}")


def _rnn_forward(xp, p, *inputs, ctx=None):
    data, params, state = inputs[:3]
    cell = inputs[3] if p.mode == "lstm" else None
    _validate(p, data, params, state, cell)
    t, n, i = data.shape
    d, hsz, out, _ = _dims(p)
    lengths, valid = _lengths(xp, p, inputs, t)
    entries, _ = param_layout(p, i)
    reserve = xp.empty((_reserve_size(p, data.shape),), dtype=data.dtype)
    saved = _unpack(reserve, p, data.shape)
    training = _modes.is_training()
    hy = xp.empty(state.shape, dtype=data.dtype)
    cy = xp.empty((p.num_layers * d, n, hsz), dtype=data.dtype)
    x = data
    for layer in range(p.num_layers):
        if layer > 0:
            saved[("in", layer)][...] = x
            if p.p > 0:
                mask = saved[("mask", layer)]
                if training:
                    u = xp.asarray(_generator(ctx).uniform(0.0, 1.0, size=x.shape))
                    mask[...] = (u >= p.p) / (1.0 - p.p)
                else:
                    mask[...] = 1
                x = x * mask
        y = xp.empty((t, n, out * d), dtype=data.dtype)
        for direction in range(d):
            k = layer * d + direction
            w = _views(params, entries[k][2])
            idx = _steps_index(xp, t, n, lengths, reverse=True) if direction else None
            xs = x if direction == 0 else _gather(xp, x, idx)
            hs = saved[("hs", layer, direction)]
            extra = saved.get(("extra", layer, direction))
            gates = saved[("gates", layer, direction)]
            if p.mode == "lstm":
                ys = lstm_forward(xp, p, xs, w, state[k], cell[k], valid, hs, gates, extra,
                                  saved[("tanhc", layer, direction)])
            else:
                ys = _layer_forward(xp, p, xs, w, state[k], valid, hs, gates, extra)
            if direction == 1:
                ys = _gather(xp, ys, idx)     # the reversal is its own inverse
            y[:, :, direction * out:(direction + 1) * out] = ys
            hy[k] = hs[-1]
            cy[k] = extra[-1] if p.mode == "lstm" else 0
        x = y
    if p.mode == "lstm":
        return x, hy, cy, reserve
    return x, hy, reserve


def _rnn_grad(xp, p, *arrays):
    """Gradients of (data, parameters, state[, state_cell]) from the outputs' gradients."""
    n_in = len(_input_names(p))
    inputs, rest = arrays[:n_in], arrays[n_in:]
    reserve = rest[0]
    d_out, d_hy = rest[1], rest[2]
    d_cy = rest[3] if p.mode == "lstm" else None
    data, params, state = inputs[:3]
    t, n, i = data.shape
    d, hsz, out, _ = _dims(p)
    lengths, valid = _lengths(xp, p, inputs, t)
    entries, _ = param_layout(p, i)
    saved = _unpack(reserve, p, data.shape)
    d_params = xp.empty_like(params)    # every slot is some layer's (NOTE [RNN parameter layout])
    d_state = xp.empty_like(state)
    d_cell = xp.empty((p.num_layers * d, n, hsz), dtype=data.dtype) if p.mode == "lstm" else None
    dy = d_out
    for layer in range(p.num_layers - 1, -1, -1):
        x = data if layer == 0 else saved[("in", layer)]
        masked = layer > 0 and p.p > 0
        xin = x * saved[("mask", layer)] if masked else x
        dx = None
        # the first layer's input GEMM is skipped when the data needs no gradient
        want_dx = layer > 0 or p.data_grad
        for direction in range(d):
            k = layer * d + direction
            w = _views(params, entries[k][2])
            idx = _steps_index(xp, t, n, lengths, reverse=True) if direction else None
            xs = xin if direction == 0 else _gather(xp, xin, idx)
            dys = dy[:, :, direction * out:(direction + 1) * out]
            if direction == 1:
                dys = _gather(xp, dys, idx)
            extra = saved.get(("extra", layer, direction))
            hs, gates = saved[("hs", layer, direction)], saved[("gates", layer, direction)]
            if p.mode == "lstm":
                dxs, dgw, dh, dc = lstm_backward(
                    xp, p, xs, w, hs, gates, extra, saved[("tanhc", layer, direction)], dys,
                    d_hy[k], d_cy[k], valid, want_dx)
            else:
                dxs, dgw, dh = _layer_backward(xp, p, xs, w, hs, gates, extra, dys, d_hy[k],
                                               valid, want_dx)
            if want_dx:
                if direction == 1:
                    dxs = _gather(xp, dxs, idx)
                dx = dxs if dx is None else dx + dxs
            gw = _views(d_params, entries[k][2])
            for name, g in dgw.items():
                gw[name][...] = g
            d_state[k] = dh
            if d_cell is not None:
                d_cell[k] = dc
        dy = dx * saved[("mask", layer)] if masked else dx
    if dy is None:      # not wanted: the gradient rule drops it
        dy = xp.zeros_like(data)
    grads = [dy, d_params, d_state]
    if p.mode == "lstm":
        grads.append(d_cell)
    return tuple(grads)


def _rnn_gradient(F, p, ins, outs, ograds, need=None):
    n_vis = _n_visible(p)
    n_states = 2 if p.mode == "lstm" else 1
    og = list(ograds[:1 + n_states])
    for j in range(1, 1 + n_states):        # hidden final states: no gradient flows in
        if j >= n_vis or og[j] is None:
            og[j] = F.zeros_like(outs[j])
    if og[0] is None:
        og[0] = F.zeros_like(outs[0])
    data_grad = need is None or bool(need[0])
    kw = _kwargs(p) if data_grad else dict(_kwargs(p), data_grad=False)
    grads = F._rnn_grad(*ins, outs[-1], *og, **kw)
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    if not data_grad:
        grads[0] = None
    if p.use_sequence_length:
        grads.append(None)
    return grads


def _kwargs(p):
    return {k: getattr(p, k) for k in p._given}


register(OpDef(
    "RNN", _rnn_forward, params=_PARAMS, check=_check, inputs=_input_names, wants_ctx=True,
    num_outputs=lambda p: 4 if p.mode == "lstm" else 3, num_visible=_n_visible,
    output_names=_output_names, infer_shape=_infer_shape, gradient=_rnn_gradient, grad_need=True,
    save=("inputs", "outputs"), no_grad_inputs=("sequence_length",), random=True,
    capture="host loop over time steps (dropout draws random numbers)", family="rnn",
    doc="Fused multi-layer recurrent network (rnn_relu, rnn_tanh, lstm, gru) over TNC data, "
        "with MXNet's flat parameter layout; see NOTE [RNN parameter layout]."))
register(OpDef(
    "_rnn_grad", _rnn_grad,
    params=_PARAMS + [Param("data_grad", "bool", True, "also the data's gradient (else zeros)")],
    inputs=lambda p: _input_names(p) + ["reserve", "d_out", "d_state"] +
    (["d_state_cell"] if p.mode == "lstm" else []),
    num_outputs=lambda p: 4 if p.mode == "lstm" else 3,
    gradient=not_differentiable("_backward_RNN"), save=(), hidden=True, family="rnn",
    doc="The RNN op's backward pass through time."))
