"""The flat optimizer step on a GPU: one kernel launch per flat buffer (NOTE [Flat CUDA step]).

CUDA C++ kernels (``cupy.RawModule``, ``extern "C"``) for SGD (with and without momentum,
both of ``SGD.update``'s formulas), Adam, LAMB (two launches: the direction with the
per-parameter norms, then the trust-ratio step), AdamW, NAG, RMSProp and AdaGrad, each
updating every segment (parameter) of a flat buffer (``ops/optimizer/flat.py``) in one
launch. The per-parameter numbers (learning rate, weight decay, bias corrections, whether
the parameter is updated at all) come in a small float64 table, one row per segment, rebuilt
on the host every step; a static block table maps each CUDA block to the segment it works
on. Each kernel has an ``_mp`` form for float16 weights with float32 master weights: it
reads the float16 gradients, updates the float32 masters and states, and writes the float16
weights in the same pass. Written without a GPU at
hand: NVRTC compiles them in CI (``python -m gpunda nvrtc-check``), the stand-in GPU runs
their NumPy emulations (``flat_cuda_emu.py``), and the ``gpu`` test
``test_real_gpu_flat_step_equals_cpu_flat_step`` must pass on a GPU before they are trusted.
"""
from __future__ import annotations

import numpy as np

__all__ = ["BLOCK", "SPAN", "block_table", "cuda_sources", "kernel", "supported", "launch",
           "SGD_COLS", "ADAM_COLS", "LAMB_COLS", "ADAMW_COLS", "NAG_COLS", "RMSPROP_COLS",
           "ADAGRAD_COLS"]

# NOTE [Flat CUDA step]
# The kernels repeat the CPU kernels of ops/optimizer/flat.py operation by operation, in
# the same order: every intermediate the NumPy code stores in an array of the buffer's
# dtype is rounded to that dtype here too (for float16, computed in float and rounded back,
# as NumPy's float16 loops do), and every Python float scalar is cast to the buffer's dtype
# before use, as NumPy casts it. Compiled with --fmad=false (no fused multiply-adds) and
# IEEE division and square root (NVRTC's defaults), so the GPU step reproduces the CPU
# step bit for bit, except for LAMB's norms (a tree of float64 atomics against BLAS's dot).
# Block b of a launch updates elements [start, end) of segment seg, rows of the int64
# block table ``(start, end, seg)``: a segment spans one or more blocks of at most SPAN
# elements and a block never straddles two segments, so a block reads its segment's row of
# the scalar table once. A row whose column 0 (active) is 0 is skipped: a stale parameter
# is not updated (as the per-parameter loop skips it). LAMB accumulates each segment's
# sum(w*w) and sum(d*d) in float64 (warp shuffles, then one atomicAdd per warp) in the
# direction launch; the step launch reads them.

BLOCK = 256                  # threads per block
SPAN = BLOCK * 16            # elements per block at most

# the columns of each kernel's per-segment float64 table
SGD_COLS = ("active", "step", "decay", "lrwd", "lr", "wd_nonzero", "rescale", "has_clip",
            "clip", "momentum")
ADAM_COLS = ("active", "lr", "wd", "rescale", "has_clip", "clip", "beta1", "one_m_beta1",
             "one_m_beta2", "beta2", "epsilon")
LAMB_COLS = ("active", "wd", "rescale", "has_clip", "clip", "beta1", "one_m_beta1",
             "one_m_beta2", "beta2", "epsilon", "bias1", "bias2", "lr", "lower", "upper",
             "bias_correction")
ADAMW_COLS = ("active", "lr", "wd", "eta", "rescale", "has_clip", "clip", "beta1", "beta2",
              "epsilon")
NAG_COLS = ("active", "lr", "wd", "rescale", "has_clip", "clip", "momentum", "momentum_p1")
RMSPROP_COLS = ("active", "lr", "wd", "rescale", "has_clip", "clip", "gamma1", "one_m_gamma1",
                "gamma2", "epsilon", "has_clip_weights", "clip_weights")
ADAGRAD_COLS = ("active", "lr", "wd", "rescale", "has_clip", "clip", "epsilon")

_TYPES = {
    "float32": r"""
typedef float T; typedef float A;
__device__ __forceinline__ A ld(T x) { return x; }
__device__ __forceinline__ T st(A x) { return x; }
__device__ __forceinline__ A rnd(A x) { return x; }
__device__ __forceinline__ A cv(double d) { return (float)d; }
""",
    "float64": r"""
typedef double T; typedef double A;
__device__ __forceinline__ A ld(T x) { return x; }
__device__ __forceinline__ T st(A x) { return x; }
__device__ __forceinline__ A rnd(A x) { return x; }
__device__ __forceinline__ A cv(double d) { return d; }
""",
    "float16": r"""
#include <cuda_fp16.h>
typedef __half T; typedef float A;
__device__ __forceinline__ A ld(T x) { return __half2float(x); }
__device__ __forceinline__ T st(A x) { return __float2half_rn(x); }
__device__ __forceinline__ A rnd(A x) { return __half2float(__float2half_rn(x)); }
__device__ __forceinline__ A cv(double d) { return __half2float(__double2half(d)); }
""",
}

_BODY = r"""
#define C(k) cv(row[k])
// the weight's new value, and for multi-precision kernels (W the float32 master) the
// float16 weight too, rounded from it as astype(float16) does
#define STW(i, x) do { const A w_ = (x); W[i] = st(w_); GPUNDA_W16_STORE(i, w_); } while (0)
// np.clip(x, -c, c), which is minimum(maximum(x, -c), c): NaN stays NaN (fminf/fmaxf would
// drop it), and a negative c gives c everywhere
__device__ __forceinline__ A clipv(A x, A c) {
    const A y = x < -c ? -c : x;
    return y > c ? c : y;
}

#define GPUNDA_BLOCK_PROLOGUE(NCOLS)                                              \
    const long long* bt = btab + 3 * (long long)blockIdx.x;                       \
    const long long lo = bt[0], hi = bt[1];                                       \
    const int seg = (int)bt[2];                                                   \
    const double* row = tab + (long long)seg * NCOLS;                             \
    if (row[0] == 0.0) return;

// without momentum M is W again (never read then), so it is not declared __restrict__
extern "C" __global__ void GPUNDA_K(gpunda_flat_sgd)(T* __restrict__ W, const GT* __restrict__ G,
        T* M, const long long* __restrict__ btab,
        const double* __restrict__ tab, const int op_form, const int has_mom GPUNDA_MP_PARAM) {
    GPUNDA_BLOCK_PROLOGUE(10)
    const A step = C(1), decay = C(2), lrwd = C(3), lr = C(4), rs = C(6), clip = C(8),
            mom = C(9);
    const bool wdnz = row[5] != 0.0, has_clip = row[7] != 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        A w = ld(W[i]);
        const A g = ldg(G[i]);
        if (!op_form) {                    // SGD.update's in-place formula
            const A a = rnd(g * step);
            if (!has_mom) {
                if (wdnz) w = rnd(w * decay);
                w = rnd(w - a);
            } else {
                A m = rnd(ld(M[i]) * mom);
                m = rnd(m - a);
                if (wdnz) m = rnd(m - rnd(w * lrwd));
                w = rnd(w + m);
                M[i] = st(m);
            }
        } else {                           // the operators' formula (clip_gradient set)
            A a = rnd(g * rs);
            if (has_clip) a = clipv(a, clip);
            a = rnd(a * lr);
            if (!has_mom) {
                w = rnd(w * decay);
                w = rnd(w - a);
            } else {
                A m = rnd(ld(M[i]) * mom);
                m = rnd(m - rnd(w * lrwd));
                m = rnd(m - a);
                w = rnd(w + m);
                M[i] = st(m);
            }
        }
        STW(i, w);
    }
}

extern "C" __global__ void GPUNDA_K(gpunda_flat_adam)(T* __restrict__ W, const GT* __restrict__ G,
        T* __restrict__ M, T* __restrict__ V, const long long* __restrict__ btab,
        const double* __restrict__ tab GPUNDA_MP_PARAM) {
    GPUNDA_BLOCK_PROLOGUE(11)
    const A lr = C(1), wd = C(2), rs = C(3), clip = C(5), b1 = C(6), omb1 = C(7),
            omb2 = C(8), b2 = C(9), eps = C(10);
    const bool has_clip = row[4] != 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        A w = ld(W[i]), m = ld(M[i]), v = ld(V[i]);
        A b = rnd(w * wd);
        A a = rnd(rnd(ldg(G[i]) * rs) + b);
        if (has_clip) a = clipv(a, clip);
        m = rnd(rnd(m * b1) + rnd(a * omb1));
        v = rnd(rnd(v * b2) + rnd(rnd(a * omb2) * a));
        b = rnd(rnd(sqrt(v)) + eps);
        a = rnd(rnd(m * lr) / b);
        STW(i, rnd(w - a));
        M[i] = st(m);
        V[i] = st(v);
    }
}

// one partial sum per warp, then one float64 atomicAdd per warp into out
__device__ __forceinline__ void gpunda_warp_add(double x, double* out) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, x);
}

extern "C" __global__ void GPUNDA_K(gpunda_flat_lamb1)(const T* __restrict__ W, 
        const GT* __restrict__ G,
        T* __restrict__ M, T* __restrict__ V, T* __restrict__ D,
        const long long* __restrict__ btab, const double* __restrict__ tab,
        double* __restrict__ norms GPUNDA_MP_PARAM) {
    GPUNDA_BLOCK_PROLOGUE(16)
    const A wd = C(1), rs = C(2), clip = C(4), b1 = C(5), omb1 = C(6), omb2 = C(7),
            b2 = C(8), eps = C(9), c1 = C(10), c2 = C(11);
    const bool has_clip = row[3] != 0.0, bias = row[15] != 0.0;
    double sw = 0.0, sd = 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        const A w = ld(W[i]);
        A m = ld(M[i]), v = ld(V[i]);
        A a = rnd(ldg(G[i]) * rs);
        if (has_clip) a = clipv(a, clip);
        m = rnd(rnd(m * b1) + rnd(a * omb1));
        v = rnd(rnd(v * b2) + rnd(rnd(a * omb2) * a));
        A b;
        if (bias) {
            b = rnd(rnd(sqrt(rnd(v / c2))) + eps);
            a = rnd(m / c1);
        } else {
            b = rnd(rnd(sqrt(v)) + eps);
            a = m;
        }
        const A d = rnd(rnd(a / b) + rnd(w * wd));
        M[i] = st(m);
        V[i] = st(v);
        D[i] = st(d);
        sw += (double)w * (double)w;
        sd += (double)d * (double)d;
    }
    gpunda_warp_add(sw, norms + 2 * seg);
    gpunda_warp_add(sd, norms + 2 * seg + 1);
}

extern "C" __global__ void GPUNDA_K(gpunda_flat_lamb2)(T* __restrict__ W, const T* __restrict__ D,
        const long long* __restrict__ btab, const double* __restrict__ tab,
        const double* __restrict__ norms GPUNDA_MP_PARAM) {
    GPUNDA_BLOCK_PROLOGUE(16)
    // the norms as the CPU step has them: sqrt in the buffer's dtype, then a double
    double r1 = (double)cv(sqrt(norms[2 * seg])), r2 = (double)cv(sqrt(norms[2 * seg + 1]));
    const double lower = row[13], upper = row[14];
    if (lower != 0.0 && lower > r1) r1 = lower;       // Python's max(r1, lower)
    if (upper != 0.0 && upper < r1) r1 = upper;       // Python's min(r1, upper)
    const double ratio = (r1 == 0.0 || r2 == 0.0) ? 1.0 : r1 / r2;
    const A step = cv(row[12] * ratio);
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x)
        STW(i, rnd(ld(W[i]) - rnd(ld(D[i]) * step)));
}

extern "C" __global__ void GPUNDA_K(gpunda_flat_adamw)(T* __restrict__ W, const GT* __restrict__ G,
        T* __restrict__ M, T* __restrict__ V, const long long* __restrict__ btab,
        const double* __restrict__ tab GPUNDA_MP_PARAM) {
    GPUNDA_BLOCK_PROLOGUE(10)
    const A lr = C(1), wd = C(2), eta = C(3), rs = C(4), clip = C(6), b1 = C(7), b2 = C(8),
            eps = C(9);
    const A omb1 = rnd((A)1 - b1), omb2 = rnd((A)1 - b2);
    const bool has_clip = row[5] != 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        const A w = ld(W[i]);
        A gr = rnd(rs * ldg(G[i]));
        if (has_clip) gr = clipv(gr, clip);
        const A m = rnd(rnd(b1 * ld(M[i])) + rnd(omb1 * gr));
        const A v = rnd(rnd(b2 * ld(V[i])) + rnd(rnd(omb2 * gr) * gr));
        const A u = rnd(rnd(rnd(lr * m) / rnd(rnd(sqrt(v)) + eps)) + rnd(wd * w));
        STW(i, rnd(w - rnd(eta * u)));
        M[i] = st(m);
        V[i] = st(v);
    }
}

extern "C" __global__ void GPUNDA_K(gpunda_flat_nag)(T* __restrict__ W, const GT* __restrict__ G,
        T* __restrict__ M, const long long* __restrict__ btab,
        const double* __restrict__ tab GPUNDA_MP_PARAM) {
    GPUNDA_BLOCK_PROLOGUE(8)
    const A lr = C(1), wd = C(2), rs = C(3), clip = C(5), mu = C(6), mu1 = C(7);
    const bool has_clip = row[4] != 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        A w = ld(W[i]), m = ld(M[i]);
        A a = rnd(ldg(G[i]) * rs);
        if (has_clip) a = clipv(a, clip);
        m = rnd(m * mu);
        A b = rnd(rnd(rnd(a + rnd(w * wd)) * lr));
        b = rnd(rnd(m - b) * mu1);
        w = rnd(rnd(w - m) + b);
        m = rnd(m - rnd(rnd(a + rnd(w * wd)) * lr));   // the weight just written
        STW(i, w);
        M[i] = st(m);
    }
}

// not centered: GB and DL are N again (never read then), so none is __restrict__
extern "C" __global__ void GPUNDA_K(gpunda_flat_rmsprop)(T* __restrict__ W, 
        const GT* __restrict__ G,
        T* N, T* GB, T* DL, const long long* __restrict__ btab,
        const double* __restrict__ tab, const int centered GPUNDA_MP_PARAM) {
    GPUNDA_BLOCK_PROLOGUE(12)
    const A lr = C(1), wd = C(2), rs = C(3), clip = C(5), g1 = C(6), omg1 = C(7), g2 = C(8),
            eps = C(9), cw = C(11);
    const bool has_clip = row[4] != 0.0, has_cw = row[10] != 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        A w = ld(W[i]);
        A a = rnd(rnd(ldg(G[i]) * rs) + rnd(w * wd));
        if (has_clip) a = clipv(a, clip);
        const A n = rnd(rnd(ld(N[i]) * g1) + rnd(rnd(a * omg1) * a));
        N[i] = st(n);
        if (!centered) {
            w = rnd(w - rnd(rnd(a * lr) / rnd(sqrt(rnd(n + eps)))));
        } else {
            const A gb = rnd(rnd(ld(GB[i]) * g1) + rnd(a * omg1));
            const A b = rnd(sqrt(rnd(rnd(n - rnd(gb * gb)) + eps)));
            const A dl = rnd(rnd(ld(DL[i]) * g2) - rnd(rnd(a * lr) / b));
            w = rnd(w + dl);
            GB[i] = st(gb);
            DL[i] = st(dl);
        }
        if (has_cw) w = clipv(w, cw);
        STW(i, w);
    }
}

extern "C" __global__ void GPUNDA_K(gpunda_flat_adagrad)(T* __restrict__ W, 
        const GT* __restrict__ G,
        T* __restrict__ H, const long long* __restrict__ btab,
        const double* __restrict__ tab GPUNDA_MP_PARAM) {
    GPUNDA_BLOCK_PROLOGUE(7)
    const A lr = C(1), wd = C(2), rs = C(3), clip = C(5), eps = C(6);
    const bool has_clip = row[4] != 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        const A w = ld(W[i]);
        A a = rnd(ldg(G[i]) * rs);
        if (has_clip) a = clipv(a, clip);
        const A h = rnd(ld(H[i]) + rnd(a * a));
        a = rnd(a / rnd(sqrt(rnd(h + eps))));
        a = rnd(rnd(a + rnd(w * wd)) * lr);
        STW(i, rnd(w - a));
        H[i] = st(h);
    }
}
"""

OPTIONS = ("--fmad=false",)
KERNELS = ("gpunda_flat_sgd", "gpunda_flat_adam", "gpunda_flat_lamb1", "gpunda_flat_lamb2",
           "gpunda_flat_adamw", "gpunda_flat_nag", "gpunda_flat_rmsprop", "gpunda_flat_adagrad")
_PLAIN = r"""
#define GT T
#define ldg(x) ld(x)
#define GPUNDA_K(name) name
#define GPUNDA_MP_PARAM
#define GPUNDA_W16_STORE(i, w)
"""
# float16 weights with float32 master weights: the kernels update the float32 masters from
# the float16 gradients and write the float16 weights in the same pass (``<name>_mp``)
_MP = r"""
#include <cuda_fp16.h>
#define GT __half
__device__ __forceinline__ A ldg(__half x) { return __half2float(x); }
#define GPUNDA_K(name) name##_mp
#define GPUNDA_MP_PARAM , __half* __restrict__ W16
#define GPUNDA_W16_STORE(i, w) W16[i] = __float2half_rn(w)
"""
_SOURCES = {dt: _TYPES[dt] + _PLAIN + _BODY for dt in _TYPES}
_SOURCES["float32_mp"] = _TYPES["float32"] + _MP + _BODY
_modules = {}     # (id of the array module, device, dtype name) -> RawModule


def supported(dtype):
    """Whether the flat CUDA kernels exist for ``dtype``."""
    return np.dtype(dtype).name in _TYPES


def cuda_sources():
    """The kernels' sources, one per dtype, for the NVRTC check (``_core/cuda_sources.py``)."""
    return [(f"flat_optimizer[{dt}]", code, (), OPTIONS) for dt, code in _SOURCES.items()]


def kernel(xp, dtype, name, mp=False):
    """Kernel ``name`` for ``dtype`` (``mp``: its float16-weight, float32-master form),
    compiled once per array module and device."""
    dev = xp.cuda.runtime.getDevice()
    src = "float32_mp" if mp else np.dtype(dtype).name
    key = (id(xp), dev, src)
    mod = _modules.get(key)
    if mod is None:
        if hasattr(xp.RawModule, "emulations"):     # the test stand-in: NumPy emulations
            from gpunda.ops.optimizer import flat_cuda_emu
            flat_cuda_emu.register(xp)
        mod = _modules[key] = xp.RawModule(code=_SOURCES[src], options=OPTIONS)
    return mod.get_function(name + "_mp" if mp else name)


def block_table(offsets, span=SPAN):
    """The int64 ``(nblocks, 3)`` table ``(start, end, segment)`` of segments
    ``[offsets[k], offsets[k+1])``, each cut into blocks of at most ``span`` elements."""
    off = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(off)
    nb = (sizes + span - 1) // span
    seg = np.repeat(np.arange(len(sizes), dtype=np.int64), nb)
    first = np.repeat(np.cumsum(nb) - nb, nb)
    start = off[:-1][seg] + (np.arange(len(seg), dtype=np.int64) - first) * span
    end = np.minimum(start + span, off[1:][seg])
    return np.ascontiguousarray(np.stack([start, end, seg], axis=1))


def launch(xp, dtype, name, btab, args, w16=None):
    """Launch ``name`` over the blocks of ``btab`` (a device copy of ``block_table``).
    With ``w16`` (the float16 weights), its multi-precision form: ``args`` hold the float32
    master weights first and the float16 gradients second."""
    n = int(btab.shape[0])
    if n:
        if w16 is None:
            kernel(xp, dtype, name)((n,), (BLOCK,), args)
        else:
            kernel(xp, dtype, name, True)((n,), (BLOCK,), tuple(args) + (w16,))
