"""Converter: the fused RNN op (rnn_relu, rnn_tanh, lstm, gru; stacked, bidirectional).

ONNX's RNN/LSTM/GRU nodes are one layer each, so a stack becomes a chain of nodes. The
flat MXNet parameter vector (NOTE [RNN parameter layout] in ops/rnn.py) is cut into
ONNX's W, R, B per layer at export time, with the gates reordered: MXNet's LSTM gates
are (i, f, g, o), ONNX's (i, o, f, c); MXNet's GRU gates (r, z, n), ONNX's (z, r, h).
MXNet's GRU applies the reset gate after the recurrent matmul: linear_before_reset=1.
"""
from __future__ import annotations

import numpy as np

from gpunda.onnx._registry import register

_ORDER = {"lstm": [0, 3, 1, 2], "gru": [1, 0, 2], "rnn_relu": [0], "rnn_tanh": [0]}


def _gates(a, mode):
    parts = np.split(a, len(_ORDER[mode]), axis=0)
    return np.concatenate([parts[i] for i in _ORDER[mode]], axis=0)


@register("RNN")
def rnn(g, node):
    from gpunda.ops.nn.rnn import param_layout
    p = node.p
    if p.projection_size:
        raise g.unsupported(node, "projection_size (LSTMP)")
    if p.use_sequence_length:
        raise g.unsupported(node, "use_sequence_length=True")
    if p.lstm_state_clip_min is not None or p.lstm_state_clip_max is not None:
        raise g.unsupported(node, "lstm_state_clip_min/max")
    flat = g.weight(node, 1)
    if flat is None:
        raise g.unsupported(node, "its parameters are not a stored parameter")
    flat = flat.reshape(-1)
    mode, h = p.mode, int(p.state_size)
    d = 2 if p.bidirectional else 1
    t, n, c = g.in_shape(node, 0)
    entries, _ = param_layout(p, c)
    dt = flat.dtype
    x = g.inp(node, 0)
    h0 = g.inp(node, 2)
    c0 = g.inp(node, 3) if mode == "lstm" else None
    hs, cs = [], []
    op = {"lstm": "LSTM", "gru": "GRU"}.get(mode, "RNN")
    for layer in range(p.num_layers):
        ws, rs, bs = [], [], []
        for lay, direction, slots in entries:
            if lay != layer:
                continue
            v = {k: flat[o:o + int(np.prod(s))].reshape(s) for k, (o, s) in slots.items()}
            ws.append(_gates(v["wx"], mode))
            rs.append(_gates(v["wh"], mode))
            bs.append(np.concatenate([_gates(v["bx"], mode), _gates(v["bh"], mode)]))
        w = g.const(np.stack(ws).astype(dt), hint=f"l{layer}_W")
        r = g.const(np.stack(rs).astype(dt), hint=f"l{layer}_R")
        b = g.const(np.stack(bs).astype(dt), hint=f"l{layer}_B")
        lo, hi = layer * d, (layer + 1) * d
        sl = lambda s: g.add("Slice", [s, g.ints([lo]), g.ints([hi]), g.ints([0])])  # noqa: E731
        ins = [x, w, r, b, "", sl(h0)]
        attrs = dict(hidden_size=h, direction="bidirectional" if d == 2 else "forward")
        if mode == "lstm":
            ins.append(sl(c0))
        elif mode == "gru":
            attrs["linear_before_reset"] = 1
        else:
            attrs["activations"] = ["Relu" if mode == "rnn_relu" else "Tanh"] * d
        outs = g.add(op, ins, 3 if mode == "lstm" else 2, **attrs)
        y, yh = outs[0], outs[1]
        hs.append(yh)
        if mode == "lstm":
            cs.append(outs[2])
        # (T, D, N, H) -> (T, N, D*H), the next layer's input
        y = g.add("Transpose", [y], perm=[0, 2, 1, 3])
        x = g.add("Reshape", [y, g.ints([0, 0, -1])])
    names = g.outs(node)
    g.bind(node, 0, x)
    if len(names) > 1:
        g.bind(node, 1, hs[0] if len(hs) == 1 else g.add("Concat", hs, axis=0))
    if len(names) > 2:
        g.bind(node, 2, cs[0] if len(cs) == 1 else g.add("Concat", cs, axis=0))
