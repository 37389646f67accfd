"""Make rnn_legacy_fixture.npz with real MXNet 1.9.1 (run with /work/mxvenv/bin/python).

For fixed weights and inputs: FusedRNNCell outputs (lstm/gru, 2 layers, bidirectional),
the unpacked per-gate weights, and unrolled LSTMCell/GRUCell outputs."""
import os

import numpy as np
import mxnet as mx

T, N, I, H = 4, 2, 3, 5
rng = np.random.RandomState(0)
x = rng.uniform(-1, 1, (N, T, I)).astype("float32")
out = {"x": x}


def run(sym, args):
    ex = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()})
    return ex.forward()[0].asnumpy()


for mode in ("lstm", "gru"):
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode=mode, bidirectional=True, prefix="f_")
    y, _ = cell.unroll(T, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    shapes, _, _ = y.infer_shape(data=(N, T, I))
    size = dict(zip(y.list_arguments(), shapes))["f_parameters"]
    params = rng.uniform(-0.5, 0.5, size).astype("float32")
    out[f"{mode}_fused_params"] = params
    out[f"{mode}_fused_out"] = run(y, {"data": x, "f_parameters": params})
    for name, arr in cell.unpack_weights({"f_parameters": mx.nd.array(params)}).items():
        out[f"{mode}_unpacked:{name}"] = arr.asnumpy()

for mode, klass in (("lstm", mx.rnn.LSTMCell), ("gru", mx.rnn.GRUCell)):
    cell = klass(H, prefix="c_")
    y, _ = cell.unroll(T, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    shapes, _, _ = y.infer_shape(data=(N, T, I))
    args = {"data": x}
    for name, shape in zip(y.list_arguments(), shapes):
        if name != "data":
            args[name] = rng.uniform(-0.5, 0.5, shape).astype("float32")
            out[f"{mode}_cell_arg:{name}"] = args[name]
    out[f"{mode}_cell_out"] = run(y, args)

np.savez(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rnn_legacy_fixture.npz"),
         **out)
