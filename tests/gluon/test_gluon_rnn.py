"""gluon.rnn layers and cells: weights saved by real MXNet 1.9.1 load and give MXNet's outputs
(tests/data/make_gluon_rnn_fixture.py), the fused layers agree with the unrolled cells, and
hybridized runs equal imperative ones."""
from pathlib import Path

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, gluon, nd
from gpunda.base import GpundaError

DATA = Path(__file__).resolve().parent.parent / "data"
REF = np.load(DATA / "gluon_rnn_mxnet191.npz")


def _block(name):
    rnn = gluon.rnn
    return {"lstm": lambda: rnn.LSTM(6, num_layers=2, bidirectional=True, layout="NTC",
                                     prefix="lstm_"),
            "gru": lambda: rnn.GRU(5, layout="NTC", prefix="gru_"),
            "rnn": lambda: rnn.RNN(4, num_layers=2, activation="tanh", layout="NTC",
                                   prefix="rnn_"),
            "lstmcell": lambda: rnn.LSTMCell(6, prefix="lstmcell_"),
            "grucell": lambda: rnn.GRUCell(5, prefix="grucell_")}[name]()


@pytest.mark.parametrize("name", ["lstm", "gru", "rnn", "lstmcell", "grucell"])
@pytest.mark.parametrize("hybridize", [False, True])
def test_mxnet_saved_weights_give_mxnet_outputs(name, hybridize):
    block = _block(name)
    block.load_parameters(str(DATA / f"gluon_rnn_mxnet191_{name}.params"), ctx=mx.current_context())
    if hybridize and not name.endswith("cell"):
        block.hybridize()
    x = nd.array(REF["x"])
    if name.endswith("cell"):
        y, states = block.unroll(5, x, layout="NTC", merge_outputs=True,
                                 valid_length=nd.array(REF["lengths"]))
    else:
        y, states = block(x, block.begin_state(3))
    np.testing.assert_allclose(y.asnumpy(), REF[name + "_out"], rtol=1e-5, atol=1e-6)
    for i, s in enumerate(states):
        np.testing.assert_allclose(s.asnumpy(), REF[f"{name}_state{i}"], rtol=1e-5, atol=1e-6)


def test_parameter_names_and_shapes_are_mxnets():
    layer = gluon.rnn.LSTM(8, num_layers=2, bidirectional=True, input_size=3, prefix="l_")
    shapes = {k: v.shape for k, v in layer.collect_params().items()}
    assert shapes["l_l0_i2h_weight"] == (32, 3)
    assert shapes["l_r0_h2h_weight"] == (32, 8)
    assert shapes["l_l1_i2h_weight"] == (32, 16)
    assert shapes["l_r1_h2h_bias"] == (32,)
    assert len(shapes) == 16
    lstmp = gluon.rnn.LSTM(8, projection_size=3, input_size=2, prefix="p_")
    shapes = {k: v.shape for k, v in lstmp.collect_params().items()}
    assert shapes["p_l0_h2h_weight"] == (32, 3) and shapes["p_l0_h2r_weight"] == (3, 8)


def _copy_cell_weights(layer, cell, layer_prefix="l0_"):
    for kind in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
        getattr(cell, kind).set_data(getattr(layer, layer_prefix + kind).data())


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_fused_layer_equals_unrolled_cell(mode, rng):
    x = nd.array(rng.uniform(-1, 1, (4, 2, 3)))                       # TNC
    layers = {"lstm": gluon.rnn.LSTM, "gru": gluon.rnn.GRU}
    if mode in layers:
        layer = layers[mode](5)
        cell = {"lstm": gluon.rnn.LSTMCell, "gru": gluon.rnn.GRUCell}[mode](5)
    else:
        act = mode.split("_")[1]
        layer = gluon.rnn.RNN(5, activation=act)
        cell = gluon.rnn.RNNCell(5, activation=act)
    layer.initialize(mx.init.Uniform(0.5))
    cell.initialize()
    y = layer(x)
    cell(x[0], cell.begin_state(2))           # settles the cell's deferred shapes
    _copy_cell_weights(layer, cell)
    y_cell, _ = cell.unroll(4, x, layout="TNC", merge_outputs=True)
    np.testing.assert_allclose(y.asnumpy(), y_cell.asnumpy(), rtol=1e-5, atol=1e-6)


def test_layer_gradients_match_cell_gradients(rng):
    x = nd.array(rng.uniform(-1, 1, (2, 4, 3)))                       # NTC
    layer = gluon.rnn.GRU(4, layout="NTC")
    cell = gluon.rnn.GRUCell(4)
    layer.initialize(mx.init.Uniform(0.5))
    cell.initialize()
    layer(x)
    cell(x[:, 0], cell.begin_state(2))
    _copy_cell_weights(layer, cell)
    with autograd.record():
        a = layer(x).sum()
    a.backward()
    with autograd.record():
        b = cell.unroll(4, x, layout="NTC", merge_outputs=True)[0].sum()
    b.backward()
    np.testing.assert_allclose(layer.l0_h2h_weight.grad().asnumpy(),
                               cell.h2h_weight.grad().asnumpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(layer.l0_i2h_bias.grad().asnumpy(),
                               cell.i2h_bias.grad().asnumpy(), rtol=1e-4, atol=1e-6)


def test_states_in_and_out_and_errors(rng):
    layer = gluon.rnn.LSTM(3, num_layers=2)
    layer.initialize()
    x = nd.array(rng.uniform(-1, 1, (5, 2, 4)))
    out, states = layer(x, layer.begin_state(2))
    assert out.shape == (5, 2, 3) and [s.shape for s in states] == [(2, 2, 3), (2, 2, 3)]
    with pytest.raises(ValueError, match="Invalid recurrent state shape"):
        layer(x, [nd.zeros((1, 2, 3)), nd.zeros((2, 2, 3))])
    with pytest.raises(GpundaError, match="layout"):
        gluon.rnn.GRU(3, layout="CTN")
    with pytest.raises(GpundaError, match="cannot be stepped"):
        gluon.rnn.BidirectionalCell(gluon.rnn.RNNCell(2), gluon.rnn.RNNCell(2))(x[0], [])


def test_bidirectional_and_stacked_cells_with_valid_length(rng):
    x = nd.array(rng.uniform(-1, 1, (3, 5, 2)))
    lengths = nd.array([5, 1, 3])
    bi = gluon.rnn.BidirectionalCell(gluon.rnn.LSTMCell(3, prefix="l_"),
                                     gluon.rnn.LSTMCell(3, prefix="r_"))
    bi.initialize()
    out, states = bi.unroll(5, x, layout="NTC", merge_outputs=True, valid_length=lengths)
    assert out.shape == (3, 5, 6) and len(states) == 4
    o = out.asnumpy()
    assert np.all(o[1, 1:] == 0) and np.all(o[2, 3:] == 0) and np.all(o[0] != 0)
    # the backward half of a short sequence starts at its own last valid step
    r_only, _ = bi._children["r_cell"].unroll(1, x[1:2, :1], layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(o[1, 0, 3:], r_only.asnumpy()[0, 0], rtol=1e-5)

    seq = gluon.rnn.HybridSequentialRNNCell()
    with seq.name_scope():
        seq.add(gluon.rnn.GRUCell(4))
        seq.add(gluon.rnn.ResidualCell(gluon.rnn.GRUCell(4)))
    seq.initialize()
    outs, states = seq.unroll(5, x, layout="NTC", merge_outputs=False)
    assert len(outs) == 5 and outs[0].shape == (3, 4) and len(states) == 2


def test_zoneout_and_dropout_cells_are_identity_in_inference(rng):
    x = nd.array(rng.uniform(-1, 1, (2, 4, 3)))
    base = gluon.rnn.RNNCell(3)
    base.initialize()
    plain, _ = base.unroll(4, x, merge_outputs=True)
    zone = gluon.rnn.ZoneoutCell(base, zoneout_outputs=0.5, zoneout_states=0.5)
    same, _ = zone.unroll(4, x, merge_outputs=True)     # Dropout of ones is ones outside training
    np.testing.assert_allclose(same.asnumpy(), plain.asnumpy(), rtol=1e-6)
    drop, _ = gluon.rnn.DropoutCell(0.7).unroll(4, x, merge_outputs=True)
    np.testing.assert_array_equal(drop.asnumpy(), x.asnumpy())
    with pytest.raises(GpundaError, match="already modified"):
        gluon.rnn.ResidualCell(base)


def test_symbol_unroll_splits_input_into_steps():
    # a Symbol input is split into `length` single-output steps (not one grouped Symbol)
    cell = mx.gluon.rnn.RNNCell(2, prefix="s_")
    outputs, _ = cell.unroll(3, mx.sym.Variable("data"), layout="NTC", merge_outputs=False)
    assert len(outputs) == 3
    assert all(len(o.list_outputs()) == 1 for o in outputs)
    assert outputs[2].infer_shape(data=(4, 3, 5))[1] == [(4, 2)]


class _ConcatThenRNN(gluon.HybridBlock):
    """An RNN layer whose input size comes from the graph in front of it (GluonTS' MQRNN
    encoder: features concatenated, then a bidirectional GRU)."""

    def __init__(self, mode, np_mode=False):
        super().__init__()
        self._np = np_mode
        with self.name_scope():
            layer = gluon.rnn.LSTM if mode == "lstm" else gluon.rnn.GRU
            self.rnn = layer(5, num_layers=2, bidirectional=True, layout="NTC")

    def hybrid_forward(self, F, x, y, *states):
        if self._np:
            return self.rnn(F.np.concatenate([x, F.np.ones_like(y)], axis=2), list(states))[0]
        return self.rnn(F.concat(x, F.ones_like(y), dim=2))


# recorded from MXNet 1.9.1: the deferred i2h weights of both directions are inferred through
# _rnn_param_concat (RNNParamConcatShape shares the size the RNN op needs between them), and
# the exported graph concatenates the parameters with that op
_MX_OPS_LEGACY = (["ones_like", "Concat", "SwapAxis"] + ["Reshape"] * 16
                  + ["_rnn_param_concat"])
_MX_OPS_NP = ["SwapAxis"] + ["_np_reshape"] * 16 + ["_rnn_param_concat", "RNN", "SwapAxis"]


@pytest.mark.parametrize("mode,gates", [("gru", 3), ("lstm", 4)])
def test_deferred_input_size_inferred_through_rnn_param_concat(mode, gates):
    import json
    net = _ConcatThenRNN(mode)
    net.initialize()
    net.hybridize()
    out = net(nd.ones((2, 3, 4)), nd.ones((2, 3, 3)))
    assert out.shape == (2, 3, 10)
    shapes = {n: getattr(net.rnn, n).shape
              for n in ("l0_i2h_weight", "r0_i2h_weight", "l1_i2h_weight", "r1_i2h_weight")}
    assert shapes == {"l0_i2h_weight": (5 * gates, 7), "r0_i2h_weight": (5 * gates, 7),
                      "l1_i2h_weight": (5 * gates, 10), "r1_i2h_weight": (5 * gates, 10)}
    ops = [n["op"] for n in json.loads(net(mx.sym.var("a"), mx.sym.var("b")).tojson())["nodes"]
           if n["op"] != "null"]
    assert ops[:len(_MX_OPS_LEGACY)] == _MX_OPS_LEGACY
    assert ops[-2:] == ["RNN", "SwapAxis"]
    # the hybridized layer computes what the imperative one computes with the same weights
    net2 = _ConcatThenRNN(mode)
    net2.initialize()
    net2(nd.ones((2, 3, 4)), nd.ones((2, 3, 3)))
    for (_, p), (_, q) in zip(sorted(net.collect_params().items()), sorted(net2.collect_params().items())):
        q.set_data(p.data())
    x, y = nd.random.uniform(shape=(2, 3, 4)), nd.random.uniform(shape=(2, 3, 3))
    np.testing.assert_allclose(net(x, y).asnumpy(), net2(x, y).asnumpy(), rtol=1e-5, atol=1e-6)


def test_deferred_input_size_inferred_through_np_reshape():
    import json
    mx.npx.set_np()
    try:
        net = _ConcatThenRNN("gru", np_mode=True)
        net.initialize()
        net.hybridize()
        out = net(mx.np.ones((2, 3, 4)), mx.np.ones((2, 3, 3)), *net.rnn.begin_state(2))
        assert isinstance(out, mx.np.ndarray) and out.shape == (2, 3, 10)
        assert net.rnn.l0_i2h_weight.shape == (15, 7)
        assert net.rnn.r1_i2h_weight.shape == (15, 10)
        s = net(*(mx.sym.var(n).as_np_ndarray() for n in ("a", "b", "s")))
        ops = [n["op"] for n in json.loads(s.tojson())["nodes"] if n["op"] != "null"]
        assert ops[-len(_MX_OPS_NP):] == _MX_OPS_NP
    finally:
        mx.npx.reset_np()
