"""Stride-1 2-D convolution on the padded-row grid, for NumPy (used by _conv_kernels).

# NOTE [Row-grid columns]
The column copies of an im2col move rows of only out_w elements each, and NumPy pays
per row: on 32x32 maps that was half the time of a convolution's forward. With the
padded data of a sample flattened per channel, kernel position (kh, kw) of a stride-1
convolution reads ONE contiguous run of out_h * padded_w elements, at offset
kh * dh * padded_w + kw * dw. The GEMM then computes padded_w - out_w extra output
columns per row (they read wrapped cells) that are dropped: more GEMM work by
padded_w / out_w, and far fewer, longer copies; so the grid is used only where
padded_w <= 1.5 out_w (a kernel as wide as the image would multiply the columns by
its width). The batch goes through in chunks of
about _CHUNK_BYTES of columns, which stay in the L2 cache while the GEMM reads them
(NOTE [Convolution in cache-sized chunks]); all buffers are made once per call.

The weight gradient multiplies the columns by the output gradient placed on the same
grid, with zeros in the dropped columns. A zero times a wrapped cell holding inf or
NaN would be NaN, so data that is not all finite takes the regular im2col route.
"""
from __future__ import annotations

import itertools

import numpy as np

from gpunda.ops._util import finite


# a batch whose columns fit in about the L2 cache goes through as one chunk: one GEMM
# and one set of copies instead of two or three smaller ones
WHOLE_BATCH_BYTES = 2 << 20
# a chunk spans at least this many GEMM columns, however large its columns: OpenBLAS
# runs a product only a few hundred columns wide well below its rate (measured: a
# ResNet-50 3x3 layer of 512 channels on 7x7 maps, 49 columns a sample, went from 51 to
# 66 GFLOPS forward and from 41 to 60 backward when its 4 samples made one chunk)
MIN_GEMM_COLUMNS = 512


def samples_per_chunk(N, per_sample, chunk_bytes, cells=1):
    """How many samples' columns to make at a time (NOTE [Convolution in cache-sized
    chunks]): about ``chunk_bytes`` of columns, but at least MIN_GEMM_COLUMNS GEMM
    columns of ``cells`` per sample."""
    if N * per_sample <= max(chunk_bytes, WHOLE_BATCH_BYTES):
        return N
    b = max(1, chunk_bytes // max(1, per_sample))
    return min(N, max(b, -(-MIN_GEMM_COLUMNS // max(1, cells))))


def eligible(xp, x, kernel, stride, pad, out_sp):
    """Whether a convolution of ``x`` runs on the row grid: NumPy, 2-D, stride 1, and at
    most half again as many grid columns as output columns (padded_w <= 1.5 out_w)."""
    return (xp is np and len(kernel) == 2 and stride[0] == 1 and stride[1] == 1
            and kernel[0] * kernel[1] > 1 and 2 * (x.shape[3] + 2 * pad[1]) <= 3 * out_sp[1])


class _Grid:
    """The padded-row grid of one convolution's geometry, with its reused buffers.

    A chunk's columns are laid out (C, K, samples, out_h * padded_w), so one GEMM covers
    the whole chunk: a GEMM per sample costs OpenBLAS a few microseconds of set-up each,
    which on small maps is more than its arithmetic."""

    def __init__(self, x, kernel, dilate, pad, out_sp, chunk_bytes):
        N, C, H, W = x.shape
        self.H, self.W, self.pad = H, W, pad
        self.Wp = W + 2 * pad[1]
        self.OH, self.OW = out_sp
        self.L = self.OH * self.Wp
        self.K = kernel[0] * kernel[1]
        per_sample = C * self.K * self.L * x.dtype.itemsize
        self.b = samples_per_chunk(N, per_sample, chunk_bytes, self.L)
        # rows past the end, so that the last kernel position's run stays in the buffer
        extra = -(-((kernel[1] - 1) * dilate[1]) // self.Wp)
        self.xbuf = np.zeros((self.b, C, H + 2 * pad[0] + extra, self.Wp), dtype=x.dtype)
        self.cbuf = np.empty((C, self.K, self.b, self.L), dtype=x.dtype)
        self.offsets = [kh * dilate[0] * self.Wp + kw * dilate[1]
                        for kh, kw in itertools.product(range(kernel[0]), range(kernel[1]))]

    def chunks(self, x):
        """(n0, n1, columns (C * K, (n1 - n0) * out_h * padded_w)); the buffer is reused."""
        N, C = x.shape[:2]
        p0, p1 = self.pad
        flat = self.xbuf.reshape(self.b, C, -1).swapaxes(0, 1)      # (C, b, rows)
        L = self.L
        for n0 in range(0, N, self.b):
            n1 = min(N, n0 + self.b)
            m = n1 - n0
            self.xbuf[:m, :, p0:p0 + self.H, p1:p1 + self.W] = x[n0:n1]
            cb = self.cbuf[:, :, :m]
            for j, o in enumerate(self.offsets):
                cb[:, j] = flat[:, :m, o:o + L]
            yield n0, n1, cb.reshape(C * self.K, m * L)


def forward(x, w, kernel, dilate, pad, groups, out_sp, chunk_bytes):
    """Convolution of ``x`` (N, C, H, W) with ``w`` (F, C/G, kh, kw), stride 1, no bias."""
    N = x.shape[0]
    F = w.shape[0]
    grid = _Grid(x, kernel, dilate, pad, out_sp, chunk_bytes)
    wg = w.reshape(groups, F // groups, -1)
    y = np.empty((N, F) + tuple(out_sp), dtype=x.dtype)
    ybuf = np.empty((groups, F // groups, grid.b * grid.L), dtype=x.dtype)
    OH, OW, Wp = grid.OH, grid.OW, grid.Wp
    for n0, n1, cols in grid.chunks(x):
        m = n1 - n0
        yb = ybuf[:, :, :m * grid.L]
        np.matmul(wg, cols.reshape(groups, -1, m * grid.L), out=yb)
        y[n0:n1] = yb.reshape(F, m, OH, Wp)[..., :OW].swapaxes(0, 1)
    return y


def weight_grad(gy, x, kernel, dilate, pad, groups, out_sp, chunk_bytes):
    """d/dW of a stride-1 convolution on the grid, as (G, Cg * K, Fg), or None when ``x``
    is not all finite (the caller then takes the im2col route: NOTE above)."""
    if not finite(x):
        return None
    N, F = gy.shape[:2]
    grid = _Grid(x, kernel, dilate, pad, out_sp, chunk_bytes)
    OW, L = grid.OW, grid.L
    gbuf = np.zeros((F, grid.b, grid.OH, grid.Wp), dtype=gy.dtype)
    dw = None
    for n0, n1, cols in grid.chunks(x):
        m = n1 - n0
        gbuf[:, :m, :, :OW] = gy[n0:n1].swapaxes(0, 1)
        g = gbuf[:, :m].reshape(groups, F // groups, m * L)
        # cols @ gy.T: OpenBLAS is twice as fast with the large operand untransposed
        part = np.matmul(cols.reshape(groups, -1, m * L), g.swapaxes(-1, -2))
        dw = part if dw is None else dw + part
    return dw


def backward(gy, x, wt, kernel, dilate, tpad, groups, chunk_bytes):
    """(dx, dW) of a stride-1 convolution from ONE set of columns: those of ``gy`` on
    the grid of the transposed convolution (padding ``tpad``), which give dx = W' @ cols
    and dW' = cols @ x_grid.T with x placed on the same grid (zeros in its dropped
    columns) and W' = ``wt`` the flipped, transposed kernel (C, Fg, kh, kw); the caller
    has checked that geometry, and drops the result where ``gy`` or ``x`` is not finite
    (NOTE above; ``_conv_kernels.conv_backward``)."""
    N, C, H, W = x.shape
    F = gy.shape[1]
    Fg, Cg = F // groups, C // groups
    K = kernel[0] * kernel[1]
    wt = wt.reshape(groups, Cg, Fg * K)
    grid = _Grid(gy, kernel, dilate, tpad, (H, W), chunk_bytes)
    L, Wp = grid.L, grid.Wp
    dx = np.empty_like(x, dtype=np.result_type(gy.dtype, wt.dtype))
    dxbuf = np.empty((groups, Cg, grid.b * L), dtype=dx.dtype)
    xbuf = np.zeros((C, grid.b, H, Wp), dtype=x.dtype)
    dwt = None
    for n0, n1, cols in grid.chunks(gy):
        m = n1 - n0
        c = cols.reshape(groups, Fg * K, m * L)
        db = dxbuf[:, :, :m * L]
        np.matmul(wt, c, out=db)
        dx[n0:n1] = db.reshape(C, m, H, Wp)[..., :W].swapaxes(0, 1)
        xbuf[:, :m, :, :W] = x[n0:n1].swapaxes(0, 1)
        xg = xbuf[:, :m].reshape(groups, Cg, m * L)
        part = np.matmul(c, xg.swapaxes(-1, -2))        # (G, Fg * K, Cg)
        dwt = part if dwt is None else dwt + part
    return dx, weight_from_flipped(dwt, kernel)


def weight_from_flipped(dwt, kernel):
    """dW (F, Cg, *kernel) from a fused backward's dW' (G, Fg * K, Cg), which holds
    dW[g * Fg + f, c, K - 1 - k'] at [g, f * K + k', c] (the flipped kernel's order)."""
    G, FgK, Cg = dwt.shape
    K = kernel[0] * kernel[1]
    dw = dwt.reshape(G, FgK // K, K, Cg)[:, :, ::-1].swapaxes(2, 3)
    return np.ascontiguousarray(dw).reshape((G * FgK // K, Cg) + tuple(kernel))
