"""NumPy emulations of the multi-tensor kernels (``multi_cuda.py``) for the test stand-in GPU.

Each emulation reads only the launch arguments, as the CUDA code does: the pointer table's
addresses are dereferenced (the stand-in's device memory is host memory, and ``data.ptr``
is the NumPy buffer's address), each segment's size is the end of its last block, and the
arithmetic is the kernel's, in its compute type with every intermediate rounded to the
weight's dtype where the kernel rounds it. Written from the kernel, not from the CPU path.
"""
from __future__ import annotations

import ctypes

import numpy as np

from gpunda.ops.optimizer.multi_cuda import NPTR


def _at(addr, n, dtype):
    """The ``n`` elements of ``dtype`` at device address ``addr`` (a writable view)."""
    dt = np.dtype(dtype)
    if n == 0:
        return np.zeros(0, dt)
    buf = (ctypes.c_char * (n * dt.itemsize)).from_address(int(addr))
    return np.frombuffer(buf, dtype=dt)


def _sgd(T, G, mp):
    A = np.dtype(np.float32) if np.dtype(T) == np.float16 else np.dtype(T)

    def emu(grid, block, args):
        ptrs, btab, tab, has_mom = args
        ptrs = np.asarray(ptrs).view(np.uint64).reshape(-1, NPTR)
        bt = np.asarray(btab).reshape(-1, 3)
        tab = np.asarray(tab).reshape(-1, 6)
        for s in range(len(ptrs)):
            blocks = bt[bt[:, 2] == s]
            if not len(blocks):
                continue
            n = int(blocks[:, 1].max())
            idx = np.concatenate([np.arange(a, b) for a, b, _ in blocks])

            def c(k):
                return A.type(np.asarray(tab[s, k]).astype(T))

            def rnd(x):
                return x.astype(T).astype(A)
            p = ptrs[s]
            out, w, g = _at(p[0], n, T), _at(p[1], n, T), _at(p[2], n, G)
            lr, rs, clip, mo = c(0), c(2), c(4), c(5)
            cc = rnd(np.asarray(-(c(0) * c(1))))
            wi = w[idx].astype(A)
            a = rnd(g[idx].astype(A) * rs)
            if tab[s, 3] != 0.0:
                a = np.where(a < -clip, -clip, a)
                a = np.where(a > clip, clip, a)
            b = rnd(wi * cc)
            a = rnd(a * lr)
            b = rnd(b - a)
            if int(has_mom):
                m = _at(p[3], n, T)
                b = rnd(rnd(m[idx].astype(A) * mo) + b)
                m[idx] = b
            nw = rnd(wi + b)
            out[idx] = nw
            if mp:
                _at(p[5], n, np.float16)[idx] = nw.astype(np.float16)
    return emu


def _segments(args_ptrs, btab):
    """Per segment with blocks: (its row of addresses, its size, its element indices)."""
    ptrs = np.asarray(args_ptrs).view(np.uint64).reshape(-1, NPTR)
    bt = np.asarray(btab).reshape(-1, 3)
    for s in range(len(ptrs)):
        blocks = bt[bt[:, 2] == s]
        if len(blocks):
            yield s, ptrs[s], int(blocks[:, 1].max()), np.concatenate(
                [np.arange(a, b) for a, b, _ in blocks])


def _adamw(T, G, mp):
    A = np.dtype(np.float32) if np.dtype(T) == np.float16 else np.dtype(T)

    def rnd(x):
        return np.asarray(x).astype(T).astype(A)

    def emu(grid, block, args):
        ptrs, btab, tab = args
        tab = np.asarray(tab).reshape(-1, 9)
        for s, p, n, idx in _segments(ptrs, btab):
            lr, wd, eta, rs, clip, b1, b2, eps = (rnd(tab[s, k]) for k in (0, 1, 2, 3, 5, 6,
                                                                             7, 8))
            out, w, g = _at(p[0], n, T), _at(p[1], n, T), _at(p[2], n, G)
            M, V = _at(p[3], n, T), _at(p[4], n, T)
            wi = w[idx].astype(A)
            gr = rnd(rs * g[idx].astype(A))
            if tab[s, 4] != 0.0:
                gr = np.where(gr < -clip, -clip, np.where(gr > clip, clip, gr))
            m = rnd(rnd(b1 * rnd(M[idx].astype(A) - gr)) + gr)
            sq = rnd(gr * gr)
            v = rnd(rnd(b2 * rnd(V[idx].astype(A) - sq)) + sq)
            u = rnd(rnd(rnd(lr * m) / rnd(rnd(np.sqrt(v)) + eps)) + rnd(wd * wi))
            nw = rnd(wi - rnd(eta * u))
            M[idx], V[idx], out[idx] = m, v, nw
            if mp:
                _at(p[5], n, np.float16)[idx] = nw.astype(np.float16)
    return emu


def _lamb1(T, G, mp):
    A = np.dtype(np.float32) if np.dtype(T) == np.float16 else np.dtype(T)

    def rnd(x):
        return np.asarray(x).astype(T).astype(A)

    def emu(grid, block, args):
        ptrs, btab, tab, norms = args
        tab = np.asarray(tab).reshape(-1, 15)
        for s, p, n, idx in _segments(ptrs, btab):
            wd, rs, clip, b1, omb1, b2, omb2, eps, c1, c2 = (
                rnd(tab[s, k]) for k in (1, 2, 4, 5, 6, 7, 8, 9, 11, 12))
            w = _at(p[1], n, T)[idx].astype(A)
            M, V, D = _at(p[3], n, T), _at(p[4], n, T), _at(p[6], n, T)
            a = rnd(_at(p[2], n, G)[idx].astype(A) * rs)
            if tab[s, 3] != 0.0:
                a = np.where(a < -clip, -clip, np.where(a > clip, clip, a))
            m = rnd(rnd(b1 * M[idx].astype(A)) + rnd(omb1 * a))
            v = rnd(rnd(b2 * V[idx].astype(A)) + rnd(rnd(omb2 * a) * a))
            if tab[s, 10] != 0.0:
                m_h, v_h = rnd(m / c1), rnd(v / c2)
            else:
                m_h, v_h = m, v
            d = rnd(rnd(m_h / rnd(rnd(np.sqrt(v_h)) + eps)) + rnd(wd * w))
            M[idx], V[idx], D[idx] = m, v, d
            wi = _at(p[7], n, G)[idx]
            wsq = (wi * wi).astype(np.float32)      # squared in the weight input's dtype
            df = d.astype(np.float32)
            norms[2 * s] += wsq.astype(np.float64).sum()
            norms[2 * s + 1] += (df * df).astype(np.float64).sum()
    return emu


def _lamb2(T, G, mp):
    A = np.dtype(np.float32) if np.dtype(T) == np.float16 else np.dtype(T)

    def rnd(x):
        return np.asarray(x).astype(T).astype(A)

    def emu(grid, block, args):
        ptrs, btab, tab, norms = args
        tab = np.asarray(tab).reshape(-1, 15)
        for s, p, n, idx in _segments(ptrs, btab):
            r1 = float(np.sqrt(np.float32(norms[2 * s])))
            r2 = float(np.sqrt(np.float32(norms[2 * s + 1])))
            lower, upper = tab[s, 13], tab[s, 14]
            if lower >= 0:
                r1 = max(r1, lower)
            if upper >= 0:
                r1 = min(r1, upper)
            lr = tab[s, 0] if r1 == 0 or r2 == 0 else tab[s, 0] * r1 / r2
            step = rnd(lr)
            nw = rnd(_at(p[1], n, T)[idx].astype(A) - rnd(step * _at(p[6], n, T)[idx]
                                                         .astype(A)))
            _at(p[0], n, T)[idx] = nw
            if mp:
                _at(p[5], n, np.float16)[idx] = nw.astype(np.float16)
    return emu


def register(xp):
    """Add the emulations to the stand-in's ``RawModule`` (``xp`` is its array module)."""
    emus = xp.RawModule.emulations
    forms = {"gpunda_multi_sgd_f16": (np.float16, np.float16, False),
             "gpunda_multi_sgd_f32": (np.float32, np.float32, False),
             "gpunda_multi_sgd_f64": (np.float64, np.float64, False),
             "gpunda_multi_sgd_mp": (np.float32, np.float16, True)}
    makers = {"_sgd": _sgd, "_adamw": _adamw, "_lamb1": _lamb1, "_lamb2": _lamb2}
    for name, (T, G, mp) in list(forms.items()):
        for k in ("_adamw", "_lamb1", "_lamb2"):
            forms[name.replace("_sgd", k)] = (T, G, mp)
    for name, (T, G, mp) in forms.items():
        if name not in emus:
            f = next(m for k, m in makers.items() if k + "_" in name)(T, G, mp)
            f.out_index = 0     # the tables (the tensors it writes are behind pointers)
            emus[name] = f
