"""MXNet's ``mxnet.rtc``: compile CUDA C++ source at run time and launch its kernels on
NDArrays, through CuPy (``cupy.RawModule``, NVRTC).

Needs a usable GPU with CuPy; elsewhere ``CudaModule`` raises a GpundaError saying so, as a
CPU build of MXNet does. The kernel's signature string ("const float *x, float *y, int n")
is read as MXNet reads it: ``*`` marks an NDArray argument, ``const`` an input; the scalar
and element types are those of ``_DTYPE_CPP_TO_NP``.
"""
from __future__ import annotations

import re

import numpy as np

from gpunda.base import (GpundaAssertionError, GpundaError, GpundaTypeError, GpundaValueError,
                         numeric_types, string_types)
from gpunda._core.capi import _LIB  # noqa: F401 -- MXNet's module holds the library handle
from gpunda.ndarray.ndarray import _DTYPE_MX_TO_NP, _DTYPE_NP_TO_MX, NDArray

__all__ = ["CudaModule", "CudaKernel"]

# the C/C++ type names a signature may use, and their NumPy element types (MXNet 1.9.1's table)
_DTYPE_CPP_TO_NP = {
    "float": np.float32,
    "double": np.float64,
    "__half": np.float16,
    "uint8_t": np.uint8,
    "int": np.int32,
    "int32_t": np.int32,
    "int8_t": np.int8,
    "char": np.int8,
    "int64_t": np.int64,
}

# one argument of a signature, spaces already collapsed: [const ]type[ ][*][ ][name]
_ARG = re.compile(r"(const )?(\w+) ?(\*)? ?(\w+)?")


def _parse_signature(signature):
    """(is_ndarray, is_const, MXNet dtype codes) per argument of ``signature``."""
    is_ndarray, is_const, dtypes = [], [], []
    for raw in re.sub(r"\s+", " ", signature).split(","):
        arg = " ".join(raw.split())
        m = _ARG.fullmatch(arg)
        if m is None or m.group(2) == "const":
            raise GpundaValueError(
                f"mx.rtc: invalid function prototype {arg!r}: each argument must read "
                f"'(const) type (*) (name)'")
        ctype = m.group(2)
        if ctype not in _DTYPE_CPP_TO_NP:
            raise GpundaTypeError(
                f"mx.rtc: unsupported kernel argument type {arg!r}; supported types are: "
                f"{','.join(_DTYPE_CPP_TO_NP)}.")
        is_const.append(m.group(1) is not None)
        is_ndarray.append(m.group(3) is not None)
        dtypes.append(_DTYPE_NP_TO_MX[_DTYPE_CPP_TO_NP[ctype]])
    return is_ndarray, is_const, dtypes


def _cupy_for_rtc(what):
    """CuPy, after checking that a real GPU is usable (not the test stand-in)."""
    from gpunda.backends import discovery
    n, why = discovery.probe()
    if n == 0:
        raise GpundaError(f"mx.rtc.{what} needs a GPU: CUDA runtime compilation runs through "
                          f"CuPy on a CUDA device, and none is usable here ({why})")
    if discovery.standin_active():
        raise GpundaError(f"mx.rtc.{what} needs a real GPU: the test stand-in GPU "
                          f"(GPUNDA_TEST_STANDIN_GPU) cannot run CUDA kernels")
    import cupy
    return cupy


# MXNet's own examples of CudaModule (its docstring's): an extern "C" kernel, and a template
# exported by name; the NVRTC check compiles them (``_core/cuda_sources.py``)
_EXAMPLE_SOURCE = r"""
extern "C" __global__ void axpy(const float *x, float *y, float alpha) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    y[i] += alpha * x[i];
}
template<typename DType>
__global__ void axpy_t(const DType *x, DType *y, DType alpha) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    y[i] += alpha * x[i];
}
"""
_EXAMPLE_EXPORTS = ("axpy_t<float>", "axpy_t<double>")


# what else MXNet's GPU tests launch through mx.rtc: dynamic shared memory (launch's
# shared_mem), and __half, a type a signature may name
_EXAMPLE_SHARED_HALF = r"""
#include <cuda_fp16.h>
extern "C" __global__ void scale_through_shared(const float *x, float *y, float alpha) {
    extern __shared__ float tile[];
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    tile[threadIdx.x] = x[i];
    __syncthreads();
    y[i] += alpha * tile[threadIdx.x];
}
template<typename DType>
__global__ void scale_t(const DType *x, DType *y, DType alpha) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    y[i] = y[i] + alpha * x[i];
}
"""


def cuda_sources():
    """The rtc examples as NVRTC-check sources: the source and its exports."""
    return [("rtc_axpy", _EXAMPLE_SOURCE, _EXAMPLE_EXPORTS),
            ("rtc_shared_half", _EXAMPLE_SHARED_HALF, ("scale_t<__half>", "scale_t<float>"))]


class CudaModule:
    """CUDA C++ ``source`` compiled at run time (NVRTC through CuPy).

    ``options``: compiler flags (a string or a tuple of strings, e.g. "-I/usr/local/cuda/include");
    ``exports``: kernel names to export, templates included ("axpy<float>"); kernels not
    exported must be declared ``extern "C"``. ``get_kernel(name, signature)`` returns a
    :class:`CudaKernel` to ``launch`` on NDArrays of a GPU context.
    """

    def __init__(self, source, options=(), exports=()):
        if isinstance(options, string_types):
            options = (options,)
        if isinstance(exports, string_types):
            exports = (exports,)
        self._source = source
        self._options = tuple(options)
        self._exports = tuple(exports)
        cupy = _cupy_for_rtc("CudaModule")
        self._module = cupy.RawModule(code=source, options=self._options,
                                      name_expressions=self._exports or None)
        # CuPy compiles lazily; MXNet reports a bad source here, so compile now
        try:
            self._module.compile()
        except Exception as e:   # cupy.cuda.compiler.CompileException: its log names the line
            raise GpundaError(f"mx.rtc.CudaModule: the CUDA source does not compile: {e}") \
                from None

    def get_kernel(self, name, signature):
        """The kernel ``name`` of this module (an export name, or an ``extern "C"`` one);
        ``signature`` lists its parameters as in its declaration ("const float *x, float *y,
        float alpha", names optional): ``*`` marks an NDArray, the rest are numbers."""
        is_ndarray, is_const, dtypes = _parse_signature(signature)
        return CudaKernel(self, name, is_ndarray, dtypes, is_const)


class CudaKernel:
    """A kernel of a :class:`CudaModule`; made by ``CudaModule.get_kernel``."""

    def __init__(self, handle, name, is_ndarray, dtypes, is_const=None):
        self.handle = handle          # the CudaModule (MXNet: its C kernel handle)
        self._name = name
        self._is_ndarray = list(is_ndarray)
        self._is_const = list(is_const) if is_const is not None else [False] * len(dtypes)
        self._dtypes = [_DTYPE_MX_TO_NP[i] for i in dtypes]
        self._functions = {}          # CUDA ordinal -> cupy function loaded on that device

    def _function(self, cupy, device_id):
        fn = self._functions.get(device_id)
        if fn is None:
            module = self.handle._module
            try:
                with cupy.cuda.Device(device_id):
                    fn = module.get_function(self._name)
            except Exception as e:
                raise GpundaError(f"mx.rtc.CudaKernel: kernel {self._name!r} is not in the "
                                  f"module ({type(e).__name__}: {e}); a kernel not exported "
                                  f"(exports=) must be declared extern \"C\"") from None
            self._functions[device_id] = fn
        return fn

    def launch(self, args, ctx, grid_dims, block_dims, shared_mem=0):
        """Run the kernel on GPU context ``ctx`` over ``args`` (NDArrays for the pointer
        parameters, numbers for the others), with ``grid_dims`` and ``block_dims`` (3 ints
        each) and ``shared_mem`` bytes of dynamic shared memory."""
        where = f"mx.rtc.CudaKernel({self._name})"
        if getattr(ctx, "device_type", None) != "gpu":
            raise GpundaAssertionError(f"{where}: Cuda kernel can only be launched on GPU, "
                                       f"got ctx={ctx}")
        if len(grid_dims) != 3:
            raise GpundaAssertionError(f"{where}: grid_dims must be a tuple of 3 integers, "
                                       f"got {tuple(grid_dims)}")
        if len(block_dims) != 3:
            raise GpundaAssertionError(f"{where}: block_dims must be a tuple of 3 integers, "
                                       f"got {tuple(block_dims)}")
        if len(args) != len(self._dtypes):
            raise GpundaAssertionError(f"{where}: expects {len(self._dtypes)} arguments but "
                                       f"got {len(args)}")
        cupy = _cupy_for_rtc("CudaKernel.launch")
        kargs = []
        for i, (arg, is_nd, dtype) in enumerate(zip(args, self._is_ndarray, self._dtypes)):
            if is_nd:
                kargs.append(self._device_array(arg, i, dtype, ctx, cupy, where))
            else:
                if not isinstance(arg, numeric_types) or isinstance(arg, NDArray):
                    raise GpundaAssertionError(f"{where}: argument {i} is expected to be a "
                                               f"number, but got {type(arg)}")
                kargs.append(np.dtype(dtype).type(arg))
        fn = self._function(cupy, ctx.device_id)
        grid = tuple(int(d) for d in grid_dims)
        block = tuple(int(d) for d in block_dims)
        try:
            with cupy.cuda.Device(ctx.device_id):
                # CuPy launches on the device's current stream, the one gpunda's ops use, so
                # the kernel runs after the ops that wrote its inputs, before those that read
                fn(grid, block, tuple(kargs), shared_mem=int(shared_mem))
        except Exception as e:   # CuPy loads the kernel lazily: a missing name surfaces here
            raise GpundaError(f"{where}: launch on {ctx} failed ({type(e).__name__}: {e}); "
                              f"a kernel not exported (exports=) must be declared "
                              f"extern \"C\"") from None

    @staticmethod
    def _device_array(arg, i, dtype, ctx, cupy, where):
        if not isinstance(arg, NDArray):
            raise GpundaAssertionError(f"{where}: argument {i} is expected to be a NDArray "
                                       f"but got {type(arg)}")
        if arg.stype != "default":
            raise GpundaError(f"{where}: argument {i} has storage {arg.stype!r}; kernels take "
                              f"dense NDArrays")
        if arg.context != ctx:
            raise GpundaError(f"{where}: argument {i} is on {arg.context}, the kernel is "
                              f"launched on {ctx}")
        if np.dtype(arg.dtype) != np.dtype(dtype):
            raise GpundaError(f"{where}: argument {i} has dtype {np.dtype(arg.dtype).name}, "
                              f"the signature says {np.dtype(dtype).name}")
        arg.wait_to_read()            # raises an error an earlier op deferred into it
        data = arg._data
        if not isinstance(data, cupy.ndarray) or not data.flags.c_contiguous:
            raise GpundaError(f"{where}: argument {i} is not a contiguous CUDA array "
                              f"(copy it first)")
        return data
