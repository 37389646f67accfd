"""Parameters, Trainer and optimizers against hand-written NumPy formulas."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, gluon, nd
from gpunda import optimizer as opt
from gpunda.base import GpundaError
from gpunda.gluon import nn

CPU = mx.cpu()


def _param(name, value, **kw):
    p = gluon.Parameter(name, shape=value.shape, **kw)
    p.initialize(mx.init.Constant(0.0), ctx=CPU)
    p.set_data(nd.array(value, ctx=CPU))
    return p


def _set_grad(p, g):
    """Write a gradient the way backward does (counts as fresh)."""
    x = p.data()
    with autograd.record():
        y = (x * nd.array(g, ctx=CPU)).sum()
    y.backward()


def test_parameter_basics(rng):
    w = rng.standard_normal((3, 2)).astype(np.float32)
    p = _param("w", w)
    np.testing.assert_array_equal(p.data().asnumpy(), w)
    assert p.list_ctx() == [CPU] and len(p.list_data()) == 1
    _set_grad(p, np.ones((3, 2)))
    np.testing.assert_array_equal(p.grad().asnumpy(), np.ones((3, 2)))
    p.zero_grad()
    np.testing.assert_array_equal(p.grad().asnumpy(), np.zeros((3, 2)))
    p.grad_req = "null"
    with pytest.raises(GpundaError, match="grad_req='null'"):
        p.grad()
    with pytest.raises(GpundaError, match="grad_req"):
        p.grad_req = "sometimes"
    p.cast("float64")
    assert p.data().dtype == np.float64
    with pytest.raises(GpundaError, match="incompatible"):
        p.shape = (4, 2)


def test_parameter_dict_get_and_shared():
    pd = gluon.ParameterDict("net_")
    a = pd.get("w", shape=(2, 0))
    assert pd.get("w", shape=(0, 3)) is a and a.shape == (2, 3)
    with pytest.raises(GpundaError, match="does not match"):
        pd.get("w", shape=(5, 3))
    shared = gluon.ParameterDict("net_", shared=pd)
    assert shared.get("w") is a


def _sgd_ref(w, g, mom, lr, wd, momentum, rescale, clip):
    g = g * rescale
    if clip is not None:
        g = np.clip(g, -clip, clip)
    if momentum == 0:
        return w - lr * (g + wd * w), None
    mom = momentum * mom - lr * (g + wd * w)
    return w + mom, mom


@pytest.mark.parametrize("momentum,clip", [(0.0, None), (0.9, None), (0.9, 0.5)])
def test_trainer_sgd_step_equals_hand_formula(rng, momentum, clip):
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    p = _param("w", w0)
    params = {"learning_rate": 0.1, "wd": 0.01, "momentum": momentum}
    if clip is not None:
        params["clip_gradient"] = clip
    tr = gluon.Trainer([p], "sgd", params)
    w, mom = w0.astype(np.float64), np.zeros_like(w0, dtype=np.float64)
    for _ in range(3):
        g = rng.standard_normal((4, 3)).astype(np.float32) * 4
        _set_grad(p, g)
        tr.step(batch_size=2)
        w, mom = _sgd_ref(w, g, mom, 0.1, 0.01, momentum, 0.5, clip)
        np.testing.assert_allclose(p.data().asnumpy(), w, rtol=1e-5, atol=1e-6)


def test_lr_mult_and_wd_mult_are_honoured(rng):
    w0 = rng.standard_normal((2, 2)).astype(np.float32)
    p = _param("w", w0, lr_mult=0.5, wd_mult=0.0)
    tr = gluon.Trainer([p], "sgd", {"learning_rate": 1.0, "wd": 0.3})
    g = np.ones((2, 2), np.float32)
    _set_grad(p, g)
    tr.step(1)
    np.testing.assert_allclose(p.data().asnumpy(), w0 - 0.5 * g, rtol=1e-6)


def test_adam_rmsprop_adagrad_nag_match_formulas(rng):
    w0 = rng.standard_normal(5).astype(np.float32)
    grads = [rng.standard_normal(5).astype(np.float32) for _ in range(3)]

    def run(name, kw):
        p = _param("w", w0)
        tr = gluon.Trainer([p], name, kw)
        for g in grads:
            _set_grad(p, g)
            tr.step(1)
        return p.data().asnumpy()

    # Adam with bias correction folded into lr (MXNet 1.x)
    w, m, v = w0.astype(np.float64), np.zeros(5), np.zeros(5)
    for t, g in enumerate(grads, 1):
        gg = g + 0.01 * w
        m = 0.9 * m + 0.1 * gg
        v = 0.999 * v + 0.001 * gg * gg
        lr = 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        w = w - lr * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(run("adam", {"learning_rate": 0.01, "wd": 0.01}), w, rtol=1e-4)

    w, n = w0.astype(np.float64), np.zeros(5)
    for g in grads:
        n = 0.1 * g * g + 0.9 * n
        w = w - 0.01 * g / np.sqrt(n + 1e-8)
    np.testing.assert_allclose(run("rmsprop", {"learning_rate": 0.01}), w, rtol=1e-4)

    w, h = w0.astype(np.float64), np.zeros(5)
    for g in grads:
        h = h + g * g
        w = w - 0.1 * (g / np.sqrt(h + 1e-7))
    np.testing.assert_allclose(run("adagrad", {"learning_rate": 0.1}), w, rtol=1e-5)

    w, mom = w0.astype(np.float64), np.zeros(5)
    for g in grads:
        mom = 0.9 * mom + g
        w = w - 0.1 * (g + 0.9 * mom)
    np.testing.assert_allclose(run("nag", {"learning_rate": 0.1, "momentum": 0.9}), w,
                               rtol=1e-5)


def test_step_before_backward_names_parameter():
    d = nn.Dense(2, in_units=3)
    d.initialize(ctx=CPU)
    tr = gluon.Trainer(d.collect_params(), "sgd", {"learning_rate": 0.1})
    with pytest.raises(GpundaError) as e:
        tr.step(1)
    assert d.weight.name in str(e.value) and "ignore_stale_grad" in str(e.value)
    w0 = d.weight.data().asnumpy()
    tr.step(1, ignore_stale_grad=True)     # nothing fresh: nothing changes
    np.testing.assert_array_equal(d.weight.data().asnumpy(), w0)
    with autograd.record():
        y = d(nd.ones((1, 3), ctx=CPU)).sum()
    y.backward()
    tr.step(1)
    assert not np.array_equal(d.weight.data().asnumpy(), w0)
    with pytest.raises(GpundaError, match="not been updated by backward"):
        tr.step(1)          # the same gradient twice is stale


def test_unknown_optimizer_and_bad_params():
    d = nn.Dense(2, in_units=3)
    d.initialize(ctx=CPU)
    with pytest.raises(ValueError, match="sgdd"):      # MXNet raises ValueError
        gluon.Trainer(d.collect_params(), "sgdd")
    with pytest.raises(GpundaError, match="momentun"):
        gluon.Trainer(d.collect_params(), "sgd", {"momentun": 0.9})
    with pytest.raises(ValueError, match="list or dict of Parameters"):     # as MXNet
        gluon.Trainer(3, "sgd")
    with pytest.raises(GpundaError, match="'dist_snyc'.*did you mean 'dist_sync'"):
        gluon.Trainer(d.collect_params(), "sgd", kvstore="dist_snyc")
    assert isinstance(opt.create("SGD"), opt.SGD)
    assert isinstance(opt.Optimizer.create_optimizer("adam"), opt.Adam)


def test_learning_rate_and_scheduler():
    d = nn.Dense(2, in_units=3)
    d.initialize(ctx=CPU)
    tr = gluon.Trainer(d.collect_params(), "sgd", {"learning_rate": 0.1})
    assert tr.learning_rate == 0.1
    tr.set_learning_rate(0.05)
    assert tr.learning_rate == 0.05
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)
    tr2 = gluon.Trainer(d.collect_params(), "sgd", {"learning_rate": 1.0, "lr_scheduler": sched})
    lrs = []
    for _ in range(5):
        with autograd.record():
            y = d(nd.ones((1, 3), ctx=CPU)).sum()
        y.backward()
        lrs.append(tr2.learning_rate)
        tr2.step(1)
    assert lrs == [1.0, 1.0, 1.0, 0.5, 0.5]
    with pytest.raises(UserWarning, match="lr_scheduler"):   # raised, as in MXNet
        tr2.set_learning_rate(0.1)


def test_save_load_states_restores_momentum(tmp_path, rng):
    w0 = rng.standard_normal(4).astype(np.float32)
    g1, g2 = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    p = _param("w", w0)
    tr = gluon.Trainer([p], "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    _set_grad(p, g1)
    tr.step(1)
    f = str(tmp_path / "tr.states")
    tr.save_states(f)
    w1 = p.data().asnumpy()
    _set_grad(p, g2)
    tr.step(1)
    expected = p.data().asnumpy()
    p2 = _param("w", w1)
    tr2 = gluon.Trainer([p2], "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    tr2.load_states(f)
    _set_grad(p2, g2)
    tr2.step(1)
    np.testing.assert_allclose(p2.data().asnumpy(), expected, rtol=1e-6)


def test_tiny_model_trains_to_lower_loss(rng):
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32)
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, activation="tanh"), nn.Dense(2))
    net.initialize(mx.init.Xavier(), ctx=CPU)
    net.hybridize()
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    tr = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    xd, yd = nd.array(x, ctx=CPU), nd.array(y, ctx=CPU)
    losses = []
    for _ in range(30):
        with autograd.record():
            loss = loss_fn(net(xd), yd)
        loss.backward()
        tr.step(32)
        losses.append(float(loss.mean().asscalar()))
    assert losses[-1] < 0.5 * losses[0]


def test_multi_context_allreduce(rng):
    ctxs = [mx.cpu(0), mx.cpu(1)]
    d = nn.Dense(2, in_units=3)
    d.initialize(mx.init.One(), ctx=ctxs)
    tr = gluon.Trainer(d.collect_params(), "sgd", {"learning_rate": 1.0})
    x = rng.standard_normal((4, 3)).astype(np.float32)
    parts = gluon.utils.split_and_load(x, ctxs)
    with autograd.record():
        losses = [d(p).sum() for p in parts]
    for l in losses:
        l.backward()
    tr.step(4)
    # gradient of sum(x W^T + b) wrt W is the column sums of x, for each of 2 rows
    want = 1.0 - np.tile(x.sum(0), (2, 1)) / 4
    for c in ctxs:
        np.testing.assert_allclose(d.weight.data(c).asnumpy(), want, rtol=1e-5)


def test_formula_fallback_without_fused_ops(rng, monkeypatch):
    """Builds without the update operators run the same formulas on backend arrays."""
    monkeypatch.setattr(opt.optimizer, "_FUSED", dict.fromkeys(
        ["sgd_update", "sgd_mom_update", "adam_update", "rmsprop_update"]))
    w0 = rng.standard_normal(6).astype(np.float32)
    g = (rng.standard_normal(6) * 3).astype(np.float32)
    p = _param("w", w0)
    tr = gluon.Trainer([p], "adam", {"learning_rate": 0.1, "wd": 0.1, "clip_gradient": 1.0})
    _set_grad(p, g)
    tr.step(2)
    gg = np.clip(g / 2 + 0.1 * w0, -1, 1)            # MXNet clips after adding wd for Adam
    m, v = 0.1 * gg, 0.001 * gg * gg
    lr = 0.1 * np.sqrt(1 - 0.999) / (1 - 0.9)
    np.testing.assert_allclose(p.data().asnumpy(), w0 - lr * m / (np.sqrt(v) + 1e-8), rtol=1e-5)
    p2 = _param("w", w0)
    tr2 = gluon.Trainer([p2], "sgd", {"learning_rate": 0.1, "momentum": 0.5, "wd": 0.1,
                                      "clip_gradient": 1.0})
    _set_grad(p2, g)
    tr2.step(2)
    want, _ = _sgd_ref(w0.astype(np.float64), g, np.zeros(6), 0.1, 0.1, 0.5, 0.5, 1.0)
    np.testing.assert_allclose(p2.data().asnumpy(), want, rtol=1e-5)


@pytest.mark.parametrize("name,kw", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                     ("adam", {"learning_rate": 0.1})])
def test_embedding_sparse_grad_trains_like_dense(name, kw):
    res = []
    for sparse in (False, True):
        emb = nn.Embedding(6, 2, sparse_grad=sparse)
        emb.initialize(mx.init.One(), ctx=CPU)
        tr = gluon.Trainer(emb.collect_params(), name, kw)
        for _ in range(2):
            with autograd.record():
                y = (emb(nd.array([[1, 3]], ctx=CPU)) ** 2).sum()
            y.backward()
            assert emb.weight.grad().stype == ("row_sparse" if sparse else "default")
            tr.step(1)
        res.append(emb.weight.data().asnumpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-6)
    untouched = [0, 2, 4, 5]
    np.testing.assert_array_equal(res[1][untouched], np.ones((4, 2)))


def _backward_plus_one(p, rows=None):
    ws = p.list_data() if rows is None else p.list_row_sparse_data(rows)
    with autograd.record():
        for w in ws:
            (w + 1).backward()


def test_row_sparse_parameter_data_access_needs_a_trainer():
    p = gluon.Parameter("w", shape=(4, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init=mx.init.Constant(3.0), ctx=[mx.cpu(0), mx.cpu(1)])
    rows = nd.array([0, 2], ctx=mx.cpu(1))
    with pytest.raises(RuntimeError, match="row_sparse_data"):
        p.data()
    with pytest.raises(RuntimeError, match="no Trainer"):
        p.row_sparse_data(rows)
    with pytest.raises(TypeError, match="NDArray"):
        p.row_sparse_data([0, 2])
    gluon.Trainer([p], "sgd")
    w = p.row_sparse_data(rows)
    assert w.stype == "row_sparse" and w.context == mx.cpu(1)
    # only the requested rows are pulled (MXNet's sparse.retain of the weight)
    np.testing.assert_array_equal(w.asnumpy(), [[3, 3], [0, 0], [3, 3], [0, 0]])
    assert len(p.list_row_sparse_data(rows)) == 2
    assert p.grad(mx.cpu(0)).stype == "row_sparse"
    dense = gluon.Parameter("d", shape=(4, 2))
    dense.initialize(ctx=CPU)
    with pytest.raises(RuntimeError, match="data\\(\\) instead"):
        dense.row_sparse_data(rows)


def test_trainer_kvstore_choice_follows_mxnet(monkeypatch):
    monkeypatch.delenv("MXNET_UPDATE_ON_KVSTORE", raising=False)
    two = [mx.cpu(0), mx.cpu(1)]

    def make(kv="device", update=None, stype="default", grad_stype="default", ctx=two):
        p = gluon.Parameter("x", shape=(5, 1), stype=stype, grad_stype=grad_stype)
        p.initialize(init="zeros", ctx=ctx)
        t = gluon.Trainer([p], "sgd", {"learning_rate": 0.1}, kvstore=kv,
                          update_on_kvstore=update)
        # row_sparse_data(rows) reads the copy on rows' context (MXNet's rule)
        rows = nd.arange(0, 5, ctx=ctx[0]) if stype == "row_sparse" else None
        _backward_plus_one(p, rows)
        t.step(1)
        return p, t, rows

    p, t, _ = make(ctx=[CPU])                        # one context: no kvstore at all
    assert t._kvstore is None and t._update_on_kvstore is None
    # two contexts: gradients summed (1 + 1), lr 0.1 -> -0.2, on the store or not
    for update, expected in ((None, True), (True, True), (False, False)):
        p, t, _ = make(update=update)
        assert t._kvstore.type == "device" and t._update_on_kvstore is expected
        np.testing.assert_allclose(p.data(mx.cpu(1)).asnumpy(), -0.2)
    p, t, _ = make(grad_stype="row_sparse")          # sparse gradients update on workers
    assert t._update_on_kvstore is False
    np.testing.assert_allclose(p.data(mx.cpu(0)).asnumpy(), -0.2)
    p, t, rows = make(stype="row_sparse", grad_stype="row_sparse", kv="local")
    assert t._update_on_kvstore is True
    np.testing.assert_allclose(p.row_sparse_data(rows).asnumpy(), -0.2)
    with pytest.raises(ValueError, match="sparse weights"):
        make(stype="row_sparse", grad_stype="row_sparse", update=False)
    # a store that cannot run optimizers (MXNet's teststore) sums and the workers update
    p, t, _ = make(kv=mx.kv.create("teststore"))
    assert t._update_on_kvstore is False
    np.testing.assert_allclose(p.data(mx.cpu(1)).asnumpy(), -0.2)
    p, t, _ = make()
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        t.update(1)
    with pytest.raises(AssertionError, match="update_on_kvstore"):
        t.allreduce_grads()


def test_trainer_update_on_kvstore_save_load_and_reset(tmp_path):
    pd = gluon.ParameterDict()
    x = pd.get("x", shape=(4,))
    pd.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    t = gluon.Trainer(pd, "sgd", {"learning_rate": 0.1, "momentum": 0.5})
    pd.save(str(tmp_path / "p.params"))
    _backward_plus_one(x)
    t.step(1)
    assert t._update_on_kvstore
    t.save_states(str(tmp_path / "t.states"))
    t.load_states(str(tmp_path / "t.states"))
    assert t._optimizer is t._kvstore._updater.optimizer
    x.lr_mult = 2.0
    assert t._kvstore._updater.optimizer._get_lr(0) == pytest.approx(0.2)
    x.lr_mult = 1.0
    pd.load(str(tmp_path / "p.params"))               # new values: the store starts again
    assert t._kvstore is None and not t._kv_initialized
    _backward_plus_one(x)
    t.step(1)
    np.testing.assert_allclose(x.data(mx.cpu(0)).asnumpy(), -0.2)


def test_step_hands_the_updater_every_parameter_at_once_grouped_as_mxnet():
    """MXNet 1.9.1's Trainer calls its updater once with every parameter; the updater hands
    an optimizer with ``aggregate_num`` > 0 groups of that size per dtype. Recorded there
    (this script's optimizer, three float32 Dense layers and a float64 one): the calls were
    update_multi_precision((0, 1, 2, 3)), ((4, 5)), ((6, 7)), each with tuples."""
    calls = []

    class Recorder(opt.Optimizer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.aggregate_num = 4

        def create_state(self, index, weight):
            return None

        def update_multi_precision(self, index, weight, grad, state):
            calls.append((tuple(index), type(index).__name__, type(weight).__name__,
                          len(weight)))

    net = nn.HybridSequential()
    for _ in range(3):
        net.add(nn.Dense(2, in_units=2))
    net.add(nn.Dense(2, in_units=2, dtype="float64"))
    net.initialize()
    tr = gluon.Trainer(net.collect_params(), Recorder())
    with autograd.record():
        y = net[2](net[1](net[0](nd.ones((1, 2)))))
        loss = y.sum() + net[3](y.astype("float64")).sum().astype("float32")
    loss.backward()
    tr.step(1)
    assert calls == [((0, 1, 2, 3), "tuple", "tuple", 4), ((4, 5), "tuple", "tuple", 2),
                     ((6, 7), "tuple", "tuple", 2)]
