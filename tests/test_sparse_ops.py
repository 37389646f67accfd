"""Sparse kernels, storage dispatch/fallback and autograd through sparse ops,
checked against dense NumPy (and finite differences where gradients are new)."""
import logging

import numpy as np
import pytest
import scipy.sparse as sps

import gpunda as mx
from gpunda import nd, autograd
from gpunda.base import GpundaError
from gpunda.ndarray.sparse import CSRNDArray, RowSparseNDArray
from gpunda.ops.registry import get_op


def _csr(rng, shape, density=0.4, dtype=np.float32):
    m = sps.random(*shape, density=density, format="csr", dtype=np.float64, random_state=rng)
    m = m.astype(dtype)
    m.data -= dtype(0.5)
    return m


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _rsp_dense(rng, shape, rows):
    d = np.zeros(shape, np.float32)
    d[rows] = rng.standard_normal((len(rows),) + tuple(shape[1:]))
    return d


# -- dot ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(6, 5), (1, 7), (8, 1), (5, 5)])
def test_dot_csr_dense(rng, shape):
    m = _csr(rng, shape)
    m = m.tolil()
    m[min(2, shape[0] - 1)] = 0     # an empty row
    m = m.tocsr()
    a = nd.sparse.csr_matrix(m)
    b = _rand(rng, shape[1], 3)
    y = nd.dot(a, nd.array(b))
    assert y.stype == "default"
    np.testing.assert_allclose(y.asnumpy(), m.toarray() @ b, rtol=1e-5, atol=1e-6)
    v = _rand(rng, shape[1])
    np.testing.assert_allclose(nd.dot(a, nd.array(v)).asnumpy(), m.toarray() @ v, rtol=1e-5, atol=1e-6)
    c = _rand(rng, shape[0], 4)
    t = nd.dot(a, nd.array(c), transpose_a=True)
    assert isinstance(t, RowSparseNDArray)
    np.testing.assert_allclose(t.asnumpy(), m.toarray().T @ c, rtol=1e-5, atol=1e-6)
    assert t.indices.asnumpy().tolist() == sorted(set(m.indices.tolist()))
    t.check_format()


def test_dot_dense_csr_and_transposes(rng):
    m = _csr(rng, (5, 4))
    a = nd.sparse.csr_matrix(m)
    d = _rand(rng, 3, 5)
    y = nd.dot(nd.array(d), a)
    assert y.stype == "default"
    np.testing.assert_allclose(y.asnumpy(), d @ m.toarray(), rtol=1e-5, atol=1e-6)
    e = _rand(rng, 3, 4)
    np.testing.assert_allclose(nd.dot(nd.array(e), a, transpose_b=True).asnumpy(),
                               e @ m.toarray().T, rtol=1e-5, atol=1e-6)
    f = _rand(rng, 5, 2)
    np.testing.assert_allclose(nd.dot(nd.array(f), a, transpose_a=True).asnumpy(),
                               f.T @ m.toarray(), rtol=1e-5, atol=1e-6)
    # csr x row_sparse -> dense
    r = _rsp_dense(rng, (4, 3), [0, 3])
    np.testing.assert_allclose(nd.dot(a, nd.array(r).tostype("row_sparse")).asnumpy(),
                               m.toarray() @ r, rtol=1e-5, atol=1e-6)
    # forward_stype converts the result
    assert isinstance(nd.dot(nd.array(d), a, forward_stype="csr"), CSRNDArray)


def test_dot_bad_inputs(rng):
    a = nd.sparse.csr_matrix(_csr(rng, (4, 3)))
    with pytest.raises(GpundaError, match=r"Operator dot: shape mismatch: lhs shape \(4, 3\)"):
        nd.dot(a, nd.ones((4, 2)))
    with pytest.raises(GpundaError, match="lhs dtype float32 and rhs dtype float64"):
        nd.dot(a, nd.ones((3, 2), dtype="float64"))
    h = a.astype("float16")
    assert h.stype == "csr" and h.dtype == np.float16
    with pytest.raises(GpundaError, match="Operator dot: input lhs: csr dtype float16 is not "
                                          "supported by scipy.sparse"):
        nd.dot(h, nd.ones((3, 2), dtype="float16"))


# -- element-wise ------------------------------------------------------------------------

def test_add_sub_mul_keep_sparse(rng):
    da, db = _rsp_dense(rng, (6, 2), [0, 2, 5]), _rsp_dense(rng, (6, 2), [2, 3])
    ra, rb = nd.array(da).tostype("row_sparse"), nd.array(db).tostype("row_sparse")
    for y, ref, st in ((ra + rb, da + db, "row_sparse"), (ra - rb, da - db, "row_sparse"),
                       (nd.elemwise_add(ra, rb), da + db, "row_sparse"),
                       (nd.sparse.subtract(ra, rb), da - db, "row_sparse"),
                       (ra * rb, da * db, "row_sparse"),
                       (ra + nd.array(db), da + db, "default"),
                       (nd.array(db) - ra, db - da, "default"),
                       (ra * nd.array(db), da * db, "row_sparse")):
        assert y.stype == st
        np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-6)
    assert (ra + rb).indices.asnumpy().tolist() == [0, 2, 3, 5]
    ma, mb = _csr(rng, (4, 5)), _csr(rng, (4, 5))
    ca, cb = nd.sparse.csr_matrix(ma), nd.sparse.csr_matrix(mb)
    for y, ref, st in ((ca + cb, ma + mb, "csr"), (ca - cb, ma - mb, "csr"),
                       (nd.sparse.multiply(ca, cb), ma.multiply(mb), "csr"),
                       (ca * nd.array(mb.toarray()), ma.multiply(mb), "csr"),
                       (ca + nd.array(mb.toarray()), ma + mb, "default")):
        assert y.stype == st
        np.testing.assert_allclose(y.asnumpy(), np.asarray(ref.toarray() if hasattr(ref, "toarray")
                                                           else ref), rtol=1e-6)
        if st == "csr":
            y.check_format()
    ra += rb    # in place keeps the storage
    assert ra.stype == "row_sparse"
    np.testing.assert_allclose(ra.asnumpy(), da + db, rtol=1e-6)


@pytest.mark.parametrize("name,ref", [
    ("sqrt", np.sqrt), ("square", np.square), ("abs", np.abs), ("sign", np.sign),
    ("relu", lambda x: np.maximum(x, 0)), ("negative", np.negative), ("tanh", np.tanh),
    ("expm1", np.expm1), ("floor", np.floor)])
def test_zero_preserving_unary_keep_stype(rng, name, ref):
    d = _rsp_dense(rng, (5, 3), [1, 4])
    if name == "sqrt":
        d = np.abs(d)
    for st in ("csr", "row_sparse"):
        y = getattr(nd, name)(nd.array(d).tostype(st))
        assert y.stype == st
        np.testing.assert_allclose(y.asnumpy(), ref(d), rtol=1e-6)


def test_scalar_ops_and_clip(rng):
    d = _rsp_dense(rng, (5, 3), [0, 3])
    for st in ("csr", "row_sparse"):
        x = nd.array(d).tostype(st)
        for y, ref in ((x * 3, d * 3), (2.5 * x, d * 2.5), (x / 2, d / 2), (-x, -d)):
            assert y.stype == st
            np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-6)
        assert nd.clip(x, -0.5, 0.5).stype == st
        np.testing.assert_allclose(nd.clip(x, 0.1, 0.5).asnumpy(), np.clip(d, 0.1, 0.5))
        assert nd.clip(x, 0.1, 0.5).stype == "default"   # zeros change: dense
        z = nd.zeros_like(x)
        assert z.stype == st and z.asnumpy().sum() == 0


# -- reductions and sparse-only ops -------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_csr_sum_mean(rng, axis, keepdims):
    m = _csr(rng, (4, 6))
    a = nd.sparse.csr_matrix(m)
    d = m.toarray()
    for name, f in (("sum", np.sum), ("mean", np.mean)):
        y = getattr(nd, name)(a, axis=axis, keepdims=keepdims)
        ref = np.asarray(f(d, axis=axis, keepdims=keepdims), np.float32)
        if ref.ndim == 0:
            ref = ref.reshape(1)
        assert y.stype == "default" and y.shape == ref.shape
        np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-6)
    y = nd.sum(a, axis=0, exclude=True)
    np.testing.assert_allclose(y.asnumpy(), d.sum(axis=1), rtol=1e-5)


def test_retain(rng):
    d = _rsp_dense(rng, (6, 2), [0, 2, 3, 5])
    x = nd.array(d).tostype("row_sparse")
    y = nd.sparse.retain(x, nd.array([5, 1, 2]))
    assert isinstance(y, RowSparseNDArray) and y.indices.asnumpy().tolist() == [2, 5]
    ref = np.zeros_like(d)
    ref[[2, 5]] = d[[2, 5]]
    np.testing.assert_array_equal(y.asnumpy(), ref)
    assert x.retain(nd.array([], dtype="int64")).indices.shape == (0,)
    dense = nd._sparse_retain(nd.array(d), nd.array([5, 1, 2]))   # dense in, dense out
    assert dense.stype == "default"
    np.testing.assert_array_equal(dense.asnumpy(), ref)


@pytest.mark.parametrize("axis,keepdims,st", [(1, True, "row_sparse"), (1, False, "default"),
                                              (0, False, "default"), (None, False, "default"),
                                              (0, True, "default")])
def test_square_sum(rng, axis, keepdims, st):
    d = _rsp_dense(rng, (5, 3), [1, 2, 4])
    x = nd.array(d).tostype("row_sparse")
    y = nd._square_sum(x, axis=axis, keepdims=keepdims)
    ref = np.sum(d * d, axis=axis, keepdims=keepdims).astype(np.float32).reshape(y.shape)
    assert y.stype == st
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(nd._square_sum(nd.array(d), axis=axis, keepdims=keepdims).asnumpy(),
                               ref, rtol=1e-5)
    # gradient: 2 x, row_sparse for a row_sparse input
    x.attach_grad(stype="row_sparse")
    with autograd.record():
        z = nd.sum(nd._square_sum(x, axis=axis, keepdims=keepdims) * 3)
    z.backward()
    assert x.grad.stype == "row_sparse"
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * d, rtol=1e-5)


# -- dispatch: fallback, logging, out=, contexts -------------------------------------------

def test_fallback_computes_dense_and_logs_once(rng, caplog, monkeypatch):
    from gpunda.ndarray import sparse as sp_mod
    monkeypatch.setattr(sp_mod, "_fallback_logged", set())
    d = _rsp_dense(rng, (4, 3), [1, 3])
    x = nd.array(d).tostype("csr")
    with caplog.at_level(logging.WARNING, logger="gpunda"):
        y = nd.exp(x)
        nd.exp(x)
    assert y.stype == "default"
    np.testing.assert_allclose(y.asnumpy(), np.exp(d), rtol=1e-6)
    msgs = [r.getMessage() for r in caplog.records if "exp" in r.getMessage()]
    assert len(msgs) == 1 and "(csr)" in msgs[0] and "falling back" in msgs[0]
    # where with a sparse condition falls back too
    c = nd.array((d > 0).astype(np.float32)).tostype("row_sparse")
    w = nd.where(c, nd.ones((4, 3)), nd.zeros((4, 3)))
    np.testing.assert_array_equal(w.asnumpy(), (d > 0).astype(np.float32))


def test_fallback_log_can_be_silenced(rng, caplog, monkeypatch):
    from gpunda.ndarray import sparse as sp_mod
    monkeypatch.setattr(sp_mod, "_fallback_logged", set())
    monkeypatch.setenv("GPUNDA_STORAGE_FALLBACK_LOG", "0")
    x = nd.array(_rsp_dense(rng, (3, 2), [1])).tostype("row_sparse")
    with caplog.at_level(logging.WARNING, logger="gpunda"):
        nd.cos(x)
    assert not [r for r in caplog.records if "cos" in r.getMessage()]


def test_op_table_lookup():
    from gpunda.ndarray.sparse import find_kernel
    dot = get_op("dot")
    assert find_kernel(dot, ("csr", "default")) is dot.sparse[("csr", "default")]
    assert find_kernel(dot, ("row_sparse", "row_sparse")) is None
    sgd = get_op("sgd_mom_update")
    assert find_kernel(sgd, ("default", "row_sparse", "default")) is not None


def test_out_and_context_errors(rng):
    d = _rsp_dense(rng, (4, 3), [0, 2])
    x = nd.array(d).tostype("row_sparse")
    o = nd.zeros((4, 3), stype="row_sparse")
    r = nd.elemwise_add(x, x, out=o)
    assert r is o and o.stype == "row_sparse"
    np.testing.assert_allclose(o.asnumpy(), 2 * d)
    dense_out = nd.zeros((4, 3))
    nd.elemwise_add(x, x, out=dense_out)
    np.testing.assert_allclose(dense_out.asnumpy(), 2 * d)
    y = x.copyto(mx.cpu(1))
    with pytest.raises(GpundaError, match=r"is on cpu\(1\) but input .* is on cpu\(0\)"):
        nd.elemwise_add(x, y)


# -- autograd --------------------------------------------------------------------------------

def test_dot_gradients_have_mxnet_stypes(rng):
    m = _csr(rng, (5, 4))
    a = nd.sparse.csr_matrix(m)
    A = m.toarray()
    wn = _rand(rng, 4, 3)
    for st in ("row_sparse", "default"):
        w = nd.array(wn)
        w.attach_grad(stype=st)
        with autograd.record():
            z = nd.sum(nd.dot(a, w) ** 2)
        z.backward()
        assert w.grad.stype == st
        np.testing.assert_allclose(w.grad.asnumpy(), A.T @ (2 * A @ wn), rtol=1e-4, atol=1e-5)
    # autograd.grad: dot(csr, w) wrt w is row_sparse when the buffer is
    w = nd.array(wn)
    w.attach_grad(stype="row_sparse")
    with autograd.record():
        z = nd.sum(nd.dot(a, w))
    g = autograd.grad(z, [w])[0]
    assert isinstance(g, RowSparseNDArray)
    np.testing.assert_allclose(g.asnumpy(), A.T @ np.ones((5, 3)), rtol=1e-5)
    # transpose_a: gradient wrt the dense side is dense (MXNet)
    vn = _rand(rng, 5, 2)
    v = nd.array(vn)
    v.attach_grad()
    with autograd.record():
        z = nd.sum(nd.dot(a, v, transpose_a=True) * 2)
    z.backward()
    np.testing.assert_allclose(v.grad.asnumpy(), A @ (2 * np.ones((4, 2))), rtol=1e-5)
    # dense lhs, csr rhs
    un = _rand(rng, 2, 5)
    u = nd.array(un)
    u.attach_grad()
    with autograd.record():
        z = nd.sum(nd.dot(u, a) ** 2)
    z.backward()
    np.testing.assert_allclose(u.grad.asnumpy(), (2 * un @ A) @ A.T, rtol=1e-4, atol=1e-5)


def test_gradient_wrt_csr_input_matches_finite_differences(rng):
    m = _csr(rng, (3, 4), density=0.5)
    a = nd.sparse.csr_matrix(m)
    a.attach_grad()
    wn = _rand(rng, 4, 2)
    with autograd.record():
        z = nd.sum(nd.dot(a, nd.array(wn)) ** 2)
    z.backward()
    A = m.toarray().astype(np.float64)
    ref = 2 * (A @ wn) @ wn.T
    assert a.grad.stype == "csr"    # as MXNet: the gradient takes the array's stype
    np.testing.assert_allclose(a.grad.asnumpy(), ref, rtol=1e-4, atol=1e-5)
    # the same by central differences on one entry
    i, j, eps = 1, 2, 1e-3
    f = lambda A_: float(((A_ @ wn) ** 2).sum())   # noqa: E731
    Ap, Am = A.copy(), A.copy()
    Ap[i, j] += eps
    Am[i, j] -= eps
    assert abs((f(Ap) - f(Am)) / (2 * eps) - a.grad.asnumpy()[i, j]) < 1e-2


def test_second_order_through_sparse_dot(rng):
    m = _csr(rng, (5, 4))
    a = nd.sparse.csr_matrix(m)
    A = m.toarray().astype(np.float64)
    wn = _rand(rng, 4, 3)
    w = nd.array(wn)
    w.attach_grad()
    with autograd.record():
        z = nd.sum(nd.dot(a, w) ** 2)
        gw = autograd.grad(z, [w], create_graph=True)[0]
        s = nd.sum(gw * gw)
    np.testing.assert_allclose(gw.asnumpy(), 2 * A.T @ A @ wn, rtol=1e-4, atol=1e-5)
    s.backward()
    M = A.T @ A
    np.testing.assert_allclose(w.grad.asnumpy(), 8 * M.T @ M @ wn, rtol=1e-4, atol=1e-4)


def test_gradients_through_elemwise_and_cast(rng):
    d1, d2 = _rsp_dense(rng, (5, 2), [0, 3]), _rsp_dense(rng, (5, 2), [3, 4])
    x = nd.array(d1).tostype("row_sparse")
    y = nd.array(d2).tostype("row_sparse")
    x.attach_grad(stype="row_sparse")
    y.attach_grad()
    with autograd.record():
        z = nd.sum((x - y) * 2 + nd.abs(x))
    z.backward()
    # as MXNet, attach_grad() without stype gives the array's own stype
    assert x.grad.stype == "row_sparse" and y.grad.stype == "row_sparse"
    np.testing.assert_allclose(x.grad.asnumpy(), 2 + np.sign(d1), rtol=1e-6)
    np.testing.assert_allclose(y.grad.asnumpy(), -2 * np.ones((5, 2)), rtol=1e-6)
    v = nd.array(d1)
    v.attach_grad()
    with autograd.record():
        z = nd.sum(v.tostype("csr") * 3)
    z.backward()
    np.testing.assert_allclose(v.grad.asnumpy(), 3 * np.ones((5, 2)))


def test_broadcast_gradient_through_fallback(rng):
    d = _rsp_dense(rng, (4, 3), [0, 2])
    x = nd.array(d).tostype("row_sparse")
    b = nd.array(_rand(rng, 1, 3))
    b.attach_grad()
    with autograd.record():
        z = nd.sum(nd.broadcast_add(x, b) * 2)
    z.backward()
    np.testing.assert_allclose(b.grad.asnumpy(), np.full((1, 3), 8.0))


def test_retain_gradient(rng):
    d = _rsp_dense(rng, (5, 2), [0, 1, 3])
    x = nd.array(d).tostype("row_sparse")
    x.attach_grad(stype="row_sparse")
    with autograd.record():
        z = nd.sum(nd.sparse.retain(x, nd.array([1, 3, 4])) * 5)
    z.backward()
    ref = np.zeros((5, 2), np.float32)
    ref[[1, 3, 4]] = 5
    np.testing.assert_array_equal(x.grad.asnumpy(), ref)


# -- Embedding and optimizers ----------------------------------------------------------------

def test_embedding_sparse_grad(rng):
    wn = _rand(rng, 10, 4)
    idx = np.array([[1, 3], [3, 7]], np.float32)
    ref = np.zeros_like(wn)
    for i in idx.reshape(-1).astype(int):
        ref[i] += 2 * wn[i]
    for st, sparse_grad in (("row_sparse", True), ("default", True), ("row_sparse", False)):
        w = nd.array(wn)
        w.attach_grad(stype=st)
        with autograd.record():
            z = nd.sum(nd.Embedding(nd.array(idx), w, input_dim=10, output_dim=4,
                                    sparse_grad=sparse_grad) ** 2)
        z.backward()
        assert w.grad.stype == st
        np.testing.assert_allclose(w.grad.asnumpy(), ref, rtol=1e-6)
        if st == "row_sparse":
            assert w.grad.indices.asnumpy().tolist() == [1, 3, 7]


def _opt_case(rng):
    wn = _rand(rng, 6, 3)
    gd = _rsp_dense(rng, (6, 3), [1, 4])
    return wn, gd, nd.array(gd).tostype("row_sparse")


def test_sgd_lazy_update_touches_only_present_rows(rng):
    wn, gd, g = _opt_case(rng)
    w = nd.array(wn)
    nd.sgd_update(w, g, lr=0.1, wd=0.01, rescale_grad=0.5, out=w)
    ref = wn.copy()
    ref[[1, 4]] = (1 - 0.1 * 0.01) * wn[[1, 4]] - 0.1 * 0.5 * gd[[1, 4]]
    np.testing.assert_allclose(w.asnumpy(), ref, rtol=1e-6)
    # lazy_update=False: a standard (dense) update, weight decay on every row
    w2 = nd.array(wn)
    nd.sgd_update(w2, g, lr=0.1, wd=0.01, rescale_grad=0.5, lazy_update=False, out=w2)
    np.testing.assert_allclose(w2.asnumpy(), (1 - 0.001) * wn - 0.05 * gd, rtol=1e-6)


def test_sgd_mom_and_adam_lazy(rng):
    wn, gd, g = _opt_case(rng)
    rows = [1, 4]
    w, mom = nd.array(wn), nd.ones((6, 3))
    nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9, wd=0.01, out=w)
    mref = np.ones((6, 3), np.float32)
    mref[rows] = 0.9 - 0.1 * 0.01 * wn[rows] - 0.1 * gd[rows]
    wref = wn.copy()
    wref[rows] += mref[rows]
    np.testing.assert_allclose(mom.asnumpy(), mref, rtol=1e-5)
    np.testing.assert_allclose(w.asnumpy(), wref, rtol=1e-5)
    w, mean, var = nd.array(wn), nd.ones((6, 3)), nd.ones((6, 3))
    nd.adam_update(w, g, mean, var, lr=0.01, beta1=0.9, beta2=0.99, epsilon=1e-8, wd=0.1, out=w)
    gr = gd[rows] + 0.1 * wn[rows]
    mr, vr = 0.9 + 0.1 * gr, 0.99 + 0.01 * gr * gr
    wref = wn.copy()
    wref[rows] -= 0.01 * mr / (np.sqrt(vr) + 1e-8)
    np.testing.assert_allclose(w.asnumpy(), wref, rtol=1e-5)
    mean_ref = np.ones((6, 3), np.float32)
    mean_ref[rows] = mr
    np.testing.assert_allclose(mean.asnumpy(), mean_ref, rtol=1e-5)


# -- GPU ---------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_kernels_match_numpy(rng):
    ctx = mx.gpu(0)
    m = _csr(rng, (6, 5))
    a = nd.sparse.csr_matrix(m, ctx=ctx)
    b = _rand(rng, 5, 3)
    np.testing.assert_allclose(nd.dot(a, nd.array(b, ctx=ctx)).asnumpy(), m.toarray() @ b,
                               rtol=1e-5, atol=1e-5)
    c = _rand(rng, 6, 2)
    t = nd.dot(a, nd.array(c, ctx=ctx), transpose_a=True)
    assert t.stype == "row_sparse"
    np.testing.assert_allclose(t.asnumpy(), m.toarray().T @ c, rtol=1e-5, atol=1e-5)
    d = _rand(rng, 2, 6)
    np.testing.assert_allclose(nd.dot(nd.array(d, ctx=ctx), a).asnumpy(), d @ m.toarray(),
                               rtol=1e-5, atol=1e-5)
    r = nd.array(_rsp_dense(rng, (6, 2), [1, 5]), ctx=ctx).tostype("row_sparse")
    np.testing.assert_allclose((r + r).asnumpy(), 2 * r.asnumpy())
    np.testing.assert_allclose(nd.sum(a, axis=1).asnumpy(), m.toarray().sum(axis=1), rtol=1e-5)
    w = nd.array(b, ctx=ctx)
    w.attach_grad(stype="row_sparse")
    with autograd.record():
        z = nd.sum(nd.dot(a, w) ** 2)
    z.backward()
    A = m.toarray()
    np.testing.assert_allclose(w.grad.asnumpy(), A.T @ (2 * A @ b), rtol=1e-4, atol=1e-4)


def test_fallback_writes_back_mutated_sparse_state(rng):
    # sgd_mom_update with a row_sparse momentum has no kernel: the dense update runs on
    # a densified copy of mom, which must land back in the row_sparse array
    wn, gn = _rand(rng, 4, 2), _rand(rng, 4, 2)
    mom = nd.sparse.zeros("row_sparse", (4, 2))
    w = nd.array(wn)
    nd.sgd_mom_update(w, nd.array(gn), mom, lr=0.5, momentum=0.9, out=w)
    assert mom.stype == "row_sparse"
    np.testing.assert_allclose(mom.asnumpy(), -0.5 * gn, rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), wn - 0.5 * gn, rtol=1e-6)


def test_dense_op_into_sparse_out(rng):
    d = _rsp_dense(rng, (4, 3), [1, 2])
    o = nd.sparse.zeros("row_sparse", (4, 3))
    nd.elemwise_add(nd.array(d), nd.array(d), out=o)
    assert o.stype == "row_sparse" and o.indices.asnumpy().tolist() == [1, 2]
    np.testing.assert_allclose(o.asnumpy(), 2 * d)


try:
    from hypothesis import given, settings, strategies as st
except ImportError:     # pragma: no cover
    given = None

if given is not None:
    @settings(max_examples=25, deadline=None)
    @given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4), st.floats(0.0, 1.0),
           st.integers(0, 2 ** 31))
    def test_property_dot_and_round_trips(rows, cols, k, density, seed):
        r = np.random.default_rng(seed)
        d = r.standard_normal((rows, cols)).astype(np.float32)
        d[r.random((rows, cols)) > density] = 0
        b = r.standard_normal((cols, k)).astype(np.float32)
        c = r.standard_normal((rows, k)).astype(np.float32)
        a = nd.array(d).tostype("csr")
        np.testing.assert_allclose(nd.dot(a, nd.array(b)).asnumpy(), d @ b, rtol=1e-4, atol=1e-5)
        t = nd.dot(a, nd.array(c), transpose_a=True)
        np.testing.assert_allclose(t.asnumpy(), d.T @ c, rtol=1e-4, atol=1e-5)
        t.check_format()
        for s1 in ("csr", "row_sparse"):
            for s2 in ("csr", "row_sparse", "default"):
                np.testing.assert_array_equal(a.tostype(s1).tostype(s2).asnumpy(), d)
