"""mx.np element-wise functions against official NumPy; MXNet's np dtype rules."""
import numpy as onp
import pytest

from gpunda import numpy as np
from gpunda.base import MXNetError
from _np_util import mxa, check_grad

X = onp.array([[0.3, 0.7, 1.2], [1.9, 0.5, 0.9]])

UNARY = ["abs", "negative", "reciprocal", "square", "sqrt", "cbrt", "exp", "expm1", "log",
         "log1p", "log2", "log10", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh",
         "cosh", "tanh", "arcsinh", "arctanh", "degrees", "radians", "floor", "ceil",
         "rint", "trunc", "fix", "sign"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_numpy(name):
    x = X / 2 if name in ("arcsin", "arccos", "arctanh") else X
    for dt in ("float32", "float64"):
        r = getattr(np, name)(mxa(x, dt))
        assert r.dtype == onp.dtype(dt)
        onp.testing.assert_allclose(r.asnumpy(), getattr(onp, name)(x.astype(dt)), rtol=1e-5)


@pytest.mark.parametrize("name", ["sin", "exp", "log1p", "tanh", "arctan", "cbrt", "sqrt"])
def test_unary_gradients(name):
    check_grad(getattr(np, name), X)


def test_unary_dtypes_follow_mxnet():
    # observed on MXNet 1.9.1: unary math keeps the input dtype for ints; a bool input
    # raises once the result is read (mx.np.exp(mx.np.array([True, False], dtype='bool'))
    # .asnumpy() -> MXNetError: Unknown type enum 7)
    assert np.sin(mxa([1, 2], "int32")).dtype == onp.int32
    with pytest.raises(MXNetError):
        np.exp(mxa([True, False])).asnumpy()
    onp.testing.assert_array_equal(np.sqrt(mxa([4, 9], "int32")).asnumpy(), [2, 3])
    assert np.isnan(mxa([1.0, onp.nan])).asnumpy().tolist() == [False, True]


BINARY = ["add", "subtract", "multiply", "true_divide", "mod", "power", "maximum", "minimum",
          "hypot", "arctan2", "copysign", "fmax", "fmin"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcasts_like_numpy(name):
    a = onp.array([[1.5, 2.0, 3.0], [0.5, 1.0, 2.5]])
    b = onp.array([0.7, 1.3, 2.1])
    r = getattr(np, name)(mxa(a), mxa(b))
    onp.testing.assert_allclose(r.asnumpy(), getattr(onp, name)(a, b), rtol=1e-6)
    rs = getattr(np, name)(mxa(a), 1.5)
    onp.testing.assert_allclose(rs.asnumpy(), getattr(onp, name)(a, 1.5), rtol=1e-6)
    rr = getattr(np, name)(1.5, mxa(a))
    onp.testing.assert_allclose(rr.asnumpy(), getattr(onp, name)(1.5, a), rtol=1e-6)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "true_divide", "power",
                                  "maximum", "hypot", "arctan2", "mod"])
def test_binary_gradients_with_broadcasting(name):
    a = onp.array([[1.5, 2.0, 3.0], [0.5, 1.0, 2.5]])
    b = onp.array([[0.7, 1.3, 2.1]])
    check_grad(getattr(np, name), a, b)


def test_scalar_gradients():
    a = onp.array([[1.5, 2.0], [0.5, 1.0]])
    check_grad(lambda x: np.power(x, 2.5), a)
    check_grad(lambda x: np.true_divide(3.0, x), a)
    check_grad(lambda x: np.subtract(2.0, x), a)


@pytest.mark.parametrize("da,db,expected", [
    ("int32", "float32", "float32"), ("int32", "float64", "float64"),
    ("int32", "int64", "int64"), ("bool", "int32", "int32"), ("bool", "float32", "float32"),
    ("float16", "float32", "float32"), ("bool", "bool", "bool")])
def test_mixed_dtype_promotion_follows_mxnet(da, db, expected):
    # MXNet 1.9.1's np promotion (NOTE [np dtype rules]), not NumPy's (int32 + float32 is
    # float64 there)
    a = mxa(onp.array([1, 0, 1]).astype(da))
    b = mxa(onp.array([1, 1, 0]).astype(db))
    r = np.add(a, b)
    assert r.dtype == onp.dtype(expected)
    onp.testing.assert_array_equal(r.asnumpy(), (onp.array([1, 0, 1]) + onp.array([1, 1, 0])
                                                 ).astype(expected))


def test_mixed_dtypes_mxnet_refuses():
    # MXNet 1.9.1: each of these raises MXNetError once read, e.g.
    # (mx.np.array([1, 2], dtype='int8') + mx.np.array([1, 2], dtype='uint8')).asnumpy()
    i8, u8 = mxa([1, 2], "int8"), mxa([1, 2], "uint8")
    b, i32, f16, f32 = mxa([True, False]), mxa([1, 2], "int32"), mxa([1, 2], "float16"), \
        mxa([1, 2], "float32")
    for f in (lambda: np.add(i8, u8), lambda: np.subtract(b, b), lambda: np.subtract(i8, i32),
              lambda: np.true_divide(f16, f32), lambda: np.true_divide(i8, i32),
              lambda: np.maximum(i32, f32), lambda: np.hypot(i32, i32),
              lambda: np.arctan2(b, b), lambda: np.copysign(b, b), lambda: np.mod(b, b)):
        with pytest.raises(MXNetError):
            f().asnumpy()
    # ... while broadcasting takes two integer dtypes: mx.np.subtract(int8 (2, 2), int32 (2,))
    # is int32, and lcm takes bool operands of one shape (lcm(True, True) is True)
    r = np.subtract(mxa([[5, 6], [7, 8]], "int8"), i32)
    assert r.dtype == onp.int32 and r.asnumpy().tolist() == [[4, 4], [6, 6]]
    r = np.lcm(b, mxa([True, True]))
    assert r.dtype == onp.bool_ and r.asnumpy().tolist() == [True, False]


def test_scalar_dtype_rules():
    i = mxa([1, 2, 3], "int32")
    assert np.add(i, 2.5).dtype == onp.int32          # the array's dtype wins
    assert np.true_divide(i, 2).dtype == onp.float32  # int / int -> float32
    onp.testing.assert_allclose(np.true_divide(i, 2).asnumpy(), [0.5, 1.0, 1.5])
    assert np.multiply(mxa([True, False]), 2).dtype == onp.int64
    b = mxa([True, False, True])
    assert np.multiply(b, b).dtype == onp.bool_ and np.true_divide(b, b).dtype == onp.float32


def test_comparisons_and_logic():
    a, b = onp.array([1.0, 2.0, 3.0]), onp.array([2.0, 2.0, 2.0])
    for name in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
                 "logical_and", "logical_or", "logical_xor"):
        r = getattr(np, name)(mxa(a), mxa(b))
        assert r.dtype == onp.bool_
        onp.testing.assert_array_equal(r.asnumpy(), getattr(onp, name)(a, b))
        onp.testing.assert_array_equal(getattr(np, name)(mxa(a), 2.0).asnumpy(),
                                       getattr(onp, name)(a, 2.0))
    assert np.logical_not(mxa(a - 2)).asnumpy().tolist() == [False, True, False]


def test_bitwise():
    a, b = onp.array([5, 3, 12], dtype=onp.int32), onp.array([3, 6, 10], dtype=onp.int32)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "lcm", "gcd"):
        onp.testing.assert_array_equal(getattr(np, name)(mxa(a), mxa(b)).asnumpy(),
                                       getattr(onp, name)(a, b))
    onp.testing.assert_array_equal(np.bitwise_not(mxa(a)).asnumpy(), onp.invert(a))
    onp.testing.assert_array_equal(np.invert(mxa([True, False])).asnumpy(), [False, True])


def test_clip_around_nan_to_num():
    x = onp.array([-1.25, 0.5, 2.675, 3.5])
    onp.testing.assert_allclose(np.clip(mxa(x), 0, 3).asnumpy(), onp.clip(x, 0, 3))
    onp.testing.assert_allclose(np.clip(mxa(x), None, 1).asnumpy(), onp.clip(x, None, 1))
    with pytest.raises(ValueError):
        np.clip(mxa(x), None, None)
    onp.testing.assert_allclose(np.around(mxa(x), 1).asnumpy(), onp.around(x, 1))
    onp.testing.assert_allclose(np.round(mxa([0.5, 1.5, 2.5])).asnumpy(), [0.0, 2.0, 2.0])
    y = onp.array([onp.nan, onp.inf, -onp.inf, 1.0])
    onp.testing.assert_allclose(np.nan_to_num(mxa(y)).asnumpy(), onp.nan_to_num(y))
    check_grad(lambda v: np.nan_to_num(v), onp.array([1.0, 2.0]))


def test_scalars_only_use_numpy():
    assert np.add(1, 2) == 3
    assert np.sqrt(4.0) == 2.0


def test_comparisons_record_zero_gradients():
    from gpunda import autograd as ag
    x = mxa(onp.array([1.0, 2.0]))
    x.attach_grad()
    with ag.record():
        y = np.add(np.multiply(x, 2.0), np.greater(x, 1.5))
    y.backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), [2.0, 2.0])
