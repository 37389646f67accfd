"""mx.np.random: shapes, dtypes, seeding, statistics, and reparameterised gradients."""
import numpy as onp
import pytest

import gpunda as mx
from gpunda import numpy as np
from gpunda import autograd as ag
from _np_util import mxa

DISTS = [("uniform", (0.0, 2.0)), ("normal", (1.0, 2.0)), ("lognormal", (0.0, 0.5)),
         ("exponential", (2.0,)), ("rayleigh", (1.5,)), ("weibull", (2.0,)), ("pareto", (3.0,)),
         ("gumbel", (0.5, 1.5)), ("logistic", (0.5, 1.5)), ("power", (2.0,)),
         ("gamma", (2.0, 1.5)), ("beta", (2.0, 3.0)), ("chisquare", (3.0,))]


@pytest.mark.parametrize("name,args", DISTS, ids=[d[0] for d in DISTS])
def test_sampler_shape_seed_and_mean(name, args):
    mx.random.seed(7)
    x = getattr(np.random, name)(*args, size=(20000,))
    mx.random.seed(7)
    y = getattr(np.random, name)(*args, size=(20000,))
    assert x.shape == (20000,) and x.dtype == onp.float32
    onp.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    ref = getattr(onp.random.RandomState(0), name)(*args, size=200000)
    assert abs(x.asnumpy().mean() - ref.mean()) < 0.05 * max(1.0, abs(ref.mean())) + 4 * ref.std() / 141


def test_array_parameters_broadcast():
    loc = mxa(onp.array([0.0, 10.0, 100.0]))
    x = np.random.normal(loc, 1.0, size=(1000, 3))
    assert x.shape == (1000, 3) and x.dtype == onp.float64
    onp.testing.assert_allclose(x.asnumpy().mean(0), [0, 10, 100], atol=0.2)
    assert np.random.uniform(mxa(onp.zeros((2, 1))), mxa(onp.ones(3))).shape == (2, 3)


@pytest.mark.parametrize("name", ["normal", "uniform", "lognormal", "gumbel", "logistic"])
def test_reparameterised_gradients(name):
    a = mxa(onp.array([0.2, 0.4]))
    b = mxa(onp.array([1.0, 1.5]))
    a.attach_grad()
    b.attach_grad()
    mx.random.seed(3)
    with ag.record():
        out = getattr(np.random, name)(a, b, size=(2,))
    out.backward()
    eps = 1e-6
    mx.random.seed(3)
    hi = getattr(np.random, name)(a + mxa(onp.array([eps, 0.0])), b, size=(2,)).asnumpy()
    mx.random.seed(3)
    lo = getattr(np.random, name)(a - mxa(onp.array([eps, 0.0])), b, size=(2,)).asnumpy()
    onp.testing.assert_allclose(a.grad.asnumpy()[0], ((hi - lo) / (2 * eps))[0], rtol=1e-4)


def test_integers_choice_shuffle_multinomial_mvn():
    r = np.random.randint(3, 9, size=(500,))
    assert r.dtype == onp.int64 and r.asnumpy().min() >= 3 and r.asnumpy().max() < 9
    assert np.random.rand(2, 3).shape == (2, 3) and np.random.randn(4).shape == (4,)
    c = np.random.choice(5, size=(100,), replace=True)
    assert set(c.asnumpy().tolist()) <= set(range(5))
    c = np.random.choice(5, size=(5,), replace=False)
    assert sorted(c.asnumpy().tolist()) == list(range(5))
    w = np.random.choice(3, size=(200,), p=mxa(onp.array([0.0, 1.0, 0.0])))
    assert set(w.asnumpy().tolist()) == {1}
    x = mxa(onp.arange(10.0))
    np.random.shuffle(x)
    assert sorted(x.asnumpy().tolist()) == list(range(10))
    m = np.random.multinomial(10, [0.2, 0.8], size=(4,))
    assert m.shape == (4, 2) and (m.asnumpy().sum(1) == 10).all()
    cov = onp.array([[2.0, 0.5], [0.5, 1.0]])
    s = np.random.multivariate_normal(mxa(onp.zeros(2)), mxa(cov), size=(20000,)).asnumpy()
    onp.testing.assert_allclose(onp.cov(s.T), cov, atol=0.1)


@pytest.mark.parametrize("name", ["weibull", "pareto", "power", "chisquare"])
def test_out_of_range_parameters_raise_value_error(name):
    for bad in (-1, 0):
        with pytest.raises(ValueError):
            getattr(np.random, name)(bad, size=(2,))
    with pytest.raises(ValueError):
        np.random.exponential(-1.0)
    with pytest.raises(ValueError):
        np.random.gamma(mxa(onp.array([1.0])), mxa(onp.array([-1.0])))


def test_multinomial_checks_the_running_sum_as_mxnet():
    # float32 [0.4, 0.3, 0.2, 0.1, 0] sums to 1 in float32 but above 1 in float64: MXNet's
    # check accumulates in pvals' dtype, so it passes; a running sum above 1 is refused
    pv = [0.4, 0.3, 0.2, 0.1, 0.0]
    mx.random.seed(1)
    for p in (pv, mxa(onp.array(pv, dtype=onp.float32))):
        f = np.random.multinomial(20000, p, size=(2,)).asnumpy()
        assert f.shape == (2, 5) and f.dtype == onp.int64 and (f.sum(1) == 20000).all()
        onp.testing.assert_allclose(f / 20000.0, [pv, pv], atol=0.015)
    assert np.random.multinomial(5, pv, size=(3, 0)).shape == (3, 0, 5)
    for bad in ([0.5, 0.6], mxa(onp.array([0.7, 0.4], dtype=onp.float32))):
        with pytest.raises(mx.base.MXNetError):
            np.random.multinomial(10, bad)
    with pytest.raises(ValueError):
        np.random.multinomial(10, onp.array([0.5, 0.5]))
