"""Optimizers against real MXNet 1.9.1: the weights after two updates (gradients g0
then 2*g0) and lazy/standard row_sparse updates, produced with
``/work/mxvenv/bin/python`` (mxnet 1.9.1) and kept as literals."""
import numpy as np
import pytest

import gpunda as mx

W0 = np.array([[0.5, -0.3, 0.8], [0.1, 0.9, -0.6]], dtype=np.float32)
G0 = np.array([[0.2, -0.4, 0.1], [-0.7, 0.3, 0.05]], dtype=np.float32)

CASES = {
    "adamax": dict(wd=0.01, clip_gradient=0.5),
    "nadam": dict(wd=0.01, rescale_grad=0.8),
    "ftml": dict(wd=0.01, learning_rate=0.1),
    "ftrl": dict(wd=0.01, lamda1=0.01),
    "lamb": dict(wd=0.01, learning_rate=0.1),
    "lamb_nobias": dict(wd=0.01, learning_rate=0.1, bias_correction=False, lower_bound=0.1,
                        upper_bound=1.0),
    "dcasgd": dict(wd=0.01, learning_rate=0.1),
    "sgd_mom": dict(wd=0.01, momentum=0.9, learning_rate=0.1, clip_gradient=0.3),
    "nag": dict(wd=0.01, momentum=0.9, learning_rate=0.1),
    "adam": dict(wd=0.01, learning_rate=0.1),
    "adagrad": dict(wd=0.01, learning_rate=0.1),
}

# MXNet 1.9.1's results
MXNET = {
    'adamax': [[0.49646779894828796, -0.2961837947368622, 0.7964553833007812], [0.10400000214576721, 0.8963618874549866, -0.6034961938858032]],
    'nadam': [[0.4979831874370575, -0.2979814112186432, 0.7979885935783386], [0.10201960057020187, 0.8979836106300354, -0.6020324230194092]],
    'ftml': [[0.3211905062198639, -0.12103410065174103, 0.6216477751731873], [0.2790448069572449, 0.7212157845497131, -0.779884397983551]],
    'ftrl': [[0.03815830126404762, -0.014181500300765038, 0.04633849859237671], [0.13627099990844727, 0.1478157937526703, -0.04133649915456772]],
    'lamb': [[0.38255539536476135, -0.1827930063009262, 0.6821991801261902], [0.21673139929771423, 0.7820795774459839, -0.7161352038383484]],
    'lamb_nobias': [[0.41830089688301086, -0.21834200620651245, 0.718241810798645], [0.1815686970949173, 0.8182064294815063, -0.6814197897911072]],
    'dcasgd': [[0.4390335977077484, -0.17954349517822266, 0.7684125900268555], [0.3091821074485779, 0.8082754015922546, -0.6137953996658325]],
    'sgd_mom': [[0.430570513010025, -0.21216030418872833, 0.7586907744407654], [0.18668009340763092, 0.8104208111763, -0.6177555918693542]],
    'nag': [[0.36760058999061584, -0.038424499332904816, 0.7312676906585693], [0.5548790097236633, 0.700710117816925, -0.6297613978385925]],
    'adam': [[0.30332449078559875, -0.1034277006983757, 0.6030356287956238], [0.29651939868927, 0.7033078074455261, -0.7959161996841431]],
    'adagrad': [[0.30965790152549744, -0.11005759984254837, 0.609058678150177], [0.28914278745651245, 0.7088581919670105, -0.7881410121917725]],
    'sgd_lazy_rsp': [[0.5, -0.30000001192092896, 0.800000011920929], [0.16899999976158142, 0.8610000014305115, -0.5989999771118164]],
    'sgd_std_rsp': [[0.4950000047683716, -0.296999990940094, 0.7919999957084656], [0.16899999976158142, 0.8610000014305115, -0.5989999771118164]],
    'adam_lazy_rsp': [[0.5, -0.30000001192092896, 0.800000011920929], [0.20000059902668, 0.7999994158744812, -0.5000025033950806]],
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_two_updates_match_mxnet(key):
    opt = mx.optimizer.create(key.split("_")[0], **CASES[key])
    w = mx.nd.array(W0)
    state = opt.create_state_multi_precision(0, w)
    for k in range(2):
        opt.update_multi_precision(0, w, mx.nd.array(G0 * (k + 1)), state)
    np.testing.assert_allclose(w.asnumpy(), MXNET[key], rtol=1e-5, atol=1e-6)


def _rsp_grad():
    return mx.nd.sparse.row_sparse_array((G0[1:2], [1]), shape=(2, 3))


@pytest.mark.parametrize("key,make", [
    ("sgd_lazy_rsp", lambda: mx.optimizer.SGD(learning_rate=0.1, wd=0.1, momentum=0.9)),
    ("sgd_std_rsp", lambda: mx.optimizer.SGD(learning_rate=0.1, wd=0.1, momentum=0.9,
                                             lazy_update=False)),
    ("adam_lazy_rsp", lambda: mx.optimizer.Adam(learning_rate=0.1, wd=0.1)),
])
def test_row_sparse_grad_updates(key, make):
    opt = make()
    w = mx.nd.array(W0)
    opt.update(0, w, _rsp_grad(), opt.create_state(0, w))
    np.testing.assert_allclose(w.asnumpy(), MXNET[key], rtol=1e-5, atol=1e-6)
    if "lazy" in key:   # the row without a gradient is untouched, weight decay included
        np.testing.assert_array_equal(w.asnumpy()[0], W0[0])


def test_row_sparse_weight_keeps_storage():
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.1)
    w = mx.nd.array(W0).tostype("row_sparse")
    opt.update(0, w, _rsp_grad(), None)
    assert w.stype == "row_sparse"
    expect = W0.copy()
    expect[1] = (1 - 0.01) * W0[1] - 0.1 * G0[1]
    np.testing.assert_allclose(w.asnumpy(), expect, rtol=1e-6)


def test_sgd_multi_precision_state_is_mom_then_master():
    opt = mx.optimizer.SGD(momentum=0.9, multi_precision=True)
    w = mx.nd.array(W0, dtype=np.float16)
    mom, master = opt.create_state_multi_precision(0, w)
    assert mom.dtype == np.float32 and master.dtype == np.float32
    np.testing.assert_array_equal(mom.asnumpy(), 0)
    opt.update_multi_precision(0, w, mx.nd.array(G0, dtype=np.float16), (mom, master))
    assert w.dtype == np.float16
    np.testing.assert_allclose(w.asnumpy(), master.asnumpy().astype(np.float16))


def test_learning_rate_and_scheduler():
    sched = mx.lr_scheduler.FactorScheduler(step=1, base_lr=1024)
    assert mx.optimizer.Optimizer(lr_scheduler=sched).learning_rate == 1024
    sched = mx.lr_scheduler.FactorScheduler(step=1)
    opt = mx.optimizer.Optimizer(lr_scheduler=sched, learning_rate=0.3)
    assert opt.learning_rate == 0.3
    with pytest.raises(UserWarning):
        opt.set_learning_rate(0.5)
    with pytest.raises(ValueError):
        mx.optimizer.create("no_such_optimizer")


def test_sgld_adds_seeded_noise():
    w0 = mx.nd.array(W0)
    g = mx.nd.array(G0)
    results = []
    for _ in range(2):
        w = w0.copy()
        mx.random.seed(7)
        mx.optimizer.SGLD(learning_rate=0.01).update(0, w, g, None)
        results.append(w.asnumpy())
    np.testing.assert_array_equal(results[0], results[1])
    drift = W0 - 0.005 * G0
    assert not np.allclose(results[0], drift)
    assert np.abs(results[0] - drift).max() < 0.5


def test_test_optimizer():
    opt = mx.optimizer.create("test", rescale_grad=2.0)
    w = mx.nd.array(W0)
    state = opt.create_state(0, w)
    opt.update(0, w, mx.nd.array(G0), state)
    np.testing.assert_allclose(w.asnumpy(), W0 + 2 * G0, rtol=1e-6)
    np.testing.assert_allclose(state.asnumpy(), w.asnumpy())


def test_sparse_parameter_accepts_one_trainer():
    x = mx.gluon.Parameter("x", shape=(10,), stype="row_sparse")
    x.initialize()
    t0 = mx.gluon.Trainer([x], "sgd")
    assert x._trainer is t0
    x._set_trainer(None)
    assert x._trainer is None
    x._set_trainer(t0)
    with pytest.raises(RuntimeError, match="only one Trainer"):
        mx.gluon.Trainer([x], "sgd")
    dense = mx.gluon.Parameter("d", shape=(2,))
    dense.initialize()
    mx.gluon.Trainer([dense], "sgd")
    t2 = mx.gluon.Trainer([dense], "sgd")     # a dense Parameter may move between trainers
    assert dense._trainer is t2


def test_trainer_mxnet_attributes_single_process():
    x = mx.gluon.Parameter("x", shape=(3,), grad_stype="row_sparse")
    x.initialize(ctx=[mx.cpu(0)], init="zeros")
    trainer = mx.gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5})
    with mx.autograd.record():
        y = x.data() + 1
    y.backward()
    trainer.step(1)
    assert trainer._update_on_kvstore is None and trainer._kvstore is None
    assert trainer._params_to_init == []
    np.testing.assert_array_equal(x.data().asnumpy(), -1)
    late = mx.gluon.Parameter("late", shape=(0,), allow_deferred_init=True)
    late.initialize()
    assert mx.gluon.Trainer([late], "sgd")._params_to_init == [late]


def test_multipliers_come_from_the_symbols_attributes():
    # MXNet's Optimizer(sym=...) reads each argument's __lr_mult__/__wd_mult__; explicit
    # set_lr_mult/set_wd_mult entries win
    data = mx.sym.Variable("data")
    bias = mx.sym.Variable("fc1_bias", lr_mult=1.0)
    fc1 = mx.sym.FullyConnected(data=data, bias=bias, name="fc1", num_hidden=10, lr_mult=0)
    fc2 = mx.sym.FullyConnected(data=fc1, name="fc2", num_hidden=10, wd_mult=0.5)
    names = dict(enumerate(fc2.list_arguments()))
    opt = mx.optimizer.SGD(sym=fc2, param_idx2name=names)
    assert opt.lr_mult == {"fc1_bias": 1.0, "fc1_weight": 0.0}
    assert opt.wd_mult == {"data": 0.0, "fc1_bias": 0.0, "fc2_bias": 0.5, "fc2_weight": 0.5}
    opt.set_lr_mult({"fc2_weight": 0.1})
    assert opt.lr_mult == {"fc1_bias": 1.0, "fc1_weight": 0.0, "fc2_weight": 0.1}
