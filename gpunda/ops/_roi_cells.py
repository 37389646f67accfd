"""Per-ROI separable sampling that reads only the cells each ROI weighs: the forward of
ROIAlign on many ROIs (helpers of ops/vision.py, not ops themselves).

# NOTE [ROI cells]
NOTE [Separable sampling] writes an ROI's output as ``Ay @ plane @ Ax.T``. Done densely
for all ROIs at once, that multiplies every ROI's maps with the whole feature map: on a
(1, 256, 64, 64) map with 512 ROIs it is 4 GFLOP and a 235 MB intermediate, although a
7x7 ROIAlign with 2x2 samples per bin reads at most 28 rows and 28 columns of each plane.
Here each ROI keeps only the rows (columns) its map Ay (Ax) weighs, in ascending order,
and reads that grid of cells, channels last, in one gather: ``(ky, kx, C)`` per ROI,
with ky, kx at most min(H, 2 * samples * pooled_h) (and likewise for x). Its output is
then two small batched matmuls, Ay on the grid's rows and Ax on its columns. ROIs go in
chunks of about the same grid size (ky, kx rounded up to a multiple of 4), each padded
to that grid with a zero cell of weight zero, so the gather and matmuls stay dense while
the padding stays small; a chunk is about a core's cache, so what the gather writes is
still there when the matmuls read it. Cells that a map does not weigh are never read, so a
NaN or inf elsewhere in the map does not leak into an ROI (the dense product's 0 * inf).
"""
from __future__ import annotations

import numpy as np

from gpunda.ops.vision._detection_util import device, host

# gathered floats of one chunk (the grids of its ROIs times the channels): about what
# stays in a CPU core's cache between the gather and the matmuls that read it
_CHUNK_FLOATS = 1 << 19
_CHUNK_ROIS = 64
_ROUND = 4         # grid sides round up to a multiple of this (the padding of a chunk)


def _cells(xp, maps):
    """Cells a map weighs: maps (R, bins, size) -> positions (R, K) ascending, live (R, K)
    (False in the padding past each ROI's count) and the counts (R,) on the host."""
    used = (maps != 0).any(axis=1)                            # (R, size)
    count = used.sum(axis=1)
    k = max(int(host(xp, count.max())), 1)
    # the used cells first, each group in ascending order
    pos = xp.argsort(~used, axis=1, kind="stable")[:, :k]
    live = xp.arange(k)[None, :] < count[:, None]
    return pos, live, host(xp, count)


def _chunks(ky, kx, channels):
    """(rows, cols, host ROI indices) of the chunks whose grids are computed together:
    ROIs whose grid sizes round up (to a multiple of _ROUND) to the same rows x cols, as
    many to a chunk as fit _CHUNK_FLOATS; ROIs with an empty grid read nothing and are
    left out."""
    cy = np.minimum(-(-ky // _ROUND) * _ROUND, max(int(ky.max()), 1))
    cx = np.minimum(-(-kx // _ROUND) * _ROUND, max(int(kx.max()), 1))
    key = np.where((ky > 0) & (kx > 0), cy * (int(cx.max()) + 1) + cx, -1)
    order = np.argsort(key, kind="stable")
    order = order[key[order] >= 0]
    starts = np.flatnonzero(np.diff(key[order], prepend=-1)) if order.size else order
    chunks = []
    for lo, hi in zip(starts, list(starts[1:]) + [order.size]):
        rows, cols = int(cy[order[lo]]), int(cx[order[lo]])
        step = min(_CHUNK_ROIS, max(1, _CHUNK_FLOATS // (rows * cols * channels)))
        chunks += [(rows, cols, order[i:min(i + step, hi)]) for i in range(lo, hi, step)]
    return chunks


def apply_maps_cells(xp, data, ay, ax, batch):
    """(R, C, PH, PW): per ROI ``Ay @ data[batch] @ Ax.T`` with ay (R, PH, H) and ax
    (R, PW, W), reading only the cells the maps weigh (NOTE [ROI cells]); zero for ROIs
    whose batch index is out of range."""
    n, c, h, w = data.shape
    r, ph_n = ay.shape[:2]
    pw_n = ax.shape[1]
    out = xp.zeros((r, c, ph_n, pw_n), dtype=data.dtype)
    if r == 0 or c == 0 or data.size == 0:
        return out
    ypos, ylive, ky = _cells(xp, ay)
    xpos, xlive, kx = _cells(xp, ax)
    wy = xp.take_along_axis(ay, ypos[:, None, :], axis=2)       # (R, PH, Ky)
    wx = xp.take_along_axis(ax, xpos[:, None, :], axis=2)       # (R, PW, Kx)
    # channels last, plus one zero cell that the padding and out-of-range ROIs read
    table = xp.empty((n * h * w + 1, c), dtype=data.dtype)
    table[:-1] = data.transpose(0, 2, 3, 1).reshape(-1, c)
    table[-1] = 0
    ok = (batch >= 0) & (batch < n)
    rows = (xp.clip(batch, 0, n - 1) * h)[:, None] + ypos
    flat = rows[:, :, None] * w + xpos[:, None, :]             # (R, Ky, Kx)
    live = ylive[:, :, None] & xlive[:, None, :] & ok[:, None, None]
    flat = xp.where(live, flat, n * h * w)
    for cy, cx, sel in _chunks(ky, kx, c):
        m = sel.size
        idx = device(xp, sel)
        grid = table[flat[idx, :cy, :cx]]                         # (m, cy, cx, C)
        rows_out = wy[idx, :, :cy] @ grid.reshape(m, cy, cx * c)  # (m, PH, cx * C)
        both = wx[idx, None, :, :cx] @ rows_out.reshape(m, ph_n, cx, c)   # (m, PH, PW, C)
        out[idx] = both.transpose(0, 3, 1, 2)
    return out
