"""Gluon on a GPU: the same results as on the CPU (skipped without a usable GPU)."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, gluon, nd
from gpunda.gluon import nn

pytestmark = pytest.mark.gpu


def _train(ctx, hybrid, x, y):
    mx.random.seed(5)
    net = nn.HybridSequential(prefix="g_")
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1, in_channels=1), nn.BatchNorm(in_channels=4),
                nn.Activation("relu"), nn.MaxPool2D(2), nn.Dense(3, in_units=4 * 2 * 2))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True)
    tr = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    xd, yd = nd.array(x, ctx=ctx), nd.array(y, ctx=ctx)
    for _ in range(3):
        with autograd.record():
            loss = loss_fn(net(xd), yd)
        loss.backward()
        tr.step(x.shape[0])
    return net(xd).asnumpy(), {k[2:]: p.data().asnumpy() for k, p in net.collect_params().items()}


@pytest.mark.parametrize("hybrid", [False, True])
def test_training_on_gpu_matches_cpu(rng, hybrid):
    x = rng.standard_normal((4, 1, 4, 4)).astype(np.float32)
    y = np.array([0, 1, 2, 1], np.float32)
    out_c, par_c = _train(mx.cpu(), hybrid, x, y)
    out_g, par_g = _train(mx.gpu(0), hybrid, x, y)
    np.testing.assert_allclose(out_g, out_c, rtol=1e-3, atol=1e-4)
    for k in par_c:
        np.testing.assert_allclose(par_g[k], par_c[k], rtol=1e-3, atol=1e-4, err_msg=k)


def test_parameter_on_cpu_and_gpu_and_clip_global_norm(rng):
    p = gluon.Parameter("w", shape=(3, 2))
    p.initialize(mx.init.One(), ctx=[mx.cpu(), mx.gpu(0)])
    assert [d.context for d in p.list_data()] == [mx.cpu(), mx.gpu(0)]
    host = (rng.standard_normal(5) * 3).astype(np.float32)
    a = nd.array(host, ctx=mx.gpu(0))
    n = gluon.utils.clip_global_norm([a], 0.5)
    assert abs(n - np.linalg.norm(host)) < 1e-3
    np.testing.assert_allclose(a.asnumpy(), host * 0.5 / np.linalg.norm(host), rtol=1e-4)
