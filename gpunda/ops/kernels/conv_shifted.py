"""Stride-1 2-D "same" convolution on large maps as GEMMs that read the data in
place, for NumPy (used by _conv_kernels): the forward, and the fused backward.

# NOTE [Shifted-row GEMMs]
On flat rows (NOTE [Flat-row columns]) tap (kh, kw) of channel c is one contiguous run
of H * W cells, starting kh * dh * W + kw * dw into the channel's padded run. Give each
kernel column kw a copy of the data shifted by its column shift (wrapped cells zeroed,
as the flat route's columns have them): in a buffer (samples, C, KW, ld), the runs of
kernel row kh for every (c, kw) are then rows of ONE matrix with leading dimension ld,
and BLAS reads them where they lie. The convolution is KH GEMMs per sample, each with
C * KW of the C * KH * KW rows of the flat route's columns, summed:

    y[n] = sum over kh of W[kh] (F, C * KW) @ rows(n, kh) (C * KW, H * W)

This trades the column copy (KH * KW times the data: a third of a 3x3 forward's time
on 32x32 maps) for KW copies of the data, GEMMs a factor KH shorter in their inner
dimension, and the sum of KH partial outputs that stay in the L2 cache. The fused
backward makes the shifted copies of the output gradient once: dx is the forward
above with the flipped kernel, and dW' = sum over n of rows(n, kh) @ x[n].T is the
flat route's cols @ x.T with the columns read in place.

It pays on maps of at least _MIN_CELLS cells with at least _MIN_ROWS rows per kernel
row (measured: 20% off a ResNet 32x32 or 16x16 forward, 10-15% off its backward;
slower on 8x8 maps, where the column copy is short). The copies are made for groups
of samples of about _FILL_BYTES (a small batch at once), into a buffer kept per
thread and shape whose margins stay zero.
"""
from __future__ import annotations

import threading

import numpy as np

from gpunda._core import threads as _threads
from gpunda.ops.kernels.conv_grid import samples_per_chunk, weight_from_flipped

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


# the shifted copies of this many bytes of samples are made at a time (a whole small
# batch at once; large inputs in groups, so the copies stay a few MB whatever the input)
_FILL_BYTES = 8 << 20
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


class _Rows:
    """The shifted copies of ``a`` (N, C, H, W), made for a group of samples at a time:
    buf[n, c, kw, pw + kh * dh * W + q] is the data cell that output cell q reads at tap
    (kh, kw), zero where that cell is padding; ``chunks`` gives the GEMM inputs."""

    def __init__(self, a, kernel, dilate, pad, groups, chunk):
        N, C, H, W = a.shape
        self.a, self.C, self.H, self.W = a, C, H, W
        self.kernel, self.dh, self.dw, self.G = kernel, dilate[0], dilate[1], groups
        # pw spare cells at both ends of a run: the column shifts reach pw either way
        self.pw = pad[1]
        self.ld = H * W + 2 * pad[0] * W + 2 * self.pw
        # copy kw holds data cell 0 at a(kw) = pw + ph * W - (kw * dw - pw)
        self.a0 = 2 * self.pw + pad[0] * W
        per = C * kernel[1] * self.ld * a.itemsize
        # samples filled at a time: whole chunks, as many as fit in _FILL_BYTES
        self.group = min(N, max(1, _FILL_BYTES // max(1, per * chunk)) * chunk)
        self.buf = _buffer((self.group, C, kernel[1], self.ld), a.dtype, (self.a0, self.dw))

    def fill(self, p0, p1):
        """Samples p0:p1 into the buffer: ONE strided view writes every kernel column's
        copy, then each shift's wrapped cells are zeroed."""
        m, C, H, W, KW, ld = p1 - p0, self.C, self.H, self.W, self.kernel[1], self.ld
        L = H * W
        it = self.buf.itemsize
        copies = np.ndarray((m, C, KW, L), self.buf.dtype, buffer=self.buf, offset=self.a0 * it,
                            strides=(C * KW * ld * it, KW * ld * it, (ld - self.dw) * it, it))
        np.copyto(copies, self.a[p0:p1].reshape(m, C, 1, L))
        for kw in range(KW):
            s = kw * self.dw - self.pw
            if s:
                # the cells that this shift reads only across a row's end (last -s
                # columns for s < 0, first s for s > 0) are read by no output cell in range
                cells = copies[:, :, kw].reshape(m, C, H, W)
                cells[..., slice(max(0, W + s), W) if s < 0 else slice(0, s)] = 0

    def chunks(self, N, b):
        """(n0, m, view (m, KH, G, Cg * KW, H * W) of kernel row kh's GEMM inputs) for
        chunks of ``b`` samples, the groups filled in turn."""
        KH, KW = self.kernel
        C, ld, it = self.C, self.ld, self.buf.itemsize
        Cg = C // self.G
        strides = (C * KW * ld * it, self.dh * self.W * it, Cg * KW * ld * it, ld * it, it)
        for p0 in range(0, N, self.group):
            p1 = min(N, p0 + self.group)
            self.fill(p0, p1)
            for n0 in range(p0, p1, b):
                m = min(p1, n0 + b) - n0
                yield n0, m, np.ndarray((m, KH, self.G, Cg * KW, self.H * self.W),
                                        self.buf.dtype, buffer=self.buf,
                                        offset=((n0 - p0) * C * KW * ld + self.pw) * it,
                                        strides=strides)


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
    wk = _by_kernel_row(w, groups)
    y = np.empty((N, groups, F // groups, L), dtype=np.result_type(x.dtype, w.dtype))
    b = samples_per_chunk(N, kernel[0] * F * L * y.itemsize, chunk_bytes)

    def samples(lo, hi):
        # a thread's samples lo:hi, in the same chunks of b as one thread makes
        part = np.empty((b,) + wk.shape[:3] + (L,), dtype=y.dtype)
        for n0, m, rows in _Rows(x[lo:hi], kernel, dilate, pad, groups, b).chunks(hi - lo, b):
            _sum_rows(wk, rows, part[:m], y[lo + n0:lo + n0 + m])
    _threads.split(samples, N, x.size * kernel[1], align=b, blas_serial=True)
    return y.reshape(N, F, H, W)


def backward(gy, x, wt, kernel, dilate, pad, groups, chunk_bytes):
    """(dx, dW) from ONE set of shifted copies, those of ``gy`` for the transposed
    convolution (its "same" padding ``pad``, kernel ``wt``: the flipped, transposed
    (C, Fg, kh, kw)): dx as the
    forward above, and dW' = sum over samples of rows(n, kh) @ x[n].T, as the flat
    route's dW' = cols @ x.T with the columns in place."""
    N, C, H, W = x.shape
    F = gy.shape[1]
    G = groups
    Cg = C // G
    L = H * W
    KH, KW = kernel
    wk = _by_kernel_row(wt, G)
    dx = np.empty((N, G, Cg, L), dtype=np.result_type(gy.dtype, wt.dtype))
    b = samples_per_chunk(N, KH * C * L * dx.itemsize, chunk_bytes)
    xt = x.reshape(N, 1, G, Cg, L).swapaxes(-1, -2)

    def samples(lo, hi):
        # a thread's samples lo:hi in the same chunks of b as one thread makes; each
        # chunk's dW' part is kept, and the parts are summed below in chunk order, so
        # the sum is the one-thread sum, bit for bit
        part = np.empty((b,) + wk.shape[:3] + (L,), dtype=dx.dtype)
        parts = []
        for n0, m, r in _Rows(gy[lo:hi], kernel, dilate, pad, G, b).chunks(hi - lo, b):
            _sum_rows(wk, r, part[:m], dx[lo + n0:lo + n0 + m])
            parts.append(np.matmul(r, xt[lo + n0:lo + n0 + m]).sum(axis=0))
        return parts
    dwt = None          # (KH, G, Fg * KW, Cg)
    for parts in _threads.split(samples, N, gy.size * KW, align=b, blas_serial=True):
        for d in parts:
            dwt = d if dwt is None else dwt + d
    # to the flat route's (G, Fg * K, Cg): rows (f, kh, kw) per group
    dwt = dwt.reshape(KH, G, F // G, KW, Cg).transpose(1, 2, 0, 3, 4).reshape(G, -1, Cg)
    return dx.reshape(x.shape), weight_from_flipped(dwt, kernel)
