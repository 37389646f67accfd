"""gpunda.ndarray.functions: MXNet's module-level NDArray functions, against NumPy and
against values printed by MXNet 1.9.1."""
import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

nd = mx.nd


@pytest.mark.parametrize("name,np_fn", [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide), ("true_divide", np.true_divide), ("modulo", np.mod),
    ("power", np.power), ("maximum", np.maximum), ("minimum", np.minimum),
    ("equal", np.equal), ("not_equal", np.not_equal), ("greater", np.greater),
    ("greater_equal", np.greater_equal), ("lesser", np.less), ("lesser_equal", np.less_equal),
    ("logical_and", np.logical_and), ("logical_or", np.logical_or),
    ("logical_xor", np.logical_xor)])
def test_two_operand_functions_take_arrays_and_scalars_on_either_side(name, np_fn):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 3, (2, 3)).round(1)
    y = rng.uniform(0.5, 3, (1, 3)).round(1)
    fn = getattr(nd, name)
    assert getattr(nd.ndarray, name) is fn          # also mxnet.ndarray.ndarray.<name>
    X, Y = nd.array(x, dtype="float64"), nd.array(y, dtype="float64")
    np.testing.assert_allclose(fn(X, Y).asnumpy(), np_fn(x, y).astype(np.float64), rtol=1e-12)
    np.testing.assert_allclose(fn(X, 2.0).asnumpy(), np_fn(x, 2.0).astype(np.float64), rtol=1e-12)
    np.testing.assert_allclose(fn(2.0, X).asnumpy(), np_fn(2.0, x).astype(np.float64), rtol=1e-12)
    assert fn(3.0, 2.0) == np_fn(3.0, 2.0)
    with pytest.raises(TypeError, match="not supported"):
        fn(X, "a")


def test_scalar_pairs_give_python_values():
    # MXNet 1.9.1 prints these
    assert nd.maximum(2, 5) == 5 and nd.equal(1, 1) == 1 and nd.greater(1, 2) == 0
    assert nd.subtract(10, nd.array([1, 2])).asnumpy().tolist() == [9, 8]
    assert nd.greater(3, nd.array([1, 5])).asnumpy().tolist() == [1, 0]
    assert nd.power(2, nd.array([1, 3])).asnumpy().tolist() == [2, 8]


def test_linspace_against_numpy():
    for start, stop, num in ((0.0, 1.0, 5), (3.5, -7.25, 11), (2.0, 2.0, 1), (0, 1, 0)):
        for endpoint in (True, False):
            np.testing.assert_allclose(nd.linspace(start, stop, num, endpoint=endpoint).asnumpy(),
                                       np.linspace(start, stop, num, endpoint=endpoint),
                                       rtol=1e-6)
    assert nd.linspace(0, 10, 4, endpoint=False, dtype="int32").asnumpy().tolist() == [0, 2, 5, 7]
    with pytest.raises(GpundaError, match="num"):
        nd.linspace(0, 1, -1)


def test_eye_against_numpy():
    for n, m, k in ((3, 0, 0), (3, 4, 1), (4, 2, -1), (2, 5, 7)):
        np.testing.assert_array_equal(nd.eye(n, m, k).asnumpy(), np.eye(n, m or None, k))
    assert nd.eye(2, dtype="int32").dtype == np.int32


@pytest.mark.parametrize("src,dst", [(0, 2), (-1, 0), ([0, 1], [2, 3]), ([3, 0], [1, 0]),
                                     (range(4), range(4)), ([2, 0], [0, 3])])
def test_moveaxis_against_numpy(src, dst):
    x = np.arange(24.0).reshape(1, 2, 3, 4)
    np.testing.assert_array_equal(nd.moveaxis(nd.array(x), src, dst).asnumpy(),
                                  np.moveaxis(x, src, dst))


@pytest.mark.parametrize("src,dst", [(3, 0), (-4, 0), (0, 5), ([0, 0], [0, 1]), ([0, 1], [1, 1]),
                                     (0, [0, 1]), ([0, 1], [0])])
def test_moveaxis_bad_axes_raise_value_error(src, dst):
    with pytest.raises(ValueError):
        nd.moveaxis(nd.ones((1, 2, 3)), src, dst)


def test_split_v2_against_numpy():
    x = np.arange(30.0).reshape(5, 6)
    for ios, axis in ((3, 1), ((1, 3, 5), 1), ((2,), 0), (1, 0)):
        got = nd.split_v2(nd.array(x), ios, axis=axis)
        got = got if isinstance(got, list) else [got]
        want = np.split(x, ios if isinstance(ios, int) else list(ios), axis=axis)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.asnumpy(), w)
    parts = nd.array(x).split_v2(5, axis=0, squeeze_axis=True)
    assert [p.shape for p in parts] == [(6,)] * 5
    with pytest.raises(GpundaError, match="divide"):
        nd.split_v2(nd.array(x), 4, axis=1)


def test_split_v2_is_differentiable():
    x = nd.array(np.arange(6.0).reshape(2, 3))
    x.attach_grad()
    with mx.autograd.record():
        a, b = nd.split_v2(x, (1,), axis=1)
        y = (a * 2).sum() + (b * 3).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[2, 3, 3], [2, 3, 3]])


def test_from_numpy_shares_memory_and_locks_the_source():
    src = np.arange(6, dtype=np.int64).reshape(3, 2)
    a = nd.from_numpy(src)
    assert a.dtype == np.int64 and a.shape == (3, 2)
    with pytest.raises(ValueError):
        src[0, 0] = 9                               # MXNet makes the source read-only
    a[2, 1] = 100
    assert src[2, 1] == 100                         # the same memory
    copy_src = np.ones((2, 2), np.float32)
    b = nd.from_numpy(copy_src, zero_copy=False)
    b[0, 0] = 5
    assert copy_src[0, 0] == 1 and copy_src.flags.writeable
    with pytest.raises(ValueError, match="contiguous"):
        nd.from_numpy(np.ones((2, 3)).T)


def test_dlpack_capsules_round_trip():
    a = nd.array(np.arange(12.0).reshape(3, 4))
    want = a.asnumpy()
    for cap in (a.to_dlpack_for_read(), nd.to_dlpack_for_write(a)):
        b = nd.from_dlpack(cap)
        np.testing.assert_array_equal(b.asnumpy(), want)
        with pytest.raises(GpundaError, match="only once"):
            nd.from_dlpack(cap)
    c = nd.from_dlpack(a.to_dlpack_for_write())
    c[0, 0] = -1
    assert a[0, 0].asscalar() == -1                # shared memory
    del a
    assert c[1, 1].asscalar() == 5                  # the import keeps the memory alive


def test_zeros_and_ones_write_into_out():
    out = nd.full((2, 2), 7.0)
    assert nd.ones((2, 2), out=out) is out and out.asnumpy().tolist() == [[1, 1], [1, 1]]
    assert nd.zeros((2, 2), out=out) is out and out.asnumpy().tolist() == [[0, 0], [0, 0]]
    with pytest.raises(GpundaError, match="shape"):
        nd.ones((3,), out=out)


def test_contrib_isinf_isfinite_isnan():
    x = np.array([1.0, np.inf, -np.inf, np.nan, 0.0], np.float32)
    a = nd.array(x)
    np.testing.assert_array_equal(nd.contrib.isinf(a).asnumpy(), np.isinf(x))
    np.testing.assert_array_equal(nd.contrib.isfinite(a).asnumpy(), np.isfinite(x))
    np.testing.assert_array_equal(nd.contrib.isnan(a).asnumpy(), np.isnan(x))


def test_cached_op_is_in_nd():
    op = nd.CachedOp(mx.sym.var("x") * 2)
    assert op(nd.ones((2,))).asnumpy().tolist() == [2, 2]


def test_histogram_against_numpy():
    x = np.array([0.1, 0.5, 0.5, 2.0, 3.9, 4.0, -1], np.float32)
    counts, edges = nd.histogram(nd.array(x), bins=4, range=(0, 4))
    want_c, want_e = np.histogram(x, bins=4, range=(0, 4))
    assert counts.dtype == np.int64 and counts.asnumpy().tolist() == want_c.tolist()
    np.testing.assert_allclose(edges.asnumpy(), want_e)
    counts, edges = nd.histogram(nd.array(x), bins=nd.array([0, 1, 2.5, 4]))
    assert counts.asnumpy().tolist() == np.histogram(x, bins=[0, 1, 2.5, 4])[0].tolist()
    counts, edges = nd.histogram(nd.array(x), bins=3)        # no range: NumPy's (min, max)
    assert counts.asnumpy().tolist() == np.histogram(x, bins=3)[0].tolist()
    with pytest.raises(ValueError, match="bins"):
        nd.histogram(nd.array(x), bins="auto")


def test_utils_and_generated_module_names():
    import scipy.sparse as sp
    assert nd.utils.array(sp.csr_matrix(np.eye(3))).stype == "csr"
    assert nd.utils.array([1, 2]).stype == "default"
    assert nd.utils.empty((2, 2), stype="row_sparse").stype == "row_sparse"
    assert nd.utils.zeros((2,)).asnumpy().tolist() == [0, 0]
    assert nd.gen_op.dot is nd.dot and nd.gen_linalg is nd.linalg


def test_reset_arrays_zeroes_every_array_in_place():
    rng = np.random.default_rng(0)
    arrs = [mx.nd.array(rng.standard_normal(s), dtype=t)
            for s, t in (((2, 3), "float32"), ((4,), "float64"), ((1, 2, 2), "float16"))]
    ids = [id(a) for a in arrs]
    assert mx.nd.reset_arrays(*arrs, num_arrays=3) == []
    for a, i in zip(arrs, ids):
        assert id(a) == i and not a.asnumpy().any()
    with pytest.raises(mx.GpundaError, match="num_arrays=2 but 3"):
        mx.nd.reset_arrays(*arrs, num_arrays=2)
    with pytest.raises(mx.base.NotImplementedForGpunda, match="reset_arrays"):
        mx.sym.reset_arrays(mx.sym.var("a"), num_arrays=1)
