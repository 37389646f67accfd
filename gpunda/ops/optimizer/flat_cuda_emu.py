"""NumPy emulations of the flat optimizer kernels (``flat_cuda.py``) for the test stand-in GPU.

Each emulation reads only the kernel's launch arguments (the buffers, the block table, the
per-segment float64 table and the int flags) and does what the CUDA code does: per-element
arithmetic in the kernel's compute type ``A`` (float32 for float16 buffers), every
intermediate rounded to the buffer's type ``T`` where the kernel rounds it, scalars cast
from float64 to ``T`` first. It is written from the kernel, not from ops/optimizer/flat.py,
so the stand-in tests compare two independent codings of each formula.
"""
from __future__ import annotations

import numpy as np


def _setup(btab, tab, ncols, dtype):
    """Element indices of the active blocks, their segment, and the helpers for ``T``."""
    bt = np.asarray(btab).reshape(-1, 3)
    tab = np.asarray(tab).reshape(-1, ncols)
    T = np.dtype(dtype)
    A = np.dtype(np.float32) if T == np.float16 else T
    keep = tab[bt[:, 2], 0] != 0.0
    bt = bt[keep]
    idx = np.concatenate([np.arange(s, e, dtype=np.int64) for s, e, _ in bt]) \
        if len(bt) else np.zeros(0, np.int64)
    seg = np.repeat(bt[:, 2], bt[:, 1] - bt[:, 0]) if len(bt) else np.zeros(0, np.int64)

    def c(k):       # column k, cast to T as the kernel's cv() does, per element
        return tab[seg, k].astype(T).astype(A)

    def rnd(x):
        return x.astype(T).astype(A)

    def ld(buf):
        return buf[idx].astype(A)

    def flag(k):
        return tab[seg, k] != 0.0

    return idx, seg, tab, A, c, rnd, ld, flag


def _clipv(x, c, on):
    """The kernel's clipv where ``on``: NaN stays NaN."""
    y = np.where(x < -c, -c, x)
    y = np.where(y > c, c, y)
    return np.where(on, y, x)


def _sgd(grid, block, args):
    W, G, M, btab, tab, op_form, has_mom = args
    idx, seg, tab, A, c, rnd, ld, flag = _setup(btab, tab, 10, W.dtype)
    w, g = ld(W), ld(G)
    step, decay, lrwd, lr, rs, clip, mom = c(1), c(2), c(3), c(4), c(6), c(8), c(9)
    wdnz, has_clip = flag(5), flag(7)
    if not int(op_form):
        a = rnd(g * step)
        if not int(has_mom):
            w = np.where(wdnz, rnd(w * decay), w)
            w = rnd(w - a)
        else:
            m = rnd(ld(M) * mom)
            m = rnd(m - a)
            m = np.where(wdnz, rnd(m - rnd(w * lrwd)), m)
            w = rnd(w + m)
            M[idx] = m
    else:
        a = _clipv(rnd(g * rs), clip, has_clip)
        a = rnd(a * lr)
        if not int(has_mom):
            w = rnd(rnd(w * decay) - a)
        else:
            m = rnd(ld(M) * mom)
            m = rnd(m - rnd(w * lrwd))
            m = rnd(m - a)
            w = rnd(w + m)
            M[idx] = m
    W[idx] = w


def _adam(grid, block, args):
    W, G, M, V, btab, tab = args
    idx, seg, tab, A, c, rnd, ld, flag = _setup(btab, tab, 11, W.dtype)
    lr, wd, rs, clip, b1, omb1, omb2, b2, eps = (c(k) for k in (1, 2, 3, 5, 6, 7, 8, 9, 10))
    w, m, v = ld(W), ld(M), ld(V)
    b = rnd(w * wd)
    a = _clipv(rnd(rnd(ld(G) * rs) + b), clip, flag(4))
    m = rnd(rnd(m * b1) + rnd(a * omb1))
    v = rnd(rnd(v * b2) + rnd(rnd(a * omb2) * a))
    b = rnd(rnd(np.sqrt(v)) + eps)
    a = rnd(rnd(m * lr) / b)
    W[idx], M[idx], V[idx] = rnd(w - a), m, v


def _lamb1(grid, block, args):
    W, G, M, V, D, btab, tab, norms = args
    idx, seg, tab, A, c, rnd, ld, flag = _setup(btab, tab, 16, W.dtype)
    wd, rs, clip, b1, omb1, omb2, b2, eps, c1, c2 = (c(k) for k in (1, 2, 4, 5, 6, 7, 8, 9,
                                                                    10, 11))
    w, m, v = ld(W), ld(M), ld(V)
    a = _clipv(rnd(ld(G) * rs), clip, flag(3))
    m = rnd(rnd(m * b1) + rnd(a * omb1))
    v = rnd(rnd(v * b2) + rnd(rnd(a * omb2) * a))
    bias = flag(15)
    b = np.where(bias, rnd(rnd(np.sqrt(rnd(v / c2))) + eps), rnd(rnd(np.sqrt(v)) + eps))
    a = np.where(bias, rnd(m / c1), m)
    d = rnd(rnd(a / b) + rnd(w * wd))
    M[idx], V[idx], D[idx] = m, v, d
    n = len(tab)
    w64, d64 = w.astype(np.float64), d.astype(np.float64)
    norms[0::2] += np.bincount(seg, weights=w64 * w64, minlength=n)
    norms[1::2] += np.bincount(seg, weights=d64 * d64, minlength=n)


def _lamb2(grid, block, args):
    W, D, btab, tab, norms = args
    idx, seg, tab, A, c, rnd, ld, flag = _setup(btab, tab, 16, W.dtype)
    T = W.dtype
    # per segment, as the kernel's prologue computes it
    r1 = np.sqrt(norms[0::2]).astype(T).astype(np.float64)
    r2 = np.sqrt(norms[1::2]).astype(T).astype(np.float64)
    lower, upper = tab[:, 13], tab[:, 14]
    r1 = np.where((lower != 0) & (lower > r1), lower, r1)
    r1 = np.where((upper != 0) & (upper < r1), upper, r1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where((r1 == 0) | (r2 == 0), 1.0, r1 / r2)
    step = (tab[:, 12] * ratio).astype(T).astype(A)[seg]
    W[idx] = rnd(ld(W) - rnd(ld(D) * step))


def _adamw(grid, block, args):
    W, G, M, V, btab, tab = args
    idx, seg, tab, A, c, rnd, ld, flag = _setup(btab, tab, 10, W.dtype)
    lr, wd, eta, rs, clip, b1, b2, eps = (c(k) for k in (1, 2, 3, 4, 6, 7, 8, 9))
    omb1, omb2 = rnd(A.type(1) - b1), rnd(A.type(1) - b2)
    w = ld(W)
    gr = _clipv(rnd(rs * ld(G)), clip, flag(5))
    m = rnd(rnd(b1 * ld(M)) + rnd(omb1 * gr))
    v = rnd(rnd(b2 * ld(V)) + rnd(rnd(omb2 * gr) * gr))
    u = rnd(rnd(rnd(lr * m) / rnd(rnd(np.sqrt(v)) + eps)) + rnd(wd * w))
    W[idx], M[idx], V[idx] = rnd(w - rnd(eta * u)), m, v


def _nag(grid, block, args):
    W, G, M, btab, tab = args
    idx, seg, tab, A, c, rnd, ld, flag = _setup(btab, tab, 8, W.dtype)
    lr, wd, rs, clip, mu, mu1 = (c(k) for k in (1, 2, 3, 5, 6, 7))
    w, m = ld(W), ld(M)
    a = _clipv(rnd(ld(G) * rs), clip, flag(4))
    m = rnd(m * mu)
    b = rnd(rnd(a + rnd(w * wd)) * lr)
    b = rnd(rnd(m - b) * mu1)
    w = rnd(rnd(w - m) + b)
    m = rnd(m - rnd(rnd(a + rnd(w * wd)) * lr))
    W[idx], M[idx] = w, m


def _rmsprop(grid, block, args):
    W, G, N, GB, DL, btab, tab, centered = args
    idx, seg, tab, A, c, rnd, ld, flag = _setup(btab, tab, 12, W.dtype)
    lr, wd, rs, clip, g1, omg1, g2, eps, cw = (c(k) for k in (1, 2, 3, 5, 6, 7, 8, 9, 11))
    w = ld(W)
    a = _clipv(rnd(rnd(ld(G) * rs) + rnd(w * wd)), clip, flag(4))
    n = rnd(rnd(ld(N) * g1) + rnd(rnd(a * omg1) * a))
    N[idx] = n
    if not int(centered):
        w = rnd(w - rnd(rnd(a * lr) / rnd(np.sqrt(rnd(n + eps)))))
    else:
        gb = rnd(rnd(ld(GB) * g1) + rnd(a * omg1))
        b = rnd(np.sqrt(rnd(rnd(n - rnd(gb * gb)) + eps)))
        dl = rnd(rnd(ld(DL) * g2) - rnd(rnd(a * lr) / b))
        w = rnd(w + dl)
        GB[idx], DL[idx] = gb, dl
    W[idx] = _clipv(w, cw, flag(10))


def _adagrad(grid, block, args):
    W, G, H, btab, tab = args
    idx, seg, tab, A, c, rnd, ld, flag = _setup(btab, tab, 7, W.dtype)
    lr, wd, rs, clip, eps = (c(k) for k in (1, 2, 3, 5, 6))
    w = ld(W)
    a = _clipv(rnd(ld(G) * rs), clip, flag(4))
    h = rnd(ld(H) + rnd(a * a))
    a = rnd(a / rnd(np.sqrt(rnd(h + eps))))
    a = rnd(rnd(a + rnd(w * wd)) * lr)
    W[idx], H[idx] = rnd(w - a), h


_EMULATIONS = {"gpunda_flat_nag": _nag, "gpunda_flat_rmsprop": _rmsprop,
               "gpunda_flat_adagrad": _adagrad,"gpunda_flat_sgd": _sgd, "gpunda_flat_adam": _adam,
               "gpunda_flat_lamb1": _lamb1, "gpunda_flat_lamb2": _lamb2,
               "gpunda_flat_adamw": _adamw}


# where each kernel's block table sits in its arguments, and its table's width
_TABLES = {"gpunda_flat_sgd": (3, 10), "gpunda_flat_adam": (4, 11), "gpunda_flat_lamb1": (5, 16),
           "gpunda_flat_lamb2": (2, 16), "gpunda_flat_adamw": (4, 10), "gpunda_flat_nag": (3, 8),
           "gpunda_flat_rmsprop": (5, 12), "gpunda_flat_adagrad": (3, 7)}


def _mp(name, fn):
    """The ``<name>_mp`` form: float16 gradients (read as float, exactly, by ``ld``), the
    float32 master weight updated, and the float16 weight (the last argument) written from
    it wherever the kernel wrote the master."""
    at, ncols = _TABLES[name]

    def emu(grid, block, args):
        W, W16 = args[0], args[-1]
        fn(grid, block, args[:-1])
        if name != "gpunda_flat_lamb1":     # the only kernel that leaves W as it is
            idx = _setup(args[at], args[at + 1], ncols, W.dtype)[0]
            W16[idx] = W[idx].astype(np.float16)
    return emu


def register(xp):
    """Add the emulations to the stand-in's ``RawModule`` (``xp`` is its array module)."""
    emus = xp.RawModule.emulations
    for name, fn in _EMULATIONS.items():
        for n, f in ((name, fn), (name + "_mp", _mp(name, fn))):
            if n not in emus:
                f.out_index = 0        # the weight: what a capture must restore
                emus[n] = f
