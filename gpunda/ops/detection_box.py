"""Bounding-box ops of MXNet 1.9.1's contrib namespace: box_nms, box_iou,
bipartite_matching, box_encode and box_decode (src/operator/contrib/bounding_box*).

Boxes are ``corner`` (xmin, ymin, xmax, ymax) or ``center`` (x, y, width, height).
Arithmetic stays in the input dtype as in MXNet; thresholds compare as MXNet's float
parameters do (``np.float32`` scalars, so float16 data compares in float32 and float64
data against the float32 value).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.vision._detection_util import (HOST_LOOP, as_corner, box_area, center_to_corner,
                              corner_to_center, device, greedy_keep, host, intersection,
                              require_real, zero_grads)
from gpunda.ops._util import require_same_dtype
from gpunda.ops.registry import OpDef, Param, register

_FORMATS = ("corner", "center")


def _err(op, msg):
    return GpundaError(f"Operator {op}: {msg}")


def _batched(shape):
    """(batch, rows, width) of an array whose last two axes are rows x width."""
    b = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return b, shape[-2], shape[-1]


# ----------------------------------------------------------------------------
# box_nms


def _check_nms(op, p, shape):
    if len(shape) < 2:
        raise _err(op, f"data must have at least 2 dimensions (num_box, box_width), got "
                       f"shape {tuple(shape)}")
    width = shape[-1]
    need = 5 + (p.id_index >= 0)
    if width < need:
        raise _err(op, f"the last dimension must have at least {need} elements (score, 4 "
                       f"coordinates{', id' if p.id_index >= 0 else ''}), got {width}")
    cs, ce = p.coord_start, p.coord_start + 3
    if not 0 <= p.score_index < width:
        raise _err(op, f"score_index={p.score_index} is out of range [0, {width})")
    if cs <= p.score_index <= ce:
        raise _err(op, f"score_index={p.score_index} conflicts with the coordinates "
                       f"({cs}, {ce})")
    if cs < 0 or ce >= width:
        raise _err(op, f"coordinates ({cs}, {ce}) (coord_start={cs}) are out of range "
                       f"[0, {width})")
    if p.id_index >= 0:
        if p.id_index >= width:
            raise _err(op, f"id_index={p.id_index} is out of range [0, {width})")
        if cs <= p.id_index <= ce:
            raise _err(op, f"id_index={p.id_index} conflicts with the coordinates ({cs}, {ce})")
        if p.id_index == p.score_index:
            raise _err(op, f"id_index={p.id_index} conflicts with score_index={p.score_index}")


def _nms_batch(xp, p, x, order, count):
    """Kept positions (host) of one batch ``x`` (N, K) among its ``count`` best boxes
    ``order[:count]``."""
    idx = order[:count]
    by_class = p.id_index >= 0 and not p.force_suppress
    segment_end = perm = None
    if by_class:
        # MXNet compares classes as integers (truncated ids). Boxes of different classes
        # never suppress each other: the walk goes class by class (NOTE [Greedy NMS]),
        # in priority order within each class
        cls_host = host(xp, x[idx, p.id_index]).astype(np.int64)
        perm = np.argsort(cls_host, kind="stable")
        cls_host = cls_host[perm]
        segment_end = np.searchsorted(cls_host, cls_host, side="right")
        idx = idx[device(xp, perm)]
    cs = p.coord_start
    raw = x[idx, cs:cs + 4]
    boxes = as_corner(xp, raw, p.in_format)
    areas = box_area(xp, raw, p.in_format)
    thresh = np.float32(p.overlap_thresh)

    def suppress(rows, cols):
        inter = intersection(xp, boxes[rows], boxes[cols])
        union = areas[rows][:, None] + areas[cols][None, :]
        union -= inter
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.divide(inter, union, out=inter) > thresh   # 0/0 is NaN: kept

    keep = greedy_keep(xp, count, suppress, segment_end=segment_end)
    if perm is not None:
        keep = np.sort(perm[keep])           # back to priority order
        idx = order[:count]
    return host(xp, idx)[keep] if keep.size else keep


def _box_nms(xp, p, data):
    op = "_contrib_box_nms"
    _check_nms(op, p, data.shape)
    require_real(op, [data], ["data"])
    dt = data.dtype
    b, n, k = _batched(data.shape)
    rec_shape = tuple(data.shape[:-1]) + (1,)
    topk = n if p.topk < 0 else min(n, p.topk)
    if topk < 1:
        return data.copy(), xp.arange(b * n, dtype=dt).reshape(rec_shape)
    x = data.reshape(b, n, k)
    scores = x[:, :, p.score_index]
    valid = scores > dt.type(np.float32(p.valid_thresh))
    if p.id_index >= 0:
        valid &= x[:, :, p.id_index] != dt.type(p.background_id)
    counts = host(xp, valid.sum(axis=1))
    out = xp.full((b * n + 1, k), -1, dtype=dt)
    record = xp.full((b * n + 1,), -1, dtype=dt)
    if counts.sum() == 0:
        return out[:-1].reshape(data.shape), record[:-1].reshape(rec_shape)
    # priority: valid boxes by descending score, ties by position (MXNet's stable sorts)
    key = xp.where(valid, -scores, xp.asarray(np.inf, dtype=dt))
    order = xp.argsort(key, axis=1, kind="stable")
    src, dst = [], []
    for bi in range(b):
        m = min(int(counts[bi]), topk)
        if m:
            kept = _nms_batch(xp, p, x[bi], order[bi], m)
            src.append(kept + bi * n)
            dst.append(np.arange(kept.size) + bi * n)
    src = device(xp, np.concatenate(src))
    dst = device(xp, np.concatenate(dst))
    out[dst] = x.reshape(b * n, k)[src]
    record[dst] = src.astype(dt)
    out = out[:-1]
    if p.in_format != p.out_format:
        cs = p.coord_start
        coords = out[:, cs:cs + 4]
        conv = corner_to_center(xp, coords) if p.out_format == "center" else \
            center_to_corner(xp, coords)
        # MXNet skips rows whose first coordinate is negative (the -1 rows, and any box
        # with a negative xmin or x)
        out[:, cs:cs + 4] = xp.where(coords[:, :1] < 0, coords, conv)
    return out.reshape(data.shape), record[:-1].reshape(rec_shape)


def _nms_scatter(xp, p, ograd, record):
    """_backward_contrib_box_nms: each output row's gradient goes back to the input row
    it came from; suppressed and filtered rows get zero."""
    rows = ograd.shape[:-1]
    k = ograd.shape[-1]
    total = int(np.prod(rows))
    src = record.reshape(-1).astype(np.int64)
    dst = xp.where(src >= 0, src, total)        # the spare last row takes the -1 rows
    grad = xp.zeros((total + 1, k), dtype=ograd.dtype)
    grad[dst] = ograd.reshape(total, k)
    return grad[:-1].reshape(ograd.shape)


def _nms_gather(xp, p, grad, record):
    """The adjoint of ``_nms_scatter`` in its gradient: output row i reads input row
    record[i] (zero where record is -1)."""
    k = grad.shape[-1]
    flat = grad.reshape(-1, k)
    src = record.reshape(-1).astype(np.int64)
    got = flat[xp.maximum(src, 0)]
    got = xp.where((src >= 0)[:, None], got, xp.zeros((), grad.dtype))
    return got.reshape(grad.shape)


_NMS_PARAMS = [
    Param("overlap_thresh", "float", 0.5, "IoU above which the lower-scored box is suppressed"),
    Param("valid_thresh", "float", 0.0, "boxes scoring at most this are dropped first"),
    Param("topk", "int", -1, "NMS over the topk best boxes only; -1: all"),
    Param("coord_start", "int", 2, "index of the first of the 4 coordinates"),
    Param("score_index", "int", 1, "index of the score"),
    Param("id_index", "int", -1, "index of the class id; -1: no classes"),
    Param("background_id", "int", -1, "class id dropped before NMS (with id_index)"),
    Param("force_suppress", "bool", False, "suppress across classes too"),
    Param("in_format", "enum", "corner", "input box encoding", choices=_FORMATS),
    Param("out_format", "enum", "corner", "output box encoding", choices=_FORMATS)]


def _infer_nms(p, in_shapes):
    data = in_shapes[0]
    if data is None:
        return list(in_shapes), None
    _check_nms("_contrib_box_nms", p, data)
    return list(in_shapes), [tuple(data), tuple(data[:-1]) + (1,)]


register(OpDef(
    "_contrib_box_nms", _box_nms, aliases=("_contrib_box_non_maximum_suppression",),
    params=_NMS_PARAMS, num_outputs=2, num_visible=1,
    output_names=["output0", "output1"],     # MXNet's defaults: box_nms names none
    gradient=lambda F, p, ins, outs, g: [F._backward_contrib_box_nms(g[0], outs[1])],
    save=("outputs",), infer_shape=_infer_nms, capture=HOST_LOOP, family="detection",
    doc="Non-maximum suppression over boxes (..., num_box, width) holding a score, 4 "
        "coordinates and optionally a class id: the kept boxes come first, by descending "
        "score, and the other rows are -1. The hidden second output records each output "
        "row's input position; the gradient follows each box back to it."))
register(OpDef(
    "_backward_contrib_box_nms", _nms_scatter, inputs=("ograd", "record"), hidden=True,
    no_grad_inputs=("record",), save=("inputs",),
    gradient=lambda F, p, ins, outs, g: [F._box_nms_gather(g[0], ins[1]), None],
    family="detection", doc="box_nms's gradient wrt data (linear in ograd)."))
register(OpDef(
    "_box_nms_gather", _nms_gather, inputs=("data", "record"), hidden=True,
    no_grad_inputs=("record",), save=("inputs",),
    gradient=lambda F, p, ins, outs, g: [F._backward_contrib_box_nms(g[0], ins[1]), None],
    family="detection", doc="The rows of data that box_nms kept (its double backward)."))


# ----------------------------------------------------------------------------
# box_iou


def _check_boxes(op, name, shape):
    if len(shape) < 2 or shape[-1] != 4:
        raise _err(op, f"{name} must have at least 2 dimensions and a last dimension of 4, "
                       f"got shape {tuple(shape)}")


def _box_iou(xp, p, lhs, rhs):
    op = "_contrib_box_iou"
    _check_boxes(op, "lhs", lhs.shape)
    _check_boxes(op, "rhs", rhs.shape)
    require_same_dtype(op, ("lhs", "rhs"), lhs, rhs)
    require_real(op, [lhs], ["lhs"])
    a = lhs.reshape(-1, 4)
    b = rhs.reshape(-1, 4)
    inter = intersection(xp, as_corner(xp, a, p.format), as_corner(xp, b, p.format))
    union = box_area(xp, a, p.format)[:, None] + box_area(xp, b, p.format)[None, :] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = xp.where(inter > 0, inter / union, xp.zeros((), inter.dtype))
    return iou.reshape(tuple(lhs.shape[:-1]) + tuple(rhs.shape[:-1]))


def _infer_iou(p, in_shapes):
    lhs, rhs = in_shapes
    if lhs is None or rhs is None:
        return list(in_shapes), None
    _check_boxes("_contrib_box_iou", "lhs", lhs)
    _check_boxes("_contrib_box_iou", "rhs", rhs)
    return list(in_shapes), [tuple(lhs[:-1]) + tuple(rhs[:-1])]


register(OpDef(
    "_contrib_box_iou", _box_iou, inputs=("lhs", "rhs"),
    params=[Param("format", "enum", "corner", "box encoding", choices=_FORMATS)],
    gradient=zero_grads, save=("inputs",), infer_shape=_infer_iou, family="detection",
    doc="Intersection over union of every box of lhs (..., 4) with every box of rhs "
        "(..., 4): shape lhs.shape[:-1] + rhs.shape[:-1]. The gradient is zero, as in MXNet."))


# ----------------------------------------------------------------------------
# bipartite_matching


def _bipartite_matching(xp, p, data):
    op = "_contrib_bipartite_matching"
    if data.ndim < 2:
        raise _err(op, f"the score matrix must have at least 2 dimensions, got shape "
                       f"{tuple(data.shape)}")
    require_real(op, [data], ["data"])
    dt = data.dtype
    b, r, c = _batched(data.shape)
    s = data.reshape(b, r * c)
    # every pair's place in MXNet's stable sort of the batch's scores
    order = xp.argsort(s if p.is_ascend else -s, axis=1, kind="stable")
    rank = xp.empty_like(order)
    rank[xp.arange(b)[:, None], order] = xp.arange(r * c)[None, :]
    thresh = np.float32(p.threshold)
    row_m = xp.full((b, r), -1, dtype=dt)
    col_m = xp.full((b, c), -1, dtype=dt)
    rows, cols = xp.arange(r), xp.arange(c)
    active = xp.ones(b, dtype=bool)
    rounds = min(r, c)
    if p.topk > 0:       # MXNet stops only once a match has pushed the count past topk
        rounds = min(rounds, p.topk + 1)
    batch = xp.arange(b)
    for _ in range(rounds):
        free = ((row_m < 0)[:, :, None] & (col_m < 0)[:, None, :]).reshape(b, r * c)
        ranked = xp.where(free, rank, r * c)
        best = xp.argmin(ranked, axis=1)
        score = s[batch, best]
        good = (score < thresh) if p.is_ascend else (score > thresh)
        # the walk over sorted pairs stops at the first free pair that fails the threshold
        active = active & (ranked[batch, best] < r * c) & good
        if not bool(host(xp, active.any())):
            break
        br, bc = best // c, best % c
        row_m = xp.where(active[:, None] & (rows[None, :] == br[:, None]),
                         bc[:, None].astype(dt), row_m)
        col_m = xp.where(active[:, None] & (cols[None, :] == bc[:, None]),
                         br[:, None].astype(dt), col_m)
    lead = tuple(data.shape[:-2])
    return row_m.reshape(lead + (r,)), col_m.reshape(lead + (c,))


def _infer_matching(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), None
    return list(in_shapes), [tuple(d[:-1]), tuple(d[:-2]) + (d[-1],)]


register(OpDef(
    "_contrib_bipartite_matching", _bipartite_matching,
    params=[Param("is_ascend", "bool", False, "lower scores match first"),
            Param("threshold", "float", doc="pairs scoring at most this (at least, with "
                                            "is_ascend) are not matched"),
            Param("topk", "int", -1, "limit on the matches; -1: none")],
    num_outputs=2, gradient=zero_grads, save=("inputs",), infer_shape=_infer_matching,
    capture=HOST_LOOP, family="detection",
    doc="Greedy bipartite matching of a score matrix (..., N, M): pairs are taken best "
        "first while both their row and column are free. Returns each row's column (-1 "
        "unmatched) and each column's row. The gradient is zero, as in MXNet."))


# ----------------------------------------------------------------------------
# box_encode / box_decode


def _centers(box):
    """(x, y, w, h) of corner boxes (..., 4), each (...,)."""
    w = box[..., 2] - box[..., 0]
    h = box[..., 3] - box[..., 1]
    return box[..., 0] + w * 0.5, box[..., 1] + h * 0.5, w, h


def _box_encode(xp, p, samples, matches, anchors, refs, means, stds):
    op = "_contrib_box_encode"
    if samples.ndim != 2 or matches.ndim < 2 or anchors.ndim < 3 or anchors.shape[-1] != 4 \
            or refs.ndim < 3 or refs.shape[-1] != 4:
        raise _err(op, f"expects samples (B, N), matches (B, N), anchors (B, N, 4) and refs "
                       f"(B, M, 4), got {tuple(samples.shape)}, {tuple(matches.shape)}, "
                       f"{tuple(anchors.shape)}, {tuple(refs.shape)}")
    if means.size != 4 or stds.size != 4:
        raise _err(op, f"means and stds must have shape (4,), got {tuple(means.shape)} and "
                       f"{tuple(stds.shape)}")
    names = ("samples", "matches", "anchors", "refs", "means", "stds")
    require_same_dtype(op, names, samples, matches, anchors, refs, means, stds)
    require_real(op, [anchors], ["anchors"])
    b, n = anchors.shape[0], anchors.shape[1]
    m = refs.shape[1]
    samples = samples.reshape(b, n)
    # an unmatched anchor (match -1) is masked out below; clip so it reads a real row
    match = xp.clip(matches.reshape(b, n).astype(np.int64), 0, m - 1)
    ref = refs.reshape(b, m, 4)[xp.arange(b)[:, None], match]
    rx, ry, rw, rh = _centers(ref)
    ax, ay, aw, ah = _centers(anchors.reshape(b, n, 4))
    valid = samples > 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        t = xp.stack([(rx - ax) / aw, (ry - ay) / ah, xp.log(rw / aw), xp.log(rh / ah)], axis=-1)
        t = (t - means.reshape(4)) / stds.reshape(4)
    zero = xp.zeros((), anchors.dtype)
    targets = xp.where(valid[..., None], t, zero)
    masks = xp.broadcast_to(valid[..., None], (b, n, 4)).astype(anchors.dtype)
    return targets.reshape(anchors.shape), masks.reshape(anchors.shape)


def _infer_encode(p, in_shapes):
    anchors = in_shapes[2]
    shapes = list(in_shapes)
    shapes[4] = shapes[4] or (4,)
    shapes[5] = shapes[5] or (4,)
    if anchors is None:
        return shapes, None
    return shapes, [tuple(anchors)] * 2


register(OpDef(
    "_contrib_box_encode", _box_encode,
    inputs=("samples", "matches", "anchors", "refs", "means", "stds"), num_outputs=2,
    gradient=zero_grads, save=("inputs",), infer_shape=_infer_encode, family="detection",
    doc="Regression targets of anchors (B, N, 4) towards their matched refs (B, M, 4) "
        "(corner boxes): normalised center offsets and log size ratios, minus means, over "
        "stds; rows whose sample is not positive (> 0.5) are 0. Returns (targets, masks). "
        "The gradient is zero, as in MXNet."))


def _box_decode(xp, p, data, anchors):
    op = "_contrib_box_decode"
    if data.ndim != 3 or data.shape[-1] != 4:
        raise _err(op, f"data must have shape (B, N, 4), got {tuple(data.shape)}")
    if anchors.ndim < 3 or anchors.shape[-1] != 4:
        raise _err(op, f"anchors must have shape (1, N, 4), got {tuple(anchors.shape)}")
    require_same_dtype(op, ("data", "anchors"), data, anchors)
    require_real(op, [data], ["data"])
    dt = data.dtype
    n = data.shape[1]
    a = anchors.reshape(-1, 4)[:n]
    if p.format == "corner":
        ax, ay, aw, ah = _centers(a)
    else:
        ax, ay, aw, ah = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    std = [dt.type(np.float32(s)) for s in (p.std0, p.std1, p.std2, p.std3)]
    ox = data[..., 0] * std[0] * aw + ax
    oy = data[..., 1] * std[1] * ah + ay
    dw = data[..., 2] * std[2]
    dh = data[..., 3] * std[3]
    if p.clip > 0:
        clip = dt.type(np.float32(p.clip))
        dw, dh = xp.minimum(dw, clip), xp.minimum(dh, clip)
    ow = xp.exp(dw) * aw * 0.5
    oh = xp.exp(dh) * ah * 0.5
    return xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1).astype(dt, copy=False)


def _infer_decode(p, in_shapes):
    data = in_shapes[0]
    if data is None:
        return list(in_shapes), None
    return list(in_shapes), [tuple(data)]


register(OpDef(
    "_contrib_box_decode", _box_decode, inputs=("data", "anchors"),
    params=[Param("std0", "float", 1.0, "scale of the 1st encoded value"),
            Param("std1", "float", 1.0, "scale of the 2nd encoded value"),
            Param("std2", "float", 1.0, "scale of the 3rd encoded value"),
            Param("std3", "float", 1.0, "scale of the 4th encoded value"),
            Param("clip", "float", -1.0, "upper bound of the log size offsets when > 0"),
            Param("format", "enum", "center", "encoding of the anchors", choices=_FORMATS)],
    gradient=zero_grads, save=("inputs",), infer_shape=_infer_decode, family="detection",
    doc="Corner boxes (B, N, 4) decoded from offsets data (B, N, 4) against anchors "
        "(1, N, 4); the inverse of box_encode with means 0. The gradient is zero, as in "
        "MXNet."))
