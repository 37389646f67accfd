"""Random samplers: distributions, shapes, dtypes and per-context reproducibility."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import nd


def test_uniform_normal_randint_shapes_and_ranges():
    mx.random.seed(42)
    u = mx.random.uniform(-2, 3, shape=(2000,))
    assert u.shape == (2000,) and u.dtype == np.float32
    a = u.asnumpy()
    assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 0.15
    n = mx.random.normal(1.0, 2.0, shape=(50, 40), dtype="float64").asnumpy()
    assert n.dtype == np.float64 and abs(n.mean() - 1) < 0.2 and abs(n.std() - 2) < 0.2
    r = mx.random.randint(3, 7, shape=(500,)).asnumpy()
    assert r.dtype == np.int32 and set(np.unique(r)) == {3, 4, 5, 6}
    assert nd.random.uniform(shape=(3,)).shape == (3,)
    assert nd.random_normal(shape=(2, 2)).shape == (2, 2)


def test_seed_is_reproducible_per_context():
    mx.random.seed(7)
    a = mx.random.uniform(shape=(5,)).asnumpy()
    b = mx.random.uniform(shape=(5,)).asnumpy()
    mx.random.seed(7)
    assert (mx.random.uniform(shape=(5,)).asnumpy() == a).all()
    assert not (a == b).all()
    mx.random.seed(7, ctx=mx.cpu(1))
    c = mx.random.uniform(shape=(5,), ctx=mx.cpu(1)).asnumpy()
    d = mx.random.uniform(shape=(5,)).asnumpy()             # cpu(0) stream unaffected
    assert (d == b).all()
    mx.random.seed(7, ctx=mx.cpu(1))
    assert (mx.random.uniform(shape=(5,), ctx=mx.cpu(1)).asnumpy() == c).all()


def test_shuffle_permutes_rows():
    mx.random.seed(3)
    x = nd.array(np.arange(20).reshape(10, 2))
    y = mx.random.shuffle(x).asnumpy()
    assert sorted(map(tuple, y.tolist())) == sorted(map(tuple, x.asnumpy().tolist()))
    assert (y != x.asnumpy()).any()
    assert x.asnumpy()[0].tolist() == [0, 1]          # input untouched


def test_out_argument():
    o = nd.zeros((4,))
    r = mx.random.uniform(0, 1, out=o)
    assert r is o and (o.asnumpy() > 0).any()


@pytest.mark.parametrize("call, frag", [
    (lambda: mx.random.uniform(2, 1, shape=(2,)), "low=2.0 must be <= high=1.0"),
    (lambda: mx.random.normal(0, -1, shape=(2,)), "scale=-1.0"),
    (lambda: mx.random.randint(5, 5, shape=(2,)), "low=5 must be < high=5"),
    (lambda: mx.random.uniform(shape=(-1, 2)), "shape"),
    (lambda: mx.random.seed("x"), "seed_state='x'"),
])
def test_bad_input(call, frag):
    # sampler parameters are checked in the kernel, so (as in MXNet) the error may
    # surface at the first read of the result instead of at the call
    with pytest.raises(mx.GpundaError, match=frag.replace("(", r"\(").replace(")", r"\)")):
        call().asnumpy()


@pytest.mark.parametrize("draw, mean, var", [
    (lambda: mx.random.exponential(2.0, shape=(20000,)), 2.0, 4.0),
    (lambda: mx.random.gamma(2.0, 3.0, shape=(20000,)), 6.0, 18.0),
    (lambda: mx.random.poisson(4.0, shape=(20000,)), 4.0, 4.0),
    (lambda: mx.random.negative_binomial(3, 0.4, shape=(20000,)), 3 * 0.6 / 0.4, 3 * 0.6 / 0.16),
    (lambda: mx.random.generalized_negative_binomial(2.0, 0.5, shape=(20000,)), 2.0, 2.0 + 0.5 * 4),
    (lambda: mx.random.generalized_negative_binomial(2.0, 0.0, shape=(20000,)), 2.0, 2.0),
])
def test_distribution_moments(draw, mean, var):
    mx.random.seed(7)
    x = draw().asnumpy().astype(np.float64)
    assert x.shape == (20000,)
    assert abs(x.mean() - mean) < 0.05 * mean + 0.05
    assert abs(x.var() - var) < 0.1 * var + 0.1


def test_array_parameters_give_one_distribution_per_element():
    mx.random.seed(1)
    x = mx.random.normal(nd.array([0.0, 100.0]), nd.array([1.0, 2.0]), shape=(5000,))
    assert x.shape == (2, 5000)
    v = x.asnumpy()
    assert abs(v[0].mean()) < 0.1 and abs(v[1].mean() - 100) < 0.2 and abs(v[1].std() - 2) < 0.1
    u = nd.random.uniform(nd.array([0.0]), nd.array([0.5]), shape=(100,)).asnumpy()
    assert u.shape == (1, 100) and u.min() >= 0 and u.max() < 0.5
    with pytest.raises(mx.GpundaError, match="all be NDArrays or all numbers"):
        mx.random.normal(nd.array([0.0]), 1.0)


def test_multinomial():
    mx.random.seed(3)
    probs = nd.array([[0.2, 0.8], [1.0, 0.0]])
    s, logp = mx.random.multinomial(probs, shape=(4000,), get_prob=True)
    assert s.shape == (2, 4000) and s.dtype == np.int32
    assert abs(s.asnumpy()[0].mean() - 0.8) < 0.03 and (s.asnumpy()[1] == 0).all()
    np.testing.assert_allclose(logp.asnumpy()[1], 0.0, atol=1e-6)
    np.testing.assert_allclose(np.exp(logp.asnumpy()[0]), np.where(s.asnumpy()[0] == 1, 0.8, 0.2),
                               rtol=1e-5)
    assert mx.random.multinomial(nd.array([0.0, 1.0])).asnumpy().tolist() == [1]


def test_symbol_random_namespace():
    s = mx.sym.random.poisson(3.0, shape=(2, 2))
    out = s.bind(mx.cpu(), {}).forward()[0]
    assert out.shape == (2, 2)
    mu = mx.sym.var("mu")
    e = mx.sym.random.normal(mu, mx.sym.var("sigma"), shape=(3,))
    r = e.bind(mx.cpu(), {"mu": nd.array([0.0, 50.0]), "sigma": nd.array([1.0, 1.0])}).forward()[0]
    assert r.shape == (2, 3) and (r.asnumpy()[1] > 40).all()


def test_like_samplers_take_shape_dtype_context_of_data():
    mx.random.seed(5)
    data = nd.zeros((300, 40), dtype="float64", ctx=mx.cpu(1))
    u = nd.random.uniform_like(data, low=2, high=3)
    assert u.shape == (300, 40) and u.dtype == np.float64 and u.context == mx.cpu(1)
    v = u.asnumpy()
    assert v.min() >= 2 and v.max() < 3
    p = nd.random.poisson_like(data, lam=3.0).asnumpy()
    assert abs(p.mean() - 3.0) < 0.1
    with pytest.raises(mx.GpundaError, match="scale=-1.0"):
        nd.random.normal_like(data, scale=-1).asnumpy()
    s = mx.sym.random.gamma_like(mx.sym.var("d"), alpha=2.0)
    assert s.bind(mx.cpu(), {"d": nd.ones((4, 2))}).forward()[0].shape == (4, 2)


@pytest.mark.parametrize("alpha,beta", [(0.5, 1.0), (2.0, 3.0), (9.0, 0.5)])
def test_gamma_matches_the_distribution(alpha, beta):
    from scipy import stats
    mx.random.seed(11)
    g = nd.random.gamma(alpha, beta, shape=(4000,))
    assert g.shape == (4000,) and g.dtype == np.float32
    s = g.asnumpy().astype(np.float64)
    assert s.min() > 0
    # shape alpha, scale beta (MXNet's parametrisation: mean alpha * beta)
    assert stats.kstest(s, stats.gamma(alpha, scale=beta).cdf).pvalue > 1e-3


def test_gamma_defaults_seed_out_and_errors():
    assert nd.random.gamma().shape == (1,) and mx.random.gamma is nd.random.gamma
    assert nd.random.gamma(shape=(2, 3), dtype="float64").dtype == np.float64
    assert nd._internal._random_gamma(shape=(2,), alpha=2.0).shape == (2,)
    mx.random.seed(5)
    a = nd.random.gamma(2, 2, shape=(6, 4)).asnumpy()
    for stype in ("default", "row_sparse"):
        out = nd.zeros((6, 4), stype=stype)
        mx.random.seed(5)
        r = nd.random.gamma(2, 2, shape=(6, 4), out=out)
        assert r is out and out.stype == stype
        np.testing.assert_array_equal(out.asnumpy(), a)
    for bad in ({"alpha": 0}, {"beta": -1.0}):      # checked in the kernel: at the read
        with pytest.raises(mx.GpundaError, match="_random_gamma: .* must be > 0"):
            nd.random.gamma(shape=(2,), **bad).asnumpy()
    # NDArray parameters: one distribution per element (_sample_gamma)
    assert nd.random.gamma(nd.ones((2,)), nd.ones((2,)), shape=(3,)).shape == (2, 3)


def test_rand_zipfian_follows_the_log_uniform_distribution():
    from scipy import stats
    mx.random.seed(11)
    n, k = 20000, 6
    s, exp_true, exp_s = mx.nd.contrib.rand_zipfian(mx.nd.array([0, 3]), n, k)
    assert (s.dtype, exp_true.dtype, exp_s.dtype) == (np.int64, np.float64, np.float64)
    p = np.log((np.arange(k) + 2) / (np.arange(k) + 1)) / np.log(k + 1)
    assert np.isclose(p.sum(), 1.0)
    counts = np.bincount(s.asnumpy(), minlength=k)
    assert stats.chisquare(counts, n * p).pvalue > 1e-3
    raw = np.log((np.array([0, 3]) + 2) / (np.array([0, 3]) + 1)) / np.log(k + 1) * n
    np.testing.assert_allclose(exp_true.asnumpy(), raw)
    sv = s.asnumpy()
    np.testing.assert_allclose(exp_s.asnumpy(), np.log((sv + 2) / (sv + 1)) / np.log(k + 1) * n)
    # the Symbol form builds the same graph
    outs = mx.sym.Group(list(mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 5, k)))
    got = outs.eval(t=mx.nd.array([3]))
    assert got[0].shape == (5,) and got[0].dtype == np.int64 and got[1].shape == (1,)


def test_sample_unique_zipfian_draws_distinct_classes_and_counts_trials():
    from scipy import stats
    op = mx.nd._internal._sample_unique_zipfian
    mx.random.seed(5)
    classes, trials = op(50, shape=(3, 40))
    for row in classes.asnumpy():
        assert len(set(row.tolist())) == 40 and row.min() >= 0 and row.max() < 50
    assert classes.dtype == np.int64 and (trials.asnumpy() >= 40).all()
    mx.random.seed(5)
    again, trials2 = op(50, shape=(3, 40))
    assert (again.asnumpy() == classes.asnumpy()).all()
    assert (trials2.asnumpy() == trials.asnumpy()).all()
    # one class per row is one draw: round(exp(u log R)) - 1 puts mass
    # log((k + 1.5) / (k + 0.5)) / log R on k >= 1 and log(1.5) / log R on 0
    r = 10
    first, t = op(r, shape=(4000, 1))
    assert (t.asnumpy() == 1).all()
    k = np.arange(r)
    p = (np.log(np.minimum(k + 1.5, r)) - np.log(np.maximum(k + 0.5, 1.0))) / np.log(r)
    assert np.isclose(p.sum(), 1.0)
    counts = np.bincount(first.asnumpy().ravel(), minlength=r)
    assert stats.chisquare(counts, 4000 * p).pvalue > 1e-3
    with pytest.raises(mx.GpundaError, match="num_sampled=5 exceeds range_max=4"):
        op(4, shape=(1, 5))


def test_randn_takes_loc_and_scale_keywords():
    mx.random.seed(2)
    x = mx.nd.random.randn(20000, loc=10.0, scale=0.5).asnumpy()
    assert x.shape == (20000,)
    assert abs(x.mean() - 10.0) < 0.02 and abs(x.std() - 0.5) < 0.02
