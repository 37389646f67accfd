"""mx.np sorting, searching, statistics and MXNet's official-NumPy fallbacks."""
import numpy as onp
import pytest

from gpunda import numpy as np
from gpunda import autograd as ag
from _np_util import mxa, check_grad

rng = onp.random.RandomState(11)
X = rng.permutation(24).reshape(4, 6).astype(onp.float64)


def test_sort_argsort():
    for axis in (0, 1, -1, None):
        onp.testing.assert_allclose(np.sort(mxa(X), axis).asnumpy(), onp.sort(X, axis))
        onp.testing.assert_array_equal(np.argsort(mxa(X), axis).asnumpy(), onp.argsort(X, axis))
    check_grad(lambda a: np.sort(a, 1), X)
    check_grad(lambda a: np.sort(a, None), X[:2])


def test_unique_nonzero_argwhere():
    a = onp.array([3, 1, 2, 3, 1, 1], dtype=onp.int32)
    got = np.unique(mxa(a), return_index=True, return_inverse=True, return_counts=True)
    want = onp.unique(a, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        onp.testing.assert_array_equal(g.asnumpy(), w)
    m = onp.array([[0, 1, 0], [2, 0, 3]])
    for g, w in zip(np.nonzero(mxa(m)), onp.nonzero(m)):
        onp.testing.assert_array_equal(g.asnumpy(), w)
        assert g.dtype == onp.int64
    onp.testing.assert_array_equal(np.argwhere(mxa(m)).asnumpy(), onp.argwhere(m))
    onp.testing.assert_array_equal(np.flatnonzero(mxa(m)).asnumpy(), onp.flatnonzero(m))
    onp.testing.assert_array_equal(np.where(mxa(m))[1].asnumpy(), onp.where(m)[1])


def test_percentile_quantile_median():
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        onp.testing.assert_allclose(np.percentile(mxa(X), 30, axis=1, interpolation=method).asnumpy(),
                                    onp.percentile(X, 30, axis=1, method=method))
    q = onp.array([0.1, 0.5, 0.9])
    onp.testing.assert_allclose(np.quantile(mxa(X), mxa(q), axis=0).asnumpy(),
                                onp.quantile(X, q, axis=0))
    onp.testing.assert_allclose(np.median(mxa(X), axis=0).asnumpy(), onp.median(X, axis=0))
    with pytest.raises(ValueError):
        np.percentile(mxa(X), 120)


def test_histogram_bincount_average():
    h, e = np.histogram(mxa(X), bins=5, range=(0, 24))
    eh, ee = onp.histogram(X, bins=5, range=(0, 24))
    onp.testing.assert_array_equal(h.asnumpy(), eh)
    onp.testing.assert_allclose(e.asnumpy(), ee)
    edges = onp.array([0.0, 5.0, 10.0, 24.0])
    onp.testing.assert_array_equal(np.histogram(mxa(X), bins=mxa(edges))[0].asnumpy(),
                                   onp.histogram(X, bins=edges)[0])
    b = onp.array([0, 1, 1, 4], dtype=onp.int64)
    w = onp.array([0.5, 1.0, 2.0, 3.0])
    onp.testing.assert_array_equal(np.bincount(mxa(b), minlength=7).asnumpy(),
                                   onp.bincount(b, minlength=7))
    onp.testing.assert_allclose(np.bincount(mxa(b), mxa(w)).asnumpy(), onp.bincount(b, w))
    wt = onp.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    onp.testing.assert_allclose(np.average(mxa(X), axis=1, weights=mxa(wt)).asnumpy(),
                                onp.average(X, axis=1, weights=wt))
    avg, total = np.average(mxa(X), axis=0, weights=mxa(X + 1), returned=True)
    eavg, etotal = onp.average(X, axis=0, weights=X + 1, returned=True)
    onp.testing.assert_allclose(avg.asnumpy(), eavg)
    onp.testing.assert_allclose(total.asnumpy(), etotal)
    onp.testing.assert_allclose(float(np.average(mxa(X))), X.mean())
    check_grad(lambda a, w: np.average(a, axis=1, weights=w), X[:2] + 1, wt)


def test_diff_ediff1d_polyval():
    for n in (1, 2, 3):
        onp.testing.assert_allclose(np.diff(mxa(X), n, axis=0).asnumpy(), onp.diff(X, n, axis=0))
    check_grad(lambda a: np.diff(a, 2, axis=1), X[:2])
    onp.testing.assert_allclose(np.ediff1d(mxa(X), to_end=mxa(onp.array([9.0])),
                                           to_begin=mxa(onp.array([-1.0, -2.0]))).asnumpy(),
                                onp.ediff1d(X, to_end=[9.0], to_begin=[-1.0, -2.0]))
    p = onp.array([2.0, -1.0, 0.5])
    x = onp.array([[0.5, 1.5], [2.0, -1.0]])
    onp.testing.assert_allclose(np.polyval(mxa(p), mxa(x)).asnumpy(), onp.polyval(p, x))
    check_grad(lambda pp, xx: np.polyval(pp, xx), p, x)


def test_windows_and_index_helpers():
    for name in ("hanning", "hamming", "blackman"):
        r = getattr(np, name)(7)
        assert r.dtype == onp.float32
        onp.testing.assert_allclose(r.asnumpy(), getattr(onp, name)(7), atol=1e-6)
    idx = onp.array([1, 5, 7])
    for g, w in zip(np.unravel_index(mxa(idx), (2, 4)), onp.unravel_index(idx, (2, 4))):
        onp.testing.assert_array_equal(g.asnumpy(), w)
    for g, w in zip(np.diag_indices_from(mxa(onp.zeros((3, 3)))), onp.diag_indices_from(onp.zeros((3, 3)))):
        onp.testing.assert_array_equal(g.asnumpy(), w)
    a = mxa(X)
    assert np.shares_memory(a, a[1]) and not np.shares_memory(a, a.copy())


def test_fallbacks_run_numpy_on_the_host():
    a, b = mxa(X), mxa(X + 1e-9)
    assert np.allclose(a, b) is True
    c = np.cov(a)
    assert isinstance(c, np.ndarray) and c.context == a.context
    onp.testing.assert_allclose(c.asnumpy(), onp.cov(X))
    onp.testing.assert_allclose(np.interp(mxa(onp.array([1.5])), mxa(onp.array([1.0, 2.0])),
                                          mxa(onp.array([10.0, 20.0]))).asnumpy(), [15.0])
    onp.testing.assert_array_equal(np.searchsorted(mxa(onp.array([1.0, 3.0, 5.0])), 4.0), 2)
    a.attach_grad()
    with ag.record():
        with pytest.raises(ValueError, match="autograd"):
            np.cov(a)


def test_stats_gradients():
    x = onp.array([[1.0, 2.5, 0.5], [2.0, 1.0, 3.0]])
    check_grad(lambda a: np.ediff1d(a, to_end=mxa(onp.array([1.0])), to_begin=2.0), x)
    check_grad(lambda a, b: np.ediff1d(a, to_begin=b), x, onp.array([1.0, 2.0]))
    check_grad(lambda a, w: np.average(a, axis=0, weights=w, returned=True), x, x + 1)
    check_grad(lambda a: np.average(a, axis=1), x)


def test_unique_inverse_is_flat():
    # MXNet 1.9.1 (NumPy 1.x semantics): np.unique of a (4, 2) array with
    # return_inverse=True gives a flat (8,) inverse [1, 2, 2, 3, 1, 1, 0, 4]; NumPy 2
    # would give it the input's shape
    x = np.array([[1, 2], [2, 3], [1, 1], [0, 5]])
    u, inv = np.unique(x, return_inverse=True)
    assert inv.shape == (8,)
    assert inv.tolist() == [1, 2, 2, 3, 1, 1, 0, 4]
    assert np.unique(x, return_inverse=True, axis=0)[1].tolist() == [2, 3, 1, 0]
