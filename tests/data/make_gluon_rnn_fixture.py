"""Make tests/data/gluon_rnn_mxnet191*: gluon.rnn layers and cells saved by real MXNet 1.9.1.

Run with MXNet 1.9.1 (CPU): python tests/data/make_gluon_rnn_fixture.py
"""
import os
import numpy as np
import mxnet as mx

here = os.path.dirname(os.path.abspath(__file__))
mx.random.seed(11)
rng = np.random.RandomState(11)
x = rng.uniform(-1, 1, (3, 5, 4)).astype(np.float32)          # NTC
lengths = np.array([5, 2, 4], dtype=np.float32)
out = {"x": x, "lengths": lengths}
blocks = {
    "lstm": mx.gluon.rnn.LSTM(6, num_layers=2, bidirectional=True, layout="NTC", prefix="lstm_"),
    "gru": mx.gluon.rnn.GRU(5, layout="NTC", prefix="gru_"),
    "rnn": mx.gluon.rnn.RNN(4, num_layers=2, activation="tanh", layout="NTC", prefix="rnn_"),
    "lstmcell": mx.gluon.rnn.LSTMCell(6, prefix="lstmcell_"),
    "grucell": mx.gluon.rnn.GRUCell(5, prefix="grucell_"),
}
for name, block in blocks.items():
    block.initialize(mx.init.Uniform(0.5))
    if name.endswith("cell"):
        y, states = block.unroll(5, mx.nd.array(x), layout="NTC", merge_outputs=True,
                                 valid_length=mx.nd.array(lengths))
    else:
        y, states = block(mx.nd.array(x), block.begin_state(3))
    out[name + "_out"] = y.asnumpy()
    for i, s in enumerate(states):
        out[f"{name}_state{i}"] = s.asnumpy()
    block.save_parameters(os.path.join(here, f"gluon_rnn_mxnet191_{name}.params"))
np.savez_compressed(os.path.join(here, "gluon_rnn_mxnet191.npz"), **out)
print(sorted(out))
