"""mx.mod.Module: training matches Gluon, checkpoints round-trip, predict/score match NumPy."""
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError


def _mlp_symbol():
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    h = mx.sym.Activation(h, act_type="relu", name="relu1")
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def _problem(n=32, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 5).astype(np.float32)
    w = rng.randn(5, 3).astype(np.float32)
    y = (x @ w).argmax(axis=1).astype(np.float32)
    return x, y


def _iter(x, y, batch_size=8):
    return mx.io.NDArrayIter(x, y, batch_size=batch_size, shuffle=False,
                             label_name="softmax_label")


def _gluon_net(params):
    from gpunda import gluon
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, activation="relu", in_units=5), gluon.nn.Dense(3, in_units=8))
    net.initialize()
    dense1, dense2 = net[0], net[1]
    for blk, prefix in ((dense1, "fc1"), (dense2, "fc2")):
        blk.weight.set_data(params[f"{prefix}_weight"].copy())
        blk.bias.set_data(params[f"{prefix}_bias"].copy())
    return net


def _fit_module(contexts, epochs=4):
    x, y = _problem()
    mod = mx.mod.Module(_mlp_symbol(), context=contexts)
    train = _iter(x, y)
    mod.bind(train.provide_data, train.provide_label)
    mx.random.seed(3)
    mod.init_params(mx.init.Xavier())
    start = {k: v.copy() for k, v in mod.get_params()[0].items()}
    before = mod.score(_iter(x, y), "ce")[0][1]
    mod.fit(train, num_epoch=epochs, optimizer="sgd",
            optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    after = mod.score(_iter(x, y), "ce")[0][1]
    return mod, start, before, after


def _fit_gluon(start, epochs=4):
    from gpunda import autograd, gluon
    x, y = _problem()
    net = _gluon_net(start)
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.5, "momentum": 0.9})
    for _ in range(epochs):
        for i in range(0, len(x), 8):
            xb, yb = mx.nd.array(x[i:i + 8]), mx.nd.array(y[i:i + 8])
            with autograd.record():
                loss = loss_fn(net(xb), yb)
            loss.backward()
            trainer.step(8)
    return {"fc1_weight": net[0].weight.data(), "fc1_bias": net[0].bias.data(),
            "fc2_weight": net[1].weight.data(), "fc2_bias": net[1].bias.data()}


@pytest.mark.parametrize("contexts", [[mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]],
                         ids=["one_ctx", "two_ctx"])
def test_fit_loss_falls_and_matches_gluon(contexts):
    mod, start, before, after = _fit_module(contexts)
    assert after < 0.5 * before, (before, after)
    expected = _fit_gluon(start)
    got = mod.get_params()[0]
    for k, v in expected.items():
        np.testing.assert_allclose(got[k].asnumpy(), v.asnumpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=k)


def test_two_contexts_split_the_batch_by_work_load():
    x, y = _problem(n=12)
    mod = mx.mod.Module(_mlp_symbol(), context=[mx.cpu(0), mx.cpu(1)], work_load_list=[2, 1])
    mod.bind([("data", (12, 5))], [("softmax_label", (12,))])
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=False)
    parts = mod.get_outputs(merge_multi_context=False)[0]
    assert [p.shape for p in parts] == [(8, 3), (4, 3)]
    assert mod.get_outputs()[0].shape == (12, 3)


def _numpy_forward(params, x):
    h = np.maximum(x @ params["fc1_weight"].T + params["fc1_bias"], 0)
    z = h @ params["fc2_weight"].T + params["fc2_bias"]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_predict_and_score_match_numpy():
    x, y = _problem(n=10)
    mod = mx.mod.Module(_mlp_symbol())
    it = mx.io.NDArrayIter(x, y, batch_size=4, label_name="softmax_label")   # pads the last
    mod.bind(it.provide_data, it.provide_label, for_training=False)
    mod.init_params(mx.init.Normal(0.5))
    params = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    prob = _numpy_forward(params, x)
    out = mod.predict(it)
    assert out.shape == (10, 3)     # the padding is cut off
    np.testing.assert_allclose(out.asnumpy(), prob, rtol=1e-5, atol=1e-6)
    per_batch = mod.predict(it, merge_batches=False)
    assert [b[0].shape[0] for b in per_batch] == [4, 4, 2]
    assert isinstance(mod.predict(it, always_output_list=True), list)
    assert mod.predict(it, num_batch=1).shape == (4, 3)
    np.testing.assert_allclose(mod.predict(mx.nd.array(x[:4])).asnumpy(), prob[:4], rtol=1e-5)
    # score: accuracy over the 8 unpadded samples of two full batches
    acc = dict(mod.score(it, "acc", num_batch=2))["accuracy"]
    assert acc == pytest.approx(np.mean(prob[:8].argmax(1) == y[:8]))
    outs = [o[0].asnumpy() for o, _, _ in mod.iter_predict(it)]
    np.testing.assert_allclose(np.concatenate(outs), prob, rtol=1e-5, atol=1e-6)


def test_checkpoint_round_trip_with_optimizer_states(tmp_path):
    x, y = _problem()
    mod, _, _, _ = _fit_module([mx.cpu(0)], epochs=2)
    prefix = str(tmp_path / "net")
    mod.save_checkpoint(prefix, 2, save_optimizer_states=True)
    for f in ("net-symbol.json", "net-0002.params", "net-0002.states"):
        assert os.path.exists(tmp_path / f)
    # the .params file is the one mx.model.save_checkpoint writes
    arg, aux = mod.get_params()
    mx.model.save_checkpoint(str(tmp_path / "ref"), 2, mod.symbol, arg, aux)
    assert (tmp_path / "net-0002.params").read_bytes() == \
        (tmp_path / "ref-0002.params").read_bytes()
    mod2 = mx.mod.Module.load(prefix, 2, load_optimizer_states=True)
    train = _iter(x, y)
    mod2.bind(train.provide_data, train.provide_label)
    mod2.init_optimizer(optimizer="sgd",
                        optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    assert mod2.symbol.tojson() == mod.symbol.tojson()
    for k, v in arg.items():
        np.testing.assert_array_equal(mod2.get_params()[0][k].asnumpy(), v.asnumpy())
    states1, states2 = mod._updater.states, mod2._updater.states
    assert set(states1) == set(states2) and states1
    for k in states1:
        np.testing.assert_array_equal(states1[k].asnumpy(), states2[k].asnumpy())
    # training on from the checkpoint continues exactly (momentum included)
    for m in (mod, mod2):
        m.fit(_iter(x, y), begin_epoch=2, num_epoch=3, optimizer="sgd",
              optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    for k, v in mod.get_params()[0].items():
        np.testing.assert_allclose(mod2.get_params()[0][k].asnumpy(), v.asnumpy(), rtol=1e-6)


def test_save_and_load_params(tmp_path):
    mod = mx.mod.Module(_mlp_symbol())
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params(mx.init.Normal(1.0))
    fname = str(tmp_path / "p.params")
    mod.save_params(fname)
    mod2 = mx.mod.Module(_mlp_symbol())
    mod2.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod2.init_params()
    mod2.load_params(fname)
    for k, v in mod.get_params()[0].items():
        np.testing.assert_array_equal(mod2.get_params()[0][k].asnumpy(), v.asnumpy())


def test_default_context_is_the_current_context(fake_gpu):
    # MXNet's default is cpu(), its default device; gpunda's default device may be a GPU
    with mx.cpu(0):
        assert mx.mod.Module(_mlp_symbol())._context == [mx.cpu(0)]
    with fake_gpu:
        mod = mx.mod.Module(_mlp_symbol())
        bucketing = mx.mod.BucketingModule(lambda k: (_mlp_symbol(), ("data",),
                                                      ("softmax_label",)), default_bucket_key=1)
    assert mod._context == [fake_gpu] and bucketing._context == fake_gpu
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params()
    x = np.ones((4, 5), np.float32)
    mod.forward(mx.io.DataBatch([mx.nd.array(x, ctx=mx.cpu())], None), is_train=False)
    out = mod.get_outputs()[0]
    assert out.context == fake_gpu and out.shape == (4, 3)


@pytest.mark.mxnet_fixtures
def test_load_mxnet_checkpoint_predict_and_input_grads():
    fix = os.environ["GPUNDA_MXNET_FIXTURES"]
    npz = np.load(os.path.join(fix, "mlp-expected.npz"))
    mod = mx.mod.Module.load(os.path.join(fix, "mlp"), 0, label_names=None)
    mod.bind([("data", (4, 20))], inputs_need_grad=True)
    batch = mx.io.DataBatch([mx.nd.array(npz["in__data"])])
    mod.forward(batch, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), npz["predict__out__0"],
                               rtol=1e-4, atol=1e-5)
    mod.forward(batch, is_train=True)
    mod.backward([mx.nd.array(npz["head__0"])])
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(),
                               npz["grad_predict__in__data"], rtol=1e-4, atol=1e-5)
    grads = dict(zip(mod._exec_group.param_names_in_order(),
                     (g[0] for g in mod._exec_group.grad_arrays)))
    np.testing.assert_allclose(grads["mlp_dense0_weight"].asnumpy(),
                               npz["grad_predict__param__mlp_dense0_weight"],
                               rtol=1e-4, atol=1e-5)


def test_forward_reshapes_for_a_new_batch_size():
    mod = mx.mod.Module(_mlp_symbol())
    mod.bind([("data", (8, 5))], [("softmax_label", (8,))])
    mod.init_params(mx.init.Normal(0.5))
    params = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    x = np.random.RandomState(1).randn(3, 5).astype(np.float32)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.zeros((3,))]), is_train=False)
    assert mod.data_shapes[0].shape == (3, 5)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), _numpy_forward(params, x),
                               rtol=1e-5, atol=1e-6)


def test_grad_req_add_accumulates_and_fixed_params_stay():
    mod = mx.mod.Module(_mlp_symbol(), fixed_param_names=["fc1_weight"])
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))], grad_req="add")
    mod.init_params(mx.init.Normal(0.5))
    batch = mx.io.DataBatch([mx.nd.ones((4, 5))], [mx.nd.zeros((4,))])
    group = mod._exec_group
    assert group.grad_req["fc1_weight"] == "null" and group.grad_req["fc2_weight"] == "add"
    mod.forward_backward(batch)
    g1 = group.execs[0].grad_dict["fc2_weight"].asnumpy().copy()
    mod.forward_backward(batch)
    np.testing.assert_allclose(group.execs[0].grad_dict["fc2_weight"].asnumpy(), 2 * g1,
                               rtol=1e-5)
    w = mod.get_params()[0]["fc1_weight"].asnumpy().copy()
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    mod.update()
    np.testing.assert_array_equal(mod.get_params()[0]["fc1_weight"].asnumpy(), w)


def test_rescale_grad_defaults_to_one_over_batch_size():
    mod = mx.mod.Module(_mlp_symbol())
    mod.bind([("data", (16, 5))], [("softmax_label", (16,))])
    mod.init_params()
    mod.init_optimizer(optimizer="sgd")
    assert mod._optimizer.rescale_grad == pytest.approx(1 / 16)
    assert mod._optimizer.idx2name == dict(enumerate(mod._exec_group.param_names))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"rescale_grad": 0.5}, force_init=True)
    assert mod._optimizer.rescale_grad == 0.5


def test_states_and_input_grads():
    a = mx.sym.Variable("a")
    s = mx.sym.Variable("s")
    mod = mx.mod.Module(a * 2 + s * 3, data_names=["a"], label_names=None, state_names=["s"])
    mod.bind([("a", (2, 3))], inputs_need_grad=True)
    mod.init_params()
    mod.set_states(value=1)
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 3))]), is_train=True)
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.full((2, 3), 5.0))
    mod.backward([mx.nd.ones((2, 3))])
    np.testing.assert_array_equal(mod.get_input_grads()[0].asnumpy(), np.full((2, 3), 2.0))
    assert mod.get_states(merge_multi_context=False)[0][0].shape == (2, 3)


def test_bad_use_raises_naming_the_problem():
    sym = _mlp_symbol()
    with pytest.raises(ValueError, match="'nodata'"):
        mx.mod.Module(sym, data_names=["nodata"])
    mod = mx.mod.Module(sym)
    batch = mx.io.DataBatch([mx.nd.ones((4, 5))], [mx.nd.zeros((4,))])
    with pytest.raises(GpundaError, match="bind"):
        mod.forward(batch)
    with pytest.raises(TypeError, match="data"):
        mod.bind([("data", mx.nd.array([4, 5]))])
    assert not mod.binded
    with pytest.raises(ValueError, match="data_names"):
        mod.bind([("other", (4, 5))])
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    with pytest.raises(GpundaError, match="init_params"):
        mod.forward(batch)
    mod.init_params()
    with pytest.raises(GpundaError, match="init_optimizer"):
        mod.update()
    with pytest.raises(RuntimeError, match="fc1_bias is not presented"):
        mod.set_params({"fc1_weight": mx.nd.zeros((8, 5))}, {})
    params = dict(mod.get_params()[0], bogus=mx.nd.zeros((1,)))
    with pytest.raises(ValueError, match="bogus"):
        mod.set_params(params, {}, allow_missing=True)
    mod.set_params(params, {}, allow_missing=True, allow_extra=True)
    with pytest.raises(GpundaError, match="grad_req"):
        mx.mod.Module(sym).bind([("data", (4, 5))], grad_req="sometimes")
