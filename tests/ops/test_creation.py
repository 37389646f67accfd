"""Creation ops: ``_arange`` (nd.arange / sym.arange) follows MXNet's range kernel.

Reference values are MXNet 1.9.1's (observed): start and step are taken in the dtype
first, and the values are computed in it.
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_arange_matches_numpy_for_exact_configs(dtype):
    for cfg in [(10,), (0, 10), (5, 100, 4), (50, -50, -2), (-100, 100, 1)]:
        want = np.repeat(np.arange(*cfg, dtype=dtype), 3)
        got = mx.nd.arange(*cfg, repeat=3, dtype=dtype)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.asnumpy(), want)
        np.testing.assert_array_equal(mx.sym.arange(*cfg, repeat=3, dtype=dtype).eval()[0]
                                      .asnumpy(), want)


def test_integer_dtype_truncates_start_and_step_first():
    # MXNet: int32 arange(1.3, 456.6, 1.3) has ceil(455.3 / 1.3) = 351 values 1, 2, ...
    got = mx.nd.arange(1.3, 456.6, 1.3, dtype=np.int32).asnumpy()
    np.testing.assert_array_equal(got, np.arange(1, 352, dtype=np.int32))
    got = mx.nd.arange(2, -7.5, -2.5, dtype=np.int8).asnumpy()
    np.testing.assert_array_equal(got, [2, 0, -2, -4])


def test_unsigned_dtype_wraps_as_mxnet():
    got = mx.nd.arange(-100, 100, 1, dtype=np.uint8).asnumpy()
    assert got.shape == (200,)
    np.testing.assert_array_equal(got[:3], [156, 157, 158])
    np.testing.assert_array_equal(got[-3:], [97, 98, 99])


def test_float32_values_computed_in_float32():
    # -3.7f + 1 * 0.9f is -2.8000002 in float32 arithmetic (MXNet's value)
    got = mx.nd.arange(-3.7, 5.2, 0.9, dtype=np.float32).asnumpy()
    want = np.float32(-3.7) + np.arange(10, dtype=np.float32) * np.float32(0.9)
    np.testing.assert_array_equal(got, want)


def test_arange_infer_range_without_stop_is_refused_not_empty():
    # MXNet takes stop from the output size a graph infers (imperatively it has none and
    # fails); in a graph it works (tests/test_arange_infer_range.py)
    with pytest.raises(GpundaError, match="infer_range"):
        mx.nd.arange(0, infer_range=True)
    s = mx.sym.arange(start=0, stop=None, infer_range=True) + mx.sym.zeros(shape=[5])
    np.testing.assert_array_equal(s.bind(ctx=mx.cpu(), args={}).forward()[0].asnumpy(),
                                  np.arange(5))
    np.testing.assert_array_equal(mx.nd.arange(2, 7, infer_range=True).asnumpy(), np.arange(2, 7))
