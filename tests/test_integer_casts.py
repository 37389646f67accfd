"""Python numbers meeting integer arrays, as MXNet 1.9.1 (on NumPy 1.23) computes them, on
NumPy 1.x and 2.x alike.

MXNet casts a scalar into an integer array's dtype as C does (``DType(scalar)``: truncated,
wrapped modulo 2**bits where it does not fit), and NumPy 1.x stores an out-of-range Python
integer wrapped; NumPy 2 raises OverflowError for the latter, and a float64 computation
rounds differently from the former. Every expected value below was printed by real MXNet
1.9.1 (NumPy 1.23.5), e.g.

    >>> a = mx.np.array([1, 2, 5], dtype="int32"); (a * 1.5).tolist(), (a == 1.5).tolist()
    ([1, 2, 5], [True, False, False])
    >>> mx.nd.array([300, 5], dtype="uint8").asnumpy().tolist()
    [44, 5]
"""
import numpy as np
import pytest

import gpunda as mx

_A = [1, 2, 5]
_OPS = {
    "mul": lambda a, s: a * s, "rmul": lambda a, s: s * a, "add": lambda a, s: a + s,
    "sub": lambda a, s: a - s, "rsub": lambda a, s: s - a, "mod": lambda a, s: a % s,
    "rmod": lambda a, s: s % a, "pow": lambda a, s: a ** s, "rpow": lambda a, s: s ** a,
    "max": lambda a, s: mx.np.maximum(a, s), "min": lambda a, s: mx.np.minimum(a, s),
    "hypot": lambda a, s: mx.np.hypot(a, s), "arctan2": lambda a, s: mx.np.arctan2(a, s),
    "copysign": lambda a, s: mx.np.copysign(a, s), "ldexp": lambda a, s: mx.np.ldexp(a, s),
    "gt": lambda a, s: a > s, "eq": lambda a, s: a == s,
}

# (scalar, op, MXNet's result for int32 [1, 2, 5], its dtype)
_NP_INT_ARRAY_FLOAT_SCALAR = [
    (1.5, 'mul', [1, 2, 5], 'int32'),
    (1.5, 'rmul', [1, 2, 5], 'int32'),
    (1.5, 'add', [2, 3, 6], 'int32'),
    (1.5, 'sub', [0, 1, 4], 'int32'),
    (1.5, 'rsub', [0, -1, -4], 'int32'),
    (1.5, 'mod', [0, 0, 0], 'int32'),
    (1.5, 'rmod', [0, 1, 1], 'int32'),
    (1.5, 'pow', [1, 2, 5], 'int32'),
    (1.5, 'rpow', [1, 1, 1], 'int32'),
    (1.5, 'max', [1, 2, 5], 'int32'),
    (1.5, 'min', [1, 1, 1], 'int32'),
    (1.5, 'hypot', [1, 2, 5], 'int32'),
    (1.5, 'arctan2', [0, 1, 1], 'int32'),
    (1.5, 'copysign', [1, 2, 5], 'int32'),
    (1.5, 'ldexp', [2, 4, 10], 'int32'),
    (1.5, 'gt', [False, True, True], 'bool'),
    (1.5, 'eq', [True, False, False], 'bool'),
    (-2.5, 'mul', [-2, -4, -10], 'int32'),
    (-2.5, 'rmul', [-2, -4, -10], 'int32'),
    (-2.5, 'add', [-1, 0, 3], 'int32'),
    (-2.5, 'sub', [3, 4, 7], 'int32'),
    (-2.5, 'rsub', [-3, -4, -7], 'int32'),
    (-2.5, 'mod', [-1, 0, -1], 'int32'),
    (-2.5, 'rmod', [0, 0, 3], 'int32'),
    (-2.5, 'pow', [1, 0, 0], 'int32'),
    (-2.5, 'rpow', [-2, 4, -32], 'int32'),
    (-2.5, 'max', [1, 2, 5], 'int32'),
    (-2.5, 'min', [-2, -2, -2], 'int32'),
    (-2.5, 'hypot', [2, 2, 5], 'int32'),
    (-2.5, 'arctan2', [2, 2, 1], 'int32'),
    (-2.5, 'copysign', [-1, -2, -5], 'int32'),
    (-2.5, 'ldexp', [0, 0, 1], 'int32'),
    (-2.5, 'gt', [True, True, True], 'bool'),
    (-2.5, 'eq', [False, False, False], 'bool'),
]


@pytest.mark.parametrize("scalar,op,want,dtype", _NP_INT_ARRAY_FLOAT_SCALAR,
                         ids=[f"{r[1]}{r[0]}" for r in _NP_INT_ARRAY_FLOAT_SCALAR])
def test_np_int_array_takes_float_scalar_in_its_dtype(scalar, op, want, dtype):
    r = _OPS[op](mx.np.array(_A, dtype="int32"), scalar)
    assert str(r.dtype) == dtype
    assert r.asnumpy().tolist() == want


def test_np_true_division_and_bool_arrays_keep_the_float_scalar():
    # MXNet: int32 [1, 2, 5] / 1.5 -> float32 [0.6666667, 1.3333334, 3.3333333];
    # bool [True, False] * 1.5 -> float32 [1.5, 0.0]
    r = mx.np.array(_A, dtype="int32") / 1.5
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r.asnumpy(), np.float32([1, 2, 5]) / np.float32(1.5))
    b = mx.np.array([True, False]) * 1.5
    assert b.dtype == np.float32 and b.asnumpy().tolist() == [1.5, 0.0]


@pytest.mark.parametrize("make,want,dtype", [
    # (what MXNet 1.9.1 on NumPy 1.23.5 gives)
    (lambda: mx.nd.array([300, 5], dtype="uint8"), [44, 5], np.uint8),
    (lambda: mx.nd.array([-1], dtype="uint8"), [255], np.uint8),
    (lambda: mx.nd.array([-200], dtype="int8"), [56], np.int8),
    (lambda: mx.nd.array([300.7], dtype="int8"), [44], np.int8),
    (lambda: mx.nd.full((2,), 300, dtype="uint8"), [44, 44], np.uint8),
    (lambda: mx.nd.ones((2,), dtype="uint8") * 300, [44, 44], np.uint8),
    (lambda: mx.nd.array([1, 2], dtype="int8") + 200, [-55, -54], np.int8),
    (lambda: mx.nd.array([1], dtype="uint8") - 300, [213], np.uint8),
    (lambda: mx.nd.maximum(mx.nd.array([1], dtype="int32"), 3000000000), [1], np.int32),
    (lambda: mx.np.array([300], dtype="uint8"), [44], np.uint8),
    (lambda: mx.np.full((2,), 300, dtype="uint8"), [44, 44], np.uint8),
    (lambda: mx.np.array([3], dtype="int8") * 1000, [-72], np.int8),
    (lambda: mx.np.array([1], dtype="int8") + 300, [45], np.int8),
])
def test_integers_that_do_not_fit_wrap_as_mxnet(make, want, dtype):
    r = make()
    assert r.dtype == dtype
    assert r.asnumpy().tolist() == want


@pytest.mark.parametrize("front", ["nd", "np"])
def test_setitem_of_an_integer_that_does_not_fit_wraps(front):
    # MXNet: a = zeros((2,), uint8); a[0] = 300 -> [44, 0]; a[:] = -1 -> [255, 255]
    ns = getattr(mx, front)
    a = ns.zeros((2,), dtype="uint8")
    a[0] = 300
    assert a.asnumpy().tolist() == [44, 0]
    a[:] = -1
    assert a.asnumpy().tolist() == [255, 255]


@pytest.mark.parametrize("lo,hi,want", [
    # MXNet: nd.clip(int8 [-3, -2, -1, 0, 1, 2, 3, 4, 120], lo, hi)
    (-1.5, 3.7, [-1, -1, -1, 0, 1, 2, 3, 3, 3]),
    (1.5, 3.7, [1, 1, 1, 1, 1, 2, 3, 3, 3]),
    (-300, 300, [-3, -2, -1, 0, 1, 2, 3, 4, 120]),
    (200, 300, [-56] * 9),
])
def test_clip_of_an_integer_array_compares_with_the_float_bounds(lo, hi, want):
    x = mx.nd.array([-3, -2, -1, 0, 1, 2, 3, 4, 120], dtype="int8")
    r = mx.nd.clip(x, lo, hi)
    assert r.dtype == np.int8 and r.asnumpy().tolist() == want
    # uint8 [0, 5, 250] clipped to [-5, 100]: MXNet gives [0, 5, 100]
    u = mx.nd.clip(mx.nd.array([0, 5, 250], dtype="uint8"), -5, 100)
    assert u.asnumpy().tolist() == [0, 5, 100]
