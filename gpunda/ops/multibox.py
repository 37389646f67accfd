"""SSD's multibox ops of MXNet 1.9.1's contrib namespace: MultiBoxPrior (anchors),
MultiBoxTarget (training targets) and MultiBoxDetection (decoding + NMS), as
src/operator/contrib/multibox_*.cc compute them on the CPU.

They are MXNet legacy operators: float32 only, and their backward writes zeros.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.vision._detection_util import (HOST_LOOP, device, float_tuple, greedy_keep, host,
                              intersection, require_float32, zero_grads)
from gpunda.ops.registry import OpDef, Param, register

_F32 = np.float32


def _err(op, msg):
    return GpundaError(f"Operator {op}: {msg}")


# ----------------------------------------------------------------------------
# MultiBoxPrior


def _prior_params(p):
    op = "_contrib_MultiBoxPrior"
    sizes, ratios = float_tuple(p.sizes), float_tuple(p.ratios)
    steps, offsets = float_tuple(p.steps), float_tuple(p.offsets)
    if not sizes or not ratios:
        raise _err(op, f"sizes={sizes} and ratios={ratios} must not be empty")
    if len(steps) != 2:
        raise _err(op, f"steps={steps} must have 2 elements (step_y, step_x)")
    if len(offsets) != 2 or not all(0 <= o <= 1 for o in offsets):
        raise _err(op, f"offsets={offsets} must be 2 values in [0, 1] (y, x)")
    if steps[0] * steps[1] < 0:
        raise _err(op, f"steps={steps}: must specify both step_y and step_x")
    return sizes, ratios, steps, offsets


def _multibox_prior(xp, p, data):
    op = "_contrib_MultiBoxPrior"
    if data.ndim < 4:
        raise _err(op, f"data must be 4-D (batch, channel, y, x), got shape {tuple(data.shape)}")
    require_float32(op, [data], ["data"])
    sizes, ratios, steps, offsets = _prior_params(p)
    height, width = data.shape[2], data.shape[3]
    if steps[0] <= 0 or steps[1] <= 0:
        steps = (_F32(1) / _F32(height), _F32(1) / _F32(width))
    step_y, step_x = _F32(steps[0]), _F32(steps[1])
    # the anchors of one location in MXNet's order: every size with the first ratio, then
    # every other ratio with the first size; float32 arithmetic as MXNet's
    pairs = [(s, ratios[0]) for s in sizes] + [(sizes[0], r) for r in ratios[1:]]
    size = np.array([s for s, _ in pairs], dtype=_F32)
    root = np.sqrt(np.array([r for _, r in pairs], dtype=_F32))
    half_w = size * _F32(height) / _F32(width) * root / _F32(2)
    half_h = size / root / _F32(2)
    cy = (xp.arange(height, dtype=_F32) + _F32(offsets[0])) * step_y
    cx = (xp.arange(width, dtype=_F32) + _F32(offsets[1])) * step_x
    cy = xp.broadcast_to(cy[:, None, None], (height, width, len(pairs)))
    cx = xp.broadcast_to(cx[None, :, None], (height, width, len(pairs)))
    hw = xp.asarray(half_w)
    hh = xp.asarray(half_h)
    out = xp.stack([cx - hw, cy - hh, cx + hw, cy + hh], axis=-1).reshape(1, -1, 4)
    if p.clip:
        out = xp.clip(out, _F32(0), _F32(1))
    return out


def _infer_prior(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), None
    n = len(float_tuple(p.sizes)) + len(float_tuple(p.ratios)) - 1
    return list(in_shapes), [(1, d[2] * d[3] * n, 4)]


register(OpDef(
    "_contrib_MultiBoxPrior", _multibox_prior,
    params=[Param("sizes", "float_or_tuple", (1.0,), "anchor sizes (fractions of the image)"),
            Param("ratios", "float_or_tuple", (1.0,), "anchor aspect ratios"),
            Param("clip", "bool", False, "clip the anchors to [0, 1]"),
            Param("steps", "float_or_tuple", (-1.0, -1.0),
                  "anchor step (y, x); -1: one feature-map cell"),
            Param("offsets", "float_or_tuple", (0.5, 0.5), "anchor center offsets (y, x)")],
    gradient=zero_grads, save=("inputs",), infer_shape=_infer_prior, family="detection",
    doc="SSD prior (anchor) boxes for every cell of data's (height, width): "
        "len(sizes) + len(ratios) - 1 corner boxes per cell, shape (1, H*W*n, 4). The "
        "gradient is zero, as in MXNet."))


# ----------------------------------------------------------------------------
# MultiBoxTarget


def _valid_labels(op, labels):
    """Per batch, the number of ground truths before the first row with class -1, from
    host ``labels``."""
    lab = labels
    pad = lab[:, :, 0] == -1
    first = np.where(pad.any(axis=1), pad.argmax(axis=1), lab.shape[1])
    for b, f in enumerate(first):
        if f < lab.shape[1] and not (lab[b, f, 1:5] == -1).all():
            raise _err(op, f"label row {f} of batch {b} has class -1 but coordinates "
                           f"{lab[b, f, 1:5].tolist()}; a padding row must be all -1")
    return first


def _loc_targets(xp, anchors, gt, variances):
    """SSD's encoding of matched ground truths ``gt`` (..., 4) against ``anchors`` (..., 4),
    in float32 as MXNet's AssignLocTargets."""
    aw = anchors[..., 2] - anchors[..., 0]
    ah = anchors[..., 3] - anchors[..., 1]
    ax = (anchors[..., 0] + anchors[..., 2]) * _F32(0.5)
    ay = (anchors[..., 1] + anchors[..., 3]) * _F32(0.5)
    gw = gt[..., 2] - gt[..., 0]
    gh = gt[..., 3] - gt[..., 1]
    gx = (gt[..., 0] + gt[..., 2]) * _F32(0.5)
    gy = (gt[..., 1] + gt[..., 3]) * _F32(0.5)
    vx, vy, vw, vh = (_F32(v) for v in variances)
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.stack([(gx - ax) / aw / vx, (gy - ay) / ah / vy,
                         xp.log(gw / aw) / vw, xp.log(gh / ah) / vh], axis=-1)


def _match_anchors(xp, iou, n_valid):
    """MXNet's two-stage matching on overlaps ``iou`` (B, A, L): first the greedy
    best-pair-first bipartite matching of ground truths to anchors, then each unmatched
    anchor's best ground truth. Returns (bipartite-matched (B, A), best gt (B, A),
    its overlap (B, A))."""
    b, a, lab = iou.shape
    gts = xp.arange(lab)
    gt_ok = gts[None, :] < xp.asarray(n_valid)[:, None]            # (B, L)
    neg = xp.asarray(-np.inf, dtype=iou.dtype)
    masked = xp.where(gt_ok[:, None, :], iou, neg)
    matched = xp.zeros((b, a), dtype=bool)
    gt_used = ~gt_ok
    match_gt = xp.full((b, a), -1, dtype=np.int64)
    match_iou = xp.full((b, a), -1, dtype=iou.dtype)
    batch = xp.arange(b)
    anchors = xp.arange(a)
    for _ in range(int(max(n_valid)) if len(n_valid) else 0):
        free = xp.where(matched[:, :, None] | gt_used[:, None, :], neg, masked)
        flat = free.reshape(b, -1)
        pos = xp.argmax(flat, axis=1)                 # first maximum, anchor-major as MXNet
        best = flat[batch, pos]
        take = best > _F32(1e-6)
        if not bool(host(xp, take.any())):
            break
        j, k = pos // lab, pos % lab
        hit = take[:, None] & (anchors[None, :] == j[:, None])
        matched |= hit
        gt_used |= take[:, None] & (gts[None, :] == k[:, None])
        match_gt = xp.where(hit, k[:, None], match_gt)
        match_iou = xp.where(hit, best[:, None], match_iou)
    best_gt = xp.argmax(masked, axis=2)
    best_iou = xp.max(masked, axis=2)
    return matched, xp.where(matched, match_gt, best_gt), xp.where(matched, match_iou, best_iou)


def _multibox_target(xp, p, anchor, label, cls_pred):
    op = "_contrib_MultiBoxTarget"
    if anchor.ndim != 3 or anchor.shape[0] != 1 or anchor.shape[2] != 4 or anchor.shape[1] < 1:
        raise _err(op, f"anchor must have shape (1, num_anchors, 4), got {tuple(anchor.shape)}")
    if label.ndim != 3 or label.shape[1] < 1 or label.shape[2] < 5:
        raise _err(op, f"label must have shape (batch, num_labels, >= 5), got "
                       f"{tuple(label.shape)}")
    if cls_pred.ndim != 3 or cls_pred.shape[2] != anchor.shape[1]:
        raise _err(op, f"cls_pred must have shape (batch, num_classes, {anchor.shape[1]}), "
                       f"got {tuple(cls_pred.shape)}")
    require_float32(op, [anchor, label, cls_pred], ["anchor", "label", "cls_pred"])
    variances = float_tuple(p.variances)
    if len(variances) != 4:
        raise _err(op, f"variances={variances} must have 4 elements")
    b, lab = label.shape[0], label.shape[1]
    a = anchor.shape[1]
    anchors = anchor.reshape(a, 4)
    loc = xp.zeros((b, a, 4), dtype=_F32)
    mask = xp.zeros((b, a, 4), dtype=_F32)
    cls = xp.full((b, a), _F32(p.ignore_label), dtype=_F32)
    n_valid = _valid_labels(op, host(xp, label))
    if not n_valid.any():
        return loc.reshape(b, -1), mask.reshape(b, -1), cls
    # overlaps (B, A, L) with MXNet's safe division (0 for an empty union)
    an = anchors[None, :, None, :]
    gt = label[:, None, :, 1:5]
    iw = xp.maximum(_F32(0), xp.minimum(an[..., 2], gt[..., 2]) - xp.maximum(an[..., 0], gt[..., 0]))
    ih = xp.maximum(_F32(0), xp.minimum(an[..., 3], gt[..., 3]) - xp.maximum(an[..., 1], gt[..., 1]))
    inter = iw * ih
    union = (an[..., 2] - an[..., 0]) * (an[..., 3] - an[..., 1]) + \
        (gt[..., 2] - gt[..., 0]) * (gt[..., 3] - gt[..., 1]) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = xp.where(union == 0, _F32(0), inter / union)
    matched, match_gt, match_iou = _match_anchors(xp, iou, n_valid)
    positive = matched
    if p.overlap_threshold > 0:
        positive = positive | (match_iou > _F32(p.overlap_threshold))
    has_gt = xp.asarray(n_valid > 0)[:, None]
    positive = positive & has_gt
    if p.negative_mining_ratio > 0:
        negative = _mine_negatives(xp, p, op, cls_pred, positive, match_iou, has_gt)
    else:
        negative = ~positive & has_gt
    batch = xp.arange(b)[:, None]
    gt_rows = label[batch, xp.maximum(match_gt, 0)]                    # (B, A, width)
    targets = _loc_targets(xp, anchors[None], gt_rows[..., 1:5], variances)
    loc = xp.where(positive[..., None], targets, _F32(0)).astype(_F32)
    mask = xp.broadcast_to(positive[..., None], (b, a, 4)).astype(_F32)
    cls = xp.where(positive, gt_rows[..., 0] + _F32(1), cls)
    cls = xp.where(negative, _F32(0), cls)
    return loc.reshape(b, -1), mask.reshape(b, -1), cls.astype(_F32, copy=False)


def _mine_negatives(xp, p, op, cls_pred, positive, match_iou, has_gt):
    """Hard negatives: per batch, the int(num_positive * ratio) candidates (not positive,
    overlap below negative_mining_thresh) with the lowest background probability."""
    if not p.negative_mining_thresh > 0:
        raise _err(op, f"negative_mining_thresh={p.negative_mining_thresh} must be > 0 "
                       f"when negative mining is on")
    a = positive.shape[1]
    n_pos = host(xp, positive.sum(axis=1))
    n_neg = (n_pos.astype(_F32) * _F32(p.negative_mining_ratio)).astype(np.int64)
    n_neg = np.minimum(n_neg, a - n_pos)
    n_neg = np.where(host(xp, has_gt[:, 0]), n_neg, 0)
    cand = ~positive & (match_iou < _F32(p.negative_mining_thresh)) & has_gt
    n_cand = host(xp, cand.sum(axis=1))
    short = np.flatnonzero((n_neg > 0) & (n_cand < n_neg))
    if short.size:
        i = int(short[0])
        raise _err(op, f"batch {i} has {int(n_cand[i])} negative candidates, fewer than the "
                       f"{int(n_neg[i])} negative mining asks for")
    top = xp.max(cls_pred, axis=1, keepdims=True)
    e = xp.exp(cls_pred - top)
    prob = xp.exp(cls_pred[:, 0] - top[:, 0]) / e.sum(axis=1)           # (B, A) background
    key = xp.where(cand, prob, xp.asarray(np.inf, dtype=prob.dtype))
    order = xp.argsort(key, axis=1, kind="stable")
    rank = xp.empty_like(order)
    rank[xp.arange(order.shape[0])[:, None], order] = xp.arange(a)[None, :]
    return cand & (rank < xp.asarray(n_neg)[:, None])


def _infer_target(p, in_shapes):
    anchor, label = in_shapes[0], in_shapes[1]
    if anchor is None or label is None:
        return list(in_shapes), None
    loc = (label[0], int(np.prod(anchor)))
    return list(in_shapes), [loc, loc, (label[0], anchor[1])]


register(OpDef(
    "_contrib_MultiBoxTarget", _multibox_target, inputs=("anchor", "label", "cls_pred"),
    params=[Param("overlap_threshold", "float", 0.5, "overlap above which an anchor is positive"),
            Param("ignore_label", "float", -1.0, "class target of ignored anchors"),
            Param("negative_mining_ratio", "float", -1.0,
                  "most negatives per positive; -1: every other anchor is negative"),
            Param("negative_mining_thresh", "float", 0.5, "overlap below which an anchor may "
                                                          "be a mined negative"),
            Param("minimum_negative_samples", "int", 0, "minimum negatives (unused by "
                                                        "MXNet's CPU kernel)"),
            Param("variances", "float_or_tuple", (0.1, 0.1, 0.2, 0.2),
                  "scales of the encoded (x, y, w, h) offsets")],
    num_outputs=3, output_names=["loc_target", "loc_mask", "cls_target"],
    gradient=zero_grads, save=("inputs",), infer_shape=_infer_target, capture=HOST_LOOP,
    family="detection",
    doc="SSD training targets: matches anchors (1, A, 4) to labels (B, L, 5+) (class, "
        "corners; rows of -1 pad) and returns the encoded box targets (B, A*4), their mask "
        "(B, A*4) and the class targets (B, A) (class + 1, 0 background, ignore_label). The "
        "gradient is zero, as in MXNet."))


# ----------------------------------------------------------------------------
# MultiBoxDetection


def _decode(xp, anchors, loc, variances, clip):
    """MXNet's TransformLocations: loc (B, A, 4) against corner anchors (A, 4), float32."""
    aw = anchors[:, 2] - anchors[:, 0]
    ah = anchors[:, 3] - anchors[:, 1]
    ax = (anchors[:, 0] + anchors[:, 2]) / _F32(2)
    ay = (anchors[:, 1] + anchors[:, 3]) / _F32(2)
    vx, vy, vw, vh = (_F32(v) for v in variances)
    ox = loc[..., 0] * vx * aw + ax
    oy = loc[..., 1] * vy * ah + ay
    ow = xp.exp(loc[..., 2] * vw) * aw / _F32(2)
    oh = xp.exp(loc[..., 3] * vh) * ah / _F32(2)
    box = xp.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=-1)
    return xp.clip(box, _F32(0), _F32(1)) if clip else box


def _detection_nms(xp, p, rows):
    """MXNet's NMS of one batch's sorted detections ``rows`` (n, 6): the class of each
    suppressed row becomes -1."""
    n = rows.shape[0]
    box = rows[:, 2:6]
    area = (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])
    cls = rows[:, 0]
    thresh = _F32(p.nms_threshold)

    def suppress(r, c):
        inter = intersection(xp, box[r], box[c])
        union = area[r][:, None] + area[c][None, :]
        union -= inter
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = xp.where(union <= 0, _F32(0), inter / union)
        hit = iou >= thresh
        if not p.force_suppress:
            hit &= cls[r][:, None] == cls[c][None, :]
        return hit

    keep = np.zeros(n, dtype=bool)
    keep[greedy_keep(xp, n, suppress)] = True
    return xp.where(device(xp, keep), cls, _F32(-1))


def _multibox_detection(xp, p, cls_prob, loc_pred, anchor):
    op = "_contrib_MultiBoxDetection"
    if cls_prob.ndim != 3 or loc_pred.ndim != 2 or anchor.ndim != 3:
        raise _err(op, f"expects cls_prob (B, C, A), loc_pred (B, A*4) and anchor (1, A, 4), "
                       f"got {tuple(cls_prob.shape)}, {tuple(loc_pred.shape)}, "
                       f"{tuple(anchor.shape)}")
    b, c, a = cls_prob.shape
    if anchor.shape[1] != a or anchor.shape[2] != 4 or loc_pred.shape[1] != 4 * a or a < 1:
        raise _err(op, f"number of anchors mismatch: cls_prob {tuple(cls_prob.shape)}, "
                       f"loc_pred {tuple(loc_pred.shape)}, anchor {tuple(anchor.shape)}")
    require_float32(op, [cls_prob, loc_pred, anchor], ["cls_prob", "loc_pred", "anchor"])
    variances = float_tuple(p.variances)
    if len(variances) != 4:
        raise _err(op, f"variances={variances} must have 4 elements")
    # best non-background class (the first maximum), background when below threshold
    if c > 1:
        fg = cls_prob[:, 1:, :]
        score = xp.max(fg, axis=1)
        cid = xp.argmax(fg, axis=1) + 1
        cid = xp.where(score > _F32(-1), cid, 0)
        score = xp.maximum(score, _F32(-1))
    else:
        score = xp.full((b, a), -1, dtype=_F32)
        cid = xp.zeros((b, a), dtype=np.int64)
    cid = xp.where(score < _F32(p.threshold), 0, cid)
    box = _decode(xp, anchor.reshape(a, 4), loc_pred.reshape(b, a, 4), variances, p.clip)
    rows = xp.concatenate([(cid - 1).astype(_F32)[..., None], score[..., None], box], axis=-1)
    out = xp.full((b, a, 6), -1, dtype=_F32)
    valid = cid > 0
    counts = host(xp, valid.sum(axis=1))
    # valid detections first, in anchor order (a stable partition)
    packed = xp.argsort(~valid, axis=1, kind="stable")
    nms_on = 0 < p.nms_threshold <= 1
    for bi in range(b):
        n = int(counts[bi])
        if n == 0:
            continue
        det = rows[bi][packed[bi, :n]]
        if nms_on:
            order = xp.argsort(-det[:, 1], kind="stable")
            keep = n if p.nms_topk <= 0 else min(n, p.nms_topk)
            top = det[order[:keep]]
            top[:, 0] = _detection_nms(xp, p, top)
            # rows past nms_topk keep their unsorted detection with class -1 (as MXNet)
            rest = det[keep:].copy()
            rest[:, 0] = _F32(-1)
            det = xp.concatenate([top, rest], axis=0)
        out[bi, :n] = det
    return out


def _infer_detection(p, in_shapes):
    cls_prob, anchor = in_shapes[0], in_shapes[2]
    if cls_prob is None or anchor is None:
        return list(in_shapes), None
    return list(in_shapes), [(cls_prob[0], anchor[1], 6)]


register(OpDef(
    "_contrib_MultiBoxDetection", _multibox_detection,
    inputs=("cls_prob", "loc_pred", "anchor"),
    params=[Param("clip", "bool", True, "clip the boxes to [0, 1]"),
            Param("threshold", "float", 0.01, "lowest score of a detection"),
            Param("background_id", "int", 0, "background class (MXNet's CPU kernel always "
                                             "takes class 0)"),
            Param("nms_threshold", "float", 0.5, "IoU at or above which NMS suppresses"),
            Param("force_suppress", "bool", False, "suppress across classes too"),
            Param("variances", "float_or_tuple", (0.1, 0.1, 0.2, 0.2),
                  "scales of the encoded (x, y, w, h) offsets"),
            Param("nms_topk", "int", -1, "NMS over the nms_topk best detections; -1: all")],
    gradient=zero_grads, save=("inputs",), infer_shape=_infer_detection, capture=HOST_LOOP,
    family="detection",
    doc="SSD detections (B, A, 6) of [class, score, xmin, ymin, xmax, ymax] from class "
        "probabilities (B, C, A), box offsets (B, A*4) and anchors (1, A, 4): sorted by "
        "score with suppressed rows' class -1, and -1 rows for anchors without a "
        "detection. The gradient is zero, as in MXNet."))
