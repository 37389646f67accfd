"""The forward of a stride-1 2-D "same" convolution on large maps as GEMMs that read
the data in place, for NumPy (used by _conv_kernels).

# NOTE [Shifted-row GEMMs]
On flat rows (NOTE [Flat-row columns]) tap (kh, kw) of channel c is one contiguous run
of H * W cells, starting kh * dh * W + kw * dw into the channel's padded run. Give each
kernel column kw a copy of the data shifted by its column shift (wrapped cells zeroed,
as the flat route's columns have them): in a buffer (N, C, KW, ld), the runs of kernel
row kh for every (c, kw) are then rows of ONE matrix with leading dimension ld, and
BLAS reads them where they lie. The convolution is KH GEMMs per sample, each with
C * KW of the C * KH * KW rows of the flat route's columns, summed:

    y[n] = sum over kh of W[kh] (F, C * KW) @ rows(n, kh) (C * KW, H * W)

which trades the column copy (KH * KW times the data, a third of a 3x3 forward's time
on 32x32 maps) for KW copies of the data, GEMMs a factor KH shorter in their inner
dimension and the sum of KH partial outputs that stay in the L2 cache. That pays on
maps of at least _MIN_CELLS cells, whose column copy is long; the backward keeps the
flat route, where the two GEMMs share one set of columns.
"""
from __future__ import annotations

import threading

import numpy as np

from ._conv_grid import samples_per_chunk, weight_from_flipped

# maps of fewer cells: the flat route's column copy is short and its one long-K GEMM
# is faster than KH short ones (measured: even on 8x8 maps of 64 channels)
_MIN_CELLS = 256
# kernel-row inputs this short make GEMMs too thin to beat the column copy
_MIN_ROWS = 32


def eligible(x, kernel, groups):
    """Whether a flat-row convolution of ``x`` (checked by _conv_flat.eligible) takes
    the shifted-row GEMMs: large maps and at least _MIN_ROWS rows per kernel row."""
    return (x.shape[2] * x.shape[3] >= _MIN_CELLS and kernel[0] > 1
            and x.shape[1] // groups * kernel[1] >= _MIN_ROWS)


# per thread, the last few buffers by shape: their margins stay zero from one call to
# the next (only the data and its wrapped cells are written), and a fresh multi-MB
# array costs more than the copies themselves
_CACHE = threading.local()
_CACHED = 4


def _buffer(shape, dtype, where):
    """A zeroed buffer of ``shape``, or the last one of this thread with that shape and
    the same data cells ``where`` (so zero outside them)."""
    bufs = getattr(_CACHE, "bufs", None)
    if bufs is None:
        bufs = _CACHE.bufs = {}
    key = (shape, np.dtype(dtype), where)
    buf = bufs.pop(key, None)
    if buf is None:
        buf = np.zeros(shape, dtype=dtype)
        while len(bufs) >= _CACHED:
            bufs.pop(next(iter(bufs)))
    bufs[key] = buf                          # most recently used last
    return buf


def _shifted(x, kernel, dilate, pad):
    """(buf (N, C, KW, ld), ld, e): buf[n, c, kw, e + kh * dh * W + q] is the data cell
    that output cell q reads at tap (kh, kw), zero where that cell is padding."""
    N, C, H, W = x.shape
    L = H * W
    KW = kernel[1]
    ph, pw = pad
    dw = dilate[1]
    e = pw                                   # spare cells: shifts reach pw either way
    ld = L + 2 * ph * W + 2 * e
    # copy kw holds data cell 0 at a(kw) = e + ph * W - (kw * dw - pw): one strided
    # view writes all KW copies
    a0 = e + ph * W + pw
    buf = _buffer((N, C, KW, ld), x.dtype, (a0, dw))
    it = buf.itemsize
    copies = np.ndarray((N, C, KW, L), buf.dtype, buffer=buf, offset=a0 * it,
                        strides=(C * KW * ld * it, KW * ld * it, (ld - dw) * it, it))
    np.copyto(copies, x.reshape(N, C, 1, L))
    for kw in range(KW):
        s = kw * dw - pw
        if s:
            # the cells that this shift reads only across a row's end (last -s columns
            # for s < 0, first s for s > 0) are read by no output cell in range
            cells = copies[:, :, kw].reshape(N, C, H, W)
            cells[..., slice(max(0, W + s), W) if s < 0 else slice(0, s)] = 0
    return buf, ld, e


class _Rows:
    """The shifted copies of ``a`` (N, C, H, W) and, per chunk of samples, the view
    (m, KH, G, Cg * KW, H * W) of every kernel row's GEMM input."""

    def __init__(self, a, kernel, dilate, pad, groups):
        self.N, self.C, self.H, self.W = a.shape
        self.kernel, self.dh, self.G = kernel, dilate[0], groups
        self.buf, self.ld, self.e = _shifted(a, kernel, dilate, pad)

    def view(self, n0, m):
        KH, KW = self.kernel
        C, ld, it = self.C, self.ld, self.buf.itemsize
        Cg = C // self.G
        return np.ndarray((m, KH, self.G, Cg * KW, self.H * self.W), self.buf.dtype,
                          buffer=self.buf, offset=(n0 * C * KW * ld + self.e) * it,
                          strides=(C * KW * ld * it, self.dh * self.W * it,
                                   Cg * KW * ld * it, ld * it, it))


def _by_kernel_row(w, groups):
    """``w`` (F, C/G, KH, KW) as (KH, G, F/G, C/G * KW): kernel row kh's weights of rows
    (c, kw)."""
    F, Cg, KH, KW = w.shape
    wk = np.ascontiguousarray(w.reshape(groups, F // groups, Cg, KH, KW).transpose(3, 0, 1, 2, 4))
    return wk.reshape(KH, groups, F // groups, Cg * KW)


def _sum_rows(wk, rows, part, out):
    """out (m, G, Fg, L) = the sum over kernel rows of ``wk`` @ ``rows``, through
    ``part`` (m, KH, G, Fg, L)."""
    np.matmul(wk, rows, out=part)
    np.add(part[:, 0], part[:, 1], out=out)
    for kh in range(2, part.shape[1]):
        out += part[:, kh]


def forward(x, w, kernel, dilate, pad, groups, chunk_bytes):
    """Convolution of ``x`` (N, C, H, W) with ``w`` (F, C/G, kh, kw), no bias."""
    N, C, H, W = x.shape
    F = w.shape[0]
    L = H * W
    rows = _Rows(x, kernel, dilate, pad, groups)
    wk = _by_kernel_row(w, groups)
    y = np.empty((N, groups, F // groups, L), dtype=np.result_type(x.dtype, w.dtype))
    b = samples_per_chunk(N, kernel[0] * F * L * y.itemsize, chunk_bytes)
    part = np.empty((b,) + wk.shape[:3] + (L,), dtype=y.dtype)
    for n0 in range(0, N, b):
        m = min(N, n0 + b) - n0
        _sum_rows(wk, rows.view(n0, m), part[:m], y[n0:n0 + m])
    return y.reshape(N, F, H, W)


def backward(gy, x, wt, kernel, dilate, groups, chunk_bytes):
    """(dx, dW) from ONE set of shifted copies, those of ``gy`` for the transposed
    convolution (kernel ``wt``: the flipped, transposed (C, Fg, kh, kw)): dx as the
    forward above, and dW' = sum over samples of rows(n, kh) @ x[n].T, as the flat
    route's dW' = cols @ x.T with the columns in place."""
    N, C, H, W = x.shape
    F = gy.shape[1]
    G = groups
    Cg = C // G
    L = H * W
    KH, KW = kernel
    pad = tuple(dilate[i] * (kernel[i] - 1) // 2 for i in range(2))
    rows = _Rows(gy, kernel, dilate, pad, G)
    wk = _by_kernel_row(wt, G)
    dx = np.empty((N, G, Cg, L), dtype=np.result_type(gy.dtype, wt.dtype))
    b = samples_per_chunk(N, KH * C * L * dx.itemsize, chunk_bytes)
    part = np.empty((b,) + wk.shape[:3] + (L,), dtype=dx.dtype)
    xt = x.reshape(N, 1, G, Cg, L).swapaxes(-1, -2)
    dwt = None          # (KH, G, Fg * KW, Cg)
    for n0 in range(0, N, b):
        m = min(N, n0 + b) - n0
        r = rows.view(n0, m)
        _sum_rows(wk, r, part[:m], dx[n0:n0 + m])
        d = np.matmul(r, xt[n0:n0 + m]).sum(axis=0)
        dwt = d if dwt is None else dwt + d
    # to the flat route's (G, Fg * K, Cg): rows (f, kh, kw) per group
    dwt = dwt.reshape(KH, G, F // G, KW, Cg).transpose(1, 2, 0, 3, 4).reshape(G, -1, Cg)
    return dx.reshape(x.shape), weight_from_flipped(dwt, kernel)
