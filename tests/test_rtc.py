"""mx.rtc: MXNet 1.9.1's tables and signature grammar, the CPU refusal, and (on a real GPU)
kernels compiled through CuPy run on NDArrays."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import rtc
from gpunda.backends import discovery

# MXNet 1.9.1's mx.rtc._DTYPE_CPP_TO_NP, read from /work/mxref
MXNET_CPP_TO_NP = {"float": np.float32, "double": np.float64, "__half": np.float16,
                   "uint8_t": np.uint8, "int": np.int32, "int32_t": np.int32, "int8_t": np.int8,
                   "char": np.int8, "int64_t": np.int64}


def test_tables_are_mxnets():
    assert rtc._DTYPE_CPP_TO_NP == MXNET_CPP_TO_NP
    assert rtc._DTYPE_NP_TO_MX[np.float32] == 0 and rtc._DTYPE_NP_TO_MX[np.int64] == 6
    assert rtc._DTYPE_MX_TO_NP[2] is np.float16
    assert rtc._DTYPE_NP_TO_MX is mx.nd.ndarray._DTYPE_NP_TO_MX


# (signature, MXNet 1.9.1's verdict: parsed or the exception class), checked on /work/mxref by
# calling get_kernel on a module object whose C handle was never made (parsing comes first)
@pytest.mark.parametrize("sig,want", [
    ("const", ValueError), ("unsigned int x", ValueError), ("float x y z", ValueError),
    ("floatx *a", TypeError), ("float **x", ValueError), ("const const float x", ValueError),
    ("const float*x,int  n", ([True, False], [True, False], [0, 4])),
    ("float*", ([True], [False], [0])), (" int ", ([False], [False], [4])),
    ("const float * x, __half h", ([True, False], [True, False], [0, 2]))])
def test_signature_grammar_matches_mxnet(sig, want):
    if isinstance(want, type):
        with pytest.raises(want) as e:
            rtc._parse_signature(sig)
        assert isinstance(e.value, mx.MXNetError) and "mx.rtc" in str(e.value)
    else:
        assert rtc._parse_signature(sig) == want


@pytest.mark.skipif(discovery.probe()[0] > 0 and not discovery.standin_active(),
                    reason="a real GPU is usable here")
def test_cpu_only_says_a_gpu_is_needed():
    with pytest.raises(mx.MXNetError, match=r"mx\.rtc\.CudaModule needs a (real )?GPU"):
        rtc.CudaModule('extern "C" __global__ void f(float *x) {}')


def test_launch_checks_its_arguments_before_the_device():
    k = rtc.CudaKernel(None, "axpy", [True, True, False], [0, 0, 0])
    x = mx.nd.ones((4,))
    with pytest.raises(AssertionError, match="can only be launched on GPU") as e:
        k.launch([x, x, 1.0], mx.cpu(), (1, 1, 1), (4, 1, 1))
    assert isinstance(e.value, mx.MXNetError)
    with pytest.raises(mx.MXNetError, match="expects 3 arguments but got 2"):
        k.launch([x, x], mx.gpu(0), (1, 1, 1), (4, 1, 1))
    with pytest.raises(mx.MXNetError, match="grid_dims must be a tuple of 3"):
        k.launch([x, x, 1.0], mx.gpu(0), (1, 1), (4, 1, 1))


def _real_gpu():
    return discovery.probe()[0] > 0 and not discovery.standin_active()


@pytest.mark.gpu
@pytest.mark.skipif(not _real_gpu(), reason="needs a real GPU (CuPy's NVRTC)")
def test_axpy_kernels_run_on_ndarrays():
    # the examples of MXNet's CudaModule docstring: extern "C" and an exported template
    src = r'''
    extern "C" __global__ void axpy(const float *x, float *y, float alpha) {
        int i = threadIdx.x + blockIdx.x * blockDim.x;
        y[i] += alpha * x[i];
    }
    template<typename DType>
    __global__ void axpy_t(const DType *x, DType *y, DType alpha) {
        int i = threadIdx.x + blockIdx.x * blockDim.x;
        y[i] += alpha * x[i];
    }
    '''
    mod = rtc.CudaModule(src, exports=["axpy_t<double>"])
    ctx = mx.gpu(0)
    x = mx.nd.array(np.arange(10), ctx=ctx)
    y = mx.nd.ones((10,), ctx=ctx)
    mod.get_kernel("axpy", "const float *x, float *y, float alpha").launch(
        [x, y, 3.0], ctx, (1, 1, 1), (10, 1, 1))
    np.testing.assert_allclose(y.asnumpy(), 1 + 3 * np.arange(10))
    x64 = mx.nd.array(np.arange(10), ctx=ctx, dtype="float64")
    y64 = mx.nd.zeros((10,), ctx=ctx, dtype="float64")
    k64 = mod.get_kernel("axpy_t<double>", "const double *x, double *y, double alpha")
    k64.launch([x64, y64, 2.0], ctx, (1, 1, 1), (10, 1, 1))
    np.testing.assert_allclose(y64.asnumpy(), 2 * np.arange(10))
    with pytest.raises(mx.MXNetError, match="dtype float32, the signature says float64"):
        k64.launch([x, y64, 2.0], ctx, (1, 1, 1), (10, 1, 1))
    with pytest.raises(mx.MXNetError, match="does not compile"):
        rtc.CudaModule('extern "C" __global__ void bad(float *x) { x[0] = undefined_name; }')
