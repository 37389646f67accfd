"""2x2 stride-2 max/sum pooling and its max-pool gradient, for NumPy (used by nn_conv).

# NOTE [2x2 pooling on flat runs]
NumPy pays per innermost run of a strided view, and the cells of 2x2 windows taken as
four strided slices give runs of only out_w elements: on the 4x4 and 8x8 maps of a
small CNN, the four gathers, compares and strided stores cost more than the arithmetic.
With the data contiguous and flat, horizontal neighbours are the even and odd elements
of ONE long stride-2 run, and after pairing them the two rows of a window are the two
halves of one row of the half-width result. The forward pairs rows first (two long
runs); the gradient pairs neighbours first, which keeps MXNet's tie order: a window's
first maximum in row-major order gets the gradient (top row before bottom, left before
right), as a row-then-column choice gives.
"""
from __future__ import annotations

import math

import numpy as np


def applies(kernel, stride, pad, extra, x):
    """Whether pooling of ``x`` has 2x2 windows of stride 2 that tile it exactly."""
    return (kernel == (2, 2) and stride == (2, 2) and not any(pad) and not any(extra)
            and x.ndim == 4 and x.shape[2] % 2 == 0 and x.shape[3] % 2 == 0)


def pool_2x2(xp, x, ufunc):
    """``ufunc`` (maximum or add) over each 2x2 window of ``x`` (N, C, H, W)."""
    N, C, H, W = x.shape
    rows = xp.ascontiguousarray(x).reshape(N, C, H // 2, 2 * W)
    pair = ufunc(rows[..., :W], rows[..., W:]).reshape(-1)
    return ufunc(pair[0::2], pair[1::2]).reshape(N, C, H // 2, W // 2)


def route_max_2x2(x, h):
    """The max-pooling gradient: ``h`` (N, C, H/2, W/2) sent to the first maximum of
    each 2x2 window of ``x``; None when ``x`` holds NaN (the general route gives such
    a window no gradient, as MXNet's does) or is not floating point."""
    if x.dtype.kind != "f" or math.isnan(float(np.add.reduce(x, axis=None))):
        return None
    N, C, H, W = x.shape
    OW = W // 2
    flat = np.ascontiguousarray(x).reshape(-1)
    left, right = flat[0::2], flat[1::2]
    go_right = right > left                         # ties keep the left cell
    pairs = np.maximum(left, right).reshape(-1, 2, OW)
    go_down = pairs[:, 1] > pairs[:, 0]             # ties keep the top row
    h = h.reshape(-1, OW)
    dx = np.empty(x.shape, dtype=np.result_type(h.dtype, x.dtype))
    half = np.empty(pairs.shape, dtype=dx.dtype)    # the gradient of each row pair
    out = dx.reshape(-1)
    if math.isfinite(float(np.add.reduce(h, axis=None))):
        # multiplying by a mask is twice as fast as np.where, and exact for finite h
        np.multiply(h, go_down, out=half[:, 1])
        np.subtract(h, half[:, 1], out=half[:, 0])
        half = half.reshape(-1)
        np.multiply(half, go_right, out=out[1::2])
        np.subtract(half, out[1::2], out=out[0::2])
    else:
        zero = dx.dtype.type(0)
        np.copyto(half[:, 1], np.where(go_down, h, zero))
        np.copyto(half[:, 0], np.where(go_down, zero, h))
        half = half.reshape(-1)
        np.copyto(out[1::2], np.where(go_right, half, zero))
        np.copyto(out[0::2], np.where(go_right, zero, half))
    return dx
