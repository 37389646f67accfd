"""gpunda.test_utils: tolerances and comparison, random data, where tests run, generator statistics.

Expected numbers and messages are MXNet 1.9.1's (its python/mxnet/test_utils.py
source, and its output observed on the same inputs).
"""
import os
import platform
import subprocess
import sys
import threading

import numpy as np
import pytest
import scipy.sparse
import scipy.stats as ss

import gpunda as mx
from gpunda import test_utils as tu
from gpunda.base import GpundaError, NotImplementedForGpunda

nd = mx.nd


# ---------------------------------------------------------------- tolerances

def test_default_tolerances_are_mxnets():
    r, a, e = tu.default_rtols(), tu.default_atols(), tu.default_numeric_eps()
    assert (r[np.dtype(np.float16)], r[np.dtype(np.float32)], r[np.dtype(np.float64)]) == \
        (1e-2, 1e-4, 1e-5)
    assert (a[np.dtype(np.float16)], a[np.dtype(np.float32)], a[np.dtype(np.float64)]) == \
        (1e-1, 1e-3, 1e-20)
    for t in (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64):
        assert r[np.dtype(t)] == 0 and a[np.dtype(t)] == 0
    assert e == {np.dtype(np.float16): 2.0 ** -6, np.dtype(np.float32): 2.0 ** -9,
                 np.dtype(np.float64): 2.0 ** -14}
    assert tu.get_rtol() == 1e-5 and tu.get_atol() == 1e-20
    assert tu.get_rtol(None, np.float16) == 1e-2 and tu.get_atol(0.5) == 0.5
    assert tu.get_etol() == 0 and tu.get_etol(0.1) == 0.1


def test_get_tols_takes_the_looser_dtype():
    # real MXNet 1.9.1 gives these pairs for the same calls
    assert tu.get_tols(np.float16(1), 1.0, None, None) == (0.01, 0.1)
    assert tu.get_tols(np.ones(2, np.int32), np.ones(2, np.float32), None, None) == (1e-4, 1e-3)
    assert tu.get_tols(nd.ones(2), np.ones(2), {np.dtype(np.float32): 0.5}, None) == (0.5, 1e-3)
    assert tu.get_tols(np.ones(2), np.ones(2), 0.25, 0.125) == (0.25, 0.125)
    assert tu.get_tolerance(nd.ones(2, dtype="float16"), None, tu.default_atols()) == 0.1
    assert tu.effective_dtype(nd.ones(2)) == np.float32      # no TF32 on a CPU


# ---------------------------------------------------------------- comparison

def test_assert_almost_equal_message_is_mxnets(capsys):
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    b = a.copy()
    b[1, 0], b[0, 1] = 3.5, 2.2
    with pytest.raises(AssertionError) as ei:
        tu.assert_almost_equal(nd.array(a), b, rtol=1e-3, atol=1e-4, names=("got", "want"))
    assert ("Error 138.888889 exceeds tolerance rtol=1.000000e-03, atol=1.000000e-04 "
            "(mismatch 50.000000%).\nLocation of maximum error: (1, 0), got=3.00000000, "
            "want=3.50000000") in str(ei.value)
    out = capsys.readouterr().out
    assert "  1: Error 138.888889  Location of error: (1, 0), got=3.00000000, want=3.50000000" in out
    assert "  2: Error 86.956522  Location of error: (0, 1), got=2.00000000, want=2.20000000" in out


def test_assert_almost_equal_counts_at_most_mismatches1(capsys):
    x = np.arange(30.0)
    with pytest.raises(AssertionError) as ei:
        tu.assert_almost_equal(x, x + 1, mismatches=(3, 5))
    assert "(mismatch at least 20.000000%)" in str(ei.value)         # (5 + 1) / 30
    out = capsys.readouterr().out
    assert "  3: Error" in out and "  4: Error" not in out
    with pytest.raises(AssertionError) as ei:
        tu.assert_almost_equal(x, x + (x > 26), mismatches=(3, 5))
    assert "(mismatch 10.000000%)" in str(ei.value)


def test_assert_almost_equal_tolerances_follow_dtype():
    x = np.float32([1.0, 2.0])
    tu.assert_almost_equal(x, x + 5e-4)                             # float32: atol 1e-3
    tu.assert_almost_equal(nd.array(x, dtype="float16"), x.astype(np.float16) + 0.05)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(x.astype(np.float64), x.astype(np.float64) + 5e-4)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([1, 2]), np.array([1, 3]))  # integers: exact
    tu.assert_almost_equal(x, x + 0.3, rtol={np.dtype(np.float32): 0.5})
    tu.assert_almost_equal(x, x + 0.3, rtol={np.float32: 0.5})


def test_assert_almost_equal_shapes_nan_bool():
    a = np.array([1.0, np.nan])
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(a, a)
    tu.assert_almost_equal(a, a, equal_nan=True)
    with pytest.raises(ValueError):                     # NumPy's, as in MXNet
        tu.assert_almost_equal(np.ones(2), np.ones(3))
    tu.assert_almost_equal(np.ones((2, 3)), np.ones(3))             # broadcasting
    with pytest.raises(AssertionError, match="are not equal"):
        tu.assert_almost_equal(np.ones((2, 3)), np.ones(3), use_broadcast=False)
    tu.assert_almost_equal(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([True, False]), np.array([True, True]))


def test_assert_almost_equal_sparse_and_numbers():
    d = np.array([[0.0, 1.5], [0.0, 0.0]])
    tu.assert_almost_equal(nd.array(d).tostype("csr"), d)
    tu.assert_almost_equal(nd.array(d).tostype("row_sparse"), nd.array(d))
    tu.assert_almost_equal(2.0, np.float64(2.0))


def test_almost_equal_uses_float64_defaults():
    x = np.float32([1.0, 2.0])
    assert not tu.almost_equal(x, x + 5e-4)             # assert_almost_equal passes this
    assert tu.almost_equal(nd.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-7]))
    assert tu.almost_equal(x, x + 5e-4, rtol=0, atol=1e-3)
    with pytest.raises(ValueError):
        tu.almost_equal(np.ones(2), np.ones(3))
    with pytest.raises(AssertionError):
        tu.almost_equal(np.ones((1, 2)), np.ones(2), use_broadcast=False)


def test_assert_almost_equal_with_err():
    a = np.arange(10.0)
    b = a.copy()
    b[3] += 1
    tu.assert_almost_equal_with_err(a, b, etol=0.2)
    with pytest.raises(AssertionError, match="mismatch 10.0"):
        tu.assert_almost_equal_with_err(a, b, etol=0.05)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(a, b)           # etol 0: plain assert_almost_equal


def test_assert_almost_equal_ignore_nan_and_allclose():
    a = np.array([1.0, np.nan, 3.0])
    b = np.array([np.nan, 2.0, 3.0])
    tu.assert_almost_equal_ignore_nan(a, b)
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_ignore_nan(a, b + 1)
    assert np.isnan(a[1]) and np.isnan(b[0])            # inputs untouched
    tu.assert_allclose(a, a)                            # equal_nan=True by default
    with pytest.raises(AssertionError):
        tu.assert_allclose(np.ones(2), np.ones(2) * (1 + 1e-6))   # rtol 1e-7


def test_same_checkshapes_location_and_tuples():
    assert tu.same(nd.array([1, 2], dtype="int32"), np.array([1, 2]))
    assert not tu.same(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]))
    with pytest.raises(AssertionError, match=r"a.shape = \(2,\) and b.shape = \(3,\)"):
        tu.checkShapes(np.ones(2), np.ones(3))
    msg = tu.locationError(np.array([1.0, 2.0]), np.array([1.0, 2.5]), (1,), ("x", "y"), True)
    assert msg == "Location of maximum error: (1,), x=2.00000000, y=2.50000000"
    tu.compare_ndarray_tuple((nd.ones(2), (np.zeros(1),)), (np.ones(2), (nd.zeros(1),)))
    tu.compare_ndarray_tuple(None, nd.ones(2))
    with pytest.raises(AssertionError):
        tu.compare_ndarray_tuple((nd.ones(2),), (np.zeros(2),))


def test_same_array_and_same_symbol_structure():
    x = nd.array(np.arange(6.0).reshape(2, 3))
    assert tu.same_array(x, x[0:2]) and tu.same_array(x, x.reshape((2, 3)))
    assert not tu.same_array(x, x.copy())
    np.testing.assert_array_equal(x.asnumpy(), np.arange(6.0).reshape(2, 3))
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    assert tu.same_symbol_structure(mx.sym.tanh(a) + b, mx.sym.tanh(b) + a)
    assert not tu.same_symbol_structure(mx.sym.tanh(a) + b, mx.sym.sin(a) + b)
    assert not tu.same_symbol_structure(mx.sym.tanh(a), mx.sym.tanh(mx.sym.tanh(a)))


def test_assert_exception():
    assert isinstance(tu.assert_exception(lambda x: 1 / x, ZeroDivisionError, 0),
                      ZeroDivisionError)
    with pytest.raises(AssertionError, match="did not raise"):
        tu.assert_exception(lambda: None, ValueError)


# ---------------------------------------------------------------- random data

def test_random_shapes_and_arrays():
    np.random.seed(0)
    for _ in range(20):
        s2 = tu.rand_shape_2d(4, 5)
        assert len(s2) == 2 and 1 <= s2[0] <= 4 and 1 <= s2[1] <= 5
        s3 = tu.rand_shape_3d(2, 3, 4)
        assert all(1 <= v <= m for v, m in zip(s3, (2, 3, 4)))
        sn = tu.rand_shape_nd(4, dim=3)
        assert len(sn) == 4 and all(1 <= v <= 3 for v in sn)
    assert 0 in {d for _ in range(50) for d in tu.rand_shape_2d(1, 1, allow_zero_size=True)}
    # MXNet's rand_coord_2d: x then y from NumPy's global generator, upper bounds excluded
    np.random.seed(3)
    coords = [tu.rand_coord_2d(1, 3, -2, 0) for _ in range(40)]
    np.random.seed(3)
    assert coords == [(np.random.randint(1, 3), np.random.randint(-2, 0)) for _ in range(40)]
    assert {c[0] for c in coords} == {1, 2} and {c[1] for c in coords} == {-2, -1}
    a, b = tu.random_arrays((2, 3), (4,))
    assert a.shape == (2, 3) and b.shape == (4,) and a.dtype == np.float32
    assert tu.random_arrays(()).shape == ()
    (u,) = tu.random_uniform_arrays((1000,), low=2.0, high=3.0, dtype=np.float64)
    assert u.dtype == np.float64 and 2.0 <= u.min() and u.max() < 3.0
    with pytest.raises(TypeError):
        tu.random_uniform_arrays((2,), scale=3)
    population = list(range(5))
    assert sorted(tu.random_sample(population, 5)) == population and population == [0, 1, 2, 3, 4]
    assert len(tu.random_sample(population, 2)) == 2


def test_rand_ndarray_dense_is_standard_normal():
    np.random.seed(1)
    x = tu.rand_ndarray((100, 100))
    assert isinstance(x, nd.NDArray) and x.dtype == np.float32
    assert x.context == mx.current_context()      # ctx=None: the default, as MXNet
    v = x.asnumpy()
    assert abs(v.mean()) < 0.05 and abs(v.std() - 1) < 0.05
    assert tu.rand_ndarray((3,), dtype="float64").dtype == np.float64
    with pytest.raises(GpundaError, match="stype"):
        tu.rand_ndarray((2, 2), stype="dense")


def test_rand_sparse_row_sparse_density_statistically():
    np.random.seed(2)
    rows, density = 2000, 0.3
    arr, (values, indices) = tu.rand_sparse_ndarray((rows, 3), "row_sparse", density=density)
    assert arr.stype == "row_sparse" and arr.dtype == np.float32
    # the stored rows are Binomial(rows, density): within 5 standard deviations
    sd = np.sqrt(rows * density * (1 - density))
    assert abs(len(indices) - rows * density) < 5 * sd
    dense = arr.tostype("default").asnumpy()
    np.testing.assert_array_equal(dense[indices], values)
    assert np.all(dense[np.setdiff1d(np.arange(rows), indices)] == 0)
    assert values.min() >= 0 and values.max() < 1


def test_rand_sparse_row_sparse_options():
    arr, (values, indices) = tu.rand_sparse_ndarray((6, 2), "row_sparse", rsp_indices=[1, 4],
                                                    data_init=2.0, modifier_func=lambda v: v + 1)
    np.testing.assert_array_equal(indices, [1, 4])
    np.testing.assert_array_equal(values, np.full((2, 2), 3.0))
    assert arr.tostype("default").asnumpy()[4, 1] == 3.0
    z, (v, i) = tu.rand_sparse_ndarray((4, 2), "row_sparse", density=0.0)
    assert z.stype == "row_sparse" and not z.asnumpy().any() and v.size == 0 and i.size == 0
    with pytest.raises(GpundaError, match="powerlaw"):
        tu.rand_sparse_ndarray((4, 2), "row_sparse", distribution="powerlaw")
    with pytest.raises(GpundaError, match="stype"):
        tu.rand_sparse_ndarray((4, 2), "coo")


def test_rand_sparse_csr_uniform_has_exact_nnz():
    np.random.seed(3)
    arr, (indptr, indices, data) = tu.rand_sparse_ndarray((40, 25), "csr", density=0.2,
                                                          dtype=np.float64)
    assert arr.stype == "csr" and arr.dtype == np.float64
    ref = scipy.sparse.csr_matrix((data.asnumpy(), indices.asnumpy(), indptr.asnumpy()),
                                  shape=(40, 25))
    assert ref.nnz == int(40 * 25 * 0.2)            # distinct random positions
    np.testing.assert_array_equal(ref.toarray(), arr.asnumpy())
    assert data.asnumpy().min() > 0 and data.asnumpy().max() < 1
    with pytest.raises(ValueError, match="density"):
        tu.rand_sparse_ndarray((4, 4), "csr", density=1.5)
    with pytest.raises(GpundaError, match="2-d"):
        tu.rand_sparse_ndarray((4, 4, 4), "csr", density=0.5)


def test_rand_sparse_csr_powerlaw_doubles_rows():
    arr, (indptr, _, data) = tu.rand_sparse_ndarray((5, 16), "csr", density=0.5,
                                                    distribution="powerlaw")
    # 40 values: one per row first, then rows grow to 2, 4, 8, 16 and the rest (10)
    np.testing.assert_array_equal(np.diff(indptr.asnumpy()), [2, 4, 8, 16, 10])
    assert data.asnumpy().min() >= 1.001 and data.asnumpy().max() < 3
    with pytest.raises(ValueError, match="not supported for this density"):
        tu.rand_sparse_ndarray((10, 10), "csr", density=0.1, distribution="powerlaw")


def test_shuffled_csr_indices_are_mxnets():
    # MXNet 1.9.1, the same dense matrix and np.random.seed(3): shuffle_csr_column_indices
    # moves only the indices (the values stay) ->
    # [4, 1, 0, 3, 1, 3, 0, 4, 4, 3, 1, 0, 0, 1, 3, 4]; np.random.randint(1000) next: 681
    d = np.arange(1, 31, dtype=np.float64).reshape(5, 6)
    d[d % 3 == 0] = 0
    d[2] = 0
    m = scipy.sparse.csr_matrix(d)
    data = m.data.copy()
    np.random.seed(3)
    tu.shuffle_csr_column_indices(m)
    np.testing.assert_array_equal(m.indices, [4, 1, 0, 3, 1, 3, 0, 4, 4, 3, 1, 0, 0, 1, 3, 4])
    np.testing.assert_array_equal(m.data, data)
    assert np.random.randint(1000) == 681
    # the array holds the shuffled parts as given, and its values are where they say
    np.random.seed(5)
    arr, (indptr, indices, vals) = tu.rand_sparse_ndarray((6, 8), "csr", density=0.5,
                                                          shuffle_csr_indices=True)
    ip, ix, dv = indptr.asnumpy(), indices.asnumpy(), vals.asnumpy()
    expect = np.zeros((6, 8), dtype=dv.dtype)
    rows = np.repeat(np.arange(6), np.diff(ip))
    expect[rows, ix] = dv
    assert any(np.any(np.diff(ix[ip[r]:ip[r + 1]]) < 0) for r in range(6))
    np.testing.assert_array_equal(arr.indices.asnumpy(), ix)
    np.testing.assert_array_equal(arr.asnumpy(), expect)


def test_create_sparse_array_sorts_indices_and_leaves_them_alone():
    idx = np.array([5, 0, 3])
    arr = tu.create_sparse_array((6, 2), "row_sparse", rsp_indices=idx, data_init=1.0)
    np.testing.assert_array_equal(idx, [5, 0, 3])
    np.testing.assert_array_equal(arr.indices.asnumpy(), [0, 3, 5])
    zd = tu.create_sparse_array_zd((6, 2), "row_sparse", density=0.9)
    assert not zd.asnumpy().any()
    zd = tu.create_sparse_array_zd((6, 2), "row_sparse", density=0.9, rsp_indices=[2])
    np.testing.assert_array_equal(np.flatnonzero(zd.asnumpy().any(axis=1)), [2])
    csr = tu.create_sparse_array((8, 8), "csr", density=0.25)
    assert csr.stype == "csr" and (csr.asnumpy() != 0).sum() == 16
    with pytest.raises(GpundaError, match="storage type"):
        tu.create_sparse_array((2, 2), "default")


def test_elementwise_and_reduction_helpers():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(tu.assign_each(x, lambda v: v * v), x ** 2)
    assert tu.assign_each(x.astype(np.int32), lambda v: v / 2).dtype == np.float64
    np.testing.assert_array_equal(tu.assign_each2(x, x + 1, lambda a, b: a * b), x * (x + 1))
    y = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.np_reduce(y, (0, 2), True, np.sum),
                                  y.sum(axis=(0, 2), keepdims=True))
    np.testing.assert_array_equal(tu.np_reduce(y, 1, False, np.max), y.max(axis=1))
    np.testing.assert_array_equal(tu.collapse_sum_like(y, (3, 1)),
                                  y.sum(axis=(0, 2)).reshape(3, 1))
    np.testing.assert_array_equal(tu.collapse_sum_like(y, (1, 4)), y.sum(axis=(0, 1))[None])
    assert tu.collapse_sum_like(np.ones((0, 3)), (3,)).shape == (3,)


def test_large_tensor_and_matrix_helpers():
    np.testing.assert_array_equal(tu.create_2d_tensor(3, 2).asnumpy(), [[0, 0], [1, 1], [2, 2]])
    assert tu.create_2d_tensor(3, 2).dtype == np.int64
    np.testing.assert_array_equal(tu.create_vector(4).asnumpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(tu.get_identity_mat(3).asnumpy(), np.eye(3))
    assert tu.get_identity_mat_batch(2).shape == (2, 2, 2)
    np.random.seed(5)
    m = tu.new_matrix_with_real_eigvals_2d(4)
    ev = np.linalg.eigvals(m)
    assert np.allclose(ev.imag, 0) and np.all(np.abs(ev.real) <= 10 + 1e-9)
    assert tu.new_matrix_with_real_eigvals_nd((2, 3, 4, 4)).shape == (2, 3, 4, 4)
    q = tu.new_orthonormal_matrix_2d(5)
    np.testing.assert_allclose(q.T @ q, np.eye(5), atol=1e-12)
    s = tu.new_sym_matrix_with_real_eigvals_2d(4)
    np.testing.assert_allclose(s, s.T, atol=1e-12)
    assert tu.new_sym_matrix_with_real_eigvals_nd((3, 2, 2)).shape == (3, 2, 2)


# ---------------------------------------------------------------- where tests run

def test_set_default_context_moves_new_arrays():
    assert tu.default_context() == mx.current_context()
    tu.set_default_context(mx.cpu(1))
    try:
        assert tu.default_context() == mx.cpu(1) == mx.current_context()
        assert nd.zeros((2,)).context == mx.cpu(1)
        assert tu.rand_ndarray((2,)).context == mx.cpu(1)
        with mx.cpu(0):
            assert mx.current_context() == mx.cpu(0)
        assert mx.current_context() == mx.cpu(1)
        tu.set_default_context(mx.cpu(2))               # replaces, does not stack
        assert mx.current_context() == mx.cpu(2)
        # per thread, as MXNet's Context._default_ctx
        seen = []
        t = threading.Thread(target=lambda: seen.append(tu.default_context()))
        t.start()
        t.join()
        assert seen[0] != mx.cpu(2)
    finally:
        tu.set_default_context(None)
    assert tu.default_context() == mx.current_context() not in (mx.cpu(1), mx.cpu(2))


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
    assert tu.set_env_var("GPUNDA_TU_A", 5) == "old" and os.environ["GPUNDA_TU_A"] == "5"
    assert os.environ.pop("GPUNDA_TU_A") == "5"
    assert tu.getenv("GPUNDA_TU_A") is None
    with pytest.raises(GpundaError, match="environment"):
        with tu.environment(1, 2, 3):
            pass


def test_retry_reruns_only_assertion_failures():
    calls = []

    def flaky():
        calls.append(1)
        assert len(calls) >= 3

    tu.retry(3)(flaky)()
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(AssertionError):
        tu.retry(2)(flaky)()
    assert len(calls) == 2

    @tu.retry(5)
    def broken():
        calls.append(1)
        raise KeyError("x")
    calls.clear()
    with pytest.raises(KeyError):
        broken()
    assert len(calls) == 1 and broken.__name__ == "broken"
    with pytest.raises(GpundaError):
        tu.retry(0)


def test_discard_stderr_silences_fd2(capfd):
    with tu.discard_stderr():
        os.write(2, b"hidden-by-discard\n")
    os.write(2, b"shown-after\n")
    err = capfd.readouterr().err
    assert "hidden-by-discard" not in err and "shown-after" in err


def test_platform_and_build_queries():
    with tu.environment("CD_JOB", "1"):
        assert tu.is_cd_run()
    with tu.environment("CD_JOB", None):
        assert not tu.is_cd_run()
    assert tu.is_aarch64_run() == (platform.machine() == "aarch64")
    assert tu.has_tvm_ops() is False and tu.is_op_runnable() is True
    assert list(tu.list_gpus()) == list(range(mx.num_gpus()))
    with pytest.raises(ValueError, match="gpu context"):
        tu.get_cuda_compute_capability(mx.cpu())
    assert isinstance(tu.Features(), dict) and tu.mx is mx and tu.Symbol is mx.sym.Symbol


@pytest.mark.gpu
def test_compute_capability_on_a_gpu():
    if mx.num_gpus() == 0:
        pytest.skip("no GPU")
    cc = tu.get_cuda_compute_capability(mx.gpu(0))
    assert isinstance(cc, int) and cc >= 30


def test_np_symbol_is_the_np_symbol_class():
    # MXNet 1.9.1: test_utils.np_symbol is mxnet.symbol.numpy._Symbol
    assert tu.np_symbol is mx.sym.np._Symbol
    assert not isinstance(mx.sym.Variable("x"), tu.np_symbol)
    assert isinstance(mx.sym.Variable("x").as_np_ndarray(), tu.np_symbol)


def test_test_utils_loads_lazily():
    code = ("import sys, gpunda; assert 'gpunda.test_utils' not in sys.modules; "
            "assert gpunda.test_utils.same([1], [1]); import gpunda.test_utils as t; "
            "assert t is gpunda.test_utils")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# ---------------------------------------------------------------- generator statistics

def test_buckets_from_ppf():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: ss.norm.ppf(q, 0, 1), 4)
    assert probs == [0.25] * 4 and buckets[0][0] == -np.inf and buckets[-1][1] == np.inf
    np.testing.assert_allclose([b[1] for b in buckets[:-1]], ss.norm.ppf([0.25, 0.5, 0.75]))
    with pytest.raises(GpundaError):
        tu.gen_buckets_probs_with_ppf(np.sqrt, 0)


def test_chi_square_check_continuous_and_discrete():
    np.random.seed(6)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: ss.norm.ppf(q, 0, 1), 5)
    p, obs, exp = tu.chi_square_check(lambda n: np.random.normal(0, 1, size=n), buckets, probs,
                                      nsamples=50000)
    assert p > 1e-3 and obs.sum() == 50000 and list(exp) == [10000] * 5
    # the statistic is Pearson's: scipy's on the same counts
    assert p == pytest.approx(ss.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue, rel=1e-6)
    p_bad, _, _ = tu.chi_square_check(lambda n: np.random.normal(0.1, 1, size=n), buckets,
                                      probs, nsamples=50000)
    assert p_bad < 1e-6
    values, probs = [0, 1, 2], [0.2, 0.3, 0.5]
    p, obs, _ = tu.chi_square_check(lambda n: nd.array(np.random.choice(3, n, p=probs)),
                                    values, probs, nsamples=20000)
    assert p > 1e-3 and obs.sum() == 20000
    with pytest.raises(GpundaError, match="probs"):
        tu.chi_square_check(np.random.rand, [0, 1], [1.0])


def test_verify_generator_mean_and_var_checks():
    np.random.seed(7)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: ss.uniform.ppf(q, 0, 1), 5)
    ps = tu.verify_generator(np.random.rand, buckets, probs, nsamples=20000, nrepeat=3)
    assert len(ps) == 3
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(lambda n: np.random.rand(n) ** 1.2, buckets, probs, nsamples=20000,
                            nrepeat=3)
    normal = lambda n: np.random.normal(0, 2.0, size=n)  # noqa: E731
    assert tu.mean_check(normal, 0, 2.0, nsamples=100000)
    assert not tu.mean_check(normal, 0.1, 2.0, nsamples=100000)
    assert tu.var_check(normal, 2.0, nsamples=100000)
    assert not tu.var_check(normal, 2.2, nsamples=100000)


def test_private_helpers_match_mxnet():
    # answers recorded from MXNet 1.9.1 (/work/mxref) with the same inputs
    from gpunda import test_utils as T
    idx, worst = T._find_max_violation(np.array([1., 2., 3.]), np.array([1., 2.5, 3.1]),
                                       0.01, 0.01)
    assert tuple(int(i) for i in idx) == (1,) and worst == pytest.approx(14.285714285714285)
    idx, worst = T._find_max_violation(np.array([[1., np.inf], [0, 1]]),
                                       np.array([[1., np.inf], [0.5, 1]]), 0.1, 0.)
    assert tuple(int(i) for i in idx) == (1, 0) and worst == pytest.approx(10.0)
    assert T._sorted_items({"b": 1, "a": 2}) == [("a", 2), ("b", 1)]
    assert list(T._sorted_dict({"b": 1, "a": 2}).items()) == [("a", 2), ("b", 1)]
    assert isinstance(T._features, mx.runtime.Features)


def test_private_csr_generators_match_mxnet():
    from gpunda import test_utils as T
    a = T._get_uniform_dataset_csr(10, 20, 0.2)
    assert (a.stype, a.shape, a.dtype, a.data.shape) == ("csr", (10, 20), np.float64, (40,))
    a = T._get_uniform_dataset_csr(10, 20, 0.2, dtype=np.float32, data_init=3.0)
    assert a.dtype == np.float32 and np.unique(a.data.asnumpy()).tolist() == [3.0]
    np.random.seed(0)
    b = T._get_powerlaw_dataset_csr(6, 8, 0.5)
    assert b.stype == "csr" and b.dtype == np.float32
    assert (b.asnumpy() != 0).sum(1).tolist() == [2, 4, 8, 8, 1, 1]
    b = T._get_powerlaw_dataset_csr(8, 8, 0.5, dtype=np.float64)
    assert b.dtype == np.float32                          # MXNet's: mx.nd.array's default
    assert (b.asnumpy() != 0).sum(1).tolist() == [2, 4, 8, 8, 7, 1, 1, 1]
    with pytest.raises(ValueError, match="not supported for this density: 1.0"):
        T._get_powerlaw_dataset_csr(4, 4, 1.0)
    assert T._validate_csr_generation_inputs(4, 4, 0.5, "powerlaw") is None
    for args, msg in [((3, 3, 1.5), "between 0 and 1"), ((0, 3, 0.1), "greater than 0"),
                      ((4, 4, 0.1, "powerlaw"), "not supported for this density: 0.1")]:
        with pytest.raises(ValueError, match=msg):
            T._validate_csr_generation_inputs(*args)


def test_private_parse_location_and_aux_states_match_mxnet():
    from gpunda import test_utils as T
    d, w = mx.sym.var("d"), mx.sym.var("w")
    s = mx.sym.BatchNorm(mx.sym.FullyConnected(d, w, no_bias=True, num_hidden=3), name="bn")
    loc = T._parse_location(s, [np.ones((2, 4)), np.ones((3, 4)), np.ones(3), np.ones(3)],
                            mx.cpu())
    assert [(k, v.dtype, v.shape) for k, v in loc.items()] == [
        ("bn_beta", np.float32, (3,)), ("bn_gamma", np.float32, (3,)),
        ("d", np.float32, (2, 4)), ("w", np.float32, (3, 4))]
    loc = T._parse_location(s, {k: np.ones(2, dtype=np.float16) for k in s.list_arguments()},
                            mx.cpu(), dtype="asnumpy")
    assert [v.dtype for v in loc.values()] == [np.float16] * 4
    with pytest.raises(ValueError, match="Symbol arguments and keys of the given location"):
        T._parse_location(s, {"d": 1}, mx.cpu())
    aux = T._parse_aux_states(s, [np.zeros(3), np.ones(3)], mx.cpu())
    assert {k: v.asnumpy().tolist() for k, v in aux.items()} == {
        "bn_moving_mean": [0.0] * 3, "bn_moving_var": [1.0] * 3}
    assert aux["bn_moving_var"].dtype == np.float32
    assert T._parse_aux_states(s, None, mx.cpu()) is None
    with pytest.raises(ValueError, match="Symbol aux_states names and given aux_states"):
        T._parse_aux_states(s, {"bn_moving_var": np.ones(3)}, mx.cpu())
