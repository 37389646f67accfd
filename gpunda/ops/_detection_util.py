"""Helpers shared by the detection op families (detection_box, multibox, proposal);
not ops themselves.

# NOTE [Greedy NMS]
Every non-maximum suppression in MXNet's detection ops is the same greedy walk over
boxes in priority order: the first box still alive is kept and suppresses the later
alive boxes it overlaps too much; a suppressed box suppresses nothing. The walk is
sequential, but what one kept box suppresses is not. ``greedy_keep`` takes the next
``block`` alive boxes at once, asks the op for their suppression rows against every
later alive box (one vectorised xp computation giving a small boolean matrix), brings
that matrix to the host and finishes the walk there with one NumPy operation per kept
box. On a GPU that is one synchronisation per block of boxes, not one per box, and
suppressed boxes cost no arithmetic once they are out of the alive set.
"""
from __future__ import annotations

import functools

import numpy as np

from gpunda.base import GpundaError

HOST_LOOP = "a data-dependent walk on the host (NMS or greedy matching)"


def host(xp, a):
    """``a`` as a NumPy array (a device-to-host copy for CuPy)."""
    if xp is np:
        return a
    from gpunda.backends import backend_of_xp
    return backend_of_xp(xp).to_host(a)


def device(xp, a):
    """Host array ``a`` in array module ``xp``."""
    if xp is np:
        return np.asarray(a)
    from gpunda.backends import backend_of_xp
    return backend_of_xp(xp).from_host(np.asarray(a))


def greedy_keep(xp, n, suppress_rows, limit=None, block=256, segment_end=None):
    """Positions (host int64, ascending) that greedy NMS keeps among ``n`` boxes in
    priority order (NOTE [Greedy NMS]).

    Args:
        n: number of boxes.
        suppress_rows: ``f(rows, cols) -> xp bool (len(rows), len(cols))``, True where box
            ``rows[i]`` suppresses box ``cols[j]``; both are ascending xp int64 positions and
            only entries with ``cols[j] > rows[i]`` are read.
        limit: stop once this many boxes are kept (None: no limit).
        block: boxes whose suppression rows are computed together.
        segment_end: host int64 (n,) or None: the end (exclusive) of each box's segment,
            where the boxes come in runs (segments) that never suppress one another, such
            as box_nms's classes laid out one class after the other. A block is then only
            compared with the rest of its last segment, and ``suppress_rows`` may answer
            anything across segments. Needs ``limit`` None (priority runs across
            segments).
    """
    if segment_end is not None and limit is not None:
        raise ValueError("greedy_keep: segments need limit=None")
    alive = np.ones(n, dtype=bool)
    kept = []
    # with a limit the walk usually ends long before n: it runs over windows of boxes,
    # and a window learns what the boxes kept before it suppress only when it is reached
    window = n if limit is None else max(4 * block, 2 * limit)
    lo = 0
    while lo < n and (limit is None or len(kept) < limit):
        hi = min(n, lo + window)
        cols = device(xp, np.arange(lo, hi))
        for k in range(0, len(kept), block):
            rows = device(xp, np.asarray(kept[k:k + block]))
            alive[lo:hi] &= ~host(xp, suppress_rows(rows, cols)).any(axis=0)
        _walk(xp, alive, lo, hi, kept, suppress_rows, limit, block, segment_end)
        lo = hi
    return np.asarray(kept, dtype=np.int64)


def _walk(xp, alive, lo, hi, kept, suppress_rows, limit, block, segment_end):
    """The greedy walk over boxes lo..hi-1, appending kept positions to ``kept``: per
    block of alive boxes, its own suppression matrix solved by ``block_keep``, then one
    matrix of its kept boxes against the alive rest to strike off what they suppress."""
    start = lo
    while start < hi and (limit is None or len(kept) < limit):
        rest = np.flatnonzero(alive[start:hi]) + start
        if rest.size == 0:
            break
        # near the limit, fewer rows: those past it would be computed for nothing
        rows = rest[:block if limit is None else min(block, limit - len(kept))]
        if segment_end is not None:
            rows, rest = _segment_block(rows, rest, segment_end, block)
        sup = _suppression(xp, suppress_rows, rows, rows, segment_end)
        keep = block_keep(sup)
        if limit is not None and len(kept) + int(keep.sum()) >= limit:
            kept.extend(rows[keep][:limit - len(kept)].tolist())
            return
        mine = rows[keep]
        kept.extend(mine.tolist())
        later = rest[rows.size:]
        if later.size:
            hit = _suppression(xp, suppress_rows, mine, later, segment_end).any(axis=0)
            alive[later[hit]] = False
        start = int(rows[-1]) + 1


def _segment_block(rows, rest, segment_end, block):
    """The block's rows and the columns they can reach, with segments: a block ends with
    its first segment unless that has only a few of its rows (small segments go many to a
    block), and the columns end with the block's last segment."""
    first = int(np.searchsorted(rows, segment_end[rows[0]]))
    if block // 4 <= first < rows.size:
        rows = rows[:first]
    return rows, rest[:np.searchsorted(rest, segment_end[rows[-1]])]


def _suppression(xp, suppress_rows, rows, cols, segment_end):
    """Host bool (len(rows), len(cols)) of ``suppress_rows``, False across segments."""
    sup = host(xp, suppress_rows(device(xp, rows), device(xp, cols)))
    if segment_end is not None and segment_end[rows[0]] != segment_end[rows[-1]]:
        sup &= cols[None, :] < segment_end[rows][:, None]
    return sup


@functools.lru_cache(maxsize=8)
def _strict_upper(b):
    """Read-only (b, b) bool mask of i < j."""
    m = np.triu(np.ones((b, b), dtype=bool), 1)
    m.flags.writeable = False
    return m


def block_keep(sup):
    """Which of b boxes in priority order greedy NMS keeps (host bool (b,)), given
    ``sup`` (b, b) bool, True where box i would suppress box j (read only for i < j).

    Greedy keeps j exactly when no kept i < j suppresses it: ``keep = f(keep)`` with
    ``f(k)[j] = not any(k[i] and sup[i, j] for i < j)``. That equation has one solution
    (it fixes keep[0], then keep[1], ...), and iterating f from all-kept reaches it: after
    t rounds keep[:t] is exact, so at worst b rounds, as many as the longest chain of
    boxes each suppressing the next (a handful in practice). Each round is one
    matrix-vector product; a round that changes nothing has found the solution.
    """
    b = sup.shape[0]
    w = (sup & _strict_upper(b)).astype(np.float32)     # the counts stay exact: at most b
    keep = np.ones(b, dtype=bool)
    if not w.any():
        return keep
    while True:
        new = keep.astype(np.float32) @ w == 0
        if np.array_equal(new, keep):
            return keep
        keep = new


def zero_grads(F, p, ins, outs, ograds):
    """MXNet's gradient of ops that back-propagate zeros to every input."""
    return [F.zeros_like(x) for x in ins]


# the rule never reads the output gradients, so autograd accepts head gradients of any
# size for these ops, as MXNet does for a backward that declares no dependency on them
zero_grads.reads_ograds = False


def float_tuple(value):
    """A ``float_or_tuple`` parameter as a tuple (MXNet's Tuple<float> takes a scalar too)."""
    return tuple(value) if isinstance(value, tuple) else (float(value),)


def require_real(op, arrays, names):
    """GpundaError unless every array has a floating dtype (MXNet's MSHADOW_REAL_TYPE_SWITCH)."""
    for a, n in zip(arrays, names):
        if a.dtype.kind != "f":
            raise GpundaError(f"Operator {op}: input {n} has dtype {a.dtype.name}; this "
                              f"operator supports only float16, float32 and float64")


def require_float32(op, arrays, names):
    """GpundaError unless every array is float32 (MXNet's legacy operators compute in
    ``real_t`` and refuse other dtypes: "Unsupported data type")."""
    for a, n in zip(arrays, names):
        if a.dtype != np.float32:
            raise GpundaError(f"Operator {op}: input {n} has dtype {a.dtype.name}; this "
                              f"operator supports only float32 (Unsupported data type)")


def intersection(xp, a, b, plus=0):
    """(m, n) overlap areas of corner boxes ``a`` (m, 4) and ``b`` (n, 4): per axis
    ``max(min(hi) - max(lo) + plus, 0)`` (``plus=1`` for pixel boxes), multiplied.

    The NMS walks call this on large blocks, so it works in place on two buffers.
    """
    dt = a.dtype
    lo = [a[:, k:k + 1] for k in range(4)]
    # contiguous columns: the inner loops of the broadcast (m, n) operations then vectorise
    hi = [xp.ascontiguousarray(b[:, k]) for k in range(4)]
    w = xp.minimum(lo[2], hi[2])
    t = xp.maximum(lo[0], hi[0])
    w -= t
    h = xp.minimum(lo[3], hi[3], out=t)
    t = xp.maximum(lo[1], hi[1])
    h -= t
    if plus:
        w += dt.type(plus)
        h += dt.type(plus)
    zero = dt.type(0)
    xp.maximum(w, zero, out=w)
    xp.maximum(h, zero, out=h)
    w *= h
    return w


def box_area(xp, box, fmt="corner"):
    """Area of boxes (..., 4) in ``fmt`` (corner or center), zero when the width or the
    height is negative (MXNet's BoxArea)."""
    if fmt == "corner":
        w = box[..., 2] - box[..., 0]
        h = box[..., 3] - box[..., 1]
    else:
        w, h = box[..., 2], box[..., 3]
    area = w * h
    return xp.where((w < 0) | (h < 0), xp.zeros((), area.dtype), area)


def as_corner(xp, box, fmt):
    """Boxes (..., 4) of format ``fmt`` as corner boxes."""
    return box if fmt == "corner" else center_to_corner(xp, box)


def center_to_corner(xp, box):
    """(x, y, w, h) -> (xmin, ymin, xmax, ymax) in the boxes' dtype."""
    half_w = box[..., 2] / 2
    half_h = box[..., 3] / 2
    return xp.stack([box[..., 0] - half_w, box[..., 1] - half_h,
                     box[..., 0] + half_w, box[..., 1] + half_h], axis=-1)


def corner_to_center(xp, box):
    """(xmin, ymin, xmax, ymax) -> (x, y, w, h) in the boxes' dtype."""
    return xp.stack([(box[..., 0] + box[..., 2]) / 2, (box[..., 1] + box[..., 3]) / 2,
                     box[..., 2] - box[..., 0], box[..., 3] - box[..., 1]], axis=-1)
