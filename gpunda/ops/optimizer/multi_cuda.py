"""MXNet's multi-tensor SGD ops on a GPU: one kernel launch per dtype group (NOTE [Multi CUDA]).

``multi_sgd_update`` and its momentum, multi-precision and ``preloaded_`` forms get their
tensors as separate arrays, not as one flat buffer, so these kernels read them in place
through a pointer table: per tensor (segment) a row of device addresses (new weight, weight,
gradient, momentum, float16 weight), beside the block table of ``flat_cuda.py`` (block ->
element range of one segment) and a float64 row of that tensor's numbers (lr, wd, ...). The
three tables travel in one int64 buffer, one host-to-device copy per launch. Compiled by
NVRTC in CI (``python -m gpunda nvrtc-check``), run on the test stand-in GPU through the
NumPy emulations of ``multi_cuda_emu.py``; ``multi.py`` calls :func:`sgd` on a GPU context.
"""
from __future__ import annotations

import numpy as np

from gpunda.ops.optimizer import flat_cuda as _fc

__all__ = ["SGD_COLS", "ADAMW_COLS", "LAMB_COLS", "lamb", "NPTR", "cuda_sources", "sgd", "adamw", "launch"]

# NOTE [Multi CUDA]
# The kernels repeat ops/optimizer/flat.py's multi_sgd (the CPU path of the multi_* ops)
# operation by operation, rounding each intermediate to the weight's dtype where NumPy
# stores it, with the scalars cast to that dtype first (flat_cuda's NOTE [Flat CUDA step]
# has the conventions, and its _TYPES the per-dtype helpers), so the GPU result equals the
# CPU result bit for bit. Row k of the pointer table holds NPTR addresses for tensor k:
# 0 the new weight (the float32 master for mp, updated in place), 1 the weight read (the
# master for mp), 2 the gradient, 3 the momentum or mean (0 without), 4 the variance
# (AdamW), 5 the float16 weight written (mp only), 6 LAMB's direction (scratch), 7 the
# weight whose norm LAMB takes (the op's weight input: float16 for mp), 0 where unused. The block table's (start, end) are element indices inside that tensor.

NPTR = 8
SGD_COLS = ("lr", "wd", "rescale", "has_clip", "clip", "momentum")
LAMB_COLS = ("lr", "wd", "rescale", "has_clip", "clip", "beta1", "one_m_beta1", "beta2",
             "one_m_beta2", "epsilon", "bias_correction", "c1", "c2", "lower", "upper")
ADAMW_COLS = ("lr", "wd", "eta", "rescale", "has_clip", "clip", "beta1", "beta2", "epsilon")

_BODY = r"""
#define NPTR 8
#define C(k) cv(row[k])
__device__ __forceinline__ A clipv(A x, A c) {
    const A y = x < -c ? -c : x;
    return y > c ? c : y;
}

extern "C" __global__ void GPUNDA_K(gpunda_multi_sgd)(const long long* __restrict__ ptrs,
        const long long* __restrict__ btab, const double* __restrict__ tab,
        const int has_mom) {
    const long long* bt = btab + 3 * (long long)blockIdx.x;
    const long long lo = bt[0], hi = bt[1];
    const int seg = (int)bt[2];
    const double* row = tab + (long long)seg * 6;
    const long long* p = ptrs + (long long)seg * NPTR;
    T* OUT = (T*)p[0];
    const T* W = (const T*)p[1];
    const GT* G = (const GT*)p[2];
    T* M = (T*)p[3];
    GPUNDA_W16_DECL
    // multi_sgd's c = -lr * wd, a product of the two scalars in the weight's dtype
    const A lr = C(0), c = rnd(-(C(0) * C(1))), rs = C(2), clip = C(4), mo = C(5);
    const bool has_clip = row[3] != 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        const A w = ld(W[i]);
        A a = rnd(ldg(G[i]) * rs);
        if (has_clip) a = clipv(a, clip);
        A b = rnd(w * c);
        a = rnd(a * lr);
        b = rnd(b - a);
        if (has_mom) {
            b = rnd(rnd(ld(M[i]) * mo) + b);
            M[i] = st(b);
        }
        const A nw = rnd(w + b);
        OUT[i] = st(nw);
        GPUNDA_W16_STORE(i, nw);
    }
}

// _multi_adamw_update (MultiMPAdamWKernel's association: m = beta1 * (m - g) + g); the
// rescale factor is the host's reading of the rescale_grad array
extern "C" __global__ void GPUNDA_K(gpunda_multi_adamw)(const long long* __restrict__ ptrs,
        const long long* __restrict__ btab, const double* __restrict__ tab) {
    const long long* bt = btab + 3 * (long long)blockIdx.x;
    const long long lo = bt[0], hi = bt[1];
    const int seg = (int)bt[2];
    const double* row = tab + (long long)seg * 9;
    const long long* p = ptrs + (long long)seg * NPTR;
    T* OUT = (T*)p[0];
    const T* W = (const T*)p[1];
    const GT* G = (const GT*)p[2];
    T* M = (T*)p[3];
    T* V = (T*)p[4];
    GPUNDA_W16_DECL
    const A lr = C(0), wd = C(1), eta = C(2), rs = C(3), clip = C(5), b1 = C(6), b2 = C(7),
            eps = C(8);
    const bool has_clip = row[4] != 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        const A w = ld(W[i]);
        A gr = rnd(rs * ldg(G[i]));
        if (has_clip) gr = clipv(gr, clip);
        const A m = rnd(rnd(b1 * rnd(ld(M[i]) - gr)) + gr);
        const A sq = rnd(gr * gr);
        const A v = rnd(rnd(b2 * rnd(ld(V[i]) - sq)) + sq);
        const A u = rnd(rnd(rnd(lr * m) / rnd(rnd(sqrt(v)) + eps)) + rnd(wd * w));
        const A nw = rnd(w - rnd(eta * u));
        M[i] = st(m);
        V[i] = st(v);
        OUT[i] = st(nw);
        GPUNDA_W16_STORE(i, nw);
    }
}

// one partial sum per warp, then one float64 atomicAdd per warp into out
__device__ __forceinline__ void gpunda_warp_add(double x, double* out) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, x);
}

// _multi_lamb_update, phase 1: the moments and the direction d (into the scratch at p[6]),
// and per tensor sum(square(weight)) (squared in the weight input's dtype) and
// sum(square(float(d))), as MultiSumSq takes them, into norms[2 * seg], norms[2 * seg + 1]
extern "C" __global__ void GPUNDA_K(gpunda_multi_lamb1)(const long long* __restrict__ ptrs,
        const long long* __restrict__ btab, const double* __restrict__ tab,
        double* __restrict__ norms) {
    const long long* bt = btab + 3 * (long long)blockIdx.x;
    const long long lo = bt[0], hi = bt[1];
    const int seg = (int)bt[2];
    const double* row = tab + (long long)seg * 15;
    const long long* p = ptrs + (long long)seg * NPTR;
    const T* W = (const T*)p[1];
    const GT* G = (const GT*)p[2];
    T* M = (T*)p[3];
    T* V = (T*)p[4];
    T* D = (T*)p[6];
    const GT* WI = (const GT*)p[7];
    const A wd = C(1), rs = C(2), clip = C(4), b1 = C(5), omb1 = C(6), b2 = C(7), omb2 = C(8),
            eps = C(9), c1 = C(11), c2 = C(12);
    const bool has_clip = row[3] != 0.0, bias = row[10] != 0.0;
    double sw = 0.0, sd = 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        const A w = ld(W[i]);
        A a = rnd(ldg(G[i]) * rs);
        if (has_clip) a = clipv(a, clip);
        const A m = rnd(rnd(b1 * ld(M[i])) + rnd(omb1 * a));
        const A v = rnd(rnd(b2 * ld(V[i])) + rnd(rnd(omb2 * a) * a));
        const A mh = bias ? rnd(m / c1) : m, vh = bias ? rnd(v / c2) : v;
        const A d = rnd(rnd(mh / rnd(rnd(sqrt(vh)) + eps)) + rnd(wd * w));
        M[i] = st(m);
        V[i] = st(v);
        D[i] = st(d);
        sw += (double)GPUNDA_WSQ(WI[i]);
        const float df = (float)d;
        sd += (double)(df * df);
    }
    gpunda_warp_add(sw, norms + 2 * seg);
    gpunda_warp_add(sd, norms + 2 * seg + 1);
}

// phase 2: the trust ratio from the float32 norms, then w - (lr * r1 / r2) * d
extern "C" __global__ void GPUNDA_K(gpunda_multi_lamb2)(const long long* __restrict__ ptrs,
        const long long* __restrict__ btab, const double* __restrict__ tab,
        const double* __restrict__ norms) {
    const long long* bt = btab + 3 * (long long)blockIdx.x;
    const long long lo = bt[0], hi = bt[1];
    const int seg = (int)bt[2];
    const double* row = tab + (long long)seg * 15;
    const long long* p = ptrs + (long long)seg * NPTR;
    T* OUT = (T*)p[0];
    const T* W = (const T*)p[1];
    const T* D = (const T*)p[6];
    GPUNDA_W16_DECL
    double r1 = (double)sqrtf((float)norms[2 * seg]);
    const double r2 = (double)sqrtf((float)norms[2 * seg + 1]);
    const double lower = row[13], upper = row[14];
    if (lower >= 0.0 && lower > r1) r1 = lower;       // Python's max(r1, lower)
    if (upper >= 0.0 && upper < r1) r1 = upper;       // Python's min(r1, upper)
    const double lr = (r1 == 0.0 || r2 == 0.0) ? row[0] : row[0] * r1 / r2;
    const A step = cv(lr);
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        const A nw = rnd(ld(W[i]) - rnd(step * ld(D[i])));
        OUT[i] = st(nw);
        GPUNDA_W16_STORE(i, nw);
    }
}
"""

_PLAIN = r"""
#define GT T
#define ldg(x) ld(x)
#define GPUNDA_K(name) name##_SUFFIX
#define GPUNDA_W16_DECL
#define GPUNDA_W16_STORE(i, w)
#define GPUNDA_WSQ(x) ((float)rnd(ld(x) * ld(x)))
"""
_MP = r"""
#include <cuda_fp16.h>
#define GT __half
__device__ __forceinline__ A ldg(__half x) { return __half2float(x); }
#define GPUNDA_K(name) name##_mp
#define GPUNDA_W16_DECL __half* W16 = (__half*)p[5];
#define GPUNDA_W16_STORE(i, w) W16[i] = __float2half_rn(w)
#define GPUNDA_WSQ(x) __half2float(__float2half_rn(__half2float(x) * __half2float(x)))
"""
_TAGS = {"float16": "f16", "float32": "f32", "float64": "f64"}
_SOURCES = {dt: _fc._TYPES[dt] + _PLAIN.replace("_SUFFIX", "_" + tag) + _BODY
            for dt, tag in _TAGS.items()}
_SOURCES["mp"] = _fc._TYPES["float32"] + _MP + _BODY
_modules = {}


def cuda_sources():
    """The kernels' sources, one per weight dtype and the mp form, for the NVRTC check."""
    return [(f"multi_optimizer[{k}]", code, (), _fc.OPTIONS) for k, code in _SOURCES.items()]


def kernel_name(name, dtype, mp):
    """The exported name of kernel ``name`` for weight ``dtype`` (``mp``: float16 weights
    with float32 masters)."""
    return f"{name}_mp" if mp else f"{name}_{_TAGS[np.dtype(dtype).name]}"


def kernel(xp, dtype, name, mp=False):
    """Kernel ``name`` for ``dtype``, compiled once per array module and device."""
    src = "mp" if mp else np.dtype(dtype).name
    key = (id(xp), xp.cuda.runtime.getDevice(), src)
    mod = _modules.get(key)
    if mod is None:
        if hasattr(xp.RawModule, "emulations"):     # the test stand-in: NumPy emulations
            from gpunda.ops.optimizer import multi_cuda_emu
            multi_cuda_emu.register(xp)
        mod = _modules[key] = xp.RawModule(code=_SOURCES[src], options=_fc.OPTIONS)
    return mod.get_function(kernel_name(name, dtype, mp))


def pack(ptrs, sizes, rows):
    """The int64 host buffer ``[pointer table | block table | float64 rows]`` and the
    number of blocks: ``ptrs`` (nseg, NPTR) addresses, ``sizes`` elements per segment,
    ``rows`` (nseg, ncols) float64."""
    off = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))])
    bt = _fc.block_table(off)
    if len(bt):     # block ranges inside each tensor, not inside a concatenation
        bt[:, :2] -= off[:-1][bt[:, 2]][:, None]
    p = np.asarray(ptrs, dtype=np.uint64).view(np.int64).reshape(-1)
    r = np.ascontiguousarray(rows, dtype=np.float64).view(np.int64).reshape(-1)
    return np.concatenate([p, bt.reshape(-1), r]), len(bt)


def launch(xp, dtype, name, ptrs, sizes, rows, flags=(), mp=False, extra=()):
    """Launch ``name`` once over all the segments (tensors): the tables go to the device in
    one copy and the kernel gets views of it, then the device arrays ``extra``, then the
    int ``flags``."""
    buf, nb = pack(ptrs, sizes, rows)
    if not nb:
        return
    d = xp.asarray(buf)
    n1 = len(ptrs) * NPTR
    n2 = n1 + 3 * nb
    args = (d[:n1], d[n1:n2], d[n2:].view(xp.float64)) + tuple(extra) + tuple(
        np.int32(f) for f in flags)
    kernel(xp, dtype, name, mp)((nb,), (_fc.BLOCK,), args)


def _groups(groups, mp, nstate):
    """{master dtype name: [tensor index]} of the tensors the kernels take: contiguous, the
    gradient in the weight's dtype (float16 weight and gradient, float32 master and states
    for ``mp``), the ``nstate`` states after the gradient in the master's dtype."""
    bykey = {}
    for i, grp in enumerate(groups):
        w, g = grp[0], grp[1]
        master = grp[-1] if mp else w
        if not all(_contig(a) for a in grp):
            continue
        if mp:
            ok = w.dtype == np.float16 and g.dtype == np.float16 and master.dtype == np.float32
        else:
            ok = g.dtype == w.dtype and w.dtype.name in _TAGS
        if ok and all(s.dtype == master.dtype for s in grp[2:2 + nstate]):
            bykey.setdefault(master.dtype.name, []).append(i)
    return bykey


def _contig(a):
    return bool(getattr(getattr(a, "flags", None), "c_contiguous", False))


def sgd(xp, groups, lrs, wds, rescale, clip, momentum, with_mom, mp):
    """The multi_sgd ops' update on a GPU: ``groups`` are the per-tensor input tuples
    (weight, grad[, mom][, weight32]). Returns the new weights (``None`` at the places
    the kernels cannot take: another dtype mix or a non-contiguous array; the caller
    updates those with its own loop). One launch per (dtype) group of tensors."""
    outs = [None] * len(groups)
    bykey = _groups(groups, mp, 1 if with_mom else 0)
    for dt, idx in bykey.items():
        ptrs, sizes, rows = [], [], []
        for i in idx:
            grp = groups[i]
            w, g = grp[0], grp[1]
            master = grp[-1] if mp else w
            new = master if mp else xp.empty_like(w)
            w16 = xp.empty_like(w) if mp else None
            outs[i] = w16 if mp else new
            mom = grp[2] if with_mom else None
            ptrs.append((new.data.ptr, master.data.ptr, g.data.ptr,
                         0 if mom is None else mom.data.ptr, 0,
                         0 if w16 is None else w16.data.ptr, 0, 0))
            sizes.append(int(w.size))
            rows.append((lrs[i], wds[i], rescale, clip is not None,
                         0.0 if clip is None else clip, momentum))
        launch(xp, dt, "gpunda_multi_sgd", ptrs, sizes, rows, (int(with_mom),), mp)
    return outs


def adamw(xp, groups, lrs, wds, etas, scale, clip, beta1, beta2, epsilon, mp):
    """``_multi_adamw_update`` / ``_multi_mp_adamw_update`` on a GPU: ``groups`` the
    per-tensor inputs (weight, grad, mean, var[, weight32]), ``scale`` the rescale factor
    read from the op's array. Returns the new weights, ``None`` where the caller's loop
    must update the tensor; one launch per dtype group."""
    outs = [None] * len(groups)
    for dt, idx in _groups(groups, mp, 2).items():
        ptrs, sizes, rows = [], [], []
        for i in idx:
            grp = groups[i]
            w, g, mean, var = grp[:4]
            master = grp[-1] if mp else w
            new = master if mp else xp.empty_like(w)
            w16 = xp.empty_like(w) if mp else None
            outs[i] = w16 if mp else new
            ptrs.append((new.data.ptr, master.data.ptr, g.data.ptr, mean.data.ptr,
                         var.data.ptr, 0 if w16 is None else w16.data.ptr, 0, 0))
            sizes.append(int(w.size))
            rows.append((lrs[i], wds[i], etas[i], scale, clip is not None,
                         0.0 if clip is None else clip, beta1, beta2, epsilon))
        launch(xp, dt, "gpunda_multi_adamw", ptrs, sizes, rows, (), mp)
    return outs


def lamb(xp, groups, lrs, wds, steps, p, mp):
    """``_multi_lamb_update`` / ``_multi_mp_lamb_update`` on a GPU: ``groups`` the per-tensor
    inputs (weight, grad, mean, var[, weight32]), ``p`` the op's params (beta1, beta2,
    epsilon, rescale_grad, clip_gradient, bias_correction, lower/upper_bound). Returns the new
    weights, ``None`` where the caller's loop must update the tensor. Two launches per dtype
    group: the direction with the norms, then the trust-ratio step."""
    outs = [None] * len(groups)
    for dtn, idx in _groups(groups, mp, 2).items():
        dt = np.dtype(dtn).type
        sizes = [int(groups[i][0].size) for i in idx]
        scratch = xp.empty(max(1, sum(sizes)), dtype=dt)
        norms = xp.zeros(2 * len(idx), dtype=np.float64)
        ptrs, rows, off = [], [], 0
        omb1, omb2 = float(dt(1) - dt(p.beta1)), float(dt(1) - dt(p.beta2))
        clip = p.clip_gradient
        for k, i in enumerate(idx):
            grp = groups[i]
            w, g, mean, var = grp[:4]
            master = grp[-1] if mp else w
            new = master if mp else xp.empty_like(w)
            w16 = xp.empty_like(w) if mp else None
            outs[i] = w16 if mp else new
            d = scratch.data.ptr + off * scratch.itemsize
            off += sizes[k]
            ptrs.append((new.data.ptr, master.data.ptr, g.data.ptr, mean.data.ptr,
                         var.data.ptr, 0 if w16 is None else w16.data.ptr, d, w.data.ptr))
            t = steps[i]
            # the bias corrections as the CPU path computes them, in the master's dtype
            c1 = float(dt(1.0 - dt(dt(p.beta1) ** t)))
            c2 = float(dt(1.0 - dt(dt(p.beta2) ** t)))
            rows.append((lrs[i], wds[i], p.rescale_grad, clip >= 0, max(clip, 0.0), p.beta1,
                         omb1, p.beta2, omb2, p.epsilon, bool(p.bias_correction), c1, c2,
                         p.lower_bound, p.upper_bound))
        launch(xp, dtn, "gpunda_multi_lamb1", ptrs, sizes, rows, (), mp, extra=(norms,))
        launch(xp, dtn, "gpunda_multi_lamb2", ptrs, sizes, rows, (), mp, extra=(norms,))
    return outs
