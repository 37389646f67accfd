"""Element-wise ops against NumPy/SciPy references."""
import math

import numpy as np
import pytest
import scipy.special as sps

import gpunda as mx
from gpunda import nd


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


UNARY = {
    "abs": (np.abs, (-2, 2)), "sign": (np.sign, (-2, 2)), "negative": (np.negative, (-2, 2)),
    "reciprocal": (np.reciprocal, (0.5, 2)), "square": (np.square, (-2, 2)),
    "sqrt": (np.sqrt, (0.1, 4)), "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 4)),
    "cbrt": (np.cbrt, (-3, 3)), "rcbrt": (lambda x: 1 / np.cbrt(x), (0.1, 4)),
    "exp": (np.exp, (-3, 3)), "expm1": (np.expm1, (-1, 1)), "log": (np.log, (0.1, 4)),
    "log1p": (np.log1p, (-0.5, 3)), "log2": (np.log2, (0.1, 4)), "log10": (np.log10, (0.1, 4)),
    "sin": (np.sin, (-3, 3)), "cos": (np.cos, (-3, 3)), "tan": (np.tan, (-1, 1)),
    "arcsin": (np.arcsin, (-0.9, 0.9)), "arccos": (np.arccos, (-0.9, 0.9)),
    "arctan": (np.arctan, (-3, 3)), "sinh": (np.sinh, (-2, 2)), "cosh": (np.cosh, (-2, 2)),
    "tanh": (np.tanh, (-3, 3)), "arcsinh": (np.arcsinh, (-2, 2)), "arccosh": (np.arccosh, (1.1, 3)),
    "arctanh": (np.arctanh, (-0.9, 0.9)), "degrees": (np.degrees, (-3, 3)),
    "radians": (np.radians, (-90, 90)),
    "sigmoid": (_sigmoid, (-5, 5)), "relu": (lambda x: np.maximum(x, 0), (-2, 2)),
    "softsign": (lambda x: x / (1 + np.abs(x)), (-3, 3)),
    "floor": (np.floor, (-3, 3)), "ceil": (np.ceil, (-3, 3)), "rint": (np.rint, (-3, 3)),
    "trunc": (np.trunc, (-3, 3)), "fix": (np.fix, (-3, 3)),
    "round": (lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), (-3, 3)),
    "erf": (sps.erf, (-2, 2)), "erfinv": (sps.erfinv, (-0.9, 0.9)),
    "gamma": (sps.gamma, (0.5, 4)), "gammaln": (sps.gammaln, (0.5, 4)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_matches_reference(rng, name, dtype):
    ref, (lo, hi) = UNARY[name]
    x = rng.uniform(lo, hi, (3, 4)).astype(dtype)
    if name == "round":
        x[0, :2] = [0.5, -2.5]           # half away from zero, as MXNet
    r = getattr(nd, name)(nd.array(x, dtype=dtype))
    assert r.dtype == np.dtype(dtype) and r.shape == x.shape
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(r.asnumpy(), ref(x.astype(np.float64)), rtol=tol, atol=tol)
    # the method form exists too (MXNet: x.exp())
    if hasattr(nd.NDArray, name):
        np.testing.assert_array_equal(getattr(nd.array(x, dtype=dtype), name)().asnumpy(),
                                      r.asnumpy())


def test_sigmoid_is_stable_for_large_inputs():
    r = nd.sigmoid(nd.array([-1000.0, 1000.0])).asnumpy()
    assert r.tolist() == [0.0, 1.0] and np.isfinite(r).all()


BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "mod": np.mod, "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "hypot": np.hypot, "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "lesser": np.less, "lesser_equal": np.less_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_broadcast_binary(rng, name):
    x = np.round(rng.uniform(0.5, 3, (2, 1, 3)), 1).astype(np.float32)
    y = np.round(rng.uniform(0.5, 3, (4, 1)), 1).astype(np.float32)
    x[0, 0, 0] = y[0, 0]                 # exercise equality
    r = getattr(nd, "broadcast_" + name)(nd.array(x), nd.array(y))
    np.testing.assert_allclose(r.asnumpy(), BINARY[name](x, y).astype(np.float32), rtol=1e-5)
    assert r.dtype == np.float32


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_elemwise_requires_equal_shapes(rng, name):
    x = rng.uniform(1, 2, (2, 3)).astype(np.float32)
    y = rng.uniform(1, 2, (2, 3)).astype(np.float32)
    r = getattr(nd, "elemwise_" + name)(nd.array(x), nd.array(y))
    np.testing.assert_allclose(r.asnumpy(), BINARY[name](x, y), rtol=1e-6)
    with pytest.raises(mx.GpundaError, match=f"elemwise_{name}.*\\(2, 3\\).*\\(3,\\)"):
        getattr(nd, "elemwise_" + name)(nd.array(x), nd.ones((3,)))


SCALAR = {
    "_plus_scalar": lambda x, s: x + s, "_minus_scalar": lambda x, s: x - s,
    "_rminus_scalar": lambda x, s: s - x, "_mul_scalar": lambda x, s: x * s,
    "_div_scalar": lambda x, s: x / s, "_rdiv_scalar": lambda x, s: s / x,
    "_mod_scalar": np.mod, "_rmod_scalar": lambda x, s: np.mod(s, x),
    "_power_scalar": np.power, "_rpower_scalar": lambda x, s: np.power(s, x),
    "_maximum_scalar": np.maximum, "_minimum_scalar": np.minimum, "_hypot_scalar": np.hypot,
    "_equal_scalar": np.equal, "_greater_scalar": np.greater, "_lesser_equal_scalar": np.less_equal,
}


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_scalar_ops(rng, name):
    x = rng.uniform(0.5, 3, (5,)).astype(np.float32)
    x[0] = 1.5
    r = getattr(nd._internal, name)(nd.array(x), scalar=1.5)
    np.testing.assert_allclose(r.asnumpy(), SCALAR[name](x, np.float32(1.5)).astype(np.float32),
                               rtol=1e-5)


def test_add_n_and_aliases(rng):
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    r = nd.add_n(*[nd.array(x) for x in xs])
    np.testing.assert_allclose(r.asnumpy(), sum(xs), rtol=1e-6)
    r2 = nd.ElementWiseSum(*[nd.array(x) for x in xs])
    np.testing.assert_array_equal(r.asnumpy(), r2.asnumpy())


def test_clip_and_cast(rng):
    x = rng.uniform(-3, 3, (10,)).astype(np.float32)
    np.testing.assert_array_equal(nd.clip(nd.array(x), -1, 2).asnumpy(), np.clip(x, -1, 2))
    # MXNet 1.9.1 accepts a_min > a_max: nd.clip(nd.array([0.5, 1.5, 2.5, -1]), 2, 1)
    # gives [2, 1, 1, 2] (x > a_max tested first)
    assert nd.clip(nd.array([0.5, 1.5, 2.5, -1]), 2, 1).asnumpy().tolist() == [2, 1, 1, 2]
    c = nd.cast(nd.array([1.7, -1.7]), dtype="int32")
    assert c.dtype == np.int32 and c.asnumpy().tolist() == [1, -1]


def test_zeros_like_ones_like(rng):
    x = nd.array(rng.standard_normal((2, 2)), dtype="float64")
    assert nd.zeros_like(x).dtype == np.float64 and nd.ones_like(x).asnumpy().sum() == 4


def test_logical_not():
    r = nd.logical_not(nd.array([0.0, 2.0]))
    assert r.asnumpy().tolist() == [1.0, 0.0]


def test_rcbrt_against_numpy_and_its_gradient():
    x = np.array([1.0, 8.0, 27.0, 0.125, 3.0])
    a = nd.array(x, dtype="float64")
    np.testing.assert_allclose(nd.rcbrt(a).asnumpy(), 1 / np.cbrt(x))
    np.testing.assert_allclose(a.rcbrt().asnumpy(), 1 / np.cbrt(x))
    a.attach_grad()
    with mx.autograd.record():
        y = nd.rcbrt(a)
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), -x ** (-4.0 / 3) / 3, rtol=1e-12)


def test_relu_keeps_nan_in_value_and_gradient():
    # MXNet 1.9.1 (test_ndarray_nan_comparison): relu(NaN) = NaN and its gradient is NaN
    x = nd.array([np.nan, -1.0, 0.0, 2.0, np.inf])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.relu(x)
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), [np.nan, 0, 0, 2, np.inf])
    np.testing.assert_array_equal(x.grad.asnumpy(), [np.nan, 0, 0, 1, 1])


@pytest.mark.parametrize("sigma", [1.0, 2.0, 0.5])
def test_smooth_l1_forward_and_gradient(sigma):
    x = np.array([-3.0, -0.9, -0.2, 0.0, 0.1, 0.6, 1.1, 4.0])
    a = mx.nd.array(x, dtype="float64")
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.smooth_l1(a, scalar=sigma)
    y.backward()
    s2 = sigma * sigma
    ref = np.where(np.abs(x) < 1 / s2, 0.5 * (sigma * x) ** 2, np.abs(x) - 0.5 / s2)
    np.testing.assert_allclose(y.asnumpy(), ref)
    np.testing.assert_allclose(a.grad.asnumpy(), np.where(np.abs(x) < 1 / s2, x * s2, np.sign(x)))
    np.testing.assert_allclose(mx.nd.smooth_l1(a).asnumpy(),
                               np.where(np.abs(x) < 1, 0.5 * x * x, np.abs(x) - 0.5))


def test_integer_mod_gradient_is_zero_as_in_mxnet():
    # MXNet 1.9.1: mod_grad / mod_rgrad return 0 for integer dtypes, even where b == 0
    a = mx.nd.array([5, 7, 3], dtype="int32")
    b = mx.nd.array([2, 0, 0], dtype="int32")
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        c = a % b
    c.backward(mx.nd.array([3, 2, 1], dtype="int32"))
    assert a.grad.asnumpy().tolist() == [0, 0, 0]
    assert b.grad.asnumpy().tolist() == [0, 0, 0]
