"""mx.model's old training API (FeedForward and its kvstore/update helpers) against answers
recorded from MXNet 1.9.1 (/work/mxref) on the same inputs."""
import os
import warnings

import numpy as np
import pytest

import gpunda as mx
from gpunda import model as M


class _Shape:
    """Only ``.shape``: what _create_kvstore reads of a parameter (no 64 MB allocation)."""

    def __init__(self, shape):
        self.shape = shape


@pytest.mark.parametrize("kvstore,num_device,shape,kv_type,update", [
    # MXNet 1.9.1's answers
    ("local", 1, (3, 4), None, False),
    ("local", 2, (3, 4), "local", True),
    ("device", 2, (3, 4), "device", True),
    ("local", 2, (4097, 4097), "local", False),     # over 16M values: update on the workers
    (None, 2, (3, 4), None, False),
])
def test_create_kvstore_matches_mxnet(kvstore, num_device, shape, kv_type, update):
    kv, upd = M._create_kvstore(kvstore, num_device, {"w": _Shape(shape)})
    assert (None if kv is None else kv.type) == kv_type
    assert upd is update


def test_create_kvstore_env_given_store_and_bad_type(monkeypatch):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    kv, upd = M._create_kvstore("local", 2, {"w": _Shape((2,))})
    assert kv.type == "local" and upd is False
    monkeypatch.delenv("MXNET_UPDATE_ON_KVSTORE")
    given = mx.kv.create("device")
    assert M._create_kvstore(given, 1, {"w": _Shape((2,))}) == (given, True)
    with pytest.raises(TypeError, match="kvstore must be KVStore, str or None"):
        M._create_kvstore(3, 1, {})
    kv, upd = M._create_sparse_kvstore("local")
    assert kv.type == "local" and upd is True
    with pytest.raises(TypeError, match="kvstore=3"):
        M._create_sparse_kvstore(3)


def _arrays(rows):
    return [[None if v is None else mx.nd.array(v) for v in row] for row in rows]


def test_update_params_indices_and_kvstore_sum_match_mxnet():
    calls = []

    def updater(index, grad, weight):
        calls.append((tuple(index), [g.asnumpy().tolist() for g in grad]))

    weights = _arrays([[[1., 2.], [1., 2.]], [[3.], [3.]], [[5.], [5.]]])
    grads = _arrays([[[.5, 1.], [.25, .5]], [None, None], [[2.], [4.]]])
    M._update_params(weights, grads, updater, 2)
    # MXNet 1.9.1: one call per device, index i * num_device + k, the gradient-less skipped
    assert calls == [((0, 4), [[0.5, 1.0], [2.0]]), ((1, 5), [[0.25, 0.5], [4.0]])]
    calls.clear()
    kv = mx.kv.create("local")
    kv.init("a", mx.nd.zeros(2))
    kv.init("c", mx.nd.zeros(1))
    grads = _arrays([[[.5, 1.], [.25, .5]], [None, None], [[2.], [4.]]])
    M._update_params(weights, grads, updater, 2, kvstore=kv, param_names=["a", "b", "c"])
    assert calls == [((0, 4), [[0.75, 1.5], [6.0]]), ((1, 5), [[0.75, 1.5], [6.0]])]


def test_update_params_with_sgd_updater_matches_mxnet():
    weights = _arrays([[[1., 2.], [1., 2.]]])
    grads = _arrays([[[.5, 1.], [.25, .5]]])
    M._update_params(weights, grads, mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1)),
                     2)
    np.testing.assert_allclose([w.asnumpy() for w in weights[0]],
                               [[0.95, 1.9], [0.975, 1.95]], rtol=1e-6)


@pytest.mark.parametrize("fn", [M._update_params_on_kvstore, M._update_params_on_kvstore_nccl])
def test_update_params_on_kvstore_matches_mxnet(fn):
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1))
    weights = _arrays([[[1., 2.], [1., 2.]], [[3.], [3.]]])
    M._initialize_kvstore(kv, weights, {"a": mx.nd.array([1., 2.]), "b": mx.nd.array([3.])},
                          ["a", "b"], True)
    grads = _arrays([[[.5, 1.], [.25, .5]], [None, None]])
    fn(weights, grads, kv, ["a", "b"])
    # MXNet 1.9.1: the devices' gradients summed, one SGD step on the store, pulled to both
    for w in weights[0]:
        np.testing.assert_allclose(w.asnumpy(), [0.925, 1.85], rtol=1e-6)
    assert [w.asnumpy().tolist() for w in weights[1]] == [[3.0], [3.0]]


def test_initialize_kvstore_broadcasts_or_inits():
    kv = mx.kv.create("local")
    weights = [[mx.nd.zeros(2), mx.nd.zeros(2)]]
    M._initialize_kvstore(kv, weights, {"a": mx.nd.array([7., 8.])}, ["a"], True)
    assert [w.asnumpy().tolist() for w in weights[0]] == [[7.0, 8.0], [7.0, 8.0]]
    kv = mx.kv.create("local")
    weights = [[mx.nd.zeros(2), mx.nd.zeros(2)]]
    M._initialize_kvstore(kv, weights, {"a": mx.nd.array([7., 8.])}, ["a"], False)
    out = mx.nd.zeros(2)
    kv.pull("a", out=out)
    assert [w.asnumpy().tolist() for w in weights[0]] == [[0.0, 0.0], [0.0, 0.0]]
    assert out.asnumpy().tolist() == [7.0, 8.0]


def test_multiple_callbacks():
    seen = []
    M._multiple_callbacks([lambda *a, **k: seen.append(("l1", a, k)),
                           lambda *a, **k: seen.append(("l2", a, k))], 1, x=2)
    M._multiple_callbacks(lambda *a, **k: seen.append(("one", a, k)), 3)
    M._multiple_callbacks(None, 4)
    assert seen == [("l1", (1,), {"x": 2}), ("l2", (1,), {"x": 2}), ("one", (3,), {})]


def test_sklearn_installed_is_a_bool():
    import importlib.util
    assert M.SKLEARN_INSTALLED is (importlib.util.find_spec("sklearn") is not None)


def _data():
    rng = np.random.RandomState(0)
    X = rng.randn(400, 10).astype(np.float32)
    w = rng.randn(10, 3).astype(np.float32)
    return X, np.argmax(X @ w, axis=1).astype(np.float32)


def _mlp():
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=16, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def test_feedforward_trains_scores_predicts_and_round_trips(tmp_path):
    X, y = _data()
    mx.random.seed(1)
    np.random.seed(1)
    epochs, batches = [], []
    with pytest.warns(DeprecationWarning, match="FeedForward has been deprecated"):
        model = M.FeedForward(_mlp(), num_epoch=10, numpy_batch_size=40, optimizer="sgd",
                              learning_rate=0.5, initializer=mx.init.Xavier())
    model.fit(X[:300], y[:300], eval_data=(X[300:], y[300:]),
              epoch_end_callback=lambda epoch, *a: epochs.append(epoch),
              batch_end_callback=[lambda p: batches.append((p.epoch, p.nbatch))])
    assert epochs == list(range(10))
    # MXNet 1.9.1: 300 rows in batches of 40 rolled over give epochs of 7, 8, 7, ... batches
    per_epoch = [sum(1 for e, _ in batches if e == k) for k in range(10)]
    assert per_epoch == [7, 8] * 5
    assert batches[:3] == [(0, 1), (0, 2), (0, 3)]
    # MXNet 1.9.1 on this data and net: train accuracy 0.987, validation 0.89
    train_acc = model.score(mx.io.NDArrayIter(X[:300], y[:300], 50))
    val_acc = model.score(mx.io.NDArrayIter(X[300:], y[300:], 50))
    assert train_acc > 0.95 and val_acc > 0.83
    pred = model.predict(X[300:])
    assert pred.shape == (100, 3)
    np.testing.assert_allclose(pred.sum(axis=1), 1, rtol=1e-5)
    assert abs((pred.argmax(1) == y[300:]).mean() - val_acc) < 1e-9
    out, data, label = model.predict(mx.io.NDArrayIter(X[:7], y[:7], 5), return_data=True)
    assert out.shape == (7, 3) and data.shape == (7, 10)
    assert label.tolist() == [1., 0., 0., 0., 2., 0., 2.]      # MXNet 1.9.1's
    assert model.predict(X[:100], num_batch=1).shape == (40, 3)

    prefix = str(tmp_path / "m")
    model.save(prefix)
    assert sorted(os.listdir(tmp_path)) == ["m-0010.params", "m-symbol.json"]
    assert sorted(mx.nd.load(prefix + "-0010.params")) == [
        "arg:fc1_bias", "arg:fc1_weight", "arg:fc2_bias", "arg:fc2_weight"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loaded = M.FeedForward.load(prefix, 10)
    assert loaded.begin_epoch == 10
    for name, arr in model.arg_params.items():
        assert np.array_equal(loaded.arg_params[name].asnumpy(), arr.asnumpy())
    np.testing.assert_allclose(loaded.predict(X[300:]), pred, rtol=1e-5, atol=1e-6)


def test_feedforward_create_with_dataiter_and_bad_input():
    X, y = _data()
    mx.random.seed(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        model = M.FeedForward.create(_mlp(), mx.io.NDArrayIter(X[:300], y[:300], 50,
                                                                shuffle=True),
                                     num_epoch=5, epoch_size=3, learning_rate=0.5,
                                     initializer=mx.init.Xavier())
        assert model.score(X[300:], eval_metric="acc") is not None
        with pytest.raises(ValueError, match="y must be specified"):
            model.fit(X)
        with pytest.raises(TypeError, match="X must be DataIter"):
            model.predict([1, 2, 3])
        with pytest.raises(ValueError, match="duplicated argument name"):
            data = mx.sym.var("data")
            M.FeedForward(mx.sym.FullyConnected(data, num_hidden=2, name="a")
                          + mx.sym.FullyConnected(data, num_hidden=2, name="a"))
