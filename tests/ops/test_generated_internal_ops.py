"""MXNet 1.9.1's internal ops of ``nd/sym._internal`` and ``nd/sym.np._internal`` that its
generated op modules expose (issue 28): each checked against the answer real MXNet 1.9.1
gave for the same call (recorded below), NumPy, or finite differences; in ``nd`` and in
``sym`` (shape inference, JSON round trip)."""
from __future__ import annotations

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd
from gpunda.base import GpundaError

nd = mx.nd
I = nd._internal


@pytest.fixture
def npi():
    from gpunda import npx
    prev = npx.is_np_array()
    npx.set_np()
    yield mx.nd.np._internal
    if not prev:
        npx.reset_np()


def _np(x):
    return x.asnumpy()


# -- mx.np.linalg's ops ----------------------------------------------------------------

M3 = [[2., -1., 0.5], [-1., 3., 0.2], [0.5, 0.2, 1.]]


def test_npi_cholesky_value_and_gradient_match_mxnet(npi):
    from gpunda import np as mnp
    a = mnp.array(M3)
    a.attach_grad()
    with autograd.record():
        l = npi.cholesky(a)
        s = (l * mnp.arange(9.).reshape(3, 3)).sum()
    s.backward()
    np.testing.assert_allclose(_np(l), np.linalg.cholesky(np.array(M3)), rtol=1e-5)
    mx_grad = [[0.18214601, 1.21522057, 1.70185721], [1.21522057, 1.01190782, 1.40557432],
               [1.70185697, 1.40557408, 4.48900127]]     # MXNet 1.9.1
    np.testing.assert_allclose(_np(a.grad), mx_grad, rtol=1e-4, atol=1e-5)


def test_npi_eigh_eigvalsh_match_mxnet_with_zero_gradient(npi):
    from gpunda import np as mnp
    a = mnp.array(M3)
    w, v = npi.eigh(a)
    np.testing.assert_allclose(_np(w), [0.62525433, 1.75326622, 3.62147975], rtol=1e-5)
    np.testing.assert_allclose(_np(v), [[-0.50147164, 0.68162966, -0.53282934],
                                        [-0.28010845, 0.45478016, 0.84540772],
                                        [0.81857514, 0.57319802, -0.03712910]], atol=1e-5)
    # UPLO='U' reads the upper triangle: [[4, 7], [7, 3]] (MXNet 1.9.1's eigenvalues)
    b = mnp.array([[4., 7.], [2., 3.]])
    np.testing.assert_allclose(_np(npi.eigvalsh(b, UPLO="U")), [-3.5178344, 10.517834],
                               rtol=1e-5)
    np.testing.assert_allclose(_np(npi.eigvalsh(b)), [1.4384471, 5.561553], rtol=1e-5)
    a.attach_grad()
    with autograd.record():
        w, v = npi.eigh(a)
        s = (w * mnp.array([1., 2., 3.])).sum() + v.sum()
    s.backward()
    assert np.all(_np(a.grad) == 0)      # MXNet: MakeZeroGradNodes
    with pytest.raises(GpundaError, match="UPLO"):
        npi.eigh(a, UPLO="X")


# -- splits, where with scalars, insert, full_like, share_memory ------------------------

def test_npi_hsplit_dsplit_fix_their_axis_and_differentiate(npi):
    from gpunda import np as mnp
    x = mnp.arange(24.).reshape(2, 3, 4)
    # shapes MXNet 1.9.1 gave (axis=1 is ignored by dsplit, indices are starts)
    assert [t.shape for t in npi.hsplit(x, indices=(0, 1, 2), axis=1)] == [(2, 1, 4)] * 3
    assert [t.shape for t in npi.hsplit(mnp.arange(6.), indices=(), sections=3, axis=1)] \
        == [(2,)] * 3
    assert [t.shape for t in npi.dsplit(x, indices=(0, 1, 3), axis=2)] == \
        [(2, 3, 1), (2, 3, 2), (2, 3, 1)]
    parts = npi.dsplit(x, indices=(), sections=2, axis=1)
    np.testing.assert_array_equal(_np(parts[1]), np.arange(24.).reshape(2, 3, 4)[:, :, 2:])
    x.attach_grad()
    with autograd.record():
        p = npi.dsplit(x, indices=(0, 1), axis=2)
        (p[1] * 2).sum().backward()
    np.testing.assert_array_equal(_np(x.grad)[0], [[0, 2, 2, 2]] * 3)   # MXNet 1.9.1
    with pytest.raises(GpundaError, match="dsplit"):
        npi.dsplit(mnp.ones((2, 2)), indices=(0,))


def test_npi_where_scalar_forms(npi):
    from gpunda import np as mnp
    c, y = mnp.array([1, 0, 1]), mnp.array([5., 6., 7.])
    np.testing.assert_array_equal(_np(npi.where_lscalar(c, y, scalar=2.5)), [2.5, 6, 2.5])
    np.testing.assert_array_equal(_np(npi.where_rscalar(c, y, scalar=2.5)), [5, 2.5, 7])
    r = npi.where_scalar2(c, x=1.5, y=-2)
    assert r.dtype == np.float32
    np.testing.assert_array_equal(_np(r), [1.5, -2, 1.5])
    ri = npi.where_lscalar(mnp.array([1, 0, 1], dtype="int32"),
                           mnp.array([5, 6, 7], dtype="int32"), scalar=2.5)
    assert ri.dtype == np.int32 and _np(ri).tolist() == [2, 6, 2]      # MXNet 1.9.1
    # the gradient reaches y where y was chosen (finite differences of the forward)
    w = mnp.array([1., 2., 3.])
    for fn, want in ((npi.where_lscalar, [0, 2, 0]), (npi.where_rscalar, [1, 0, 3])):
        y.attach_grad()
        with autograd.record():
            (fn(c, y, scalar=2.5) * w).sum().backward()
        np.testing.assert_array_equal(_np(y.grad), want)


def test_npi_insert_ops_match_mxnet(npi):
    from gpunda import np as mnp
    arr = mnp.arange(6.).reshape(2, 3)
    np.testing.assert_array_equal(
        _np(npi.insert_scalar(arr, mnp.array([9.]), int_ind=1, axis=1)),
        [[0, 9, 1, 2], [3, 9, 4, 5]])
    np.testing.assert_array_equal(
        _np(npi.insert_slice(arr, mnp.array([9., 8.]), start=0, stop=2, step=1, axis=1)),
        [[9, 0, 8, 1, 2], [9, 3, 8, 4, 5]])
    np.testing.assert_array_equal(
        _np(npi.insert_tensor(arr, mnp.array([9., 8.]), mnp.array([0, 2], dtype="int64"),
                              axis=1)), [[9, 0, 1, 8, 2], [9, 3, 4, 8, 5]])
    np.testing.assert_array_equal(_np(npi.insert_scalar(arr, mnp.array([9.]), int_ind=1)),
                                  [0, 9, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(_np(npi.insert_scalar(arr, val=7., int_ind=1, axis=1)),
                                  np.insert(np.arange(6.).reshape(2, 3), 1, 7., axis=1))
    v = mnp.array([9., 8.])
    v.attach_grad()
    with autograd.record():
        r = npi.insert_slice(arr, v, start=0, stop=2, step=1, axis=1)
        (r * mnp.arange(10.).reshape(2, 5)).sum().backward()
    np.testing.assert_array_equal(_np(v.grad), [0 + 5, 2 + 7])


def test_npi_full_like_and_share_memory(npi):
    from gpunda import np as mnp
    x = mnp.arange(24.).reshape(2, 3, 4)
    r = npi.full_like(mnp.ones((2,), dtype="int32"), fill_value=2.7)
    assert r.dtype == np.int32 and _np(r).tolist() == [2, 2]            # MXNet 1.9.1
    assert _np(npi.full_like(x[0], fill_value=3.5)).tolist() == [[3.5] * 4] * 3
    a = mnp.ones((2,))
    a.attach_grad()
    with autograd.record():
        npi.full_like(a, fill_value=3.0).sum().backward()
    assert _np(a.grad).tolist() == [0, 0]
    assert [bool(npi.share_memory(x, t)) for t in (x, x[0], x.copy())] == [True, True, False]


# -- legacy and scatter ops ---------------------------------------------------------------

def test_linspace_op_and_sym_linspace_match_mxnet():
    np.testing.assert_array_equal(_np(I._linspace(start=0, stop=1, num=5)),
                                  [0, 0.25, 0.5, 0.75, 1])
    r = I._linspace(start=0, stop=1, num=5, endpoint=False, dtype="float64")
    assert r.dtype == np.float64 and np.allclose(_np(r), [0, .2, .4, .6, .8])
    s = mx.sym.linspace(0, 1, 5)
    node = __import__("json").loads(s.tojson())["nodes"][0]
    assert node["op"] == "_linspace" and node["attrs"] == {      # MXNet 1.9.1's JSON
        "dtype": "float32", "endpoint": "True", "num": "5", "start": "0", "stop": "1"}
    assert s.infer_shape()[1] == [(5,)] and s.infer_type()[1] == [np.float32]
    back = mx.sym.load_json(s.tojson())
    np.testing.assert_array_equal(_np(back.eval()[0]), [0, 0.25, 0.5, 0.75, 1])
    assert mx.sym.symbol.linspace is mx.sym.linspace


def test_zeros_without_dtype_set_value_onehot_encode():
    r = I._zeros_without_dtype(shape=(2, 3), dtype=6)
    assert r.dtype == np.int64 and r.shape == (2, 3) and not _np(r).any()
    with pytest.raises(GpundaError, match="type code"):
        I._zeros_without_dtype(shape=(2,), dtype=99)
    o = nd.zeros((2, 3))
    I._set_value(src=3.5, out=o)
    assert _np(o).tolist() == [[3.5] * 3] * 2
    I._set_value(2.0, out=o)
    assert _np(o).tolist() == [[2.0] * 3] * 2
    with pytest.raises(GpundaError, match="out="):
        I._set_value(src=1.0)
    np.testing.assert_array_equal(_np(I._onehot_encode(nd.array([0, 2, 1]), nd.zeros((3, 4)))),
                                  np.eye(4)[[0, 2, 1]])


def test_scatter_ops_dense_and_sparse_match_mxnet():
    a, b = nd.array([[1., 2.], [3., 4.]]), nd.array([[5., 6.], [7., 8.]])
    assert _np(I._scatter_plus_scalar(a, scalar=2)).tolist() == [[3, 4], [5, 6]]
    assert _np(I._scatter_minus_scalar(nd.array([1, 2], dtype="int32"), scalar=2.5)).tolist() \
        == [-1, 0]
    np.testing.assert_allclose(_np(I._scatter_elemwise_div(a, b)), _np(a) / _np(b), rtol=1e-6)
    rs = nd.sparse.row_sparse_array((nd.array([[1., 2.]]), nd.array([1])), shape=(3, 2))
    got = [I._scatter_plus_scalar(rs, scalar=1), I._scatter_minus_scalar(rs, scalar=1),
           I._scatter_elemwise_div(rs, nd.array([[2., 2.], [4., 4.], [8., 8.]]))]
    want = [[[0, 0], [2, 3], [0, 0]], [[0, 0], [0, 1], [0, 0]], [[0, 0], [.25, .5], [0, 0]]]
    for r, w in zip(got, want):                                        # MXNet 1.9.1
        assert r.stype == "row_sparse" and _np(r).tolist() == w
    csr = nd.sparse.csr_matrix((nd.array([1., 2.]), nd.array([0, 1]), nd.array([0, 1, 1, 2])),
                               shape=(3, 2))
    r = I._scatter_plus_scalar(csr, scalar=1)
    assert r.stype == "csr" and _np(r).tolist() == [[2, 0], [0, 0], [0, 3]]


def test_scatter_set_nd_writes_out_and_differentiates():
    o = nd.ones((2, 2))
    I._scatter_set_nd(lhs=o, rhs=nd.array([2., 3., 0.]), indices=nd.array([[1, 1, 0], [0, 1, 0]]),
                      shape=(2, 2), out=o)
    assert _np(o).tolist() == [[0, 1], [2, 3]]                         # MXNet 1.9.1
    lhs, rhs = nd.ones((2, 2)), nd.array([5., 6.])
    idx = nd.array([[0, 1], [1, 0]])
    lhs.attach_grad()
    rhs.attach_grad()
    with autograd.record():
        r = I._scatter_set_nd(lhs, rhs, idx, shape=(2, 2))
        (r * nd.array([[1., 2.], [3., 4.]])).sum().backward()
    assert _np(r).tolist() == [[1, 5], [6, 1]]
    assert _np(lhs.grad).tolist() == [[1, 0], [0, 4]] and _np(rhs.grad).tolist() == [2, 3]
    assert mx.nd.np._internal.scatter_set_nd is not None


def test_cross_device_copy_and_no_gradient():
    x = nd.array([1., 2.])
    x.attach_grad()
    with autograd.record():
        (I._CrossDeviceCopy(x) * 3).sum().backward()
    assert _np(x.grad).tolist() == [3, 3]
    with pytest.raises(GpundaError, match="_NoGradient"):
        I._NoGradient()


# -- OpenCV ops ---------------------------------------------------------------------------

def _png():
    cv2 = pytest.importorskip("cv2")
    img = (np.arange(4 * 5 * 3) * 7 % 256).astype(np.uint8).reshape(4, 5, 3)
    return img, cv2.imencode(".png", img)[1].reshape(-1)


def test_cv_ops_match_mxnet(tmp_path):
    img, enc = _png()
    buf = nd.array(enc, dtype="uint8")
    r = I._cvimdecode(buf)
    assert r.shape == (4, 5, 3) and r.dtype == np.uint8
    assert _np(r)[0, :2].tolist() == [[14, 7, 0], [35, 28, 21]]        # RGB, MXNet 1.9.1
    assert _np(I._cvimdecode(buf, to_rgb=0))[0, :2].tolist() == [[0, 7, 14], [21, 28, 35]]
    g = I._cvimdecode(buf, flag=0)
    assert g.shape == (4, 5, 1) and _np(g)[0, :3, 0].tolist() == [8, 29, 50]
    f = tmp_path / "t.png"
    f.write_bytes(enc.tobytes())
    np.testing.assert_array_equal(_np(I._cvimread(filename=str(f))), _np(r))
    s = nd.array(img, dtype="uint8")
    assert _np(I._cvimresize(s, w=3, h=2)).tolist() == [
        [[60, 67, 74], [95, 102, 109], [129, 136, 143]],
        [[142, 149, 156], [177, 56, 63], [83, 90, 97]]]                # MXNet 1.9.1
    assert _np(I._cvimresize(s, w=3, h=2, interp=0)).tolist() == [
        [[0, 7, 14], [21, 28, 35], [63, 70, 77]], [[210, 217, 224], [231, 238, 245], [17, 24, 31]]]
    b = I._cvcopyMakeBorder(s, top=1, bot=0, left=0, right=1, values=(1, 2, 3))
    assert b.shape == (5, 6, 3) and _np(b)[0].tolist() == [[1, 2, 3]] * 6
    b = I._cvcopyMakeBorder(s, top=1, bot=0, left=0, right=1, type=1)
    assert _np(b)[0].tolist() == [[0, 7, 14], [21, 28, 35], [42, 49, 56], [63, 70, 77],
                                  [84, 91, 98], [84, 91, 98]]
    d = I._imdecode(nd.ones((3, 4, 5)), x0=0, y0=0, x1=5, y1=4, c=3, size=enc.size,
                    str_img=enc.tobytes())
    np.testing.assert_array_equal(_np(d), np.transpose(img, (2, 0, 1)) - 1.0)  # BGR, CHW
    with pytest.raises(GpundaError, match="decode"):
        I._cvimdecode(buf[:10])
    x = mx.sym.var("x")
    assert mx.sym._internal._cvimresize(x, w=3, h=2).infer_shape(x=(4, 5, 3))[1] == [(2, 3, 3)]
    assert type(mx.nd.np._internal.cvimdecode(buf.as_np_ndarray())).__name__ == "ndarray"


# -- names that only say why they cannot work ---------------------------------------------

@pytest.mark.parametrize("ns, name", [
    ("nd", "_CachedOpThreadSafe"), ("sym", "_CustomFunction"), ("nd", "_broadcast_backward"),
    ("sym", "_split_v2_backward"), ("ndnp", "backward_polyval"), ("symnp", "hsplit_backward")])
def test_cpp_only_names_raise_naming_themselves(ns, name):
    mod = {"nd": nd._internal, "sym": mx.sym._internal, "ndnp": mx.nd.np._internal,
           "symnp": mx.sym.np._internal}[ns]
    with pytest.raises(GpundaError, match=name):
        getattr(mod, name)()


def test_new_ops_reach_symbol_json():
    x = mx.sym.var("x")
    s = mx.sym._internal._CrossDeviceCopy(mx.sym._internal._scatter_plus_scalar(x, scalar=2))
    back = mx.sym.load_json(s.tojson())
    out = back.eval(x=nd.array([1., 2.]))[0]
    assert _np(out).tolist() == [3, 4]
