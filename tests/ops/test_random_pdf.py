"""random_pdf_* (gpunda/ops/random/pdf.py) against scipy.stats densities and the
examples of MXNet's documentation; gradients are checked by finite differences in
tests/test_registry_gradients.py."""
import numpy as np
import pytest
from scipy import stats

import gpunda as mx
from gpunda import nd
from gpunda.base import GpundaError


def _nd(a):
    return nd.array(np.asarray(a, dtype=np.float64), dtype="float64")


def test_mxnet_documented_examples():
    got = nd.random_pdf_uniform(nd.array([[1, 2, 3, 4]]), nd.array([0]), nd.array([10]))
    np.testing.assert_allclose(got.asnumpy(), [[0.1] * 4], rtol=1e-6)
    sample = np.array([[[1, 2, 3], [1, 2, 3]], [[1, 2, 3], [1, 2, 3]]], dtype=np.float32)
    got = nd.random_pdf_uniform(nd.array(sample), nd.zeros((2, 2)),
                                nd.array([[5, 10], [15, 20]]))
    np.testing.assert_allclose(got.asnumpy()[:, :, 0], [[0.2, 0.1], [1 / 15, 0.05]], rtol=1e-5)
    s = nd.array([[-2, -1, 0, 1, 2]])
    # (the documentation writes sample*2 but its numbers are for the same samples)
    got = nd.random_pdf_normal(nd.concat(s, s, dim=0), nd.array([0, 0]), nd.array([1, 2]))
    np.testing.assert_allclose(
        got.asnumpy(), [[0.05399097, 0.24197073, 0.3989423, 0.24197073, 0.05399097],
                        [0.12098537, 0.17603266, 0.19947115, 0.17603266, 0.12098537]],
        rtol=1e-6)


_R = np.random.default_rng(3)
_X = _R.uniform(0.2, 2.0, (2, 3, 4))
_N = _R.integers(0, 6, (2, 3, 4)).astype(np.float64)
_A, _B = _R.uniform(0.5, 2.0, (2, 3)), _R.uniform(0.2, 0.8, (2, 3))
_E = (Ellipsis, None)   # params broadcast over the trailing draw dim

_CASES = [
    ("normal", _X, (_A, _B), lambda x: stats.norm.logpdf(x, _A[_E], _B[_E])),
    ("gamma", _X, (_A, _B), lambda x: stats.gamma.logpdf(x, _A[_E], scale=1 / _B[_E])),
    ("exponential", _X, (_A,), lambda x: stats.expon.logpdf(x, scale=1 / _A[_E])),
    ("poisson", _N, (_A,), lambda x: stats.poisson.logpmf(x, _A[_E])),
    # MXNet's p is the failure probability: scipy's success probability
    ("negative_binomial", _N, (_A, _B), lambda x: stats.nbinom.logpmf(x, _A[_E], _B[_E])),
    ("generalized_negative_binomial", _N, (_A, _B),
     lambda x: stats.nbinom.logpmf(x, 1 / _B[_E], 1 / (_A[_E] * _B[_E] + 1))),
    ("uniform", _X, (_B - 1, _A + 1),
     lambda x: np.broadcast_to(-np.log(_A + 2 - _B)[_E], x.shape)),
]


@pytest.mark.parametrize("distr, x, params, ref", _CASES, ids=[c[0] for c in _CASES])
def test_density_matches_scipy(distr, x, params, ref):
    op = getattr(nd, "random_pdf_" + distr)
    got = op(_nd(x), *map(_nd, params))
    np.testing.assert_allclose(got.asnumpy(), np.exp(ref(x)), rtol=1e-10)
    got = op(_nd(x), *map(_nd, params), is_log=True)
    np.testing.assert_allclose(got.asnumpy(), ref(x), rtol=1e-10)
    assert got.dtype == np.float64 and got.shape == x.shape


def test_dirichlet_matches_scipy_and_drops_the_vector_dim():
    alpha = _R.uniform(0.5, 2.0, (2, 3))
    x = _R.uniform(0.1, 1.0, (2, 4, 3))
    x /= x.sum(-1, keepdims=True)
    got = nd.random_pdf_dirichlet(_nd(x), _nd(alpha), is_log=True).asnumpy()
    ref = [[stats.dirichlet.logpdf(x[i, j], alpha[i]) for j in range(4)] for i in range(2)]
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    one = nd.random_pdf_dirichlet(_nd(x[0, 0]), _nd(alpha[0]))
    assert one.shape == (1,)
    np.testing.assert_allclose(one.asnumpy(), [stats.dirichlet.pdf(x[0, 0], alpha[0])])


def test_gradients_flow_to_the_parameters_summed_over_draws():
    x, mu, sigma = _nd(_X), _nd(_A), _nd(_B)
    for a in (x, mu, sigma):
        a.attach_grad()
    with mx.autograd.record():
        y = nd.random_pdf_normal(x, mu, sigma, is_log=True)
    y.backward()
    d = (_X - _A[_E]) / _B[_E] ** 2
    np.testing.assert_allclose(mu.grad.asnumpy(), d.sum(-1), rtol=1e-10)
    np.testing.assert_allclose(x.grad.asnumpy(), -d, rtol=1e-10)


def test_bad_shapes_and_dtypes_are_named():
    with pytest.raises(GpundaError, match="random_pdf_normal.*leftmost dims"):
        nd.random_pdf_normal(nd.ones((2, 3)), nd.ones((3,)), nd.ones((3,)))
    with pytest.raises(GpundaError, match="random_pdf_gamma.*one shape"):
        nd.random_pdf_gamma(nd.ones((2, 3)), nd.ones((2,)), nd.ones((2, 3)))
    with pytest.raises(GpundaError, match="random_pdf_exponential.*one dtype"):
        nd.random_pdf_exponential(nd.ones((2, 3)), nd.ones((2,), dtype="float64"))
    with pytest.raises(GpundaError, match="random_pdf_dirichlet.*leftmost"):
        nd.random_pdf_dirichlet(nd.ones((2, 4, 3)), nd.ones((2, 2)))


def test_symbol_form():
    s = mx.sym.random_pdf_exponential(mx.sym.var("x"), mx.sym.var("lam"))
    out = s.eval(x=_nd(_X), lam=_nd(_A))[0].asnumpy()
    np.testing.assert_allclose(out, stats.expon.pdf(_X, scale=1 / _A[_E]), rtol=1e-10)
