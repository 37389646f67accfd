"""Faster R-CNN's region proposal ops of MXNet 1.9.1's contrib namespace: Proposal
(one image) and MultiProposal (a batch), as src/operator/contrib/proposal.cc and
multi_proposal.cc compute them on the CPU.

Both are legacy operators: float32 only, backward writes zeros. MXNet mixes float and
double arithmetic in its box transform; the helpers below repeat its roundings so that
the proposals, their order and NMS decisions are MXNet's.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.vision._detection_util import (HOST_LOOP, device, float_tuple, greedy_keep, host,
                              intersection, require_float32, zero_grads)
from gpunda.ops.registry import OpDef, Param, register

_F32, _F64 = np.float32, np.float64


def _err(op, msg):
    return GpundaError(f"Operator {op}: {msg}")


def _base_anchors(stride, ratios, scales):
    """(len(ratios) * len(scales), 4) anchors of one cell, ratios outer (MXNet's
    GenerateAnchors), on the host in MXNet's float/double mix."""
    side = _F32(_F64(stride) - 1.0)
    w = h = _F32(side + _F32(1))
    ctr = _F32(0.5 * (_F64(w) - 1.0))
    rows = []
    for ratio in ratios:
        size_ratio = np.floor(w * h / _F32(ratio))
        for scale in scales:
            scale = _F32(scale)
            new_w = np.floor(np.sqrt(size_ratio) + _F32(0.5)) * scale
            new_h = np.floor(new_w / scale * _F32(ratio) + _F32(0.5)) * scale
            hw, hh = _F32(0.5) * (new_w - _F32(1)), _F32(0.5) * (new_h - _F32(1))
            rows.append([ctr - hw, ctr - hh, ctr + hw, ctr + hh])
    return np.asarray(rows, dtype=_F32)


def _widen(x, v):
    """float32(float64(x) + v): MXNet adds a double constant to a float."""
    return (x.astype(_F64) + v).astype(_F32)


def _transform(xp, anchors, deltas, iou_loss):
    """Predicted corner boxes (B, K, 4) from anchors (K, 4) and deltas (B, K, 4)."""
    if iou_loss:
        return anchors[None] + deltas
    x1, y1, x2, y2 = (anchors[:, i] for i in range(4))
    width = _widen(x2 - x1, 1.0)
    height = _widen(y2 - y1, 1.0)
    ctr_x = (x1.astype(_F64) + 0.5 * (width.astype(_F64) - 1.0)).astype(_F32)
    ctr_y = (y1.astype(_F64) + 0.5 * (height.astype(_F64) - 1.0)).astype(_F32)
    px = deltas[..., 0] * width + ctr_x
    py = deltas[..., 1] * height + ctr_y
    pw = xp.exp(deltas[..., 2]) * width
    ph = xp.exp(deltas[..., 3]) * height
    half_w = 0.5 * (pw.astype(_F64) - 1.0)
    half_h = 0.5 * (ph.astype(_F64) - 1.0)
    return xp.stack([(px.astype(_F64) - half_w).astype(_F32),
                     (py.astype(_F64) - half_h).astype(_F32),
                     (px.astype(_F64) + half_w).astype(_F32),
                     (py.astype(_F64) + half_h).astype(_F32)], axis=-1)


def _check(op, p, cls_prob, bbox_pred, im_info):
    if cls_prob.ndim != 4 or cls_prob.shape[1] % 2:
        raise _err(op, f"cls_prob must be (batch, 2 * num_anchors, height, width), got "
                       f"{tuple(cls_prob.shape)}")
    b, c, h, w = cls_prob.shape
    if tuple(bbox_pred.shape) != (b, 2 * c, h, w):
        raise _err(op, f"bbox_pred must have shape {(b, 2 * c, h, w)}, got "
                       f"{tuple(bbox_pred.shape)}")
    if tuple(im_info.shape) != (b, 3):
        raise _err(op, f"im_info must have shape {(b, 3)}, got {tuple(im_info.shape)}")
    require_float32(op, [cls_prob, bbox_pred, im_info], ["cls_prob", "bbox_pred", "im_info"])
    ratios, scales = float_tuple(p.ratios), float_tuple(p.scales)
    if c // 2 != len(ratios) * len(scales):
        raise _err(op, f"cls_prob has {c // 2} anchors per cell but len(ratios) * "
                       f"len(scales) = {len(ratios) * len(scales)}")
    return ratios, scales


def _nms_one(xp, boxes, thresh, limit):
    """Kept rows (host) of sorted ``boxes`` (n, 4) by MXNet's proposal NMS (pixel areas
    with +1, suppress above ``thresh``), stopping at ``limit`` kept."""
    area = (boxes[:, 2] - boxes[:, 0] + _F32(1)) * (boxes[:, 3] - boxes[:, 1] + _F32(1))
    thresh = _F32(thresh)

    def suppress(r, c):
        inter = intersection(xp, boxes[r], boxes[c], plus=1)
        union = area[r][:, None] + area[c][None, :]
        union -= inter
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.divide(inter, union, out=inter) > thresh

    return greedy_keep(xp, boxes.shape[0], suppress, limit=limit)


def _proposals(xp, p, op, cls_prob, bbox_pred, im_info):
    """(rois (B * post, 5), scores (B * post, 1)) of every image in the batch."""
    ratios, scales = _check(op, p, cls_prob, bbox_pred, im_info)
    b, c, height, width = cls_prob.shape
    a = c // 2
    count = a * height * width
    pre = count if p.rpn_pre_nms_top_n <= 0 else min(p.rpn_pre_nms_top_n, count)
    post = p.rpn_post_nms_top_n
    stride = p.feature_stride
    # anchors and predictions in MXNet's order: cell (h, w) major, anchor minor
    base = device(xp, _base_anchors(stride, ratios, scales))
    sy = (xp.arange(height) * stride).astype(_F32)[:, None, None]
    sx = (xp.arange(width) * stride).astype(_F32)[None, :, None]
    grid = (height, width, a)
    anchors = xp.stack([xp.broadcast_to(base[:, i] + (sx if i % 2 == 0 else sy), grid)
                        for i in range(4)], axis=-1).reshape(count, 4)
    scores = cls_prob[:, a:].transpose(0, 2, 3, 1).reshape(b, count)
    deltas = bbox_pred.reshape(b, a, 4, height, width).transpose(0, 3, 4, 1, 2)
    boxes = _transform(xp, anchors, deltas.reshape(b, count, 4), p.iou_loss)
    im_h, im_w, im_scale = im_info[:, 0], im_info[:, 1], im_info[:, 2]
    boxes = xp.maximum(xp.minimum(boxes, xp.stack([im_w, im_h, im_w, im_h], axis=-1)[:, None]
                                  - _F32(1)), _F32(0))
    # scores of cells in the padding (beyond the real image) become -1
    real = host(xp, (im_info[:, :2] / _F32(stride)).astype(np.int64))
    if (real[:, 0] > height).any() or (real[:, 1] > width).any():
        raise _err(op, f"im_info {host(xp, im_info).tolist()} is larger than the feature map "
                       f"({height}, {width}) times feature_stride={stride}")
    cell_h = xp.broadcast_to(xp.arange(height)[:, None, None], (height, width, a)).reshape(-1)
    cell_w = xp.broadcast_to(xp.arange(width)[None, :, None], (height, width, a)).reshape(-1)
    real_d = device(xp, real)
    padded = (cell_h[None] >= real_d[:, :1]) | (cell_w[None] >= real_d[:, 1:])
    scores = xp.where(padded, _F32(-1), scores)
    # boxes smaller than rpn_min_size (scaled) grow by half of it and score -1
    min_size = (_F32(p.rpn_min_size) * im_scale)[:, None]
    small = ((boxes[..., 2] - boxes[..., 0] + _F32(1)) < min_size) | \
        ((boxes[..., 3] - boxes[..., 1] + _F32(1)) < min_size)
    grow = (min_size / _F32(2))[..., None] * xp.asarray([-1, -1, 1, 1], dtype=_F32)
    boxes = xp.where(small[..., None], boxes + grow, boxes)
    scores = xp.where(small, _F32(-1), scores)
    order = xp.argsort(-scores, axis=1, kind="stable")[:, :pre]
    batch = xp.arange(b)[:, None]
    boxes, scores = boxes[batch, order], scores[batch, order]
    picks = []
    for bi in range(b):
        keep = _nms_one(xp, boxes[bi], p.threshold, min(post, pre))
        # fewer kept than rpn_post_nms_top_n: MXNet repeats them cyclically
        picks.append(keep[np.arange(post) % keep.size] + bi * pre)
    pick = device(xp, np.concatenate(picks))
    flat_boxes = boxes.reshape(b * pre, 4)[pick]
    index = xp.repeat(xp.arange(b, dtype=_F32), post)[:, None]
    rois = xp.concatenate([index, flat_boxes], axis=1)
    return rois, scores.reshape(b * pre)[pick][:, None]


def _proposal(xp, p, cls_prob, bbox_pred, im_info):
    op = "_contrib_Proposal"
    if cls_prob.ndim == 4 and cls_prob.shape[0] != 1:
        raise _err(op, f"cls_prob has batch size {cls_prob.shape[0]}; Proposal takes one "
                       f"image (use MultiProposal for a batch)")
    return _proposals(xp, p, op, cls_prob, bbox_pred, im_info)


def _multi_proposal(xp, p, cls_prob, bbox_pred, im_info):
    return _proposals(xp, p, "_contrib_MultiProposal", cls_prob, bbox_pred, im_info)


_PARAMS = [
    Param("rpn_pre_nms_top_n", "int", 6000, "best-scored boxes kept before NMS"),
    Param("rpn_post_nms_top_n", "int", 300, "boxes kept after NMS (rows of the output)"),
    Param("threshold", "float", 0.7, "NMS IoU above which a box is suppressed"),
    Param("rpn_min_size", "int", 16, "smallest proposal side (times the image scale)"),
    Param("scales", "float_or_tuple", (4.0, 8.0, 16.0, 32.0), "anchor scales"),
    Param("ratios", "float_or_tuple", (0.5, 1.0, 2.0), "anchor aspect ratios"),
    Param("feature_stride", "int", 16, "image pixels per feature-map cell"),
    Param("output_score", "bool", False, "also return the scores"),
    Param("iou_loss", "bool", False, "bbox_pred holds corner offsets (IoU loss)")]


def _infer(per_image):
    def infer(p, in_shapes):
        cls_prob = in_shapes[0]
        if cls_prob is None:
            return list(in_shapes), None
        b, c, h, w = cls_prob
        n = (b if not per_image else 1) * p.rpn_post_nms_top_n
        return [tuple(cls_prob), (b, 2 * c, h, w), (b, 3)], [(n, 5), (n, 1)]
    return infer


_COMMON = dict(
    inputs=("cls_prob", "bbox_pred", "im_info"), params=_PARAMS, num_outputs=2,
    num_visible=lambda p: 2 if p.output_score else 1, output_names=["output", "score"],
    gradient=zero_grads, save=("inputs",), capture=HOST_LOOP, family="detection")

register(OpDef(
    "_contrib_Proposal", _proposal, infer_shape=_infer(True), **_COMMON,
    doc="Region proposals of one image from RPN scores cls_prob (1, 2A, H, W), box deltas "
        "bbox_pred (1, 4A, H, W) and im_info (1, 3) (height, width, scale): decoded "
        "anchors, clipped, filtered, sorted and NMS'd; rois (post, 5) as (0, x1, y1, x2, "
        "y2) and, with output_score, their scores. The gradient is zero, as in MXNet."))
register(OpDef(
    "_contrib_MultiProposal", _multi_proposal, infer_shape=_infer(False), **_COMMON,
    doc="Proposal for a batch: rois (batch * post, 5) whose first column is the image "
        "index. The gradient is zero, as in MXNet."))
