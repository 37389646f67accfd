"""The training plan of a CachedOp (NOTE [Training plan] in _engine/cached_plan.py):
recorded calls and their backward equal the imperative ones, with relu done in place."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, nd, sym
from gpunda.gluon import nn


@pytest.fixture(autouse=True)
def _on_the_cpu():
    # the in-place relu and planar pooling are the NumPy plan's (a GPU captures graphs)
    with mx.cpu():
        yield


def _net(hybrid, bn_then_two_readers=False):
    class Branch(nn.HybridBlock):
        """BatchNorm whose output feeds relu AND a second op: relu must not overwrite it."""

        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.bn = nn.BatchNorm(in_channels=4)

        def hybrid_forward(self, F, x):
            y = self.bn(x)
            return F.Activation(y, act_type="relu") + y * 0.5

    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, kernel_size=3, padding=1, in_channels=2))
        if bn_then_two_readers:
            net.add(Branch())
        else:
            net.add(nn.BatchNorm(in_channels=4), nn.Activation("relu"))
        net.add(nn.MaxPool2D(2), nn.Dense(8, activation="relu", in_units=16), nn.Dense(3, in_units=8))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True)
    return net


def _step(net, x, y, lossf):
    with autograd.record():
        out = net(x)
        loss = lossf(out, y)
    loss.backward()
    return out.asnumpy(), {k: p.grad().asnumpy() for k, p in net.collect_params().items()
                           if p.grad_req != "null"}, x.grad.asnumpy() if x.grad is not None else None


@pytest.mark.parametrize("branch", [False, True])
def test_hybrid_training_steps_equal_imperative(branch, rng):
    imp, hyb = _net(False, branch), _net(True, branch)
    for (k, p), (k2, q) in zip(imp.collect_params().items(), hyb.collect_params().items()):
        q.set_data(p.data())
    lossf = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    for i in range(3):      # the first call is instrumented, the later ones compiled
        x = nd.array(rng.standard_normal((5, 2, 4, 4)).astype(np.float32))
        if i == 2:
            x.attach_grad()  # another pattern of inputs needing gradients: another plan
        y = nd.array(rng.integers(0, 3, 5).astype(np.float32))
        xi = x.copy()
        if i == 2:
            xi.attach_grad()
        o1, g1, dx1 = _step(imp, xi, y, lossf)
        o2, g2, dx2 = _step(hyb, x, y, lossf)
        np.testing.assert_allclose(o2, o1, rtol=1e-5, atol=1e-6)
        for k1, k2 in zip(g1, g2):
            np.testing.assert_allclose(g2[k2], g1[k1], rtol=1e-4, atol=1e-6)
        if i == 2:
            np.testing.assert_allclose(dx2, dx1, rtol=1e-4, atol=1e-6)
    # moving statistics were updated once per call, as imperatively
    for (k, p), (k2, q) in zip(imp.collect_params().items(), hyb.collect_params().items()):
        np.testing.assert_allclose(q.data().asnumpy(), p.data().asnumpy(), rtol=1e-5, atol=1e-6)


def test_relu_in_place_only_where_safe(rng):
    net = _net(True)
    lossf = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    x = nd.array(rng.standard_normal((5, 2, 4, 4)).astype(np.float32))
    y = nd.array(rng.integers(0, 3, 5).astype(np.float32))
    for _ in range(2):
        _step(net, x, y, lossf)
    cop = net._cached_op
    plan = next(iter(cop._train_plans.values()))
    producer = {o: st.op.name for st in cop._steps for o in st.outs}
    fused = sorted(producer[slot] for slot in plan.inplace.values())
    # both relus: after BatchNorm (its rule reads only mean and 1/std) and after a Dense
    assert fused == ["BatchNorm", "FullyConnected"]
    branch = _net(True, bn_then_two_readers=True)
    for _ in range(2):
        _step(branch, x, y, lossf)
    plan = next(iter(branch._cached_op._train_plans.values()))
    steps = branch._cached_op._steps
    producer = {o: st.op.name for st in steps for o in st.outs}
    done = {steps[i].op.name: producer[s] for i, s in plan.inplace.items()}
    # the BatchNorm output has two readers: only the Dense's relu runs in place; the sum
    # writes into its dying operand whose producer's rule does not read it (the product,
    # not the relu output, which the relu's rule reads)
    assert done == {"Activation": "FullyConnected", "elemwise_add": "_mul_scalar"}
    # the max pooling keeps its input's cell planes for its gradient
    assert len(plan.planes) == 1


@pytest.mark.parametrize("nan", [False, True])
def test_max_pool_planes_gradient_equals_imperative(nan, rng):
    """The pooling gradient on the planes the forward kept, and the rule's own route where
    the data holds NaN (the planar route declines it), against imperative calls."""
    data, w = sym.var("data"), sym.var("w")
    out = sym.Pooling(sym.broadcast_mul(data, w), kernel=(2, 2), stride=(2, 2),
                      pool_type="max")
    cop = mx.CachedOp(out * 3.0, [("static_alloc", True)])
    x0 = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    x0[0, 0, 0, :2] = 1.0      # ties: the first maximum in row-major order gets the gradient
    if nan:
        x0[1, 2, 3, 5] = np.nan
    d = nd.array(x0)
    head = nd.array(rng.standard_normal((2, 3, 2, 4)).astype(np.float32))
    for _ in range(3):
        w1 = nd.array(rng.uniform(0.5, 1.5, (1, 3, 1, 1)).astype(np.float32))
        w2 = w1.copy()
        for v in (w1, w2):
            v.attach_grad()
        with autograd.record():
            y1 = cop(d, w1)
            y2 = nd.Pooling(nd.broadcast_mul(d, w2), kernel=(2, 2), stride=(2, 2),
                            pool_type="max") * 3.0
        y1.backward(head)
        y2.backward(head)
        np.testing.assert_array_equal(y1.asnumpy(), y2.asnumpy())
        np.testing.assert_allclose(w1.grad.asnumpy(), w2.grad.asnumpy(), rtol=1e-6)
    assert next(iter(cop._train_plans.values())).planes


def test_relu_plan_gradient_matches_finite_differences(rng):
    """relu in place and its mask gradient against central differences of NumPy's relu."""
    data, w = sym.var("data"), sym.var("w")
    out = sym.sum(sym.Activation(sym.dot(data, w), act_type="relu") * 1.5)
    cop = mx.CachedOp(out, [("static_alloc", True)])
    d0 = rng.standard_normal((4, 3))
    w0 = rng.standard_normal((3, 5))

    def f(wv):
        return (np.maximum(d0 @ wv, 0) * 1.5).sum()
    num = np.zeros_like(w0)
    eps = 1e-6
    for idx in np.ndindex(*w0.shape):
        wp, wm = w0.copy(), w0.copy()
        wp[idx] += eps
        wm[idx] -= eps
        num[idx] = (f(wp) - f(wm)) / (2 * eps)
    d = nd.array(d0, dtype="float64")
    for _ in range(3):
        wv = nd.array(w0, dtype="float64")
        wv.attach_grad()
        with autograd.record():
            y = cop(d, wv)
        y.backward()
        np.testing.assert_allclose(wv.grad.asnumpy(), num, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(y.asscalar(), f(w0), rtol=1e-12)
    assert next(iter(cop._train_plans.values())).inplace


def test_two_recorded_calls_before_backward(rng):
    """Each recorded call keeps its own values: the plan allocates per call."""
    net = _net(True)
    x1 = nd.array(rng.standard_normal((5, 2, 4, 4)).astype(np.float32))
    x2 = nd.array(rng.standard_normal((5, 2, 4, 4)).astype(np.float32))
    ref = _net(False)
    for (k, p), (k2, q) in zip(ref.collect_params().items(), net.collect_params().items()):
        q.set_data(p.data())
    for n in (net, ref):
        n(x1)       # warm up outside record (first calls)
    with autograd.record():
        a = net(x1).sum() + 2 * net(x2).sum()
        b = ref(x1).sum() + 2 * ref(x2).sum()
    a.backward()
    b.backward()
    for (k, p), (k2, q) in zip(ref.collect_params().items(), net.collect_params().items()):
        if p.grad_req != "null":
            np.testing.assert_allclose(q.grad().asnumpy(), p.grad().asnumpy(), rtol=1e-4,
                                       atol=1e-5)


def test_gradients_in_place_equal_numpy_and_leave_callers_arrays(rng):
    """Residual sums whose gradients meet (an addition's rule hands its output gradient to
    both inputs) and ReLU rules, done in place by the plan's backward (NOTE [Gradients in
    place]): the gradient equals the NumPy formula on every call, and neither the head
    gradient nor the input the caller holds changes."""
    data = sym.var("data")
    t = sym.Activation(data * 2.0, act_type="relu")
    u = t + data
    out = sym.Activation(u, act_type="relu") + t
    cop = mx.CachedOp(out, [("static_alloc", True), ("static_shape", True)])
    for _ in range(3):      # the first call is instrumented, the later ones compiled
        x0 = rng.standard_normal((3, 5)).astype(np.float32)
        h0 = rng.standard_normal((3, 5)).astype(np.float32)
        x, h = nd.array(x0), nd.array(h0)
        x.attach_grad()
        with autograd.record():
            y = cop(x)
        y.backward(h)
        t0 = np.maximum(2 * x0, 0)
        u0 = t0 + x0
        want_y = np.maximum(u0, 0) + t0
        # d out/d x = h * (u > 0) + (h + h * (u > 0)) * 2 * (x > 0)
        m = (u0 > 0).astype(np.float32)
        want_dx = h0 * m + (h0 + h0 * m) * 2 * (x0 > 0)
        np.testing.assert_allclose(y.asnumpy(), want_y, rtol=1e-6)
        np.testing.assert_allclose(x.grad.asnumpy(), want_dx, rtol=1e-6)
        np.testing.assert_array_equal(h.asnumpy(), h0)
        np.testing.assert_array_equal(x.asnumpy(), x0)


def test_sole_reads_every_other_holder():
    from gpunda._engine.plan_inplace import sole
    a = np.ones(5)
    assert sole(a) and not sole(a, 0)
    held = [a]
    assert not sole(a) and sole(a, 2)
    del held
    v = np.ones(6).reshape(2, 3)
    assert sole(v)
    sibling = v.base[:1]            # another view of the same memory
    assert not sole(v)
    del sibling
    owner = v.base
    assert not sole(v)
    del owner
    assert sole(v)
    assert not sole(np.frombuffer(bytearray(16), dtype=np.float32))    # foreign memory
    ro = np.ones(3)
    ro.flags.writeable = False
    assert not sole(ro)
    assert not sole([1.0])
