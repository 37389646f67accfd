"""npx.random: bernoulli, the batch samplers uniform_n/normal_n, seed (MXNet 1.9.1's
behaviour as observed on the real wheel)."""
import numpy as onp
import pytest

import gpunda as mx
from gpunda import np, npx
from gpunda import autograd as ag
from gpunda.base import GpundaError


def test_bernoulli_frequencies_shapes_and_dtypes():
    mx.random.seed(5)
    prob = np.array(onp.array([0.1, 0.5, 0.9]))
    x = npx.random.bernoulli(prob=prob, size=(20000, 3))
    assert x.shape == (20000, 3) and x.dtype == onp.float32     # float32 whatever prob's dtype
    onp.testing.assert_allclose(x.asnumpy().mean(0), [0.1, 0.5, 0.9], atol=0.02)
    logit = np.array(onp.log(onp.array([0.1, 0.5, 0.9]) / (1 - onp.array([0.1, 0.5, 0.9]))))
    y = npx.random.bernoulli(logit=logit, size=(20000, 3), dtype="int32")
    assert y.dtype == onp.int32
    onp.testing.assert_allclose(y.asnumpy().mean(0), [0.1, 0.5, 0.9], atol=0.02)
    assert npx.random.bernoulli(prob=0.5).shape == ()
    assert npx.random.bernoulli(prob=0.5, size=()).shape == ()
    assert npx.random.bernoulli(prob=0.5, size=4).shape == (4,)
    assert npx.random.bernoulli(prob=prob).shape == (3,)
    assert npx.random.bernoulli(prob=np.ones((4, 0, 5)) * 0.5).shape == (4, 0, 5)
    b = npx.random.bernoulli(logit=0.0, size=(100,), dtype="bool")
    assert b.dtype == onp.bool_ and 20 < int(b.asnumpy().sum()) < 80
    assert set(npx.random.bernoulli(prob=1.0, size=(50,)).asnumpy().tolist()) == {1.0}
    assert set(npx.random.bernoulli(prob=0.0, size=(50,)).asnumpy().tolist()) == {0.0}


def test_bernoulli_reproducible_with_npx_seed_keyword():
    npx.random.seed(seed=11)
    a = npx.random.bernoulli(prob=0.3, size=(64,)).asnumpy()
    npx.random.seed(seed=11)
    onp.testing.assert_array_equal(a, npx.random.bernoulli(prob=0.3, size=(64,)).asnumpy())


def test_bernoulli_refusals():
    prob = np.array(onp.array([0.2, 0.7]))
    with pytest.raises(ValueError):
        npx.random.bernoulli(prob=prob, logit=prob)        # exactly one of them
    with pytest.raises(ValueError):
        npx.random.bernoulli()
    for bad in (prob + 2.0, prob - 2.0, np.array(onp.array([-0.5, 0.5]))):
        with pytest.raises(ValueError):
            npx.random.bernoulli(prob=bad).asnumpy()
    with pytest.raises(ValueError):
        npx.random.bernoulli(prob=1.5)
    npx.random.bernoulli(logit=prob + 2.0).asnumpy()      # any log-odds is fine
    with pytest.raises(GpundaError):
        npx.random.bernoulli(prob=prob, size=(3,))         # (2,) does not broadcast to (3,)


def test_batch_samplers_shapes_moments_and_dtypes():
    mx.random.seed(2)
    low = np.array(onp.array([0.0, 10.0]))
    u = npx.random.uniform_n(low, low + 1.0, batch_shape=(5000,))
    assert u.shape == (5000, 2) and u.dtype == onp.float32    # float32 although low is float64
    onp.testing.assert_allclose(u.asnumpy().mean(0), [0.5, 10.5], atol=0.03)
    assert ((u.asnumpy() >= [0, 10]) & (u.asnumpy() < [1, 11])).all()
    n = npx.random.normal_n(np.zeros((2,)), np.ones((3, 1)), batch_shape=(4,))
    assert n.shape == (4, 3, 2)
    assert npx.random.normal_n(0, 1, batch_shape=6).shape == (6,)
    assert npx.random.normal_n(0, 1).shape == ()
    assert npx.random.uniform_n(batch_shape=()).shape == ()
    assert npx.random.normal_n(1.0, 2.0, batch_shape=(3,), dtype="float64").dtype == onp.float64
    g = npx.random.normal_n(5.0, 2.0, batch_shape=(20000,)).asnumpy()
    assert abs(g.mean() - 5.0) < 0.1 and abs(g.std() - 2.0) < 0.1
    with pytest.raises(GpundaError):
        npx.random.uniform_n(0, 1, batch_shape=(3,), dtype="int32")


def test_batch_sampler_gradients_sum_over_the_batch():
    # normal_n = loc + scale * eps: d/dloc is 1 per draw, summed over the batch axis
    loc = np.zeros((2,))
    loc.attach_grad()
    scale = np.array(onp.array([1.0, 2.0], dtype=onp.float32))
    scale.attach_grad()
    with ag.record():
        y = npx.random.normal_n(loc, scale, batch_shape=(4,))
    y.backward()
    onp.testing.assert_allclose(loc.grad.asnumpy(), [4.0, 4.0])
    eps = (y.asnumpy() - 0.0) / scale.asnumpy()
    onp.testing.assert_allclose(scale.grad.asnumpy(), eps.sum(0), rtol=1e-5)


def test_batch_samplers_in_a_hybridized_block():
    class Sample(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return F.npx.random.uniform_n(a, b, batch_shape=(3,))

    npx.set_np()
    try:
        net = Sample()
        net.hybridize()
        out = net(np.zeros((2, 2)), np.ones((2, 2)))
        assert out.shape == (3, 2, 2) and type(out) is np.ndarray
    finally:
        npx.reset_np()
