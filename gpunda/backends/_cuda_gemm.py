"""A matrix product that can be captured into a CUDA graph (NOTE [Capture-safe GEMM]
in ops/_util.py).

CuPy refuses cuBLAS calls on a capturing stream. While CachedOp captures a
segment, the GEMM ops multiply through ``matmul`` here instead: a shared-memory
tiled kernel compiled once by NVRTC (``cupy.RawModule``). A launch is an
ordinary kernel node; the only allocation is the output, which comes from the
graph's private pool; nothing synchronises with the host. It is slower than
cuBLAS for large products, so it is used only inside captures, where removing
the launch overhead of a whole segment is the point.

Accumulation is in float for float16 and in the input type otherwise. Integer
products go to ``cupy.matmul``, which uses CuPy's own kernels, not cuBLAS.
Written without a GPU at hand: the ``gpu`` tests in tests/test_cuda_graphs.py
compare it with ``cupy.matmul`` and must run before it is trusted.
"""
from __future__ import annotations

import sys

import numpy as np

__all__ = ["matmul", "prepare"]

_TILE = 16
_MAX_GRID_Z = 65535

# One kernel per dtype from one body; A is (batch, M, K) and B (batch, K, N),
# both read through element strides (so transposed views need no copy); C is a
# contiguous (batch, M, N). Batches start at z0 (the grid's z is limited).
_BODY = f"#define GPUNDA_TS {_TILE}\n" + r"""
#define GPUNDA_GEMM(NAME, T, ACC, LOAD, STORE)                                          \
extern "C" __global__ void NAME(const T* __restrict__ A, const T* __restrict__ B,        \
                                T* __restrict__ C, const int M, const int N, const int K, \
                                const long long sab, const long long sam,                \
                                const long long sak, const long long sbb,                \
                                const long long sbk, const long long sbn,                \
                                const long long z0) {                                     \
    __shared__ ACC As[GPUNDA_TS][GPUNDA_TS + 1];                                         \
    __shared__ ACC Bs[GPUNDA_TS][GPUNDA_TS + 1];                                         \
    const int tx = threadIdx.x, ty = threadIdx.y;                                        \
    const long long z = z0 + blockIdx.z;                                                 \
    const int row = blockIdx.y * GPUNDA_TS + ty;                                         \
    const int col = blockIdx.x * GPUNDA_TS + tx;                                         \
    const T* Az = A + z * sab;                                                           \
    const T* Bz = B + z * sbb;                                                           \
    ACC acc = (ACC)0;                                                                    \
    for (int t = 0; t < K; t += GPUNDA_TS) {                                             \
        const int ka = t + tx, kb = t + ty;                                              \
        As[ty][tx] = (row < M && ka < K) ? LOAD(Az[row * sam + ka * sak]) : (ACC)0;      \
        Bs[ty][tx] = (kb < K && col < N) ? LOAD(Bz[kb * sbk + col * sbn]) : (ACC)0;      \
        __syncthreads();                                                                 \
        for (int k = 0; k < GPUNDA_TS; ++k) acc += As[ty][k] * Bs[k][tx];                \
        __syncthreads();                                                                 \
    }                                                                                    \
    if (row < M && col < N) C[(z * M + row) * (long long)N + col] = STORE(acc);          \
}
#define GPUNDA_SAME(x) (x)
"""

_SOURCES = {
    "float32": _BODY + "GPUNDA_GEMM(gpunda_gemm, float, float, GPUNDA_SAME, GPUNDA_SAME)\n",
    "float64": _BODY + "GPUNDA_GEMM(gpunda_gemm, double, double, GPUNDA_SAME, GPUNDA_SAME)\n",
    "float16": "#include <cuda_fp16.h>\n" + _BODY
               + "GPUNDA_GEMM(gpunda_gemm, __half, float, __half2float, __float2half)\n",
}
_kernels = {}   # (device id, dtype name) -> compiled kernel


def cuda_sources():
    """The GEMM's sources, one per dtype, for the NVRTC check (``_core/cuda_sources.py``)."""
    return [(f"gpunda_gemm[{dt}]", code) for dt, code in _SOURCES.items()]


def _cupy_for(a):
    # the test stand-in's module for its arrays (backends/_standin.py), else CuPy
    st = sys.modules.get("gpunda.backends._standin")
    if st is not None and type(a) is st.ndarray:
        return st.xp
    import cupy
    return cupy


def _kernel(dtype, cupy=None):
    if cupy is None:
        import cupy
    key = (id(cupy), cupy.cuda.runtime.getDevice(), dtype.name)
    k = _kernels.get(key)
    if k is None:
        k = _kernels[key] = cupy.RawModule(code=_SOURCES[dtype.name]).get_function("gpunda_gemm")
    return k


def prepare(dtypes, cupy=None):
    """Compile and load the kernels for ``dtypes`` now, so a capture never does it."""
    for dt in dtypes:
        dt = np.dtype(dt)
        if dt.name in _SOURCES:
            _kernel(dt, cupy)


def _batched(x):
    """``x`` as (batch, rows, cols) with its element strides (a view when it can be)."""
    if x.ndim == 2:
        x = x[None]
    elif x.ndim > 3:
        x = x.reshape((-1,) + x.shape[-2:])
    item = x.itemsize
    return x, tuple(s // item for s in x.strides)


def matmul(a, b):
    """``a @ b`` for 2-D arrays, or batches with equal leading shapes, without cuBLAS."""
    cupy = _cupy_for(a)
    if a.dtype != b.dtype or a.dtype.name not in _SOURCES:
        # integer products use CuPy's own kernels; a mix of types is promoted first
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            dt = np.result_type(a.dtype, b.dtype)
            if dt.name in _SOURCES:
                return matmul(a.astype(dt, copy=False), b.astype(dt, copy=False))
            raise NotImplementedError(f"capture-safe GEMM: no kernel for {dt.name}")
        return cupy.matmul(a, b)
    if a.ndim < 2 or b.ndim < 2 or a.shape[:-2] != b.shape[:-2]:
        raise NotImplementedError(f"capture-safe GEMM: shapes {a.shape} and {b.shape} are "
                                  f"not 2-D or equally batched")
    M, K = a.shape[-2:]
    K2, N = b.shape[-2:]
    if K != K2:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not align ({K} != {K2})")
    lead = a.shape[:-2]
    out = cupy.empty(lead + (M, N), dtype=a.dtype)
    batch = int(np.prod(lead, dtype=np.int64)) if lead else 1
    if out.size == 0:
        return out
    a3, (sab, sam, sak) = _batched(a)
    b3, (sbb, sbk, sbn) = _batched(b)
    kern = _kernel(a.dtype, cupy)
    gx, gy = (N + _TILE - 1) // _TILE, (M + _TILE - 1) // _TILE
    i64 = np.int64
    for z0 in range(0, batch, _MAX_GRID_Z):
        gz = min(_MAX_GRID_Z, batch - z0)
        kern((gx, gy, gz), (_TILE, _TILE, 1),
             (a3, b3, out, np.int32(M), np.int32(N), np.int32(K), i64(sab), i64(sam), i64(sak),
              i64(sbb), i64(sbk), i64(sbn), i64(z0)))
    return out
