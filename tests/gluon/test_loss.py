"""Gluon losses against NumPy formulas."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, gluon, nd
from gpunda.base import GpundaError

CPU = mx.cpu()
L = gluon.loss


def _nd(a):
    return nd.array(np.asarray(a, dtype=np.float32), ctx=CPU)


def _log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("hybrid", [False, True])
def test_softmax_ce_sparse_dense_and_logits(rng, hybrid):
    pred = rng.standard_normal((4, 5)).astype(np.float32)
    label = np.array([0, 3, 4, 1])
    sw = rng.random((4, 1)).astype(np.float32)
    ls = _log_softmax(pred.astype(np.float64))
    ref = -ls[np.arange(4), label]
    fn = L.SoftmaxCrossEntropyLoss()
    fn.hybridize(hybrid)
    np.testing.assert_allclose(fn(_nd(pred), _nd(label)).asnumpy(), ref, rtol=1e-5)
    if hybrid:
        # as MXNet: a hybridized block keeps the input structure of its first call
        with pytest.raises(ValueError, match="structure"):
            fn(_nd(pred), _nd(label), _nd(sw))
        fn = L.SoftmaxCrossEntropyLoss()
        fn.hybridize()
    np.testing.assert_allclose(fn(_nd(pred), _nd(label), _nd(sw)).asnumpy(), ref * sw[:, 0],
                               rtol=1e-5)
    onehot = np.eye(5)[label]
    dense = L.SoftmaxCrossEntropyLoss(sparse_label=False, weight=2.0)
    np.testing.assert_allclose(dense(_nd(pred), _nd(onehot)).asnumpy(), 2 * ref, rtol=1e-5)
    logits = L.SoftmaxCrossEntropyLoss(from_logits=True)
    np.testing.assert_allclose(logits(_nd(pred), _nd(label)).asnumpy(),
                               -pred[np.arange(4), label], rtol=1e-6)
    # class axis 1 of a 3-D prediction
    p3 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    l3 = rng.integers(0, 3, (2, 4))
    ax = L.SoftmaxCrossEntropyLoss(axis=1)
    ls3 = _log_softmax(p3.astype(np.float64), axis=1)
    ref3 = -np.take_along_axis(ls3, l3[:, None, :], axis=1)[:, 0, :].mean(axis=1)
    np.testing.assert_allclose(ax(_nd(p3), _nd(l3)).asnumpy(), ref3, rtol=1e-5)


def test_softmax_ce_gradient_is_softmax_minus_onehot(rng):
    pred = _nd(rng.standard_normal((3, 4)))
    label = np.array([1, 0, 3])
    pred.attach_grad()
    with autograd.record():
        loss = L.SoftmaxCrossEntropyLoss()(pred, _nd(label)).sum()
    loss.backward()
    p = np.exp(_log_softmax(pred.asnumpy().astype(np.float64)))
    np.testing.assert_allclose(pred.grad.asnumpy(), p - np.eye(4)[label], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_ce_fused_imperative_loss_matches_the_composite(rng, dtype):
    # imperative (batch, classes) calls take the fused op; the hybridized block runs the
    # composite graph (log_softmax, pick, mean): values, gradients and second-order
    # gradients agree, labels out of range clipped alike
    pred0 = rng.standard_normal((5, 4)).astype(dtype)
    label = nd.array([1, 0, 3, 7, -2], ctx=CPU, dtype=dtype)
    head = nd.array(rng.standard_normal(5), ctx=CPU, dtype=dtype)
    results = []
    for hybrid in (False, True):
        fn = L.SoftmaxCrossEntropyLoss()
        fn.hybridize(hybrid)
        pred = nd.array(pred0, ctx=CPU, dtype=dtype)
        pred.attach_grad()
        with autograd.record():
            loss = fn(pred, label)
            g, = autograd.grad(loss, [pred], head_grads=head, create_graph=True)
            gg = (g * g).sum()
        gg.backward()
        results.append((loss.asnumpy(), g.asnumpy(), pred.grad.asnumpy()))
    tol = 1e-5 if dtype == "float32" else 1e-12
    for fused, composite in zip(*results):
        np.testing.assert_allclose(fused, composite, rtol=tol, atol=tol)
    ls = _log_softmax(pred0.astype(np.float64))
    np.testing.assert_allclose(results[0][0], -ls[np.arange(5), [1, 0, 3, 3, 0]], rtol=tol)


def test_softmax_ce_bad_label_shape():
    with pytest.raises(GpundaError, match="label of shape"):
        L.SoftmaxCrossEntropyLoss()(_nd(np.zeros((4, 5))), _nd(np.zeros(3)))


def test_l1_l2_huber(rng):
    pred = rng.standard_normal((3, 4)).astype(np.float32)
    label = rng.standard_normal((3, 4)).astype(np.float32)
    d = pred.astype(np.float64) - label
    np.testing.assert_allclose(L.L2Loss()(_nd(pred), _nd(label)).asnumpy(),
                               (0.5 * d ** 2).mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(L.L1Loss()(_nd(pred), _nd(label)).asnumpy(),
                               np.abs(d).mean(axis=1), rtol=1e-5)
    rho = 0.7
    a = np.abs(d)
    hub = np.where(a > rho, a - 0.5 * rho, 0.5 / rho * a ** 2).mean(axis=1)
    np.testing.assert_allclose(L.HuberLoss(rho=rho)(_nd(pred), _nd(label)).asnumpy(), hub,
                               rtol=1e-5)
    # label reshaped like pred (MXNet accepts (N,) for (N, 1))
    np.testing.assert_allclose(L.L2Loss()(_nd(pred[:, :1]), _nd(label[:, 0])).asnumpy(),
                               0.5 * d[:, 0] ** 2, rtol=1e-5)


def test_sigmoid_bce_logits_and_probabilities(rng):
    x = rng.standard_normal((4, 3)).astype(np.float32) * 3
    z = (rng.random((4, 3)) > 0.5).astype(np.float32)
    p = 1 / (1 + np.exp(-x.astype(np.float64)))
    ref = -(z * np.log(p) + (1 - z) * np.log(1 - p)).mean(axis=1)
    np.testing.assert_allclose(L.SigmoidBinaryCrossEntropyLoss()(_nd(x), _nd(z)).asnumpy(), ref,
                               rtol=1e-5)
    np.testing.assert_allclose(
        L.SigmoidBinaryCrossEntropyLoss(from_sigmoid=True)(_nd(p), _nd(z)).asnumpy(), ref,
        rtol=1e-4)
    pw = np.array([2.0, 1.0, 0.5], dtype=np.float32)
    refw = -(pw * z * np.log(p) + (1 - z) * np.log(1 - p)).mean(axis=1)
    np.testing.assert_allclose(
        L.SigmoidBCELoss()(_nd(x), _nd(z), None, _nd(pw)).asnumpy(), refw, rtol=1e-5)
