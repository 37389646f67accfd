"""dot, batch_dot and khatri_rao against NumPy, MXNet's shape rules, errors, and
gradients (first and second order) against central finite differences."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.test_utils import numeric_grad
from gpunda.base import GpundaError

nd = mx.nd


def _numeric_grads(f, xs, head, eps=1e-6):
    """Central differences of sum(f(*xs) * head), in float64."""
    return numeric_grad(f, xs, eps=2 * eps, dtype=np.float64, head_grads=[head])


def check_grad(f, xs, rng, rtol=1e-5, atol=1e-6):
    """Autograd gradients of f at xs equal central differences (random head gradient)."""
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    vs = [nd.array(x, dtype="float64") for x in xs]
    for v in vs:
        v.attach_grad()
    with mx.autograd.record():
        out = f(*vs)
    head = rng.standard_normal(out.shape)
    out.backward(nd.array(head, dtype="float64"))
    for v, e in zip(vs, _numeric_grads(f, xs, head)):
        np.testing.assert_allclose(v.grad.asnumpy(), e, rtol=rtol, atol=atol)


def _ref_dot(a, b, ta, tb):
    """MXNet's dot from its documented matrix-view rule, written with tensordot."""
    if a.ndim == 1 and b.ndim == 1:
        return np.array([np.dot(a, b)])
    if ta and a.ndim > 1:
        a = np.moveaxis(a, 0, -1)
    if tb and b.ndim > 1:
        b = np.moveaxis(b, -1, 0)
    return np.tensordot(a, b, axes=([-1], [0]))


_DOT_CASES = [
    ((3, 4), (4, 5), False, False),
    ((4, 3), (4, 5), True, False),
    ((3, 4), (5, 4), False, True),
    ((4, 3), (5, 4), True, True),
    ((2, 3, 4), (4, 5), False, False),
    ((2, 3, 4), (4, 2, 5), False, False),
    ((4, 2, 3), (4, 5), True, False),
    ((3, 4), (2, 5, 4), False, True),
    ((4,), (4, 3), False, False),
    ((4,), (3, 4), True, True),
    ((3, 4), (4,), False, False),
    ((4, 3), (4,), True, False),
    ((5,), (5,), False, False),
]


@pytest.mark.parametrize("ls,rs,ta,tb", _DOT_CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dot_matches_numpy(ls, rs, ta, tb, dtype, rng):
    a = rng.standard_normal(ls).astype(dtype)
    b = rng.standard_normal(rs).astype(dtype)
    got = nd.dot(nd.array(a, dtype=dtype), nd.array(b, dtype=dtype), transpose_a=ta,
                 transpose_b=tb)
    want = _ref_dot(a, b, ta, tb)
    assert got.shape == want.shape
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_dot_vector_shape_and_method():
    v = nd.array([1.0, 2.0, 3.0])
    r = nd.dot(v, v)
    assert r.shape == (1,)
    assert float(r.asnumpy()[0]) == 14.0
    m = nd.array(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal((m @ v).asnumpy(), [8, 26])
    np.testing.assert_array_equal(m.dot(v).asnumpy(), [8, 26])
    with mx.util.np_shape(True):
        assert nd.dot(v, v).shape == ()


def test_dot_errors():
    a, b = nd.ones((2, 3)), nd.ones((4, 5))
    with pytest.raises(GpundaError, match=r"dot.*\(2, 3\).*\(4, 5\)"):
        nd.dot(a, b)
    with pytest.raises(GpundaError, match=r"dot.*\(3,\).*\(4,\)"):
        nd.dot(nd.ones((3,)), nd.ones((4,)))
    with pytest.raises(GpundaError, match=r"dot.*transpose"):
        nd.dot(nd.ones((3,)), nd.ones((3,)), transpose_a=True)
    with pytest.raises(GpundaError, match=r"dot.*transpose_a"):
        nd.dot(a, b, transpose_a="nope")


def test_gemm_ops_are_marked_for_the_capture_safe_gemm():
    for name in ("dot", "batch_dot", "FullyConnected", "_fc_data_grad", "_fc_weight_grad",
                 "Convolution", "_conv_data_grad", "_conv_weight_grad", "Deconvolution"):
        assert mx.ops.get_op(name).capture == "gemm", name


@pytest.mark.parametrize("ls,rs,ta,tb", _DOT_CASES)
def test_dot_gradient(ls, rs, ta, tb, rng):
    check_grad(lambda a, b: nd.dot(a, b, transpose_a=ta, transpose_b=tb),
               [rng.standard_normal(ls), rng.standard_normal(rs)], rng)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_batch_dot(ta, tb, rng):
    a = rng.standard_normal((2, 4, 3) if ta else (2, 3, 4))
    b = rng.standard_normal((2, 5, 4) if tb else (2, 4, 5))
    got = nd.batch_dot(nd.array(a, dtype="float64"), nd.array(b, dtype="float64"),
                       transpose_a=ta, transpose_b=tb)
    a2 = a.transpose(0, 2, 1) if ta else a
    b2 = b.transpose(0, 2, 1) if tb else b
    np.testing.assert_allclose(got.asnumpy(), np.einsum("bij,bjk->bik", a2, b2))
    check_grad(lambda x, y: nd.batch_dot(x, y, transpose_a=ta, transpose_b=tb), [a, b], rng)


def test_batch_dot_errors():
    with pytest.raises(GpundaError, match=r"batch_dot.*\(2, 3, 4\).*\(2, 5, 6\)"):
        nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((2, 5, 6)))
    with pytest.raises(GpundaError, match=r"batch_dot.*\(3, 4\)"):
        nd.batch_dot(nd.ones((3, 4)), nd.ones((4, 3)))
    with pytest.raises(GpundaError, match=r"batch_dot.*\(2, 3, 4\).*\(3, 4, 2\)"):
        nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((3, 4, 2)))


def test_khatri_rao(rng):
    a, b, c = (rng.standard_normal((n, 3)) for n in (2, 4, 3))
    got = nd.khatri_rao(nd.array(a, dtype="float64"), nd.array(b, dtype="float64"),
                        nd.array(c, dtype="float64"))
    want = np.stack([np.kron(np.kron(a[:, r], b[:, r]), c[:, r]) for r in range(3)], axis=1)
    np.testing.assert_allclose(got.asnumpy(), want)
    np.testing.assert_allclose(nd.khatri_rao(nd.array(a, dtype="float64")).asnumpy(), a)
    with pytest.raises(GpundaError, match=r"khatri_rao.*arg1.*\(4, 2\)"):
        nd.khatri_rao(nd.ones((2, 3)), nd.ones((4, 2)))
    check_grad(lambda x, y, z: nd.khatri_rao(x, y, z), [a, b, c], rng)
    check_grad(lambda x, y: nd.khatri_rao(x, y), [a, b], rng)


def _second_order(f, xs, rng, wrt=0, rtol=1e-5, atol=1e-5):
    """d/dx_wrt sum(w * d f / d x_wrt) by create_graph against central differences."""
    w = rng.standard_normal(xs[wrt].shape)

    def h(arrs, attach_all):
        vs = [nd.array(x, dtype="float64") for x in arrs]
        for v in vs:
            v.attach_grad()
        with mx.autograd.record():
            y = f(*vs)
        g = mx.autograd.grad(y, [vs[wrt]], create_graph=True)[0]
        with mx.autograd.record():
            s = (g * nd.array(w, dtype="float64")).sum()
        return s, vs

    s, vs = h(xs, True)
    s.backward()
    eps = 1e-5
    for k, x in enumerate(xs):
        num = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            up = [a.copy() for a in xs]
            dn = [a.copy() for a in xs]
            up[k][i] += eps
            dn[k][i] -= eps
            num[i] = (float(h(up, False)[0].asnumpy()[0]) -
                      float(h(dn, False)[0].asnumpy()[0])) / (2 * eps)
        np.testing.assert_allclose(vs[k].grad.asnumpy(), num, rtol=rtol, atol=atol)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_dot_second_order(ta, tb, rng):
    a = rng.standard_normal((3, 2) if ta else (2, 3))
    b = rng.standard_normal((4, 3) if tb else (3, 4))
    # d/dA of <W, dL/dA> for L = sum(dot(A, B)^2) / 2 involves both A and B
    f = lambda x, y: (nd.dot(x, y, transpose_a=ta, transpose_b=tb) ** 2).sum() * 0.5  # noqa: E731
    _second_order(f, [a, b], rng, wrt=0)
    _second_order(f, [a, b], rng, wrt=1)


def test_dot_nd_and_batch_dot_second_order(rng):
    f = lambda x, y: (nd.dot(x, y) ** 2).sum()  # noqa: E731
    _second_order(f, [rng.standard_normal((2, 2, 3)), rng.standard_normal((3, 2))], rng)
    g = lambda x, y: (nd.batch_dot(x, y, transpose_b=True) ** 2).sum()  # noqa: E731
    _second_order(g, [rng.standard_normal((2, 2, 3)), rng.standard_normal((2, 2, 3))], rng, wrt=1)


@pytest.mark.gpu
def test_dot_on_gpu_matches_cpu(rng):
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4))
    res = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        x, y = nd.array(a, ctx=ctx, dtype="float64"), nd.array(b, ctx=ctx, dtype="float64")
        x.attach_grad()
        y.attach_grad()
        with mx.autograd.record():
            z = nd.dot(x, y, transpose_b=True)
        z.backward()
        res.append([z.asnumpy(), x.grad.asnumpy(), y.grad.asnumpy()])
    for c, g in zip(*res):
        np.testing.assert_allclose(g, c, rtol=1e-10)


# -- the linalg_* family ---------------------------------------------------------------


def _spd(rng, batch=(2,), n=3):
    m = rng.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _T(x):
    return np.swapaxes(x, -1, -2)


def _sym(v):
    """An SPD matrix built from v, so finite differences move A symmetrically."""
    return nd.linalg_gemm2(v, v, transpose_b=True) + _eye(v, 3)


def _eye(like, scale):
    return nd.array(scale * np.eye(like.shape[-1]), ctx=like.context, dtype="float64")


def test_linalg_values(rng):
    f = lambda x: nd.array(x, dtype="float64")  # noqa: E731
    a, b, c = (rng.standard_normal((2, 3, 3)) for _ in range(3))
    np.testing.assert_allclose(nd.linalg_gemm2(f(a), f(b), transpose_a=True, alpha=2.0).asnumpy(),
                               2 * _T(a) @ b)
    np.testing.assert_allclose(nd.linalg_gemm(f(a), f(b), f(c), transpose_b=True,
                                              beta=0.5).asnumpy(), a @ _T(b) + 0.5 * c)
    np.testing.assert_allclose(nd.linalg_syrk(f(a), alpha=0.5).asnumpy(), 0.5 * a @ _T(a))
    np.testing.assert_allclose(nd.linalg_syrk(f(a), transpose=True).asnumpy(), _T(a) @ a)
    s = _spd(rng)
    lo = np.linalg.cholesky(s)
    np.testing.assert_allclose(nd.linalg_potrf(f(s)).asnumpy(), lo)
    np.testing.assert_allclose(nd.linalg_potrf(f(s), lower=False).asnumpy(), _T(lo))
    np.testing.assert_allclose(nd.linalg_potri(f(lo)).asnumpy(), np.linalg.inv(s), rtol=1e-9)
    np.testing.assert_allclose(nd.linalg_potri(f(_T(lo)), lower=False).asnumpy(),
                               np.linalg.inv(s), rtol=1e-9)
    tl = np.tril(a)
    np.testing.assert_allclose(nd.linalg_trmm(f(a), f(b), alpha=2.0).asnumpy(), 2 * tl @ b)
    np.testing.assert_allclose(nd.linalg_trmm(f(a), f(b), rightside=True, transpose=True,
                                              lower=False).asnumpy(), b @ _T(np.triu(a)))
    x = nd.linalg_trsm(f(lo), f(b), alpha=3.0).asnumpy()
    np.testing.assert_allclose(lo @ x, 3 * b, atol=1e-10)
    x = nd.linalg_trsm(f(lo), f(b), rightside=True, transpose=True).asnumpy()
    np.testing.assert_allclose(x @ _T(lo), b, atol=1e-10)
    np.testing.assert_allclose(nd.linalg_sumlogdiag(f(s)).asnumpy(),
                               np.log(np.diagonal(s, axis1=1, axis2=2)).sum(-1))
    assert nd.linalg_sumlogdiag(f(s[0])).shape == (1,)
    np.testing.assert_allclose(nd.linalg_inverse(f(s)).asnumpy(), np.linalg.inv(s), rtol=1e-9)
    np.testing.assert_allclose(nd.linalg_det(f(a)).asnumpy(), np.linalg.det(a))
    sign, logdet = nd.linalg_slogdet(f(a))
    np.testing.assert_allclose(sign.asnumpy(), np.linalg.slogdet(a)[0])
    np.testing.assert_allclose(logdet.asnumpy(), np.linalg.slogdet(a)[1])
    np.testing.assert_allclose(nd.linalg_extractdiag(f(a), offset=1).asnumpy(),
                               np.diagonal(a, offset=1, axis1=1, axis2=2))
    np.testing.assert_allclose(nd.linalg_makediag(f(a[:, 0]), offset=-1).asnumpy()[1],
                               np.diag(a[1, 0], k=-1))
    np.testing.assert_allclose(nd.linalg_extracttrian(f(a), offset=-1).asnumpy(),
                               a[:, [1, 2, 2], [0, 0, 1]])
    np.testing.assert_allclose(nd.linalg_maketrian(nd.linalg_extracttrian(f(a), lower=False),
                                                   lower=False).asnumpy(), np.triu(a))


def test_linalg_errors():
    with pytest.raises(GpundaError, match=r"_linalg_gemm2.*\(2, 3\).*\(2, 3\)"):
        nd.linalg_gemm2(nd.ones((2, 3)), nd.ones((2, 3)))
    with pytest.raises(GpundaError, match=r"_linalg_potrf.*square.*\(2, 3\)"):
        nd.linalg_potrf(nd.ones((2, 3)))
    with pytest.raises(GpundaError, match=r"_linalg_trsm.*\(3, 3\).*\(2, 2\)"):
        nd.linalg_trsm(nd.ones((3, 3)), nd.ones((2, 2)))
    with pytest.raises(GpundaError, match=r"_linalg_gemm2.*axis=1"):
        nd.linalg_gemm2(nd.ones((2, 2)), nd.ones((2, 2)), axis=1)
    with pytest.raises(GpundaError, match=r"_linalg_maketrian.*4"):
        nd.linalg_maketrian(nd.ones((4,)))


_LA_GRADS = {
    "gemm2": ([(2, 3, 2), (2, 3, 4)],
              lambda a, b: nd.linalg_gemm2(a, b, transpose_a=True, alpha=1.5)),
    "gemm2_tb": ([(3, 2), (4, 2)], lambda a, b: nd.linalg_gemm2(a, b, transpose_b=True)),
    "gemm": ([(2, 3), (3, 4), (2, 4)], lambda a, b, c: nd.linalg_gemm(a, b, c, beta=-0.5)),
    "syrk": ([(2, 3, 2)], lambda a: nd.linalg_syrk(a, alpha=0.7)),
    "syrk_t": ([(3, 2)], lambda a: nd.linalg_syrk(a, transpose=True)),
    "trmm": ([(2, 3, 3), (2, 3, 2)], lambda a, b: nd.linalg_trmm(a, b, alpha=2.0)),
    "trmm_rt": ([(3, 3), (2, 3)], lambda a, b: nd.linalg_trmm(a, b, rightside=True,
                                                             transpose=True, lower=False)),
    "trsm": ([(3, 3), (3, 2)], lambda a, b: nd.linalg_trsm(a + _eye(a, 4), b)),
    "trsm_rt": ([(2, 3, 3), (2, 2, 3)], lambda a, b: nd.linalg_trsm(
        a + _eye(a, 4), b, rightside=True, transpose=True, alpha=0.5)),
    "potrf": ([(2, 3, 3)], lambda v: nd.linalg_potrf(_sym(v))),
    "potrf_upper": ([(3, 3)], lambda v: nd.linalg_potrf(_sym(v), lower=False)),
    "potri": ([(2, 3, 3)], lambda v: nd.linalg_potri(nd.linalg_potrf(_sym(v)))),
    "potri_upper": ([(3, 3)], lambda v: nd.linalg_potri(nd.linalg_potrf(_sym(v), lower=False),
                                                        lower=False)),
    "sumlogdiag": ([(2, 3, 3)], lambda v: nd.linalg_sumlogdiag(_sym(v))),
    "inverse": ([(2, 3, 3)], lambda v: nd.linalg_inverse(_sym(v))),
    "det": ([(2, 3, 3)], lambda a: nd.linalg_det(a)),
    "slogdet": ([(3, 3)], lambda a: nd.linalg_slogdet(a)[1]),
    "diag": ([(2, 3, 4)], lambda a: nd.linalg_makediag(nd.linalg_extractdiag(a, offset=1),
                                                       offset=-1)),
    "trian": ([(2, 3, 3)], lambda a: nd.linalg_maketrian(nd.linalg_extracttrian(a, offset=1))),
}


@pytest.mark.parametrize("name", sorted(_LA_GRADS))
def test_linalg_gradients(name, rng):
    shapes, f = _LA_GRADS[name]
    check_grad(f, [rng.standard_normal(s) for s in shapes], rng, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["gemm2", "trsm", "potrf", "inverse"])
def test_linalg_second_order(name, rng):
    shapes, f = _LA_GRADS[name]
    g = lambda *xs: (f(*xs) ** 2).sum()  # noqa: E731
    _second_order(g, [rng.standard_normal(s) for s in shapes], rng, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
def test_linalg_family_on_gpu_matches_cpu(rng):
    names = ["gemm", "trsm_rt", "potrf", "potri", "sumlogdiag", "inverse", "det", "slogdet",
             "diag", "trian"]
    for name in names:
        shapes, f = _LA_GRADS[name]
        xs = [rng.standard_normal(s) for s in shapes]
        res = []
        for ctx in (mx.cpu(), mx.gpu(0)):
            vs = [nd.array(x, ctx=ctx, dtype="float64") for x in xs]
            for v in vs:
                v.attach_grad()
            with mx.autograd.record():
                y = f(*vs)
            y.backward()
            res.append([y.asnumpy()] + [v.grad.asnumpy() for v in vs])
        for c, g in zip(*res):
            np.testing.assert_allclose(g, c, rtol=1e-8, atol=1e-10, err_msg=name)


def test_syevd_matches_mxnets_documented_examples():
    a = nd.array([[[1., 2.], [2., 4.]], [[1., 2.], [2., 5.]]], dtype="float64")
    u, lam = nd.linalg.syevd(a)
    np.testing.assert_allclose(u.asnumpy(), [[[0.89442719, -0.4472136], [0.4472136, 0.89442719]],
                                             [[0.92387953, -0.38268343],
                                              [0.38268343, 0.92387953]]], rtol=1e-7)
    np.testing.assert_allclose(lam.asnumpy(), [[0., 5.], [0.17157288, 5.82842712]],
                               rtol=1e-7, atol=1e-12)
    # A = U^T diag(L) U for a random symmetric matrix too
    rng = np.random.default_rng(3)
    m = rng.standard_normal((4, 4))
    m = m + m.T
    u, lam = nd.linalg.syevd(nd.array(m, dtype="float64"))
    u, lam = u.asnumpy(), lam.asnumpy()
    np.testing.assert_allclose(u.T @ np.diag(lam) @ u, m, atol=1e-12)
    assert (np.diff(lam) > 0).all()
    big = np.take_along_axis(u, np.abs(u).argmax(axis=1)[:, None], axis=1)
    assert (big > 0).all()
    with pytest.raises(GpundaError, match="syevd"):
        nd.linalg.syevd(nd.ones((2, 3)))


def test_gelqf_matches_mxnets_documented_example():
    q, l = nd.linalg.gelqf(nd.array([[1., 2., 3.], [4., 5., 6.]], dtype="float64"))
    np.testing.assert_allclose(q.asnumpy(), [[-0.26726124, -0.53452248, -0.80178373],
                                             [0.87287156, 0.21821789, -0.43643578]], rtol=1e-7)
    np.testing.assert_allclose(l.asnumpy(), [[-3.74165739, 0.], [-8.55235974, 1.96396101]],
                               rtol=1e-7)
    with pytest.raises(GpundaError, match="gelqf.*more rows than columns"):
        nd.linalg.gelqf(nd.ones((3, 2)))



@pytest.mark.parametrize("axis", [0, -3, 1])
def test_gemm2_row_axis(rng, axis):
    # MXNet's axis names the matrices' row axis; their columns are the last axis
    from gpunda import nd
    ax = axis % 4
    am, bm = rng.uniform(-1, 1, (2, 2, 3, 4)), rng.uniform(-1, 1, (2, 2, 5, 4))
    a, b = np.moveaxis(am, -2, ax), np.moveaxis(bm, -2, ax)
    want = np.moveaxis(4.0 * am @ np.swapaxes(bm, -1, -2), -2, ax)
    x = nd.array(a, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = nd.linalg.gemm2(x, nd.array(b, dtype="float64"), alpha=4.0, transpose_b=True,
                            axis=axis)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-12)
    y.backward(nd.ones(y.shape, dtype="float64"))
    want_g = np.moveaxis(4.0 * np.ones((2, 2, 3, 5)) @ bm, -2, ax)
    np.testing.assert_allclose(x.grad.asnumpy(), want_g, rtol=1e-12)
