"""mx.np.linalg against official NumPy, gradients against finite differences."""
import numpy as onp
import pytest

from gpunda import numpy as np
from _np_util import mxa, check_grad

rng = onp.random.RandomState(5)
M = rng.uniform(-1, 1, (3, 3))
SPD = M @ M.T + 3 * onp.eye(3)
W = rng.uniform(-1, 1, (2, 3))


@pytest.mark.parametrize("ord_,axis", [(None, None), ("fro", None), (1, None), (onp.inf, None),
                                       (-onp.inf, (0, 1)), (2, None), ("nuc", None), (None, 1),
                                       (1, 0), (3, 1), (0, 1), (onp.inf, -1)])
def test_norm(ord_, axis):
    r = np.linalg.norm(mxa(W), ord_, axis)
    onp.testing.assert_allclose(r.asnumpy(), onp.linalg.norm(W, ord_, axis), rtol=1e-6)


def test_norm_keepdims_and_gradient():
    x = rng.uniform(0.5, 1.5, (2, 3, 4))
    r = np.linalg.norm(mxa(x), axis=(1, 2), keepdims=True)
    onp.testing.assert_allclose(r.asnumpy(), onp.linalg.norm(x, axis=(1, 2), keepdims=True))
    check_grad(lambda a: np.linalg.norm(a), W)
    check_grad(lambda a: np.linalg.norm(a, 1, axis=1), W + 2)


def test_decompositions_match_numpy():
    onp.testing.assert_allclose(np.linalg.inv(mxa(SPD)).asnumpy(), onp.linalg.inv(SPD), rtol=1e-6)
    onp.testing.assert_allclose(float(np.linalg.det(mxa(M))), onp.linalg.det(M), rtol=1e-6)
    s, l = np.linalg.slogdet(mxa(M))
    es, el = onp.linalg.slogdet(M)
    assert float(s) == es and abs(float(l) - el) < 1e-6
    onp.testing.assert_allclose(np.linalg.cholesky(mxa(SPD)).asnumpy(), onp.linalg.cholesky(SPD),
                                rtol=1e-6)
    w, v = np.linalg.eigh(mxa(SPD))
    ew, ev = onp.linalg.eigh(SPD)
    onp.testing.assert_allclose(w.asnumpy(), ew, rtol=1e-6)
    onp.testing.assert_allclose(onp.abs(v.asnumpy()), onp.abs(ev), rtol=1e-5, atol=1e-8)
    onp.testing.assert_allclose(np.linalg.eigvalsh(mxa(SPD)).asnumpy(), ew, rtol=1e-6)
    onp.testing.assert_allclose(onp.sort(np.linalg.eigvals(mxa(SPD)).asnumpy()), ew, rtol=1e-6)
    b = rng.uniform(size=(3, 2))
    onp.testing.assert_allclose(np.linalg.solve(mxa(SPD), mxa(b)).asnumpy(),
                                onp.linalg.solve(SPD, b), rtol=1e-6)
    onp.testing.assert_allclose(np.linalg.solve(mxa(SPD), mxa(b[:, 0])).asnumpy(),
                                onp.linalg.solve(SPD, b[:, 0]), rtol=1e-6)
    onp.testing.assert_allclose(np.linalg.pinv(mxa(W)).asnumpy(), onp.linalg.pinv(W), rtol=1e-6)


def test_svd_is_mxnets_reduced_form():
    ut, l, v = np.linalg.svd(mxa(W))
    assert ut.shape == (2, 2) and l.shape == (2,) and v.shape == (2, 3)
    onp.testing.assert_allclose((ut.asnumpy() * l.asnumpy()) @ v.asnumpy(), W, atol=1e-10)
    onp.testing.assert_allclose(l.asnumpy(), onp.linalg.svd(W, compute_uv=False))
    with pytest.raises(Exception, match="rows <= columns"):
        np.linalg.svd(mxa(W.T))


def test_linalg_gradients():
    check_grad(lambda a: np.linalg.inv(a), SPD)
    check_grad(lambda a: np.linalg.det(a), M)
    check_grad(lambda a, b: np.linalg.solve(a, b), SPD, rng.uniform(size=(3, 2)))
    check_grad(lambda a, b: np.linalg.solve(a, b), SPD, rng.uniform(size=3))
    check_grad(lambda a: np.linalg.pinv(a), W, rtol=1e-3)
    check_grad(lambda a: np.linalg.svd(a)[1], W)


def test_tensorinv_tensorsolve_and_fallbacks():
    a = rng.uniform(size=(4, 6)) + onp.eye(4, 6)
    a = a @ a.T
    t = a.reshape(4, 2, 2)
    onp.testing.assert_allclose(np.linalg.tensorinv(mxa(t), 1).asnumpy(),
                                onp.linalg.tensorinv(t, 1), rtol=1e-6)
    b = rng.uniform(size=(4,))
    onp.testing.assert_allclose(np.linalg.tensorsolve(mxa(t), mxa(b)).asnumpy(),
                                onp.linalg.tensorsolve(t, b), rtol=1e-6)
    q, r = np.linalg.qr(mxa(M))
    onp.testing.assert_allclose(q.asnumpy() @ r.asnumpy(), M, atol=1e-12)
    assert isinstance(q, np.ndarray)
    assert int(np.linalg.matrix_rank(mxa(M))) == 3
    onp.testing.assert_allclose(np.linalg.matrix_power(mxa(M), 3).asnumpy(),
                                onp.linalg.matrix_power(M, 3))


@pytest.mark.parametrize("ord_,axis", [(None, None), (2, (0, 1)), ("nuc", (0, 1)), (1, (0, 1)),
                                       (onp.inf, (0, 1)), (1, 1), (3, 0), (onp.inf, 1)])
def test_norm_gradients(ord_, axis):
    x = onp.array([[1.0, -2.5, 0.5], [2.0, 1.0, -3.2]])
    check_grad(lambda a: np.linalg.norm(a, ord_, axis), x, rtol=1e-4)


def test_tensorinv_tensorsolve_gradients():
    a = SPD.copy()
    a4 = onp.kron(onp.eye(2), a[:2, :2]) + onp.eye(4)
    check_grad(lambda t: np.linalg.tensorinv(t, 1), a4.reshape(4, 2, 2))
    check_grad(lambda t, b: np.linalg.tensorsolve(t, b), a4.reshape(4, 2, 2), onp.ones(4))


def test_einsum_diagonal_gradient():
    check_grad(lambda a: np.einsum("ii->i", a), M)
    check_grad(lambda a, b: np.einsum("iij,j->i", a, b), rng.uniform(size=(2, 2, 3)), V3)
    onp.testing.assert_allclose(np.einsum("ii", mxa(M)).asnumpy(), onp.trace(M))


V3 = rng.uniform(size=3)


def test_eigh_of_integers_hybridized_computes_in_float64():
    # MXNet's np.linalg.eigh/eigvalsh compute integer input in float64, imperative or
    # hybridized (the graph's input dtype is unknown when it is built)
    import gpunda as mx
    a = onp.array([[2, 1, 0], [1, 3, 1], [0, 1, 4]], dtype=onp.uint8)

    class Eig(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.np.linalg.eigvalsh(x)

    with mx.util.np_shape(True), mx.util.np_array(True):
        blk = Eig()
        blk.hybridize()
        got = blk(mx.np.array(a, dtype="uint8"))
        imp = mx.np.linalg.eigvalsh(mx.np.array(a, dtype="uint8"))
    assert got.dtype == onp.float64 and imp.dtype == onp.float64
    onp.testing.assert_allclose(got.asnumpy(), onp.linalg.eigvalsh(a.astype(onp.float64)),
                               rtol=1e-12)
    onp.testing.assert_allclose(imp.asnumpy(), got.asnumpy(), rtol=1e-12)
