"""The fused RNN op against real MXNet 1.9.1 (tests/data/rnn_mxnet191.npz, made by
tests/data/make_rnn_fixture.py), a per-step NumPy reference, and finite differences."""
from pathlib import Path

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, nd
from gpunda.base import GpundaError
from gpunda.ops.nn.rnn import param_layout

FIXTURE = np.load(Path(__file__).resolve().parent.parent / "data" / "rnn_mxnet191.npz")
CASES = sorted({k.split("_")[0] for k in FIXTURE.files})


def _config(case):
    mode, bi, layers, proj = FIXTURE[case + "_config"]
    return mode, bi == "True", int(layers), int(proj)


@pytest.mark.parametrize("case", CASES)
def test_matches_mxnet_outputs_and_gradients(case):
    mode, bi, layers, proj = _config(case)
    f = {k[len(case) + 1:]: FIXTURE[k] for k in FIXTURE.files if k.startswith(case + "_")}
    hsz = f["c0"].shape[2]
    args = [nd.array(f["x"]), nd.array(f["w"]), nd.array(f["h0"])]
    if mode == "lstm":
        args.append(nd.array(f["c0"]))
    kw = dict(state_size=hsz, num_layers=layers, bidirectional=bi, mode=mode, state_outputs=True)
    if proj:
        kw["projection_size"] = proj
    for a in args:
        a.attach_grad()
    with autograd.record():
        outs = nd.RNN(*args, **kw)
        loss = (outs[0] * nd.array(f["head"])).sum() + 0.5 * outs[1].sum()
        if mode == "lstm":
            loss = loss + 0.3 * outs[2].sum()
    assert len(outs) == (3 if mode == "lstm" else 2)
    for k, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), f[f"out{k}"], rtol=1e-4, atol=1e-5)
    if proj:
        return          # MXNet's CPU kernel cannot train LSTMP: no reference gradient
    loss.backward()
    for k, a in enumerate(args):
        np.testing.assert_allclose(a.grad.asnumpy(), f[f"grad{k}"], rtol=1e-3, atol=1e-5)


def _ref_lstm(x, w, h0, c0, hsz, lengths):
    """Single-layer unidirectional LSTM, step by step in NumPy, with sequence lengths."""
    (ox, sx), (oh, sh) = w["wx"], w["wh"]
    flat = w["flat"]
    wx = flat[ox:ox + np.prod(sx)].reshape(sx)
    wh = flat[oh:oh + np.prod(sh)].reshape(sh)
    bx = flat[w["bx"][0]:w["bx"][0] + 4 * hsz]
    bh = flat[w["bh"][0]:w["bh"][0] + 4 * hsz]
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h, c = h0.copy(), c0.copy()
    ys = np.zeros(x.shape[:2] + (hsz,))
    for t in range(x.shape[0]):
        a = x[t] @ wx.T + bx + h @ wh.T + bh
        i, f, g, o = sig(a[:, :hsz]), sig(a[:, hsz:2 * hsz]), np.tanh(a[:, 2 * hsz:3 * hsz]), \
            sig(a[:, 3 * hsz:])
        c2 = f * c + i * g
        h2 = o * np.tanh(c2)
        live = (t < lengths)[:, None]
        h, c = np.where(live, h2, h), np.where(live, c2, c)
        ys[t] = np.where(live, h2, 0)
    return ys, h, c


def test_sequence_length_against_numpy_reference(rng):
    t, n, i, hsz = 5, 3, 2, 3
    p = mx.ops.get_op("RNN").parse_params(dict(state_size=hsz, num_layers=1, mode="lstm"))
    (_, _, slots), = param_layout(p, i)[0]
    size = param_layout(p, i)[1]
    x = rng.uniform(-1, 1, (t, n, i))
    flat = rng.uniform(-0.5, 0.5, size)
    h0, c0 = rng.uniform(-1, 1, (1, n, hsz)), rng.uniform(-1, 1, (1, n, hsz))
    lengths = np.array([5, 2, 3])
    ys, hy, cy = nd.RNN(nd.array(x, dtype="float64"), nd.array(flat, dtype="float64"),
                        nd.array(h0, dtype="float64"), nd.array(c0, dtype="float64"),
                        nd.array(lengths, dtype="float64"), state_size=hsz, num_layers=1,
                        mode="lstm", state_outputs=True, use_sequence_length=True)
    ref = _ref_lstm(x, dict(slots, flat=flat), h0[0], c0[0], hsz, lengths)
    np.testing.assert_allclose(ys.asnumpy(), ref[0], rtol=1e-10)
    np.testing.assert_allclose(hy.asnumpy()[0], ref[1], rtol=1e-10)
    np.testing.assert_allclose(cy.asnumpy()[0], ref[2], rtol=1e-10)


def _fd_check(fn, arrays, wrt, rng, eps=1e-6):
    """Gradient of sum(fn(arrays) * head) by autograd vs central differences."""
    nds = [nd.array(a, dtype="float64") for a in arrays]
    for k in wrt:
        nds[k].attach_grad()
    with autograd.record():
        out = fn(*nds)
    head = rng.uniform(-1, 1, out.shape)
    out.backward(nd.array(head, dtype="float64"))
    for k in wrt:
        num = np.zeros_like(arrays[k])
        for idx in np.ndindex(arrays[k].shape):
            vals = []
            for sgn in (1, -1):
                moved = [a.copy() for a in arrays]
                moved[k][idx] += sgn * eps
                vals.append((fn(*[nd.array(a, dtype="float64") for a in moved]).asnumpy()
                             * head).sum())
            num[idx] = (vals[0] - vals[1]) / (2 * eps)
        np.testing.assert_allclose(nds[k].grad.asnumpy(), num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_bidirectional_sequence_length_gradients(mode, rng):
    t, n, i, hsz = 4, 2, 2, 2
    p = mx.ops.get_op("RNN").parse_params(dict(state_size=hsz, num_layers=2, mode=mode,
                                               bidirectional=True, use_sequence_length=True))
    size = param_layout(p, i)[1]
    cell = mode == "lstm"
    arrays = [rng.uniform(-1, 1, (t, n, i)), rng.uniform(-0.5, 0.5, size),
              rng.uniform(-1, 1, (4, n, hsz))] + ([rng.uniform(-1, 1, (4, n, hsz))] if cell else [])
    lengths = nd.array([4, 2], dtype="float64")

    def fn(*a):
        return nd.RNN(*a, lengths, state_size=hsz, num_layers=2, mode=mode, bidirectional=True,
                      use_sequence_length=True)
    _fd_check(fn, arrays, range(len(arrays)), rng)


def test_lstmp_and_clip_gradients(rng):
    t, n, i, hsz, proj = 3, 2, 2, 3, 2
    kw = dict(state_size=hsz, num_layers=1, mode="lstm", projection_size=proj,
              lstm_state_clip_min=-0.4, lstm_state_clip_max=0.4)
    p = mx.ops.get_op("RNN").parse_params(kw)
    size = param_layout(p, i)[1]
    arrays = [rng.uniform(-1, 1, (t, n, i)), rng.uniform(-0.5, 0.5, size),
              rng.uniform(-1, 1, (1, n, proj)), rng.uniform(-0.3, 0.3, (1, n, hsz))]
    _fd_check(lambda *a: nd.RNN(*a, **kw), arrays, range(4), rng)
    out = nd.RNN(*[nd.array(a) for a in arrays], **kw, state_outputs=True)
    assert out[0].shape == (t, n, proj) and np.abs(out[2].asnumpy()).max() <= 0.4 + 1e-7


def test_dropout_between_layers_is_seeded_and_training_only():
    t, n, i, hsz = 3, 4, 3, 5
    p = mx.ops.get_op("RNN").parse_params(dict(state_size=hsz, num_layers=2, mode="gru", p=0.5))
    args = [nd.ones((t, n, i)), nd.ones((param_layout(p, i)[1],)) * 0.1, nd.zeros((2, n, hsz))]
    kw = dict(state_size=hsz, num_layers=2, mode="gru", p=0.5)
    infer = nd.RNN(*args, **kw).asnumpy()
    mx.random.seed(3)
    with autograd.train_mode():
        a = nd.RNN(*args, **kw).asnumpy()
    mx.random.seed(3)
    with autograd.train_mode():
        b = nd.RNN(*args, **kw).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, infer)


def test_symbol_shapes_and_names():
    s = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("params"), mx.sym.var("state"),
                   mx.sym.var("cell"), state_size=8, num_layers=2, mode="lstm",
                   bidirectional=True, state_outputs=True, name="rnn")
    assert s.list_outputs() == ["rnn_output", "rnn_state_output", "rnn_statecell_output"]
    arg, out, _ = s.infer_shape(data=(7, 3, 5))
    # (I + H + 2) * 4H * D for layer 1, (H*D + H + 2) * 4H * D for layer 2
    assert arg == [(7, 3, 5), ((5 + 8 + 2) * 32 * 2 + (16 + 8 + 2) * 32 * 2,), (4, 3, 8),
                   (4, 3, 8)]
    assert out == [(7, 3, 16), (4, 3, 8), (4, 3, 8)]


def test_errors():
    x = nd.ones((2, 1, 3))
    with pytest.raises(GpundaError, match="parameters has shape"):
        nd.RNN(x, nd.ones((5,)), nd.zeros((1, 1, 2)), state_size=2, num_layers=1, mode="gru")
    with pytest.raises(GpundaError, match="projection_size"):
        nd.RNN(x, nd.ones((5,)), nd.zeros((1, 1, 2)), state_size=2, num_layers=1, mode="gru",
               projection_size=1)
    with pytest.raises(GpundaError, match="must be given together"):
        nd.RNN(x, nd.ones((5,)), nd.zeros((1, 1, 2)), nd.zeros((1, 1, 2)), state_size=2,
               num_layers=1, mode="lstm", lstm_state_clip_min=0.0)
    p = mx.ops.get_op("RNN").parse_params(dict(state_size=2, num_layers=1, mode="rnn_tanh"))
    w = nd.ones((param_layout(p, 3)[1],))
    w.attach_grad()
    with autograd.record():
        y = nd.RNN(x, w, nd.zeros((1, 1, 2)), state_size=2, num_layers=1, mode="rnn_tanh")
        g = autograd.grad(y, [w], create_graph=True)
        g = g[0] if isinstance(g, list) else g
    with pytest.raises(GpundaError, match="non-differentiable because it didn.t register FGradient"):
        g.backward()


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
@pytest.mark.parametrize("hybrid", [False, True])
def test_weight_gradients_do_not_depend_on_the_data_needing_one(mode, hybrid, rng):
    # without a data gradient the first layer's input GEMM is skipped: the rest is unchanged
    from gpunda import gluon
    t, n, i, hsz = 4, 3, 5, 6
    layer = {"lstm": gluon.rnn.LSTM, "gru": gluon.rnn.GRU, "rnn_tanh": gluon.rnn.RNN}[mode]
    kw = {"activation": "tanh"} if mode == "rnn_tanh" else {}
    net = layer(hsz, num_layers=2, bidirectional=True, input_size=i, **kw)
    net.initialize(mx.init.Uniform(0.5))
    if hybrid:
        net.hybridize()
    x0, head = rng.uniform(-1, 1, (t, n, i)), nd.array(rng.uniform(-1, 1, (t, n, 2 * hsz)))
    grads = []
    for with_data in (True, False):
        x = nd.array(x0)
        if with_data:
            x.attach_grad()
        with autograd.record():
            y = net(x)
        y.backward(head)
        grads.append({k: v.grad().asnumpy().copy() for k, v in net.collect_params().items()})
        if with_data:
            assert np.abs(x.grad.asnumpy()).max() > 0
    for k in grads[0]:
        np.testing.assert_allclose(grads[1][k], grads[0][k], rtol=1e-6, atol=1e-7)


def test_saturated_lstm_gates_match_a_float64_reference(rng):
    # the gates are activated through one tanh (sigmoid(a) = (1 + tanh(a/2)) / 2):
    # large pre-activations must still give the float64 reference's values
    t, n, i, hsz = 3, 2, 4, 3
    p = mx.ops.get_op("RNN").parse_params(dict(state_size=hsz, num_layers=1, mode="lstm"))
    lay = param_layout(p, i)
    w = rng.uniform(-8, 8, lay[1])
    x, h0, c0 = rng.uniform(-2, 2, (t, n, i)), rng.uniform(-1, 1, (1, n, hsz)), \
        rng.uniform(-1, 1, (1, n, hsz))
    slots = dict(lay[0][0][2], flat=w)
    ys, h, c = _ref_lstm(x, slots, h0[0], c0[0], hsz, np.full(n, t))
    out = nd.RNN(nd.array(x), nd.array(w), nd.array(h0), nd.array(c0), state_size=hsz,
                 num_layers=1, mode="lstm", state_outputs=True)
    np.testing.assert_allclose(out[0].asnumpy(), ys, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[2].asnumpy()[0], c, rtol=1e-5, atol=1e-6)
