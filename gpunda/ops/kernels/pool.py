"""2x2 stride-2 pooling and its max-pool gradient, for NumPy (used by nn_conv).

# NOTE [2x2 pooling in cell planes]
NumPy pays per innermost run of a strided view, and the cells of 2x2 windows taken as
four strided slices of an (N, C, H, W) array are runs of only W/2 elements: on the 4x4
and 8x8 maps of a small CNN, gathering, comparing and storing them costs several
times the arithmetic. The max-pool gradient therefore gathers the data ONCE into four
contiguous cell planes laid out (row in window, column in window, out column, rows):
each plane's runs are a whole column of windows long (N * C * H/2 cells), so the copy
runs W long loops instead of N * C * H/2 short ones. The routing is then contiguous
element-wise work on planes, and one copy scatters the four gradient planes back.

The forward pairs the two rows of each window as the halves of one row of twice the
width, then neighbours in the flat result (two long runs).

The gradient goes to the first maximum of each window in row-major order, as MXNet's:
the top row unless the bottom row's larger value is strictly larger, then the left
cell unless the right one is strictly larger.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from gpunda._core import threads as _threads
from gpunda.ops._util import finite


def applies(kernel, stride, pad, extra, shape):
    """Whether pooling over ``shape`` has 2x2 windows of stride 2 that tile it exactly."""
    return (tuple(kernel) == (2, 2) and tuple(stride) == (2, 2) and not any(pad)
            and not any(extra) and len(shape) == 4 and shape[2] % 2 == 0
            and shape[3] % 2 == 0)


def pool_2x2(xp, x, ufunc):
    """``ufunc`` (maximum or add) over each 2x2 window of ``x`` (N, C, H, W)."""
    N, C, H, W = x.shape
    if xp is np and x.size >= 2 * _threads.STREAM_MIN_ELEMENTS and N > 1:
        # each window alone: samples split over the CPU threads give the same values
        out = np.empty((N, C, H // 2, W // 2), dtype=x.dtype)

        def samples(lo, hi):
            out[lo:hi] = _pool_2x2(np, x[lo:hi], ufunc)
        _threads.split(samples, N, x.size, min_elements=_threads.STREAM_MIN_ELEMENTS)
        return out
    return _pool_2x2(xp, x, ufunc)


def _pool_2x2(xp, x, ufunc):
    N, C, H, W = x.shape
    rows = xp.ascontiguousarray(x).reshape(N, C, H // 2, 2 * W)
    pair = ufunc(rows[..., :W], rows[..., W:]).reshape(-1)
    return ufunc(pair[0::2], pair[1::2]).reshape(N, C, H // 2, W // 2)


def _planes(a):
    """``a`` (N, C, H, W) as (row in window, column in window, W/2, N * C * H/2) views."""
    N, C, H, W = a.shape
    return a.reshape(N * C * H // 2, 2, W // 2, 2).transpose(1, 3, 2, 0)


# the planar route is for maps whose windows make short runs (at most 4 to a row); its
# scatter index costs 8 bytes a cell, cached per shape
_MAX_OUT_W = 4
_MAX_CELLS = 1 << 20


@functools.lru_cache(maxsize=8)
def _scatter_index(shape):
    """For each cell of data of ``shape`` in its own order, its position in the planes."""
    order = np.ascontiguousarray(_planes(np.arange(math.prod(shape)).reshape(shape)))
    index = np.empty(order.size, dtype=np.intp)
    index[order.reshape(-1)] = np.arange(order.size)
    index.flags.writeable = False
    return index


def planar(x):
    """Whether the max-pool gradient of ``x`` (N, C, H, W) may take the planar route."""
    return x.dtype.kind == "f" and x.shape[3] // 2 <= _MAX_OUT_W and x.size <= _MAX_CELLS


def max_2x2_planes(x):
    """(``pool_2x2(np, x, np.maximum)``, the cell planes of ``x``): the same maxima, in
    the same operand order, taken from the planes that ``route_max_2x2(x, h, cells)``
    reads, so a training plan gathers them once for the forward and the gradient."""
    N, C, H, W = x.shape
    R, OW = N * C * H // 2, W // 2
    cells = np.empty((2, 2, OW, R), dtype=x.dtype)
    np.copyto(cells, _planes(x))
    # pool_2x2 pairs the rows of a window first (top with bottom), then the columns
    left = np.maximum(cells[0, 0], cells[1, 0])
    np.maximum(left, np.maximum(cells[0, 1], cells[1, 1]), out=left)
    y = np.empty((R, OW), dtype=x.dtype)
    np.copyto(y, left.T)
    return y.reshape(N, C, H // 2, W // 2), cells


def route_max_2x2(x, h, cells=None):
    """The max-pooling gradient ``h`` (N, C, H/2, W/2) sent to the first maximum of
    each 2x2 window of ``x`` (NOTE above); ``cells``: the planes of ``x`` when the caller
    has them (``max_2x2_planes``). None where the planar route does not apply:
    wide maps, whose windows already make long runs; ``x`` holding NaN (the general
    route gives such a window no gradient, as MXNet's does); ``h`` not finite (its
    products with the masks would be NaN where the general route has zeros)."""
    N, C, H, W = x.shape
    R, OW = N * C * H // 2, W // 2
    if not planar(x) or not finite(h):
        return None
    if cells is None:
        cells = np.empty((2, 2, OW, R), dtype=x.dtype)
        np.copyto(cells, _planes(x))
    top = np.maximum(cells[0, 0], cells[0, 1])
    bottom = np.maximum(cells[1, 0], cells[1, 1])
    # a NaN anywhere makes a row maximum NaN (an inf and a -inf only send such data to
    # the general route too)
    if math.isnan(float(np.add.reduce(top, axis=None)) + float(np.add.reduce(bottom, axis=None))):
        return None
    hp = np.empty((OW, R), dtype=h.dtype)
    np.copyto(hp, h.reshape(R, OW).T)
    dt = np.result_type(h.dtype, x.dtype)
    g = np.empty((2, 2, OW, R), dtype=dt)
    # a gradient times a 0/1 mask, and the rest by subtraction: exact for finite h
    np.multiply(hp, bottom > top, out=g[1, 0])
    np.subtract(hp, g[1, 0], out=g[0, 0])
    for row in (0, 1):
        np.multiply(g[row, 0], cells[row, 1] > cells[row, 0], out=g[row, 1])
        g[row, 0] -= g[row, 1]
    dx = np.empty(x.shape, dtype=dt)
    # a gather by index: a strided store into the planes' view runs 2-cell loops ("clip":
    # the indices are in range, and "raise" would buffer the output)
    np.take(g.reshape(-1), _scatter_index(x.shape), out=dx.reshape(-1), mode="clip")
    return dx
