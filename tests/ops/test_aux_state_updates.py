"""Aux states MXNet writes in the backward pass (NOTE [Mutated inputs and their pass] in
gpunda/ops/registry.py): BatchNorm's moving_mean/moving_var change only when the node's
backward runs in training mode (the backward's train_mode, whatever the forward's).

Every expected value below was printed by real MXNet 1.9.1 (CPU wheel, /work/mxref),
with ``mx.nd.waitall()`` before each read: MXNet's ``_backward_BatchNorm`` does not
declare that it writes the moving stats, so reading them right after ``backward()``
can race the engine.
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, nd
from gpunda.gluon import nn
from gpunda.ops.registry import get_op

# the imperative data (nd and npx; BatchNormWithReLU takes 4-D data in MXNet, see below):
#   x = nd.array(np.arange(12, dtype='float32').reshape(3, 2, 2) * 0.5 - 1)
#   g = nd.array([1.5, 0.5]); b = nd.array([0.1, -0.2])
#   mm = nd.array([0.2, -0.3]); mv = nd.array([1.5, 0.7])
#   nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False) ...
INIT = ([0.2, -0.3], [1.5, 0.7])
# after one backward: x.attach_grad(); with autograd.record(): y = nd.BatchNorm(...)
#   y.backward(); mx.nd.waitall(); print(mm, mv)
ONE = ([0.3050000071525574, -0.04499995708465576], [1.6229166984558105, 0.9029167294502258])
# after two backwards through BatchNorm nodes (y1 + y2, or retain_graph twice)
TWO = ([0.3995000422000885, 0.1845000982284546], [1.73354172706604, 1.0855417251586914])

# MXNet gives INIT/ONE/TWO for nd.BatchNorm, npx.batch_norm (on .as_np_ndarray() copies)
# and nd.contrib.SyncBatchNorm(..., key='k') alike. BatchNorm_v1 is BatchNorm's alias here;
# MXNet's nd.BatchNorm_v1 takes no moving-stat arrays, and its Backward writes them as
# BatchNorm's does (src/operator/batch_norm_v1-inl.h).
OPS = ["BatchNorm", "BatchNorm_v1", "_contrib_SyncBatchNorm", "npx.batch_norm"]


def _data():
    x = nd.array(np.arange(12, dtype="float32").reshape(3, 2, 2) * 0.5 - 1)
    return (x, nd.array([1.5, 0.5]), nd.array([0.1, -0.2]), nd.array([0.2, -0.3]),
            nd.array([1.5, 0.7]))


def _bn(name):
    """``(f, np_mode)``: ``f(x, g, b, mm, mv, **kw)`` calls the op ``name`` with
    fix_gamma=False, on nd arrays or (npx.batch_norm) on mx.np arrays."""
    if name == "npx.batch_norm":
        fn, extra = mx.npx.batch_norm, {}
    elif name == "_contrib_SyncBatchNorm":
        fn, extra = nd.contrib.SyncBatchNorm, {"key": "k"}
    else:
        fn, extra = getattr(nd, name), {}

    def f(*arrays, **kw):
        return fn(*arrays, fix_gamma=False, **extra, **kw)
    return f, name == "npx.batch_norm"


def _arrays(np_mode):
    arrays = _data()
    return [a.as_np_ndarray() for a in arrays] if np_mode else list(arrays)


def _check(mm, mv, want, rtol=0):
    # SyncBatchNorm: MXNet gets its variance as E(x^2) - E(x)^2, a few ulps from the
    # centred variance gpunda uses (0.9029167890548706 there for ONE's 0.9029167294502258)
    np.testing.assert_allclose(mm.asnumpy(), np.float32(want[0]), rtol=rtol, atol=0)
    np.testing.assert_allclose(mv.asnumpy(), np.float32(want[1]), rtol=rtol, atol=0)


def _tol(name):
    return 2e-7 if name == "_contrib_SyncBatchNorm" else 0


@pytest.fixture(params=OPS)
def op(request):
    f, np_mode = _bn(request.param)
    return request.param, f, np_mode


def test_recorded_forward_without_backward_updates_nothing(op):
    name, f, np_mode = op
    x, g, b, mm, mv = _arrays(np_mode)
    x.attach_grad()
    with autograd.record():
        f(x, g, b, mm, mv)
    _check(mm, mv, INIT)


def test_backward_updates_once(op):
    name, f, np_mode = op
    x, g, b, mm, mv = _arrays(np_mode)
    x.attach_grad()
    with autograd.record():
        y = f(x, g, b, mm, mv)
    _check(mm, mv, INIT)
    y.backward()
    _check(mm, mv, ONE, _tol(name))


def test_two_forwards_one_backward_updates_once(op):
    # MXNet: y1 = BN(...); y2 = BN(...) under record; y2.backward() -> ONE
    name, f, np_mode = op
    x, g, b, mm, mv = _arrays(np_mode)
    x.attach_grad()
    with autograd.record():
        f(x, g, b, mm, mv)
        y2 = f(x, g, b, mm, mv)
    y2.backward()
    _check(mm, mv, ONE, _tol(name))


def test_backward_reaching_two_nodes_updates_twice(op):
    # MXNet: z = y1 + y2; z.backward() -> TWO (each node's backward writes once)
    name, f, np_mode = op
    x, g, b, mm, mv = _arrays(np_mode)
    x.attach_grad()
    with autograd.record():
        z = f(x, g, b, mm, mv) + f(x, g, b, mm, mv)
    z.backward()
    _check(mm, mv, TWO, _tol(name))


def test_retained_graph_backward_twice_updates_twice(op):
    # MXNet: y.backward(retain_graph=True); y.backward() -> TWO
    name, f, np_mode = op
    x, g, b, mm, mv = _arrays(np_mode)
    x.attach_grad()
    with autograd.record():
        y = f(x, g, b, mm, mv)
    y.backward(retain_graph=True)
    y.backward()
    _check(mm, mv, TWO, _tol(name))


def test_train_mode_without_record_updates_nothing(op):
    # MXNet: with autograd.train_mode(): BN(...) -> INIT (batch stats used, no backward)
    name, f, np_mode = op
    x, g, b, mm, mv = _arrays(np_mode)
    with autograd.train_mode():
        f(x, g, b, mm, mv)
    _check(mm, mv, INIT)


def test_nothing_to_differentiate_updates_nothing(op):
    # MXNet: no variable under record -> INIT; and BatchNorm over plain data followed by
    # an op with a variable (w), z.backward() -> INIT: nothing needs BatchNorm's backward
    name, f, np_mode = op
    x, g, b, mm, mv = _arrays(np_mode)
    with autograd.record():
        f(x, g, b, mm, mv)
    _check(mm, mv, INIT)
    w = mx.np.array([2.0]) if np_mode else nd.array([2.0])
    w.attach_grad()
    with autograd.record():
        z = f(x, g, b, mm, mv) * w
    z.backward()
    _check(mm, mv, INIT)


def test_backward_in_predict_mode_or_after_predict_forward_updates_nothing(op):
    # MXNet: y.backward(train_mode=False) -> INIT;
    #        with autograd.record(train_mode=False): y = BN(...); y.backward() -> INIT
    name, f, np_mode = op
    x, g, b, mm, mv = _arrays(np_mode)
    x.attach_grad()
    with autograd.record():
        y = f(x, g, b, mm, mv)
    y.backward(train_mode=False)
    _check(mm, mv, INIT)
    with autograd.record(train_mode=False):
        y = f(x, g, b, mm, mv)
    y.backward()
    _check(mm, mv, INIT)


def test_use_global_stats_updates_nothing(op):
    name, f, np_mode = op
    x, g, b, mm, mv = _arrays(np_mode)
    x.attach_grad()
    with autograd.record():
        y = f(x, g, b, mm, mv, use_global_stats=True)
    y.backward()
    _check(mm, mv, INIT)


@pytest.mark.parametrize("create_graph", [False, True])
def test_autograd_grad_updates_once(op, create_graph):
    # MXNet: autograd.grad(y, [x]) -> ONE; inside record with create_graph=True -> ONE
    name, f, np_mode = op
    x, g, b, mm, mv = _arrays(np_mode)
    x.attach_grad()
    with autograd.record():
        y = f(x, g, b, mm, mv)
        autograd.grad(y, [x], create_graph=create_graph, retain_graph=True)
    _check(mm, mv, ONE, _tol(name))


def test_backward_through_mean_output_updates():
    # MXNet: y = BN(..., output_mean_var=True); y[1].backward() -> ONE (the node's
    # backward runs, whatever output the gradient came from)
    x, g, b, mm, mv = _data()
    x.attach_grad()
    with autograd.record():
        y = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False, output_mean_var=True)
    y[1].backward()
    _check(mm, mv, ONE)


def test_batchnorm_with_relu_updates_in_backward():
    # MXNet (4-D data: its BatchNormWithReLU runs on MKL-DNN only):
    #   x = nd.array(np.arange(24, dtype='float32').reshape(3, 2, 2, 2) * 0.25 - 1)
    #   (g, b, mm, mv as above); x.attach_grad()
    #   with autograd.record(): y = nd.contrib.BatchNormWithReLU(x, g, b, mm, mv,
    #                                                            fix_gamma=False)
    #   -> INIT; y.backward(); mx.nd.waitall() -> the values below (nd.BatchNorm too)
    want = ([0.3175000250339508, -0.03249995410442352], [1.624479055404663, 0.9044792056083679])
    for f in (nd.contrib.BatchNormWithReLU, nd.BatchNorm):
        _, g, b, mm, mv = _data()
        x = nd.array(np.arange(24, dtype="float32").reshape(3, 2, 2, 2) * 0.25 - 1)
        x.attach_grad()
        with autograd.record():
            y = f(x, g, b, mm, mv, fix_gamma=False)
        _check(mm, mv, INIT)
        y.backward()
        _check(mm, mv, want)


def test_batch_norm_family_declares_backward_pass():
    for name in ("BatchNorm", "BatchNorm_v1", "_contrib_BatchNormWithReLU",
                 "_contrib_SyncBatchNorm"):
        op = get_op(name)
        assert op.mutates == (3, 4) and op.mutates_in == "backward"
        assert op.update is not None and not op.fwd_mutates


# ---------------------------------------------------------------------------
# Gluon: imperative, hybridized, hybridized with static_alloc/static_shape.
#   net = nn.HybridSequential()
#   net.add(nn.BatchNorm(scale=False, center=False, in_channels=2))   # as ResNet v2's
#   net.add(nn.Dense(3, in_units=6, flatten=True)); net.add(nn.BatchNorm(in_channels=3))
#   net.initialize(mx.init.Constant(0.5)); [net.hybridize(**flags)]
#   x = nd.array(np.arange(24, dtype='float32').reshape(4, 2, 3) * 0.25 - 1)
# MXNet gives the same numbers on all three paths.

HYB = [None, {}, {"static_alloc": True, "static_shape": True}]
BN0_INIT = ([0.0, 0.0], [1.0, 1.0])
BN1_INIT = ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
BN1_ONE = ([0.0, 0.0, 0.0], [1.7868585586547852] * 3)


def _net(hyb):
    net = nn.HybridSequential()
    net.add(nn.BatchNorm(scale=False, center=False, in_channels=2))
    net.add(nn.Dense(3, in_units=6, flatten=True))
    net.add(nn.BatchNorm(in_channels=3))
    net.initialize(mx.init.Constant(0.5))
    if hyb is not None:
        net.hybridize(**hyb)
    return net


def _gdata(scale=1.0):
    return nd.array(np.arange(24, dtype="float32").reshape(4, 2, 3) * 0.25 - 1) * scale


# the Gluon and Module networks match MXNet to an ulp or two, not bit for bit: the
# Dense/FullyConnected and the first normalisation round differently from MKL-DNN's
# (the second BatchNorm's batch mean is 1.2e-8 here, 0 in MXNet); an update or a
# missing one moves the statistics by 0.1 or more
RTOL, ATOL = 1e-6, 1e-7


def _gcheck(net, bn0, bn1):
    for blk, want in ((net[0], bn0), (net[2], bn1)):
        np.testing.assert_allclose(blk.running_mean.data().asnumpy(), np.float32(want[0]),
                                   rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(blk.running_var.data().asnumpy(), np.float32(want[1]),
                                   rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("hyb", HYB)
def test_gluon_step_updates_only_differentiated_batchnorm(hyb):
    # with autograd.record(): y = net(x); y.backward() -> BN0 unchanged (nothing before it
    # needs a gradient, its gamma/beta have grad_req 'null'), BN1 once
    net = _net(hyb)
    with autograd.record():
        y = net(_gdata())
    _gcheck(net, BN0_INIT, BN1_INIT)
    y.backward()
    _gcheck(net, BN0_INIT, BN1_ONE)
    # a second step with the data differentiated: x.attach_grad() -> BN0 updates too
    # (a fresh net in MXNet: BN0 as below, BN1 as BN1_ONE)
    net = _net(hyb)
    x = _gdata()
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    _gcheck(net, ([0.15000003576278687, 0.2250000536441803], [1.1854166984558105] * 2),
            BN1_ONE)


@pytest.mark.parametrize("hyb", HYB)
def test_gluon_forward_without_backward_updates_nothing(hyb):
    net = _net(hyb)
    with autograd.train_mode():
        net(_gdata())
    _gcheck(net, BN0_INIT, BN1_INIT)
    x = _gdata()
    x.attach_grad()
    with autograd.record():
        net(x)
    _gcheck(net, BN0_INIT, BN1_INIT)


@pytest.mark.parametrize("hyb", HYB)
def test_gluon_two_forwards_one_backward(hyb):
    # y1 = net(x); y2 = net(x * 2) under record; y2.backward() -> BN1 var from y2's batch
    net = _net(hyb)
    with autograd.record():
        net(_gdata())
        y2 = net(_gdata(2.0))
    y2.backward()
    _gcheck(net, BN0_INIT, ([0.0, 0.0, 0.0], [1.786860704421997] * 3))


@pytest.mark.parametrize("hyb", [None, {}])
def test_gluon_backward_in_predict_mode_updates_nothing(hyb):
    # MXNet: net = Dense(3) + BatchNorm; y.backward(train_mode=False) -> var [1, 1, 1]
    net = _net(hyb)
    with autograd.record():
        y = net(_gdata())
    y.backward(train_mode=False)
    _gcheck(net, BN0_INIT, BN1_INIT)


def test_resnet_v2_input_batchnorm_never_updates():
    # MXNet: net = vision.resnet18_v2(classes=10); net.initialize(mx.init.Xavier());
    #   d = nd.random.uniform(shape=(2, 3, 32, 32)); with autograd.record():
    #   l = net(d).sum(); l.backward() -> features[0] (BatchNorm(scale=False,
    #   center=False) on the data) keeps mean 0 / var 1, features[2] changes; the same
    #   after net.hybridize()
    from gpunda.gluon.model_zoo import vision
    mx.random.seed(0)
    net = vision.resnet18_v2(classes=10)
    net.initialize(mx.init.Xavier())
    d = nd.random.uniform(shape=(2, 3, 32, 32))
    before = 1.0        # features[2]'s running_var, initialised on the first call
    for hybridize in (False, True):
        if hybridize:
            net.hybridize()
        with autograd.record():
            loss = net(d).sum()
        loss.backward()
        f0 = net.features[0]
        np.testing.assert_array_equal(f0.running_mean.data().asnumpy(), np.zeros(3))
        np.testing.assert_array_equal(f0.running_var.data().asnumpy(), np.ones(3))
        after = net.features[2].running_var.data().asnumpy().copy()
        assert np.abs(after - before).min() > 1e-4
        before = after


# ---------------------------------------------------------------------------
# Module / Executor (the Symbol path):
#   d = mx.sym.Variable('data')
#   h = mx.sym.BatchNorm(d, name='bn0', fix_gamma=False)
#   h = mx.sym.FullyConnected(h, num_hidden=3, name='fc')
#   h = mx.sym.BatchNorm(h, name='bn1', fix_gamma=False)
#   sym = mx.sym.MakeLoss(mx.sym.sum(h))
#   x = np.arange(24, dtype='float32').reshape(4, 2, 3) * 0.25 - 1; x[:, 1] *= x[:, 1]
#   m = mx.mod.Module(sym, data_names=['data'], label_names=None, fixed_param_names=...)
#   m.bind(data_shapes=[('data', (4, 2, 3))], for_training=True, inputs_need_grad=...)
#   m.init_params(mx.init.Constant(0.5)); ... mx.nd.waitall()
#   aux = m._exec_group.execs[0].aux_dict

MOD_INIT = {"bn0_moving_mean": [0.0, 0.0], "bn0_moving_var": [1.0, 1.0],
            "bn1_moving_mean": [0.0] * 3, "bn1_moving_var": [1.0] * 3}
MOD_ONE = {"bn0_moving_mean": [0.15000003576278687, 0.7916668653488159],
           "bn0_moving_var": [1.1854166984558105, 7.2329020500183105],
           "bn1_moving_mean": [0.0] * 3, "bn1_moving_var": [1.7655107975006104] * 3}
MOD_TWO = {"bn0_moving_mean": [0.2850000858306885, 1.504167079925537],
           "bn0_moving_var": [1.3522917032241821, 12.842514038085938],
           "bn1_moving_mean": [0.0] * 3, "bn1_moving_var": [2.45447039604187] * 3}


def _sym():
    d = mx.sym.Variable("data")
    h = mx.sym.BatchNorm(d, name="bn0", fix_gamma=False)
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc")
    h = mx.sym.BatchNorm(h, name="bn1", fix_gamma=False)
    return mx.sym.MakeLoss(mx.sym.sum(h))


def _mx_x():
    x = np.arange(24, dtype="float32").reshape(4, 2, 3) * 0.25 - 1
    x[:, 1] *= x[:, 1]
    return x


def _module(fixed=None, inputs_need_grad=False):
    m = mx.mod.Module(_sym(), data_names=["data"], label_names=None,
                      fixed_param_names=fixed)
    m.bind(data_shapes=[("data", (4, 2, 3))], for_training=True,
           inputs_need_grad=inputs_need_grad)
    m.init_params(mx.init.Constant(0.5))
    return m


def _aux_check(aux, want):
    for k, v in want.items():
        np.testing.assert_allclose(aux[k].asnumpy(), np.float32(v), rtol=RTOL, atol=ATOL,
                                   err_msg=k)


def _mod_check(m, want):
    _aux_check(m._exec_group.execs[0].aux_dict, want)


def test_module_forward_train_then_backward():
    b = mx.io.DataBatch([nd.array(_mx_x())])
    m = _module()
    m.forward(b, is_train=True)
    _mod_check(m, MOD_INIT)             # forward(is_train=True) alone writes nothing
    m.backward()
    _mod_check(m, MOD_ONE)
    m = _module()
    m.forward(b, is_train=True)
    m.forward(b, is_train=True)
    m.backward()
    _mod_check(m, MOD_ONE)              # two forwards, one backward: once
    m.backward()
    _mod_check(m, MOD_TWO)              # a second backward writes again
    m = _module()
    m.forward(b, is_train=False)
    _mod_check(m, MOD_INIT)


def test_module_batchnorm_nothing_differentiates_keeps_stats():
    b = mx.io.DataBatch([nd.array(_mx_x())])
    m = _module(fixed=["bn0_gamma", "bn0_beta"])
    m.forward(b, is_train=True)
    m.backward()
    _mod_check(m, dict(MOD_ONE, bn0_moving_mean=[0.0, 0.0], bn0_moving_var=[1.0, 1.0]))
    m = _module(fixed=["bn0_gamma", "bn0_beta"], inputs_need_grad=True)
    m.forward(b, is_train=True)
    m.backward()
    _mod_check(m, MOD_ONE)


def test_executor_forward_and_backward():
    # ex = sym.simple_bind(mx.cpu(), data=(4, 2, 3), grad_req={'data': 'null',
    #   'bn0_gamma': 'null', 'bn0_beta': 'null', others 'write'}); every arg 0.5, then
    #   data = x; aux 0 / 1; ex.forward(is_train=True) -> unchanged; ex.backward() ->
    #   bn0 unchanged, bn1 mean [0.20000004768371582] * 3, var [1.116377592086792] * 3
    req = {"data": "null", "bn0_gamma": "null", "bn0_beta": "null", "fc_weight": "write",
           "fc_bias": "write", "bn1_gamma": "write", "bn1_beta": "write"}
    ex = _sym().simple_bind(mx.cpu(), data=(4, 2, 3), grad_req=req)
    for v in ex.arg_dict.values():
        v[:] = 0.5
    ex.arg_dict["data"][:] = _mx_x()
    for k, v in ex.aux_dict.items():
        v[:] = 1.0 if "var" in k else 0.0
    ex.forward(is_train=True)
    _aux_check(ex.aux_dict, MOD_INIT)
    ex.backward()
    _aux_check(ex.aux_dict, {"bn0_moving_mean": [0.0, 0.0], "bn0_moving_var": [1.0, 1.0],
                             "bn1_moving_mean": [0.20000004768371582] * 3,
                             "bn1_moving_var": [1.116377592086792] * 3})


# ---------------------------------------------------------------------------
# fix_gamma=True writes ones into gamma; the backward's train_mode picks the formula
#   MXNet 1.9.1 data: x = nd.array([[1., 2, 3], [4, 6, 9]]); g = nd.array([2., 3, 4])
#   b = nd.array([.1, .2, .3]); mm = nd.array([.5, .5, .5]); mv = nd.array([2., 2, 2])
#   og = nd.array([[1., 2, 3], [3, 1, 2]]); nd.waitall() before each read

def _bn3():
    return (nd.array([[1.0, 2, 3], [4, 6, 9]]), nd.array([2.0, 3, 4]), nd.array([0.1, 0.2, 0.3]),
            nd.array([0.5, 0.5, 0.5]), nd.array([2.0, 2, 2]))


_OG = [[1.0, 2, 3], [3, 1, 2]]


@pytest.mark.parametrize("mode", ["predict", "train", "record", "record_predict", "global"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_fix_gamma_forward_writes_ones_into_gamma(mode, dtype):
    # MXNet: nd.BatchNorm(x, g, b, mm, mv, fix_gamma=True) -> g is [1. 1. 1.] afterwards,
    # in every mode and dtype (its forward writes gamma when it writes the mean output)
    x, g, b, mm, mv = _bn3()
    x = x.astype(dtype)
    if dtype != "float16":
        g, b, mm, mv = (a.astype(dtype) for a in (g, b, mm, mv))
    kw = {"fix_gamma": True, "use_global_stats": mode == "global"}
    if mode == "predict":
        nd.BatchNorm(x, g, b, mm, mv, **kw)
    elif mode in ("train", "global"):
        with autograd.train_mode():
            nd.BatchNorm(x, g, b, mm, mv, **kw)
    else:
        with autograd.record(train_mode=mode == "record"):
            nd.BatchNorm(x, g, b, mm, mv, **kw)
    np.testing.assert_array_equal(g.asnumpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(mm.asnumpy(), [0.5, 0.5, 0.5])


def test_fix_gamma_false_and_gluon_scale_false():
    x, g, b, mm, mv = _bn3()
    nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False)
    np.testing.assert_array_equal(g.asnumpy(), [2.0, 3.0, 4.0])
    # MXNet: net = nn.BatchNorm(scale=False, in_channels=3); net.initialize()
    #   net.gamma.set_data(nd.array([2., 3, 4])); net(x) -> gamma [1. 1. 1.]
    net = nn.BatchNorm(scale=False, in_channels=3)
    net.initialize()
    net.gamma.set_data(nd.array([2.0, 3, 4]))
    net(x)
    np.testing.assert_array_equal(net.gamma.data().asnumpy(), [1.0, 1.0, 1.0])


def test_predict_forward_train_backward_uses_the_saved_statistics():
    # MXNet: with autograd.record(train_mode=False): y = nd.BatchNorm(x, g, b, mm, mv)
    #   y.backward(og) -> the training formula over the forward's saved statistics (the
    #   moving ones here); the moving stats stay [0.5]*3 and [2.0]*3
    x, g, b, mm, mv = _bn3()
    x.attach_grad()
    g.attach_grad()
    with autograd.record(train_mode=False):
        y = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=True)
    y.backward(nd.array(_OG))
    np.testing.assert_allclose(
        x.grad.asnumpy(), [[-1.6784732341766357, -1.898748755455017, -10.46599292755127],
                           [-6.093873023986816, -8.611581802368164, -37.139625549316406]],
        rtol=1e-6)
    np.testing.assert_array_equal(g.grad.asnumpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(mm.asnumpy(), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(mv.asnumpy(), [2.0, 2.0, 2.0])


def test_train_forward_predict_backward_uses_the_moving_statistics_now():
    # MXNet: with autograd.record(): y = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False)
    #   y.backward(og, train_mode=False) -> gradients over mm/mv (not the batch's)
    x, g, b, mm, mv = _bn3()
    x.attach_grad()
    g.attach_grad()
    with autograd.record():
        y = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False)
    y.backward(nd.array(_OG), train_mode=False)
    np.testing.assert_allclose(
        x.grad.asnumpy(), [[1.4138602018356323, 4.241580486297607, 8.483160972595215],
                           [4.241580486297607, 2.1207902431488037, 5.655440807342529]],
        rtol=1e-6)
    np.testing.assert_allclose(g.grad.asnumpy(),
                               [7.776231288909912, 6.00890588760376, 17.319787979125977],
                               rtol=1e-6)
    np.testing.assert_array_equal(mm.asnumpy(), [0.5, 0.5, 0.5])
    # ... and the moving statistics as they are at the backward:
    #   predict forward; mm[:] = 1.5; mv[:] = 0.5; y.backward(og, train_mode=False)
    x, g, b, mm, mv = _bn3()
    x.attach_grad()
    g.attach_grad()
    with autograd.record(train_mode=False):
        y = nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False)
    mm[:] = 1.5
    mv[:] = 0.5
    y.backward(nd.array(_OG), train_mode=False)
    np.testing.assert_allclose(
        x.grad.asnumpy(), [[2.8256030082702637, 8.476808547973633, 16.953617095947266],
                           [8.476808547973633, 4.238404273986816, 11.302412033081055]],
        rtol=1e-6)
    np.testing.assert_allclose(g.grad.asnumpy(),
                               [9.889610290527344, 7.7704081535339355, 27.54962921142578],
                               rtol=1e-6)
