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

import numpy as np

from ..base import GpundaError

HOST_LOOP = "a data-dependent walk on the host (NMS or greedy matching)"


def host(xp, a):
    """``a`` as a NumPy array (a device-to-host copy for CuPy)."""
    if xp is np:
        return a
    from ..backends import backend_of_xp
    return backend_of_xp(xp).to_host(a)


def device(xp, a):
    """Host array ``a`` in array module ``xp``."""
    if xp is np:
        return np.asarray(a)
    from ..backends import backend_of_xp
    return backend_of_xp(xp).from_host(np.asarray(a))


def greedy_keep(xp, n, suppress_rows, limit=None, block=128):
    """Positions (host int64, ascending) that greedy NMS keeps among ``n`` boxes in
    priority order (NOTE [Greedy NMS]).

    Args:
        n: number of boxes.
        suppress_rows: ``f(rows, cols) -> xp bool (len(rows), len(cols))``, True where box
            ``rows[i]`` suppresses box ``cols[j]``; both are ascending xp int64 positions and
            only entries with ``cols[j] > rows[i]`` are read.
        limit: stop once this many boxes are kept (None: no limit).
        block: boxes whose suppression rows are computed together.
    """
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
        _walk(xp, alive, lo, hi, kept, suppress_rows, limit, block)
        lo = hi
    return np.asarray(kept, dtype=np.int64)


def _walk(xp, alive, lo, hi, kept, suppress_rows, limit, block):
    """The greedy walk over boxes lo..hi-1, appending kept positions to ``kept``."""
    start = lo
    while start < hi and (limit is None or len(kept) < limit):
        rest = np.flatnonzero(alive[start:hi]) + start
        if rest.size == 0:
            break
        # near the limit, fewer rows: those past it would be computed for nothing
        rows = rest[:block if limit is None else min(block, limit - len(kept))]
        sup = host(xp, suppress_rows(device(xp, rows), device(xp, rest)))
        for i, r in enumerate(rows):
            if not alive[r]:
                continue
            kept.append(r)
            if limit is not None and len(kept) >= limit:
                return
            alive[rest[sup[i] & (rest > r)]] = False
        start = int(rows[-1]) + 1


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
    hi = [b[:, k] for k in range(4)]
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
