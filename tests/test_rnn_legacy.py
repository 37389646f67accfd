"""mx.rnn, the legacy symbolic RNN API, against real MXNet 1.9.1 outputs
(tests/data/make_rnn_legacy_fixture.py) and NumPy references."""
import os
import subprocess
import sys

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

FIXTURE = np.load(os.path.join(os.path.dirname(__file__), "data", "rnn_legacy_fixture.npz"))
T, N, I, H = 4, 2, 3, 5


def _forward(sym, args, grad_of=None):
    arrays = {k: mx.nd.array(v) for k, v in args.items()}
    if grad_of is None:
        return sym.bind(mx.cpu(), arrays).forward()[0].asnumpy()
    grads = {k: mx.nd.zeros(v.shape) for k, v in arrays.items()}
    ex = sym.bind(mx.cpu(), arrays, args_grad=grads)
    out = ex.forward(is_train=True)[0]
    ex.backward(mx.nd.array(grad_of))
    return out.asnumpy(), {k: g.asnumpy() for k, g in grads.items()}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_fused_cell_matches_mxnet(mode):
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode=mode, bidirectional=True, prefix="f_")
    with pytest.warns(UserWarning, match="NTC layout"):
        y, states = cell.unroll(T, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    assert states == []
    out = _forward(y, {"data": FIXTURE["x"], "f_parameters": FIXTURE[f"{mode}_fused_params"]})
    np.testing.assert_allclose(out, FIXTURE[f"{mode}_fused_out"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_unpack_weights_matches_mxnet_and_pack_inverts_it(mode):
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode=mode, bidirectional=True, prefix="f_")
    flat = mx.nd.array(FIXTURE[f"{mode}_fused_params"])
    unpacked = cell.unpack_weights({"f_parameters": flat, "other": 1})
    expected = {k.split(":", 1)[1]: FIXTURE[k] for k in FIXTURE.files
                if k.startswith(f"{mode}_unpacked:")}
    assert sorted(set(unpacked) - {"other"}) == sorted(expected)
    for name, arr in expected.items():
        np.testing.assert_array_equal(unpacked[name].asnumpy(), arr, err_msg=name)
    unpacked[next(iter(expected))][:] = 7.0      # copies, not views of the input
    assert not (flat.asnumpy() == 7.0).any()
    repacked = cell.pack_weights(cell.unpack_weights({"f_parameters": flat}))
    np.testing.assert_array_equal(repacked["f_parameters"].asnumpy(), flat.asnumpy())


@pytest.mark.parametrize("mode,klass", [("lstm", "LSTMCell"), ("gru", "GRUCell")])
def test_unrolled_cell_matches_mxnet(mode, klass):
    cell = getattr(mx.rnn, klass)(H, prefix="c_")
    y, _ = cell.unroll(T, mx.sym.Variable("data"), layout="NTC", merge_outputs=True)
    args = {"data": FIXTURE["x"]}
    args.update({k.split(":", 1)[1]: FIXTURE[k] for k in FIXTURE.files
                 if k.startswith(f"{mode}_cell_arg:")})
    np.testing.assert_allclose(_forward(y, args), FIXTURE[f"{mode}_cell_out"],
                               rtol=1e-5, atol=1e-6)


def test_lstm_cell_step_matches_numpy():
    rng = np.random.RandomState(1)
    x, h, c = rng.randn(N, I), rng.randn(N, H), rng.randn(N, H)
    wi, wh = rng.randn(4 * H, I), rng.randn(4 * H, H)
    bi, bh = rng.randn(4 * H), rng.randn(4 * H)
    cell = mx.rnn.LSTMCell(H, prefix="p_")
    out, (h1, c1) = cell(mx.sym.Variable("x"), [mx.sym.Variable("h"), mx.sym.Variable("c")])
    args = {"x": x, "h": h, "c": c, "p_i2h_weight": wi, "p_h2h_weight": wh,
            "p_i2h_bias": bi, "p_h2h_bias": bh}
    g = x @ wi.T + bi + h @ wh.T + bh
    i, f, n, o = _sigmoid(g[:, :H]), _sigmoid(g[:, H:2 * H]), np.tanh(g[:, 2 * H:3 * H]), \
        _sigmoid(g[:, 3 * H:])
    c_ref = f * c + i * n
    np.testing.assert_allclose(_forward(c1, args), c_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_forward(out, args), o * np.tanh(c_ref), rtol=1e-5, atol=1e-6)
    assert out.name == "p_t0_out" and c1.name == "p_t0_state"


def test_relu_rnn_cell_step_matches_numpy():
    rng = np.random.RandomState(2)
    x, h = rng.randn(N, I), rng.randn(N, H)
    wi, wh, bi, bh = rng.randn(H, I), rng.randn(H, H), rng.randn(H), rng.randn(H)
    cell = mx.rnn.RNNCell(H, activation="relu", prefix="r_")
    out, states = cell(mx.sym.Variable("x"), [mx.sym.Variable("h")])
    assert states[0] is out
    args = {"x": x, "h": h, "r_i2h_weight": wi, "r_h2h_weight": wh, "r_i2h_bias": bi,
            "r_h2h_bias": bh}
    np.testing.assert_allclose(_forward(out, args),
                               np.maximum(x @ wi.T + bi + h @ wh.T + bh, 0), rtol=1e-5)


@pytest.mark.parametrize("mode", ["rnn_relu", "rnn_tanh", "lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_unfuse_gives_the_same_network(mode, bidirectional):
    fused = mx.rnn.FusedRNNCell(H, num_layers=2, mode=mode, bidirectional=bidirectional,
                                prefix="")
    stack = fused.unfuse()
    data = mx.sym.Variable("data")
    y1, _ = fused.unroll(T, data, layout="TNC", merge_outputs=True)
    y2, _ = stack.unroll(T, data, layout="TNC", merge_outputs=True)
    shapes, _, _ = y1.infer_shape(data=(T, N, I))
    rng = np.random.RandomState(3)
    args1 = {n: rng.uniform(-0.5, 0.5, s).astype("float32")
             for n, s in zip(y1.list_arguments(), shapes)}
    packed = stack.pack_weights(fused.unpack_weights({k: mx.nd.array(v)
                                                      for k, v in args1.items()}))
    args2 = {k: packed[k].asnumpy() for k in y2.list_arguments()}
    dy = rng.uniform(size=(T, N, H * (1 + bidirectional)))
    out1, g1 = _forward(y1, args1, grad_of=dy)
    out2, g2 = _forward(y2, args2, grad_of=dy)
    np.testing.assert_allclose(out1, out2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g1["data"], g2["data"], rtol=1e-4, atol=1e-6)
    grads2 = stack.unpack_weights({k: mx.nd.array(v) for k, v in g2.items()})
    grads1 = fused.unpack_weights({k: mx.nd.array(v) for k, v in g1.items()})
    for name in grads1:
        np.testing.assert_allclose(grads1[name].asnumpy(), grads2[name].asnumpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)


def test_unfuse_adds_dropout_between_layers():
    stack = mx.rnn.FusedRNNCell(4, num_layers=3, mode="gru", dropout=0.5, prefix="g_").unfuse()
    kinds = [type(c).__name__ for c in stack._cells]
    assert kinds == ["GRUCell", "DropoutCell", "GRUCell", "DropoutCell", "GRUCell"]


def test_begin_state_names_shapes_and_modifier_guard():
    cell = mx.rnn.LSTMCell(4, prefix="c_")
    outputs, states = cell.unroll(3, mx.sym.Variable("d"), merge_outputs=False)
    assert [o.name for o in outputs] == ["c_t0_out", "c_t1_out", "c_t2_out"]
    assert [s.name for s in states] == ["c_t2_out", "c_t2_state"]
    assert cell.begin_state()[0].name == "c_begin_state_2"   # counter runs on, as MXNet's
    assert outputs[0].infer_shape(d=(2, 3, 5))[1] == [(2, 4)]
    fused = mx.rnn.FusedRNNCell(4, mode="gru", get_next_state=True)
    assert fused.state_info == [{"shape": (1, 0, 4), "__layout__": "LNC"}]
    assert mx.rnn.LSTMCell(4).state_shape == [(0, 4), (0, 4)]
    mx.rnn.ResidualCell(cell)                     # wrapping marks the base cell modified
    with pytest.raises(GpundaError, match="modifier cells"):
        cell.begin_state()
    with pytest.raises(NotImplementedError, match="unroll"):
        fused(mx.sym.Variable("x"), [])


def test_bidirectional_unmerged_outputs_and_nested_states():
    cell = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(3, prefix="l_"),
                                    mx.rnn.RNNCell(3, prefix="r_"))
    outputs, states = cell.unroll(2, mx.sym.Variable("d"))
    assert [o.name for o in outputs] == ["bi_t0", "bi_t1"]
    assert [[s.name for s in group] for group in states] == [["l_t1_out"], ["r_t1_out"]]
    rng = np.random.RandomState(4)
    x = rng.randn(2, 2, 4)
    args = {"d": x}
    for p in "lr":
        args.update({f"{p}_i2h_weight": rng.randn(3, 4), f"{p}_h2h_weight": rng.randn(3, 3),
                     f"{p}_i2h_bias": np.zeros(3), f"{p}_h2h_bias": np.zeros(3)})

    def run(p, steps):
        h, hs = np.zeros((2, 3)), []
        for t in steps:
            h = np.tanh(x[:, t] @ args[f"{p}_i2h_weight"].T + h @ args[f"{p}_h2h_weight"].T)
            hs.append(h)
        return hs
    left, right = run("l", [0, 1]), run("r", [1, 0])[::-1]
    for t in range(2):
        np.testing.assert_allclose(_forward(outputs[t], args),
                                   np.concatenate([left[t], right[t]], axis=1), rtol=1e-5)


def test_residual_and_zero_zoneout_and_dropout_cells():
    rng = np.random.RandomState(5)
    x = rng.randn(2, 3, 4)
    base_args = {"g_i2h_weight": rng.randn(12, 4), "g_h2h_weight": rng.randn(12, 4),
                 "g_i2h_bias": rng.randn(12), "g_h2h_bias": rng.randn(12), "d": x}
    plain, _ = mx.rnn.GRUCell(4, prefix="g_").unroll(3, mx.sym.Variable("d"),
                                                      merge_outputs=True)
    ref = _forward(plain, base_args)
    res, _ = mx.rnn.ResidualCell(mx.rnn.GRUCell(4, prefix="g_")).unroll(
        3, mx.sym.Variable("d"), merge_outputs=True)
    np.testing.assert_allclose(_forward(res, base_args), ref + x, rtol=1e-5)
    zone, _ = mx.rnn.ZoneoutCell(mx.rnn.GRUCell(4, prefix="g_")).unroll(
        3, mx.sym.Variable("d"), merge_outputs=True)
    np.testing.assert_allclose(_forward(zone, base_args), ref, rtol=1e-5)
    drop, states = mx.rnn.DropoutCell(0.0).unroll(3, mx.sym.Variable("d"), merge_outputs=True)
    assert states == []
    np.testing.assert_array_equal(_forward(drop, {"d": x}), x.astype("float32"))


def test_zoneout_keeps_old_values_in_training():
    cell = mx.rnn.ZoneoutCell(mx.rnn.RNNCell(3, prefix="z_"), zoneout_outputs=0.5,
                              zoneout_states=0.5)
    out, _ = cell.unroll(2, mx.sym.Variable("d"), merge_outputs=False)
    rng = np.random.RandomState(6)
    args = {"d": rng.randn(64, 2, 3), "z_i2h_weight": rng.randn(3, 3),
            "z_h2h_weight": rng.randn(3, 3), "z_i2h_bias": np.zeros(3), "z_h2h_bias": np.zeros(3)}
    first, _ = _forward(out[0], args, grad_of=np.zeros((64, 3)))
    new = np.tanh(args["d"][:, 0] @ args["z_i2h_weight"].T)
    kept_new = np.isclose(first, new, atol=1e-6)
    assert (kept_new | (first == 0)).all()          # previous output is zero at t=0
    assert 0.2 < kept_new.mean() < 0.8


def test_zoneout_and_sequential_refusals():
    with pytest.raises(GpundaError, match="unfuse first"):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(3))
    with pytest.raises(GpundaError, match="BidirectionalCell doesn't support zoneout"):
        mx.rnn.ZoneoutCell(mx.rnn.BidirectionalCell(mx.rnn.RNNCell(3, prefix="a_"),
                                                    mx.rnn.RNNCell(3, prefix="b_")))
    with pytest.raises(GpundaError, match="mode="):
        mx.rnn.FusedRNNCell(3, mode="elman")


def test_rnn_params_share_variables():
    params = mx.rnn.RNNParams("shared_")
    a = mx.rnn.RNNCell(3, params=params, prefix="a_")
    b = mx.rnn.RNNCell(3, params=params, prefix="b_")
    assert params.get("i2h_weight") is a._iW is b._iW
    assert a._iW.name == "shared_i2h_weight"


def test_fused_rnn_initializer_sets_forget_bias_and_gates():
    cell = mx.rnn.FusedRNNCell(3, num_layers=1, mode="lstm", prefix="")
    total = 4 * 3 * (2 + 3 + 2)
    arr = mx.nd.zeros((total,))
    fused_init = mx.init.FusedRNN(mx.init.One(), 3, 1, "lstm", forget_bias=2.5)
    # as a Variable's __init__ attribute, the way FusedRNNCell's parameters carry it
    desc = mx.init.InitDesc("parameters", attrs={"__init__": fused_init.dumps()})
    mx.init.Zero()(desc, arr)
    parts = cell.unpack_weights({"parameters": arr})
    np.testing.assert_array_equal(parts["l0_i2h_f_bias"].asnumpy(), np.full(3, 2.5))
    np.testing.assert_array_equal(parts["l0_h2h_f_bias"].asnumpy(), np.full(3, 2.5))
    np.testing.assert_array_equal(parts["l0_i2h_i_weight"].asnumpy(), np.ones((3, 2)))
    # each gate is named like a bias or weight, so (as in MXNet) biases get _init_bias: 0
    np.testing.assert_array_equal(parts["l0_h2h_o_bias"].asnumpy(), np.zeros(3))
    with pytest.raises(GpundaError, match="do not fit"):
        cell.unpack_weights({"parameters": mx.nd.zeros((total + 1,))})
    # without its own init the global one fills the gates
    desc = mx.init.InitDesc("parameters", attrs={"__init__": mx.init.FusedRNN(
        None, 3, 1, "lstm").dumps()})
    mx.init.Constant(0.25)(desc, arr)
    parts = cell.unpack_weights({"parameters": arr})
    np.testing.assert_array_equal(parts["l0_i2h_f_bias"].asnumpy(), np.ones(3))
    np.testing.assert_array_equal(parts["l0_h2h_c_weight"].asnumpy(), np.full((3, 3), 0.25))


def test_rnn_checkpoint_saves_unpacked_and_loads_packed(tmp_path):
    cell = mx.rnn.FusedRNNCell(3, mode="gru", prefix="f_")
    y, _ = cell.unroll(2, mx.sym.Variable("data"), layout="TNC", merge_outputs=True)
    flat = mx.nd.array(np.arange(3 * 3 * (4 + 3 + 2), dtype="float32"))
    prefix = str(tmp_path / "m")
    mx.rnn.do_rnn_checkpoint(cell, prefix, period=2)(1, y, {"f_parameters": flat}, {})
    saved = mx.nd.load(prefix + "-0002.params")
    assert "arg:f_l0_i2h_r_weight" in saved and "arg:f_parameters" not in saved
    sym, arg, aux = mx.rnn.load_rnn_checkpoint([cell], prefix, 2)
    np.testing.assert_array_equal(arg["f_parameters"].asnumpy(), flat.asnumpy())
    assert sym.list_arguments() == y.list_arguments() and aux == {}
    assert not os.path.exists(prefix + "-0001.params")


def test_encode_sentences_matches_mxnet():
    assert mx.rnn.encode_sentences([["a", "b"], ["b", "c", "a"]], invalid_label=0) == \
        ([[1, 2], [2, 3, 1]], {"\n": 0, "a": 1, "b": 2, "c": 3})
    # an unknown word maps to unknown_token, added when new; MXNet 1.9.1 also reassigns an
    # unknown_token already in vocab (here to 0), which gpunda does not (see io.py)
    assert mx.rnn.encode_sentences([["a", "x", "y"]], vocab={"a": 1, "<unk>": 2},
                                   unknown_token="<unk>") == ([[1, 2, 2]], {"a": 1, "<unk>": 2})
    assert mx.rnn.encode_sentences([["a", "x"]], vocab={"a": 1}, start_label=5,
                                   unknown_token="<unk>") == ([[1, 5]], {"a": 1, "<unk>": 5})
    with pytest.raises(GpundaError, match="Unknown token x"):
        mx.rnn.encode_sentences([["x"]], vocab={"a": 1})


def test_bucket_sentence_iter_pads_shifts_and_transposes():
    sentences = [[1, 2], [3, 4], [5, 6, 7], [8, 9, 10], [1, 2, 3, 4, 5, 6]]
    it = mx.rnn.BucketSentenceIter(sentences, 2, invalid_label=0, layout="TN")
    assert it.buckets == [2, 3] and it.default_bucket_key == 3
    assert it.provide_data[0].shape == (3, 2)
    batches = sorted(list(it), key=lambda b: b.bucket_key)
    assert [b.bucket_key for b in batches] == [2, 3]
    data, label = batches[1].data[0].asnumpy(), batches[1].label[0].asnumpy()
    assert data.shape == (3, 2)
    np.testing.assert_array_equal(label[:-1], data[1:])
    np.testing.assert_array_equal(label[-1], [0, 0])
    assert sorted(map(tuple, data.T.tolist())) == [(5, 6, 7), (8, 9, 10)]
    with pytest.raises(ValueError, match="Invalid layout"):
        mx.rnn.BucketSentenceIter(sentences, 2, layout="NC")


def test_rnn_loads_lazily():
    # (the convolutional cells are built now: tests/test_rnn_conv_cells.py)
    code = "import sys, gpunda; print('gpunda.rnn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert out.stdout.strip() == "False", out.stderr


def test_sequential_cell_steps_through_its_cells():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.RNNCell(2, prefix="a_"))
    stack.add(mx.rnn.LSTMCell(2, prefix="b_"))
    assert len(stack.state_info) == 3
    out, states = stack(mx.sym.Variable("x"), stack.begin_state())
    assert out.name == "b_t0_out" and [s.name for s in states] == \
        ["a_t0_out", "b_t0_out", "b_t0_state"]
    assert "a_i2h_weight" in stack.params._params and "b_h2h_bias" in stack.params._params
    stack.add(mx.rnn.BidirectionalCell(mx.rnn.RNNCell(2, prefix="l_"),
                                       mx.rnn.RNNCell(2, prefix="r_")))
    with pytest.raises(NotImplementedError, match="unroll"):
        stack(mx.sym.Variable("x"), stack.begin_state())


def test_rnn_cell_module_helpers_match_mxnet():
    # answers recorded from MXNet 1.9.1 (/work/mxref)
    from gpunda.rnn import rnn_cell as R
    cells = [mx.rnn.LSTMCell(4, prefix="l0_"), mx.rnn.GRUCell(3, prefix="g0_")]
    assert R._cells_state_shape(cells) == [(0, 4), (0, 4), (0, 3)]
    assert R._cells_state_info(cells) == [{"shape": (0, 4), "__layout__": "NC"},
                                          {"shape": (0, 4), "__layout__": "NC"},
                                          {"shape": (0, 3), "__layout__": "NC"}]
    states = R._cells_begin_state(cells, func=mx.sym.zeros)
    assert [s.name for s in states] == ["l0_begin_state_0", "l0_begin_state_1",
                                        "g0_begin_state_0"]
    fused = [mx.rnn.FusedRNNCell(3, num_layers=1, mode="lstm", prefix="f_")]
    flat = mx.nd.array(np.arange(84, dtype=np.float32))
    unpacked = R._cells_unpack_weights(fused, {"f_parameters": flat})
    assert sorted(unpacked) == sorted(f"f_l0_{w}_{g}_{k}" for w in ("i2h", "h2h")
                                      for g in "ifco" for k in ("weight", "bias"))
    packed = R._cells_pack_weights(fused, unpacked)
    assert sorted(packed) == ["f_parameters"]
    assert packed["f_parameters"].asnumpy().tolist() == flat.asnumpy().tolist()
    steps, axis = R._normalize_sequence(3, mx.sym.var("d"), "NTC", False)
    assert len(steps) == 3 and axis == 1
    merged, axis = R._normalize_sequence(3, [mx.sym.var(f"x{i}") for i in range(3)], "TNC", True)
    assert axis == 0
    assert merged.infer_shape(x0=(2, 5), x1=(2, 5), x2=(2, 5))[1] == [(3, 2, 5)]
