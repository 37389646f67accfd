"""The data gradient of a strided 2-D convolution on phase grids, for NumPy (used by
ops/kernels/conv.py).

# NOTE [Phase-grid data gradient]
A stride-s convolution reads padded cell s * o + k for output o and kernel offset
k = kh * dh. Split the padded data into its s * s phases, phase (r, r') holding the
cells whose row is r mod s and column r' mod s: offset k then reads cell o + k // s of
phase k mod s, a stride-1 read. Laid out as the row grid (NOTE [Row-grid columns])
per phase, each kernel position reads ONE contiguous run of out_h * Tw cells of its
phase (Tw, the phase grid's width, is out_w + the largest k // s).

The data gradient is the adjoint of those reads: W.T @ gy (gy placed on the grid,
zero in its Tw - out_w extra columns per row) gives column gradients that are summed
back into the phase grids with K contiguous adds, then copied out phase by phase: one
strided pass over the data gradient, where col2im makes K accumulating strided
passes over the whole batch (measured on ResNet-20's stride-2 3x3 layers, one BLAS
thread: 20 -> 24 and 27 -> 31 GFLOPS). A zero of the extra columns times an inf or NaN
weight would be NaN, so a kernel that is not finite takes col2im.

The forward and the weight gradient on the same grids were measured too and lost
(31.0 against 31.9 and 29.2 against 30.7 GFLOPS on the 16->32 layer): splitting the
data into phases is a stride-s gather as slow as im2col's own copies, so those keep
im2col.
"""
from __future__ import annotations

import numpy as np

from gpunda.ops._util import finite
from gpunda.ops.kernels.conv_grid import samples_per_chunk


def eligible(xp, x, kernel, stride, dilate, pad, out_sp):
    """Whether a convolution of ``x`` runs on phase grids: NumPy, 2-D, a stride above 1
    in some axis, more than one kernel cell, and at most half again as many grid
    columns as output columns."""
    if xp is not np or len(kernel) != 2 or x.ndim != 4 or kernel[0] * kernel[1] == 1:
        return False
    if stride[0] == 1 and stride[1] == 1:
        return False
    tw = out_sp[1] + (kernel[1] - 1) * dilate[1] // stride[1]
    return 2 * tw <= 3 * out_sp[1]


class _Phases:
    """The phase grids of one convolution's geometry, with the copies in and out.

    ``buf`` (b, C, s_h, s_w, Th, Tw): cell [n, c, r, r', t, u] is padded cell
    (s_h * t + r, s_w * u + r') of sample n, channel c (zero where that is padding or
    past the data); ``taps`` gives, per kernel position, its phase and the start of
    its run in that phase's flattened grid."""

    def __init__(self, shape, dtype, kernel, stride, dilate, pad, out_sp, chunk_bytes):
        N, C, H, W = shape
        self.N, self.C, self.H, self.W = N, C, H, W
        self.s = tuple(stride)
        self.OH, self.OW = out_sp
        qh = (kernel[0] - 1) * dilate[0] // stride[0]
        qw = (kernel[1] - 1) * dilate[1] // stride[1]
        self.Tw = self.OW + qw
        # one more row when the last run reaches past the grid's last row
        self.Th = self.OH + qh + (1 if qw else 0)
        self.L = self.OH * self.Tw
        self.K = kernel[0] * kernel[1]
        itemsize = np.dtype(dtype).itemsize
        self.b = samples_per_chunk(N, C * self.K * self.L * itemsize, chunk_bytes, self.L)
        self.taps = []
        for kh in range(kernel[0]):
            for kw in range(kernel[1]):
                oh, ow = kh * dilate[0], kw * dilate[1]
                self.taps.append((oh % stride[0], ow % stride[1],
                                  (oh // stride[0]) * self.Tw + ow // stride[1]))
        # per phase: (r, r', grid rows, grid cols, data rows, data cols) of the data cells
        self.places = []
        rows = [_axis_place(r, stride[0], pad[0], H, self.Th) for r in range(stride[0])]
        cols = [_axis_place(r, stride[1], pad[1], W, self.Tw) for r in range(stride[1])]
        for r, rw in enumerate(rows):
            for r2, cl in enumerate(cols):
                if rw is not None and cl is not None:
                    self.places.append((r, r2, rw[0], cl[0], rw[1], cl[1]))
        # whether every data cell lies in a grid (cells past the last window do not)
        self.covers = (sum(_count(p) for p in rows) == H and sum(_count(p) for p in cols) == W)

    def new(self, dtype):
        return np.zeros((self.b, self.C) + self.s + (self.Th, self.Tw), dtype=dtype)

    def take(self, buf, dx, n0, n1):
        """The data cells of ``buf`` into samples n0:n1 of ``dx``."""
        m = n1 - n0
        for r, r2, gr, gc, dr, dc in self.places:
            dx[n0:n1, :, dr, dc] = buf[:m, :, r, r2, gr, gc]

    def runs(self, buf, m):
        """Per kernel position, the view (C, m, L) of its run in ``buf``."""
        flat = buf[:m].reshape(m, self.C, self.s[0], self.s[1], -1)
        L = self.L
        return [flat[:, :, r, r2, o:o + L].swapaxes(0, 1) for r, r2, o in self.taps]


def _axis_place(r, s, pad, size, cells):
    """(grid slice, data slice) along one axis for phase ``r``: grid cell t holds data
    index s * t + r - pad; None when no data cell lands in the grid."""
    t0 = max(0, -(-(pad - r) // s))
    t1 = min(cells, (size - 1 + pad - r) // s + 1)
    if t1 <= t0:
        return None
    d0 = s * t0 + r - pad
    return slice(t0, t1), slice(d0, d0 + s * (t1 - t0 - 1) + 1, s)


def _count(place):
    return 0 if place is None else place[0].stop - place[0].start


def data_grad(gy, w, kernel, stride, dilate, pad, groups, data_shape, chunk_bytes):
    """d/dx of the convolution, or None when ``w`` is not all finite (NOTE above)."""
    if not finite(w):
        return None
    N, F = gy.shape[:2]
    C = data_shape[1]
    out_sp = tuple(gy.shape[2:])
    dtype = np.result_type(gy.dtype, w.dtype)
    ph = _Phases(tuple(data_shape), dtype, kernel, stride, dilate, pad, out_sp, chunk_bytes)
    wt = w.reshape(groups, F // groups, -1).swapaxes(-1, -2)         # (G, Cg * K, Fg)
    # data cells that no window reads get no gradient: zeros where the grids miss some
    dx = (np.empty if ph.covers else np.zeros)(tuple(data_shape), dtype=dtype)
    buf = ph.new(dtype)
    gbuf = np.zeros((F, ph.b, ph.OH, ph.Tw), dtype=gy.dtype)
    dbuf = np.empty((groups, C // groups * ph.K, ph.b * ph.L), dtype=dtype)
    for n0 in range(0, N, ph.b):
        n1 = min(N, n0 + ph.b)
        m = n1 - n0
        gbuf[:, :m, :, :ph.OW] = gy[n0:n1].swapaxes(0, 1)
        g = gbuf[:, :m].reshape(groups, F // groups, m * ph.L)
        dc = dbuf[:, :, :m * ph.L]
        np.matmul(wt, g, out=dc)
        dcols = dc.reshape(C, ph.K, m, ph.L)
        buf[:m] = 0
        for j, run in enumerate(ph.runs(buf, m)):
            run += dcols[:, j]
        ph.take(buf, dx, n0, n1)
    return dx

