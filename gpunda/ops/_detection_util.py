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


def greedy_keep(xp, n, suppress_rows, limit=None, block=256):
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
    start = 0
    while start < n and (limit is None or len(kept) < limit):
        rest = np.flatnonzero(alive[start:]) + start
        if rest.size == 0:
            break
        rows = rest[:block]
        sup = host(xp, suppress_rows(device(xp, rows), device(xp, rest)))
        for i, r in enumerate(rows):
            if not alive[r]:
                continue
            kept.append(r)
            if limit is not None and len(kept) >= limit:
                break
            hit = sup[i] & (rest > r)
            alive[rest[hit]] = False
        start = int(rows[-1]) + 1
    return np.asarray(kept, dtype=np.int64)


def zero_grads(F, p, ins, outs, ograds):
    """MXNet's gradient of ops that back-propagate zeros to every input."""
    return [F.zeros_like(x) for x in ins]


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


def intersection(xp, a, b):
    """Overlap area of corner boxes ``a`` (..., 4) and ``b`` (..., 4), broadcast; zero
    when they do not overlap (MXNet's Intersect on both axes)."""
    iw = xp.maximum(xp.minimum(a[..., 2], b[..., 2]) - xp.maximum(a[..., 0], b[..., 0]), 0)
    ih = xp.maximum(xp.minimum(a[..., 3], b[..., 3]) - xp.maximum(a[..., 1], b[..., 1]), 0)
    return iw * ih


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
