"""Result dtypes and values MXNet 1.9.1 gives integer/bool inputs of legacy math, scalar
and reduction ops, and the storage types of a few sparse cases (found by difftest).

Every expected value was recorded from real MXNet 1.9.1 (the snippet is quoted)."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import nd

VALS = [-128, -3, -1, 0, 1, 2, 3, 10, 20, 30]


@pytest.mark.parametrize("dt, op, want", [
    # nd.exp(nd.array(VALS, dtype='float64').astype(dt)).asnumpy().tolist()
    ("int8", "exp", [0, 0, 0, 1, 2, 7, 20, 10, -117, 0]),
    ("uint8", "exp", [0, 0, 0, 1, 2, 7, 20, 10, 139, 0]),
    ("int32", "exp", [0, 0, 0, 1, 2, 7, 20, 22026, 485165195, -2147483648]),
    ("int64", "exp", [0, 0, 0, 1, 2, 7, 20, 22026, 485165195, 10686474581524]),
    ("int8", "sqrt", [0, 0, 0, 0, 1, 1, 1, 3, 4, 5]),
    ("uint8", "sqrt", [11, 15, 15, 0, 1, 1, 1, 3, 4, 5]),
    ("int32", "log", [-2147483648] * 4 + [0, 0, 1, 2, 2, 3]),
    ("int8", "degrees", [91, 85, -57, 0, 57, 114, -85, 60, 121, -74]),
    ("int64", "sigmoid", [0] * 10),
    ("int32", "erf", [-1, 0, 0, 0, 0, 0, 0, 1, 1, 1]),
    ("int64", "reciprocal", [0, 0, -1, -9223372036854775808, 1, 0, 0, 0, 0, 0]),
    ("int8", "gamma", [0, 0, 0, 0, 1, 1, 2, -128, 0, 0]),
])
def test_unary_math_keeps_integer_dtype(dt, op, want):
    x = nd.array(VALS, dtype="float64").astype(dt)
    with np.errstate(all="ignore"):
        y = getattr(nd, op)(x)
    assert y.dtype == np.dtype(dt)
    assert y.asnumpy().tolist() == want


@pytest.mark.parametrize("op, scalar, want", [
    # nd._internal.<op>(nd.array([1, 0, 1, 3]).astype('bool'), scalar=s): int64
    ("_div_scalar", 2.0, [0, 0, 0, 0]),
    ("_rdiv_scalar", 2.0, [2, -9223372036854775808, 2, 2]),
    ("_equal_scalar", 0.5, [0, 1, 0, 0]),
    ("_greater_scalar", 0.5, [1, 0, 1, 1]),
    ("_logical_xor_scalar", 2.0, [0, 1, 0, 0]),
    ("_minus_scalar", 2.0, [-1, -2, -1, -1]),
    ("_plus_scalar", 0.5, [1, 0, 1, 1]),
    ("_rpower_scalar", 0.5, [0, 1, 0, 0]),
    ("_mul_scalar", 2.0, [2, 0, 2, 2]),
])
def test_scalar_ops_on_bool_give_int64(op, scalar, want):
    x = nd.array([1, 0, 1, 3]).astype("bool")
    with np.errstate(all="ignore"):
        y = getattr(nd._internal, op)(x, scalar=scalar)
    assert y.dtype == np.int64
    assert y.asnumpy().tolist() == want


def test_scalar_ops_with_float_scalar_flag():
    # nd._internal._mul_scalar(int8 [1, 2], scalar=2.5, is_int=False) -> float64 [2.5, 5.]
    x = nd.array([1, 2], dtype="int8")
    y = nd._internal._mul_scalar(x, scalar=2.5, is_int=False)
    assert y.dtype == np.float64 and y.asnumpy().tolist() == [2.5, 5.0]
    # nd._internal._maximum_scalar(bool [1, 0], scalar=1.5, is_int=False) -> [1.5, 1.5]
    b = nd.array([1, 0]).astype("bool")
    y = nd._internal._maximum_scalar(b, scalar=1.5, is_int=False)
    assert y.dtype == np.float64 and y.asnumpy().tolist() == [1.5, 1.5]
    # the nd front end passes no is_int: int8 + 0.5 stays int8 [1, 2]
    assert (x + 0.5).dtype == np.int8 and (x + 0.5).asnumpy().tolist() == [1, 2]


def test_legacy_reductions_of_bool_stay_bool():
    # nd.mean/prod/sum(bool [[1,0,1],[1,1,1]], axis=1): bool [T, T], [F, T], [T, T]
    b = nd.array([[1, 0, 1], [1, 1, 1]]).astype("bool")
    assert nd.mean(b, axis=1).asnumpy().tolist() == [True, True]
    assert nd.prod(b, axis=1).asnumpy().tolist() == [False, True]
    assert nd.sum(b, axis=1).dtype == np.bool_


def test_integer_results_of_np_and_contrib_ops():
    # nd.contrib.div_sqrt_dim(int8 [[1,2,3,4],[5,6,7,8]]) -> int8 [[0,1,1,2],[2,3,3,4]]
    x = nd.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype="int8")
    y = nd.contrib.div_sqrt_dim(x)
    assert y.dtype == np.int8 and y.asnumpy().tolist() == [[0, 1, 1, 2], [2, 3, 3, 4]]
    # np.ldexp(int32 [1,2,3], int32 [1,2,40]) -> int32 [2, 8, -2147483648]
    r = mx.np.ldexp(mx.np.array([1, 2, 3], dtype="int32"), mx.np.array([1, 2, 40], dtype="int32"))
    assert r.dtype == np.int32 and r.asnumpy().tolist() == [2, 8, -2147483648]
    # np.trace(uint8 [[100,200,3],[4,200,6]]) -> uint8 44
    t = mx.np.trace(mx.np.array([[100, 200, 3], [4, 200, 6]], dtype="uint8"))
    assert t.dtype == np.uint8 and int(t) == 44
    # np.linalg.norm(int8 [[1,-2,3],[3,4,-5]], axis=-2) -> int8 [3, 4, 5]
    n = mx.np.linalg.norm(mx.np.array([[1, -2, 3], [3, 4, -5]], dtype="int8"), axis=-2)
    assert n.dtype == np.int8 and n.asnumpy().tolist() == [3, 4, 5]
    # np.linalg.eigvals(int8 [[1,2],[3,4]]).dtype -> float64
    assert mx.np.linalg.eigvals(mx.np.array([[1, 2], [3, 4]], dtype="int8")).dtype == np.float64


def test_windows_follow_mxnet_dtype_kernels():
    # np.hanning(3, dtype='int64') -> [0 0 0]; np.hanning(4) -> [0, 0.75, 0.74999994, 0]
    assert mx.np.hanning(3, dtype="int64").asnumpy().tolist() == [0, 0, 0]
    assert mx.np.hanning(4).asnumpy().tolist() == np.array(
        [0, 0.75, 0.74999994, 0], np.float32).tolist()
    assert mx.np.hanning(1, dtype="int32").asnumpy().tolist() == [1]


def test_signsgd_ignores_rescale_grad():
    # nd.signsgd_update(w, g, lr=0.1, rescale_grad=-1.0) -> [0.0, -0.1, 0.2, 0.5, -0.5]
    w = nd.array([0.1, -0.2, 0.3, 0.4, -0.5])
    g = nd.array([0.5, -0.5, 0.2, -0.1, 0.0])
    y = nd.signsgd_update(w, g, lr=0.1, rescale_grad=-1.0)
    np.testing.assert_allclose(y.asnumpy(), [0.0, -0.1, 0.2, 0.5, -0.5], atol=1e-7)


def test_sparse_storage_of_ste_random_like_and_quadratic():
    d = nd.array([[0, 1], [0, 0], [2, 3]])
    rsp, csr = d.tostype("row_sparse"), d.tostype("csr")
    # nd.contrib.round_ste(rsp * 1.4) is row_sparse [[0, 1], [0, 0], [3, 4]]; csr stays csr
    for a in (rsp, csr):
        y = nd.contrib.round_ste(a * 1.4)
        assert y.stype == a.stype and y.asnumpy().tolist() == [[0, 1], [0, 0], [3, 4]]
        assert nd.contrib.sign_ste(a).stype == a.stype
    # nd.random.uniform_like(rsp) is row_sparse with every row stored
    y = nd.random.uniform_like(rsp)
    assert y.stype == "row_sparse" and y.indices.asnumpy().tolist() == [0, 1, 2]
    assert (y.asnumpy() > 0).all()
    # nd.contrib.quadratic(csr, a=1, b=1, c=0) is csr [[0, 2], [0, 0], [6, 12]]; c=1 dense
    q = nd.contrib.quadratic(csr, a=1, b=1, c=0)
    assert q.stype == "csr" and q.asnumpy().tolist() == [[0, 2], [0, 0], [6, 12]]
    assert nd.contrib.quadratic(csr, a=1, b=1, c=1).stype == "default"


def test_repeat_zero_is_empty_1d():
    # nd.repeat(nd.array([[1,2],[3,4]]), repeats=0, axis=1).shape -> (0,)
    assert nd.repeat(nd.array([[1, 2], [3, 4]]), repeats=0, axis=1).shape == (0,)
    assert nd.repeat(nd.array([[1, 2], [3, 4]]), repeats=0).shape == (0,)


def test_adamw_rescales_grad_in_place():
    # MXNet: nd._internal._adamw_update(w, g, m, v, nd.array([2.0]), lr=0.1, eta=0.5)
    # leaves g = [0.2, -0.8, 0.6] and m = [0.11, 0.01, 0.15]
    w, g = nd.array([0.5, 0.2, -0.3]), nd.array([0.1, -0.4, 0.3])
    m, v = nd.array([0.1, 0.1, 0.1]), nd.array([0.2, 0.2, 0.2])
    y = nd._internal._adamw_update(w, g, m, v, nd.array([2.0]), lr=0.1, eta=0.5)
    np.testing.assert_allclose(g.asnumpy(), [0.2, -0.8, 0.6], rtol=1e-6)
    np.testing.assert_allclose(m.asnumpy(), [0.11, 0.01, 0.15], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(y.asnumpy(), [0.48769671, 0.19888321, -0.31676382], rtol=1e-6)


def test_clip_with_a_min_above_a_max():
    # nd.clip(nd.array([0, 1, 2, 3], dtype='int32'), a_min=2.0, a_max=1.0) -> [2, 2, 1, 1]
    y = nd.clip(nd.array([0, 1, 2, 3], dtype="int32"), a_min=2.0, a_max=1.0)
    assert y.asnumpy().tolist() == [2, 2, 1, 1]


@pytest.mark.parametrize("op", ["abs", "negative", "exp", "sqrt", "relu", "round", "gamma"])
def test_unary_ops_refuse_bool(op):
    # MXNet 1.9.1: every legacy unary op on nd.array([1, 0]).astype('bool') raises MXNetError
    with pytest.raises(mx.GpundaError, match=op):
        getattr(nd, op)(nd.array([1, 0]).astype("bool"))
