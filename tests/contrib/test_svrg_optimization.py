"""SVRGModule and its optimizers: the SVRG update checked step by step against NumPy."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.contrib.svrg_optimization.svrg_module import SVRGModule
from gpunda.contrib.svrg_optimization.svrg_optimizer import _SVRGOptimizer


def _setup(x, y, batch):
    it = mx.io.NDArrayIter(x, y, batch_size=batch, shuffle=False, label_name="lin_reg_label")
    out = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, no_bias=True, name="fc"),
        mx.sym.var("lin_reg_label"), name="lro")
    mod = SVRGModule(out, data_names=["data"], label_names=["lin_reg_label"], update_freq=2)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(initializer=mx.init.One())
    return it, mod


def test_svrg_steps_match_numpy():
    rs = np.random.RandomState(0)
    x = rs.uniform(-1, 1, (8, 2)).astype(np.float32)
    y = (x @ np.array([1.0, 2.0])).astype(np.float32)
    batch, lr = 4, 0.5
    it, mod = _setup(x, y, batch)
    mod.init_optimizer(kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", lr),))
    assert isinstance(mod._optimizer, _SVRGOptimizer)

    def grad(w, xb, yb):          # LinearRegressionOutput: d/dw of 0.5 * sum (xw - y)^2
        return ((xb @ w - yb)[:, None] * xb).sum(0)

    w0 = np.ones(2)
    mod.update_full_grads(it)
    full = (grad(w0, x[:4], y[:4]) + grad(w0, x[4:], y[4:])) / 2
    np.testing.assert_allclose(mod._param_dict[0]["fc_weight"].asnumpy()[0], full, rtol=1e-5)
    w = w0.copy()
    it.reset()
    for b, data in enumerate(it):
        mod.forward_backward(data)
        mod.update()
        xb, yb = x[4 * b:4 * b + 4], y[4 * b:4 * b + 4]
        g = grad(w, xb, yb) - grad(w0, xb, yb) + full
        w = w - lr * g / batch
        np.testing.assert_allclose(mod.get_params()[0]["fc_weight"].asnumpy()[0], w, rtol=1e-5)


def test_fit_matches_mxnet():
    rs = np.random.RandomState(1)
    x = rs.uniform(-1, 1, (64, 2)).astype(np.float32)
    y = (x @ np.array([1.0, 2.0])).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=16, shuffle=False, label_name="lin_reg_label")
    out = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, no_bias=True, name="fc"),
        mx.sym.var("lin_reg_label"), name="lro")
    mod = SVRGModule(out, data_names=["data"], label_names=["lin_reg_label"], update_freq=2)
    mod.fit(it, eval_metric="mse", optimizer="sgd", num_epoch=6,
            optimizer_params=(("learning_rate", 0.5),), initializer=mx.init.Zero())
    w = mod.get_params()[0]["fc_weight"].asnumpy()[0]
    np.testing.assert_allclose(w, [1.1128062, 2.2444513], rtol=1e-5)    # MXNet 1.9.1


def test_update_freq_is_checked():
    sym = mx.sym.var("data")
    with pytest.raises(TypeError, match="update_freq"):
        SVRGModule(sym, label_names=None, update_freq=None)
    with pytest.raises(ValueError, match="positive"):
        SVRGModule(sym, label_names=None, update_freq=0)


def test_svrg_optimizer_routes_full_keys_to_assignment():
    opt = _SVRGOptimizer(default_optimizer="sgd", param_idx2name={0: "w", 1: "w_full"},
                         learning_rate=1.0)
    kv = mx.kv.create("local")
    kv.set_optimizer(opt)
    a, b = mx.nd.array([0, 0, 0]), mx.nd.array([1, 1, 1])
    kv.init(0, a)
    kv.push(0, mx.nd.array([1, 1, 1]))
    kv.pull(0, a)
    kv.init(1, b)
    kv.push(1, mx.nd.array([2, 2, 2]))
    kv.pull(1, b)
    np.testing.assert_array_equal(a.asnumpy(), [-1, -1, -1])    # sgd: 0 - 1.0 * 1
    np.testing.assert_array_equal(b.asnumpy(), [2, 2, 2])       # assigned
