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

from ._conv_grid import samples_per_chunk

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


def forward(x, w, kernel, dilate, pad, groups, chunk_bytes):
    """Convolution of ``x`` (N, C, H, W) with ``w`` (F, C/G, kh, kw), no bias."""
    N, C, H, W = x.shape
    F = w.shape[0]
    KH, KW = kernel
    G = groups
    Fg, Cg = F // G, C // G
    L = H * W
    buf, ld, e = _shifted(x, kernel, dilate, pad)
    it = buf.itemsize
    # rows (c, kw) of kernel row kh, per group: (KH, G, Fg, Cg * KW)
    wk = np.ascontiguousarray(w.reshape(G, Fg, Cg, KH, KW).transpose(3, 0, 1, 2, 4))
    wk = wk.reshape(KH, G, Fg, Cg * KW)
    y = np.empty((N, G, Fg, L), dtype=np.result_type(x.dtype, w.dtype))
    b = samples_per_chunk(N, KH * F * L * y.itemsize, chunk_bytes)
    part = np.empty((b, KH, G, Fg, L), dtype=y.dtype)
    dh = dilate[0]
    for n0 in range(0, N, b):
        m = min(N, n0 + b) - n0
        rows = np.ndarray((m, KH, G, Cg * KW, L), buf.dtype, buffer=buf,
                          offset=(n0 * C * KW * ld + e) * it,
                          strides=(C * KW * ld * it, dh * W * it, Cg * KW * ld * it, ld * it, it))
        p = part[:m]
        np.matmul(wk, rows, out=p)
        out = y[n0:n0 + m]
        np.add(p[:, 0], p[:, 1], out=out)
        for kh in range(2, KH):
            out += p[:, kh]
    return y.reshape(N, F, H, W)
