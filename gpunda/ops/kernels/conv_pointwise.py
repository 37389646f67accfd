"""1x1 convolutions on small maps as ONE GEMM over the batch, for NumPy (used by
ops/kernels/conv.py).

# NOTE [Pointwise GEMM over the batch]
A 1x1 convolution without padding is W (F, C) times each sample's (C, P) data (every
P-th cell where strided). Per sample that is N GEMMs whose inner or outer dimension is
P: on a ResNet-50 7x7 map, P = 49, OpenBLAS runs a (512, 2048) x (2048, 49) product at
about half its rate, and the weight gradient sums N products whose inner dimension is
only 49. Laid out channel-major instead, (C, N * P) (one transposing copy of the data,
and one of the output), each of the three products is one GEMM with N * P columns or
an inner dimension of N * P. The copies move (C + F) * N * P elements against
2 * F * C * N * P flops, so this pays on small maps with many channels (the rule in ``eligible``); larger
maps keep the per-sample products, which are already at full rate there.
"""
from __future__ import annotations

import math

import numpy as np

# measured on ResNet-50 shapes (one BLAS thread): on 7x7 maps (49 cells) all three
# products gain (the data gradient twice as fast); on 14x14 (196) only the data
# gradient does (the forward lost 5%); on 28x28 and up every product loses to the copies
_MAX_CELLS = {"forward": 100, "weight": 100, "data": 256}
# the copies cost about (C + F) / (2 * C * F) of the flops at a tenth of the GEMM's
# rate per element: worth it only where C * F / (C + F) is at least this (ResNet-20's
# 1x1 projections of 16-64 channels lost 10-30%)
_MIN_CHANNELS = 100


def eligible(xp, x, kernel, pad, out_sp, C, F, product):
    """Whether ``product`` ("forward", "weight" or "data") of a convolution of ``x`` is
    a 1x1 product on a small map with many channels: NumPy, a kernel of one cell, no
    padding, few output cells per sample (_MAX_CELLS) and C * F / (C + F) of at least
    _MIN_CHANNELS."""
    return (xp is np and x.ndim >= 3 and all(k == 1 for k in kernel) and not any(pad)
            and math.prod(out_sp) <= _MAX_CELLS[product]
            and C * F >= _MIN_CHANNELS * (C + F))


def _cells(x, stride):
    """The cells of ``x`` (N, C, *sp) that a 1x1 kernel with ``stride`` reads."""
    if all(s == 1 for s in stride):
        return x
    return x[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]


def _channel_major(a, groups):
    """``a`` (N, R, *sp) as a contiguous (G, R / G, N * P)."""
    N, R = a.shape[:2]
    return np.ascontiguousarray(a.reshape(N, R, -1).swapaxes(0, 1)).reshape(groups, R // groups, -1)


def forward(x, w, stride, groups, out_sp):
    """The 1x1 convolution of ``x`` with ``w`` (F, C/G, 1...), no bias."""
    N = x.shape[0]
    F = w.shape[0]
    xc = _channel_major(_cells(x, stride), groups)
    yc = np.matmul(w.reshape(groups, F // groups, -1), xc)           # (G, Fg, N * P)
    y = np.empty((N, F) + tuple(out_sp), dtype=yc.dtype)
    y.reshape(N, F, -1)[...] = yc.reshape(F, N, -1).swapaxes(0, 1)
    return y


def weight_grad(gy, x, stride, groups):
    """d/dW as (G, Cg, Fg)."""
    xc = _channel_major(_cells(x, stride), groups)
    gc = _channel_major(gy, groups)
    # x @ gy.T: OpenBLAS is faster with the larger operand untransposed
    return np.matmul(xc, gc.swapaxes(-1, -2))


def data_grad(gy, w, stride, groups, data_shape, dtype):
    """d/dx (zero on the cells that a stride skips)."""
    N, F = gy.shape[:2]
    C = data_shape[1]
    gc = _channel_major(gy, groups)
    dc = np.matmul(w.reshape(groups, F // groups, -1).swapaxes(-1, -2), gc)   # (G, Cg, N*P)
    strided = any(s != 1 for s in stride)
    dx = (np.zeros if strided else np.empty)(tuple(data_shape), dtype=dtype)
    cells = _cells(dx, stride)
    cells[...] = dc.reshape((C, N) + tuple(gy.shape[2:])).swapaxes(0, 1)
    return dx
