"""gpunda.test_utils: comparison, random data, finite-difference gradient checks, scopes."""
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda import test_utils as tu
from gpunda.base import GpundaError

nd = mx.nd


def test_assert_almost_equal_passes_and_message_names_location():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    tu.assert_almost_equal(nd.array(a), a * (1 + 1e-6))
    b = a.copy()
    b[1, 0] = 3.5
    with pytest.raises(AssertionError) as ei:
        tu.assert_almost_equal(nd.array(a), b, rtol=1e-3, atol=1e-4, names=("got", "want"))
    msg = str(ei.value)
    assert "rtol=1.000000e-03" in msg and "atol=1.000000e-04" in msg
    assert "(1, 0)" in msg and "got=3.0" in msg and "want=3.5" in msg
    assert "mismatch 25.0" in msg


def test_assert_almost_equal_tolerances_follow_dtype():
    x = np.float32([1.0, 2.0])
    tu.assert_almost_equal(x, x + 5e-4)                       # float32 atol 1e-3
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(x.astype(np.float64), x.astype(np.float64) + 5e-4)
    assert tu.get_rtol(None, np.float16) == 1e-2 and tu.get_atol(0.5) == 0.5


def test_assert_almost_equal_nan_and_shapes():
    a = np.array([1.0, np.nan])
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a, a)
    tu.assert_almost_equal(a, a, equal_nan=True)
    with pytest.raises(AssertionError, match="do not broadcast"):
        tu.assert_almost_equal(np.ones(2), np.ones(3))


def test_almost_equal_and_same():
    assert tu.almost_equal(nd.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-7]))
    assert not tu.almost_equal(np.ones(2), np.ones(2) * 1.1)
    assert not tu.almost_equal(np.ones(2), np.ones(3))
    assert tu.same(nd.array([1, 2], dtype="int32"), np.array([1, 2]))
    assert not tu.same(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]))


def test_assert_exception():
    e = tu.assert_exception(lambda x: 1 / x, ZeroDivisionError, 0)
    assert isinstance(e, ZeroDivisionError)
    with pytest.raises(AssertionError, match="did not raise"):
        tu.assert_exception(lambda: None, ValueError)


def test_random_shapes_and_arrays():
    np.random.seed(0)
    for _ in range(20):
        s2 = tu.rand_shape_2d(4, 5)
        assert len(s2) == 2 and 1 <= s2[0] <= 4 and 1 <= s2[1] <= 5
        s3 = tu.rand_shape_3d(2, 3, 4)
        assert len(s3) == 3 and all(1 <= v <= m for v, m in zip(s3, (2, 3, 4)))
        sn = tu.rand_shape_nd(4, dim=3)
        assert len(sn) == 4 and all(1 <= v <= 3 for v in sn)
    assert 0 in {d for _ in range(50) for d in tu.rand_shape_2d(1, 1, allow_zero_size=True)}
    a, b = tu.random_arrays((2, 3), (4,))
    assert a.shape == (2, 3) and b.shape == (4,) and a.dtype == np.float32
    assert sorted(tu.random_sample(range(5), 5)) == [0, 1, 2, 3, 4]


def test_rand_ndarray_dense():
    x = tu.rand_ndarray((3, 4), dtype="float64")
    assert isinstance(x, nd.NDArray) and x.shape == (3, 4) and x.dtype == np.float64
    v = x.asnumpy()
    assert np.all((v >= -1) & (v < 1)) and len(np.unique(v)) > 1
    with pytest.raises(GpundaError, match="stype"):
        tu.rand_ndarray((2, 2), stype="dense")


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_rand_ndarray_sparse(stype):
    try:
        x = tu.rand_ndarray((20, 6), stype=stype, density=0.3)
    except (GpundaError, AttributeError) as e:     # the sparse part is built elsewhere
        pytest.skip(f"sparse storage not available: {e}")
    assert x.stype == stype and x.shape == (20, 6)
    dense = x.tostype("default").asnumpy()
    if stype == "row_sparse":
        nz_rows = np.any(dense != 0, axis=1).mean()
        assert 0.0 < nz_rows < 0.8
    else:
        assert 0.05 < (dense != 0).mean() < 0.6


def test_numeric_grad_matches_closed_form():
    x = np.array([0.3, -0.7, 1.1])
    g = tu.numeric_grad(lambda a: nd.sin(a) * a, [x], eps=1e-5, dtype=np.float64)
    np.testing.assert_allclose(g[0], np.cos(x) * x + np.sin(x), rtol=1e-8)
    gd = tu.numeric_grad(lambda a, b: a * b, {"a": x, "b": 2 * x}, eps=1e-5, dtype=np.float64)
    np.testing.assert_allclose(gd["a"], 2 * x, rtol=1e-8)
    np.testing.assert_allclose(gd["b"], x, rtol=1e-8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_check_numeric_gradient_passes_on_correct_gradient(dtype):
    rng = np.random.default_rng(0)
    loc = [rng.uniform(0.5, 1.5, (2, 3)), rng.uniform(0.5, 1.5, (2, 3))]
    tu.check_numeric_gradient(lambda a, b: nd.tanh(a) * b + nd.exp(b), loc, dtype=dtype)
    tu.check_numeric_gradient(lambda a, b: a / b, {"a": loc[0], "b": loc[1]},
                              grad_nodes=["b"], dtype=dtype)


def test_check_numeric_gradient_catches_a_wrong_gradient():
    class Wrong(mx.autograd.Function):
        def forward(self, x):
            return x * x

        def backward(self, dy):
            return dy * 3       # should be 2x

    with pytest.raises(AssertionError, match="numeric gradient of 0"):
        tu.check_numeric_gradient(lambda x: Wrong()(x), [np.array([1.0, 2.0])],
                                  dtype=np.float64)


def test_check_numeric_gradient_bad_arguments():
    with pytest.raises(GpundaError, match="callable"):
        tu.check_numeric_gradient(42, [np.ones(2)])
    with pytest.raises(GpundaError, match="grad_nodes"):
        tu.check_numeric_gradient(lambda a: a * 2, {"a": np.ones(2)}, grad_nodes=["z"])


def test_symbolic_checks_need_a_symbol():
    with pytest.raises(GpundaError, match="Symbol"):
        tu.check_symbolic_forward(lambda a: a, [np.ones(2)], [np.ones(2)])
    with pytest.raises(GpundaError, match="Symbol"):
        tu.check_symbolic_backward(lambda a: a, [np.ones(2)], [np.ones(2)], [np.ones(2)])


def test_default_context_roundtrip():
    assert tu.default_context() == mx.current_context()
    tu.set_default_context(mx.cpu(1))
    try:
        assert tu.default_context() == mx.cpu(1)
        assert tu.rand_ndarray((2,)).context == mx.cpu(1)
    finally:
        tu.set_default_context(None)
    assert tu.default_context() == mx.current_context()


def test_environment_sets_and_restores_even_on_error():
    os.environ["GPUNDA_TU_A"] = "old"
    os.environ.pop("GPUNDA_TU_B", None)
    with pytest.raises(RuntimeError):
        with tu.environment({"GPUNDA_TU_A": "new", "GPUNDA_TU_B": "1"}):
            assert os.environ["GPUNDA_TU_A"] == "new" and os.environ["GPUNDA_TU_B"] == "1"
            raise RuntimeError
    assert os.environ["GPUNDA_TU_A"] == "old" and "GPUNDA_TU_B" not in os.environ
    with tu.environment("GPUNDA_TU_A", None):
        assert "GPUNDA_TU_A" not in os.environ
    assert os.environ.pop("GPUNDA_TU_A") == "old"
    with pytest.raises(GpundaError):
        with tu.environment(1, 2, 3):
            pass


def test_np_reduce():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.np_reduce(x, (0, 2), True, np.sum),
                                  x.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(tu.np_reduce(x, 1, False, np.max), x.max(axis=1))


def test_symbol_checks_when_symbol_and_cached_op_exist():
    try:
        from gpunda.cached_op import CachedOp  # noqa: F401
        a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
        s = mx.sym.tanh(a) * b
    except Exception as e:     # Symbol/CachedOp are built by other parts
        pytest.skip(f"Symbol/CachedOp not available: {e}")
    av, bv = np.array([[0.2, -0.4]]), np.array([[1.5, 2.0]])
    loc = {"a": av, "b": bv}
    tu.check_symbolic_forward(s, loc, [np.tanh(av) * bv])
    with pytest.raises(AssertionError):
        tu.check_symbolic_forward(s, loc, [np.tanh(av) * bv + 0.1])
    og = np.array([[1.0, -1.0]])
    tu.check_symbolic_backward(s, loc, [og], {"a": og * bv * (1 - np.tanh(av) ** 2),
                                              "b": og * np.tanh(av)})
    tu.check_numeric_gradient(s, loc, dtype=np.float64)
