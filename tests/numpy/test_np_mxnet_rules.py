"""mx.np ops where MXNet 1.9.1 departs from NumPy (issue 38: no silent difference from
MXNet). Every expected number was printed by real MXNet 1.9.1 (/work/mxref); the snippet
that gave it is quoted above each check."""
import numpy as onp
import pytest

import gpunda as mx
from gpunda.base import GpundaError

np = mx.np

U8 = onp.array([[1, 200], [3, 4], [50, 6], [7, 8]], dtype="uint8")


def test_var_std_of_integers_wrap_in_the_input_dtype():
    # x = mx.np.array(U8, dtype='uint8'); mx.np.var(x), mx.np.var(x, ddof=1),
    # mx.np.var(x, axis=0), mx.np.std(x), mx.np.var(x, dtype='float32')
    # -> 14, 17, [23, 19], 3, 14.875 (the mean is (279 mod 256) // 8 = 2, the squares wrap)
    x = np.array(U8, dtype="uint8")
    assert np.var(x).dtype == onp.uint8 and int(np.var(x)) == 14
    assert int(np.var(x, ddof=1)) == 17
    assert np.var(x, axis=0).asnumpy().tolist() == [23, 19]
    assert int(np.std(x)) == 3
    r = np.var(x, dtype="float32")
    assert r.dtype == onp.float32 and float(r) == 14.875
    # x = mx.np.array([[-100, -120], [3, 4], [50, 6], [7, -8]], dtype='int8')
    # mx.np.var(x, axis=0) -> [31, 7]; mx.np.var(x, dtype='float64') -> 2.25
    x8 = np.array(onp.array([[-100, -120], [3, 4], [50, 6], [7, -8]]), dtype="int8")
    assert np.var(x8, axis=0).asnumpy().tolist() == [31, 7]
    assert float(np.var(x8, dtype="float64")) == 2.25


def test_var_ddof_beyond_the_count_wraps_as_size_t():
    # mx.np.var(mx.np.array([1., 2., 3., 5.]), ddof=5) -> 4.7433845e-19
    # mx.np.var(mx.np.array([1, 2, 3, 5], dtype='int32'), ddof=5) -> -11; ddof=6 -> -5
    x = np.array([1., 2., 3., 5.])
    onp.testing.assert_allclose(float(np.var(x, ddof=5)), 4.7433845e-19, rtol=1e-6)
    xi = np.array(onp.array([1, 2, 3, 5]), dtype="int32")
    assert int(np.var(xi, ddof=5)) == -11 and int(np.var(xi, ddof=6)) == -5


def test_var_std_refuse_bool():
    # mx.np.var(mx.np.array([True, False], dtype='bool')) -> MXNetError: Unknown type enum 7
    x = np.array(onp.array([True, False]), dtype="bool")
    for f in (np.var, np.std):
        with pytest.raises(GpundaError, match="bool"):
            f(x)


def test_mean_with_int_dtype_truncates_the_float_sum():
    # x = mx.np.array([[0.6, 1.7, -0.4, 2.2], [-0.6, -1.7, -0.4, -2.2]])
    # mx.np.mean(x, axis=-1, dtype='int64') -> [1, -1] (int(4.1) // 4; C division)
    x = np.array(onp.array([[0.6, 1.7, -0.4, 2.2], [-0.6, -1.7, -0.4, -2.2]], dtype="float32"))
    for dt in ("int64", "int32", "int8"):
        r = np.mean(x, axis=-1, dtype=dt)
        assert r.dtype == onp.dtype(dt) and r.asnumpy().tolist() == [1, -1]
