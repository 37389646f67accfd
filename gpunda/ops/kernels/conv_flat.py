"""Stride-1 2-D convolution with "same" padding on flat rows, for NumPy (used by
_conv_kernels).

# NOTE [Flat-row columns]
Where the output has the input's spatial shape (stride 1, dilate * (k - 1) == 2 * pad:
the 3x3, pad-1 convolution of every ResNet), the data of a sample can stay in its own
layout, one flat run of H * W cells per channel with only the padding rows above and
below (and pad_w spare cells at both ends). Kernel position (kh, kw) then reads ONE
contiguous run of H * W cells at offset kh * dh * W + kw * dw, and output cell q of
the run is input cell q shifted by (kh * dh - pad_h, kw * dw - pad_w): right except
where the column shift s = kw * dw - pad_w leaves the row, which the run reads as a
cell of the neighbouring row: the first -s output columns (s < 0) or the last s
(s > 0). The columns of a chunk are one strided copy of the placed data, after which
those entries of each shift are zeroed, so every column entry is exact (a zero,
never a wrapped cell).

Against the padded-row grid (NOTE [Row-grid columns]) this drops the row-by-row
placement of the data into padded rows, the row-by-row extraction of the output from
the grid (a GEMM over one sample writes the output itself) and the extra grid columns
of the GEMM (2 per row: 6% on 32x32 maps, 25% on 8x8). The data is placed once, for
about _PLACE_BYTES of samples at a time. The batch goes through in chunks of about
_CHUNK_BYTES of columns (NOTE [Convolution in cache-sized chunks]).
"""
from __future__ import annotations

import numpy as np

from gpunda._core import threads as _threads
from gpunda.ops.kernels.conv_grid import samples_per_chunk, weight_from_flipped


def eligible(xp, x, kernel, stride, dilate, pad):
    """Whether a convolution of ``x`` runs on flat rows: NumPy, 2-D, stride 1, more than
    one kernel cell, and an output of the input's spatial shape."""
    return (xp is np and len(kernel) == 2 and stride[0] == 1 and stride[1] == 1
            and kernel[0] * kernel[1] > 1 and x.ndim == 4
            and all(dilate[i] * (kernel[i] - 1) == 2 * pad[i] for i in range(2)))


# the data of this many bytes is placed at a time: one copy for a whole small batch
# instead of one per chunk
_PLACE_BYTES = 1 << 21


class _Flat:
    """The flat-row layout of one convolution's geometry, with its reused buffers.

    ``buf`` (samples, C, run) holds the padded data; tap (kh, kw) of sample n, channel c
    starts at n * C * run + c * run + kh * dh * W + kw * dw in its memory. The columns of
    a chunk are ONE strided copy of it, after which the entries that a shift reads
    across a row's end are zeroed (``wraps``: per kernel column, the output columns
    whose cell of that shift lies in the neighbouring row)."""

    def __init__(self, x, kernel, dilate, pad, chunk_bytes, b=None):
        N, C, H, W = x.shape
        self.N, self.C, self.H, self.W = N, C, H, W
        self.L = H * W
        self.kernel, self.dilate = tuple(kernel), tuple(dilate)
        self.K = kernel[0] * kernel[1]
        self.start = pad[1] + pad[0] * W          # where the data begins in a channel run
        per_sample = C * self.K * self.L * x.dtype.itemsize
        # b given: a thread's share of a batch, chunked as the whole batch is
        self.b = b or samples_per_chunk(N, per_sample, chunk_bytes, self.L)
        # a whole number of rows per channel, with pad_w spare cells at both ends
        self.run = W * (H + 2 * pad[0] + -(-2 * pad[1] // W))
        per_place = C * self.run * x.dtype.itemsize
        # samples placed at a time: whole chunks, as many as fit in _PLACE_BYTES
        self.pb = min(N, max(1, _PLACE_BYTES // max(1, per_place * self.b)) * self.b)
        self.buf = np.zeros((self.pb, C, self.run), dtype=x.dtype)
        self.wraps = []
        for kw in range(kernel[1]):
            s = kw * dilate[1] - pad[1]
            if s:
                self.wraps.append((kw, slice(0, -s) if s < 0 else slice(max(0, W - s), W)))
        self.cbuf = np.empty((C, self.K, self.b, self.L), dtype=x.dtype)

    def _taps(self, n0, m):
        """A view (C, KH, KW, m, L) of every tap of samples n0:n0+m of the placed group
        (built directly: ``as_strided`` costs more than the copy of a small chunk)."""
        it = self.buf.itemsize
        C, run = self.C, self.run
        dh, dw = self.dilate
        strides = (run * it, dh * self.W * it, dw * it, C * run * it, it)
        return np.ndarray((C, self.kernel[0], self.kernel[1], m, self.L), self.buf.dtype,
                          buffer=self.buf, offset=n0 * C * run * it, strides=strides)

    def chunks(self, x):
        """(n0, n1, columns (C * K, (n1 - n0) * H * W)); the buffers are reused."""
        N, C, K, L, W = self.N, self.C, self.K, self.L, self.W
        KH, KW = self.kernel
        a = self.start
        for p0 in range(0, N, self.pb):
            p1 = min(N, p0 + self.pb)
            self.buf[:p1 - p0, :, a:a + L] = x[p0:p1].reshape(p1 - p0, C, L)
            for n0 in range(p0, p1, self.b):
                m = min(p1, n0 + self.b) - n0
                cb = self.cbuf[:, :, :m]
                taps = cb.reshape(C, KH, KW, m, L)
                np.copyto(taps, self._taps(n0 - p0, m))
                rows = taps.reshape(C, KH, KW, m * self.H, W)
                for kw, cols in self.wraps:
                    rows[:, :, kw, :, cols] = 0
                yield n0, n0 + m, cb.reshape(C * K, m * L)


def _product(w, cols, out, n0, n1, groups, buf):
    """``w`` (G, Rg, Kg) times a chunk's columns, into samples n0:n1 of ``out`` (N, R, L):
    the GEMM of one sample writes its output itself; several go through ``buf``
    (G, Rg, b * L) and a transposing copy."""
    m = n1 - n0
    R, L = out.shape[1], out.shape[2]
    c = cols.reshape(groups, -1, m * L)
    if m == 1:
        np.matmul(w, c, out=out[n0].reshape(groups, R // groups, L))
        return
    part = buf[:, :, :m * L]
    np.matmul(w, c, out=part)
    out[n0:n1] = part.reshape(R, m, L).swapaxes(0, 1)


def forward(x, w, kernel, dilate, pad, groups, chunk_bytes):
    """Convolution of ``x`` (N, C, H, W) with ``w`` (F, C/G, kh, kw), no bias."""
    N = x.shape[0]
    F = w.shape[0]
    L = x.shape[2] * x.shape[3]
    b = samples_per_chunk(N, x.shape[1] * kernel[0] * kernel[1] * L * x.dtype.itemsize,
                          chunk_bytes, L)
    wg = w.reshape(groups, F // groups, -1)
    y = np.empty((N, F, L), dtype=x.dtype)

    def samples(lo, hi):
        flat = _Flat(x[lo:hi], kernel, dilate, pad, chunk_bytes, b)
        ybuf = np.empty((groups, F // groups, b * L), dtype=y.dtype) if b > 1 else None
        for n0, n1, cols in flat.chunks(x[lo:hi]):
            _product(wg, cols, y[lo:hi], n0, n1, groups, ybuf)
    _threads.split(samples, N, x.size * kernel[0] * kernel[1], align=b, blas_serial=True)
    return y.reshape(x.shape[:1] + (F,) + x.shape[2:])


def _batch_rows(a, n0, n1, groups, buf):
    """Samples n0:n1 of ``a`` (N, R, L) as (G, R / G, m * L): the array itself for one
    sample, else a transposing copy into ``buf``."""
    m = n1 - n0
    R, L = a.shape[1], a.shape[2]
    if m == 1:
        return a[n0].reshape(groups, R // groups, L)
    out = buf[:, :m]
    out[...] = a[n0:n1].swapaxes(0, 1)
    return out.reshape(groups, R // groups, m * L)


def weight_grad(gy, x, kernel, dilate, pad, groups, chunk_bytes):
    """d/dW of the convolution, as (G, Cg * K, Fg)."""
    N, F = gy.shape[:2]
    flat = _Flat(x, kernel, dilate, pad, chunk_bytes)
    L = flat.L
    g3 = gy.reshape(N, F, L)
    gbuf = np.empty((F, flat.b, L), dtype=gy.dtype) if flat.b > 1 else None
    dw = None
    for n0, n1, cols in flat.chunks(x):
        m = n1 - n0
        g = _batch_rows(g3, n0, n1, groups, gbuf)
        # cols @ gy.T: OpenBLAS is twice as fast with the large operand untransposed
        part = np.matmul(cols.reshape(groups, -1, m * L), g.swapaxes(-1, -2))
        dw = part if dw is None else dw + part
    return dw


def backward(gy, x, wt, kernel, dilate, pad, groups, chunk_bytes):
    """(dx, dW) from ONE set of columns, those of ``gy`` for the transposed convolution
    (the same "same" padding ``pad``, kernel ``wt``: the flipped, transposed
    (C, Fg, kh, kw)): dx = W' @ cols, and dW' = cols @ x.T (no grid: x is already in the
    flat layout)."""
    N, C, H, W = x.shape
    F = gy.shape[1]
    Fg, Cg = F // groups, C // groups
    K = kernel[0] * kernel[1]
    L = H * W
    b = samples_per_chunk(N, F * K * L * gy.dtype.itemsize, chunk_bytes, L)
    wt = wt.reshape(groups, Cg, Fg * K)
    dx = np.empty((N, C, L), dtype=np.result_type(gy.dtype, wt.dtype))
    x3 = x.reshape(N, C, L)

    def samples(lo, hi):
        # a thread's samples, chunked as one thread chunks them; the chunks' dW' parts
        # are summed below in chunk order (the one-thread sum, bit for bit)
        flat = _Flat(gy[lo:hi], kernel, dilate, pad, chunk_bytes, b)
        xbuf = np.empty((C, b, L), dtype=x.dtype) if b > 1 else None
        dxbuf = np.empty((groups, Cg, b * L), dtype=dx.dtype) if b > 1 else None
        parts = []
        for n0, n1, cols in flat.chunks(gy[lo:hi]):
            _product(wt, cols, dx[lo:hi], n0, n1, groups, dxbuf)
            c = cols.reshape(groups, Fg * K, -1)
            xg = _batch_rows(x3[lo:hi], n0, n1, groups, xbuf)
            parts.append(np.matmul(c, xg.swapaxes(-1, -2)))     # (G, Fg * K, Cg)
        return parts
    dwt = None
    for parts in _threads.split(samples, N, gy.size * K, align=b, blas_serial=True):
        for part in parts:
            dwt = part if dwt is None else dwt + part
    return dx.reshape(x.shape), weight_from_flipped(dwt, kernel)
