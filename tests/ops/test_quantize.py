"""contrib.quantize / quantize_v2 / dequantize / requantize (gpunda/ops/quantization/quantize.py)
on the GPU (the test stand-in) against MXNet's plain kernels written in NumPy, which its
GPU build runs, and the values of MXNet's test_operator::test_quantization_op on the CPU.
The CPU's oneDNN arithmetic is checked against MXNet's recorded outputs in
test_quantize_cpu_onednn.py."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import nd
from gpunda.base import GpundaError

c = nd.contrib
_X = (np.random.default_rng(0).standard_normal((4, 5)) * 3).astype(np.float32)


def _int8(x, r):
    s = np.float32(127.0 / r)
    return np.trunc(np.sign(x) * np.minimum(np.abs(x) * s + np.float32(0.5), 127)).astype(np.int8)


@pytest.fixture
def on_the_cpu():
    with mx.cpu():      # the CPU wheel's values: cpu(0), also under --standin-gpu
        yield


def test_mxnets_own_quantize_dequantize_values(on_the_cpu):
    a = nd.array([[0.1392, 0.5928], [0.6027, 0.8579]])
    qa, lo, hi = c.quantize(a, nd.array([0.0]), nd.array([1.0]), out_type="int8")
    assert qa.dtype == np.int8 and qa.asnumpy().tolist() == [[18, 75], [77, 109]]
    back = c.dequantize(qa, lo, hi, out_type="float32")
    # MXNet 1.9.1's CPU wheel gave these (oneDNN divides by 127.5); its test's a_real,
    # [[0.14173228, 0.5905512], [0.6062992, 0.8582677]] (steps of 1/127), is within its rtol=1e-2
    np.testing.assert_array_equal(back.asnumpy(), np.array(
        [[0.1411764770746231, 0.5882353186607361], [0.6039215922355652, 0.8549020290374756]],
        np.float32))


@pytest.fixture
def gpu(standin_gpu):
    """MXNet's plain kernels are what its GPU build (and gpunda's GPU) runs."""
    with mx.gpu(0):
        yield


def test_int8_is_zero_centred(gpu):
    q, lo, hi = c.quantize(nd.array(_X), nd.array([-2.5]), nd.array([4.0]), out_type="int8")
    np.testing.assert_array_equal(q.asnumpy(), _int8(_X, 4.0))
    assert (lo.asscalar(), hi.asscalar()) == (-4.0, 4.0)
    back = c.dequantize(q, lo, hi).asnumpy()
    np.testing.assert_allclose(back, _X.clip(-4.0, 4.0), atol=4.0 / 127)


_NO_GPU_UINT8 = "uint8 quantization is only supported by CPU, please switch to the context of CPU"


def test_uint8_outputs_are_refused_on_the_gpu_as_in_mxnets_gpu_build(gpu):
    # quantize-inl.h, quantize_v2-inl.h and requantize-inl.h stop before any work on a GPU
    # when the output type is (or 'auto' resolves to) uint8, already-quantized data included
    x = nd.array(np.abs(_X))
    with pytest.raises(GpundaError, match="_contrib_quantize: currently, " + _NO_GPU_UINT8):
        c.quantize(x, nd.array([0.5]), nd.array([6.0]))     # uint8 is quantize's default
    with pytest.raises(GpundaError, match="_contrib_quantize_v2: currently, " + _NO_GPU_UINT8):
        c.quantize_v2(x, min_calib_range=0.0, max_calib_range=5.0, out_type="auto")
    with pytest.raises(GpundaError, match="_contrib_quantize_v2: currently, " + _NO_GPU_UINT8):
        c.quantize_v2(nd.array([3, 200], dtype="uint8"), out_type="uint8")
    i32 = nd.array([[5, -7]], dtype="int32")
    with pytest.raises(GpundaError, match="_contrib_requantize: currently, " + _NO_GPU_UINT8):
        c.requantize(i32, nd.array([-1.0]), nd.array([1.0]), min_calib_range=0.0,
                     max_calib_range=1.0, out_type="auto")
    # 'auto' with a range below zero is int8, which the GPU computes
    q, _, _ = c.quantize_v2(x, min_calib_range=-1.0, max_calib_range=5.0, out_type="auto")
    assert q.dtype == np.int8


def test_quantize_v2_uses_calibration_or_the_datas_range(gpu):
    q, lo, hi = c.quantize_v2(nd.array(_X))
    r = np.abs(_X).max()
    np.testing.assert_array_equal(q.asnumpy(), _int8(_X, r))
    np.testing.assert_allclose([lo.asscalar(), hi.asscalar()], [-r, r])
    q, lo, hi = c.quantize_v2(nd.array(_X), min_calib_range=-1.0, max_calib_range=5.0)
    np.testing.assert_array_equal(q.asnumpy(), _int8(_X, 5.0))
    assert (lo.asscalar(), hi.asscalar()) == (-5.0, 5.0)
    q8 = nd.array([[1, -3]], dtype="int8")
    q, lo, hi = c.quantize_v2(q8)
    assert q.dtype == np.int8 and (lo.asscalar(), hi.asscalar()) == (-127.0, 127.0)


def test_requantize_int32_to_int8(gpu):
    i32 = np.array([[-2 ** 30, 5 * 10 ** 8, 12345678, -7], [2 ** 30, 3, -4 * 10 ** 8, 10 ** 9]],
                   dtype=np.int32)
    x = i32.astype(np.float32) * np.float32(20.0 / 2147483647.0)
    q, lo, hi = c.requantize(nd.array(i32, dtype="int32"), nd.array([-10.0]), nd.array([20.0]))
    np.testing.assert_array_equal(q.asnumpy(), _int8(x, np.abs(x).max()))
    q, lo, hi = c.requantize(nd.array(i32, dtype="int32"), nd.array([-10.0]), nd.array([20.0]),
                             min_calib_range=-4.0, max_calib_range=3.0)
    np.testing.assert_array_equal(q.asnumpy(), _int8(x, 4.0))
    assert (lo.asscalar(), hi.asscalar()) == (-4.0, 4.0)


def test_bad_dtypes_are_named(on_the_cpu):
    with pytest.raises(GpundaError, match="_contrib_quantize.*float32"):
        c.quantize(nd.ones((2,), dtype="float64"), nd.array([0.0]), nd.array([1.0]))
    with pytest.raises(GpundaError, match="_contrib_dequantize.*uint8 or int8"):
        c.dequantize(nd.ones((2,), dtype="int32"), nd.array([0.0]), nd.array([1.0]))
    with pytest.raises(GpundaError, match="out_type"):
        c.quantize(nd.ones((2,)), nd.array([0.0]), nd.array([1.0]), out_type="int4")
