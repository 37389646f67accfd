"""Converters: the detection ops (box_nms, box_decode) and ROIAlign."""
from __future__ import annotations

import numpy as np

from gpunda.onnx._registry import register

_INT_MAX = np.iinfo(np.int64).max


def _column(g, x, k, hint="col"):
    """Column ``k`` of the last axis of ``x`` (rank kept)."""
    return g.add("Slice", [x, g.ints([k], hint), g.ints([k + 1], hint), g.ints([-1], "last")])


def _columns(g, x, start, stop):
    return g.add("Slice", [x, g.ints([start], "from"), g.ints([stop], "to"),
                           g.ints([-1], "last")])


def _half(g, x, dt):
    return g.add("Div", [x, g.scalar(2, dt, "two")])


def _to_center(g, c, dt):
    """Corner boxes (..., 4) -> (x, y, w, h), as gpunda's corner_to_center."""
    lo, hi = _columns(g, c, 0, 2), _columns(g, c, 2, 4)
    return g.add("Concat", [_half(g, g.add("Add", [lo, hi]), dt), g.add("Sub", [hi, lo])],
                 axis=-1)


def _to_corner(g, c, dt):
    """Center boxes (x, y, w, h) -> corners, as gpunda's center_to_corner."""
    xy, half = _columns(g, c, 0, 2), _half(g, _columns(g, c, 2, 4), dt)
    return g.add("Concat", [g.add("Sub", [xy, half]), g.add("Add", [xy, half])], axis=-1)


@register("_contrib_box_nms", "_contrib_box_non_maximum_suppression")
def box_nms(g, node):
    """MXNet's NMS: valid boxes (score > valid_thresh, class not background_id) by
    descending score, the ``topk`` best of them, greedy suppression (within each class
    unless force_suppress); the kept rows come first by descending score, the rest is -1.

    ONNX's NonMaxSuppression gives the kept boxes; the rows are then ordered by score
    here (so the order never depends on how ONNX lists its selection). Classes become
    NMS classes: box ``c`` heads a class slot when it is the first box of its class, and
    a slot scores only the boxes of that class (an N x N score tensor)."""
    p = node.p
    dt = g.in_dtype(node, 0)
    shape = g.in_shape(node, 0)
    k_width = shape[-1]
    data = g.inp(node, 0)
    by_class = p.id_index >= 0 and not p.force_suppress
    if p.topk == 0:             # MXNet: no box is considered, the data comes back as is
        g.add("Identity", [data], [g.out(node)])
        return
    full = g.add("Shape", [data])
    x = g.add("Reshape", [data, g.add("Concat", [
        g.ints([-1], "batch"), g.add("Slice", [full, g.ints([-2], "from"),
                                               g.ints([_INT_MAX], "to")])], axis=0)])
    neg_inf = g.scalar(-np.inf, dt, "neg_inf")
    scores = g.squeeze(_column(g, x, p.score_index % k_width, "score"), [2])   # (B, N)
    valid = g.add("Greater", [scores, g.scalar(np.float32(p.valid_thresh), dt, "valid")])
    if p.id_index >= 0:
        ids = g.squeeze(_column(g, x, p.id_index % k_width, "id"), [2])
        bg = g.add("Equal", [ids, g.scalar(p.background_id, dt, "background")])
        valid = g.add("And", [valid, g.add("Not", [bg])])
    n_boxes = g.add("Gather", [g.add("Shape", [x]), g.ints([1], "n")], axis=0)   # [N]
    if p.topk > 0:              # only the topk best valid boxes take part
        ranked = g.add("Where", [valid, scores, neg_inf])
        k = g.add("Min", [n_boxes, g.ints([p.topk], "topk")])
        _, best = g.add("TopK", [ranked, k], 2, axis=1, largest=1, sorted=1)
        zeros = g.add("ConstantOfShape", [g.add("Shape", [scores])], value=g.helper.make_tensor(
            "zero", g.onnx_dtype(np.int64), [1], [0]))
        ones = g.add("ConstantOfShape", [g.add("Shape", [best])], value=g.helper.make_tensor(
            "one", g.onnx_dtype(np.int64), [1], [1]))
        chosen = g.add("ScatterElements", [zeros, best, ones], axis=1)
        valid = g.add("And", [valid, g.add("Cast", [chosen], to=g.onnx_dtype(bool))])
    nms_scores = g.add("Cast", [g.add("Where", [valid, scores, neg_inf])],
                       to=g.onnx_dtype(np.float32))
    if by_class:
        # MXNet compares classes as integers (truncated ids)
        cls = g.add("Cast", [ids], to=g.onnx_dtype(np.int64))
        same = g.add("Equal", [g.unsqueeze(cls, [2]), g.unsqueeze(cls, [1])])  # (B, c, i)
        first = g.add("ArgMax", [g.add("Cast", [same], to=g.onnx_dtype(np.int32))], axis=2,
                      keepdims=0)                                 # first box of c's class
        pos = g.add("Range", [g.scalar(0, np.int64), g.squeeze(n_boxes, [0]),
                              g.scalar(1, np.int64)])
        heads = g.unsqueeze(g.add("Equal", [first, pos]), [2])      # (B, c, 1)
        member = g.add("And", [same, heads])
        class_scores = g.add("Where", [member, g.unsqueeze(nms_scores, [1]),
                                       g.scalar(-np.inf, np.float32, "neg_inf32")])
    else:
        class_scores = g.unsqueeze(nms_scores, [1])                 # (B, 1, N)
    boxes = g.add("Cast", [_columns(g, x, p.coord_start, p.coord_start + 4)],
                  to=g.onnx_dtype(np.float32))
    # every box scoring above float32's lowest is a candidate (invalid ones are -inf)
    selected = g.add("NonMaxSuppression", [
        boxes, class_scores, g.ints([np.iinfo(np.int32).max], "max_out"),
        g.scalar(np.float32(p.overlap_thresh), np.float32, "iou"),
        g.scalar(np.finfo(np.float32).min, np.float32, "min_score")],
        center_point_box=0 if p.in_format == "corner" else 1)     # (S, 3): batch, class, box
    where = g.add("Gather", [selected, g.ints([0, 2], "batch_box")], axis=1)
    zeros = g.add("ConstantOfShape", [g.add("Shape", [scores])], value=g.helper.make_tensor(
        "zero", g.onnx_dtype(np.int64), [1], [0]))
    ones = g.add("ConstantOfShape", [g.add("Gather", [g.add("Shape", [selected]),
                                                      g.ints([0], "rows")], axis=0)],
                 value=g.helper.make_tensor("one", g.onnx_dtype(np.int64), [1], [1]))
    keep = g.add("Cast", [g.add("ScatterND", [zeros, where, ones])], to=g.onnx_dtype(bool))
    # kept rows by descending score, ties by position (TopK is stable), the rest after
    _, order = g.add("TopK", [g.add("Where", [keep, scores, neg_inf]), n_boxes], 2, axis=1,
                     largest=1, sorted=1)
    rows = g.add("GatherElements", [x, g.add("Expand", [g.unsqueeze(order, [2]),
                                                        g.add("Shape", [x])])], axis=1)
    kept = g.unsqueeze(g.add("GatherElements", [keep, order], axis=1), [2])
    out = g.add("Where", [kept, rows, g.scalar(-1, dt, "minus_one")])
    if p.in_format != p.out_format:
        # MXNet converts the rows whose first coordinate is not negative
        cs = p.coord_start
        coords = _columns(g, out, cs, cs + 4)
        conv = (_to_center if p.out_format == "center" else _to_corner)(g, coords, dt)
        skip = g.add("Less", [_column(g, coords, 0), g.scalar(0, dt, "zero")])
        parts = [_columns(g, out, 0, cs)] if cs > 0 else []
        parts.append(g.add("Where", [skip, coords, conv]))
        if cs + 4 < k_width:
            parts.append(_columns(g, out, cs + 4, k_width))
        out = g.add("Concat", parts, axis=-1)
    g.add("Reshape", [out, full], [g.out(node)])


@register("_contrib_box_decode")
def box_decode(g, node):
    p = node.p
    dt = g.in_dtype(node, 0)
    data = g.inp(node, 0)
    n = g.in_shape(node, 0)[1]
    # anchors (1, N, 4) (or more rows: the first N are used)
    anchors = g.add("Slice", [g.add("Reshape", [g.inp(node, 1), g.ints([-1, 4])]),
                              g.ints([0], "from"), g.ints([n], "to"), g.ints([0], "axis")])
    if p.format == "corner":
        lo, hi = _columns(g, anchors, 0, 2), _columns(g, anchors, 2, 4)
        a_wh = g.add("Sub", [hi, lo])
        a_xy = g.add("Add", [lo, g.add("Mul", [a_wh, g.scalar(0.5, dt, "half")])])
    else:
        a_xy, a_wh = _columns(g, anchors, 0, 2), _columns(g, anchors, 2, 4)
    std = g.const(np.asarray([np.float32(s) for s in (p.std0, p.std1, p.std2, p.std3)],
                             dtype=dt), hint="std")
    d = g.add("Mul", [data, std])
    xy = g.add("Add", [g.add("Mul", [_columns(g, d, 0, 2), a_wh]), a_xy])
    dwh = _columns(g, d, 2, 4)
    if p.clip > 0:
        dwh = g.add("Min", [dwh, g.scalar(np.float32(p.clip), dt, "clip")])
    half = g.add("Mul", [g.add("Mul", [g.add("Exp", [dwh]), a_wh]),
                         g.scalar(0.5, dt, "half")])
    g.add("Concat", [g.add("Sub", [xy, half]), g.add("Add", [xy, half])], [g.out(node)],
          axis=-1)


@register("_contrib_ROIAlign")
def roi_align(g, node):
    p = node.p
    if p.position_sensitive:
        raise g.unsupported(node, "position_sensitive=True (ONNX's RoiAlign pools every "
                                  "channel in every bin)")
    if p.aligned and g.opset < 16:
        raise g.unsupported(node, f"aligned=True at opset {g.opset} (ONNX's RoiAlign has "
                                  "half-pixel boxes from opset 16)")
    dt = g.in_dtype(node, 0)
    rois = g.inp(node, 1)
    n_batch = g.in_shape(node, 0)[0]
    ph, pw = (int(v) for v in p.pooled_size)
    attrs = dict(mode="avg", output_height=ph, output_width=pw,
                 sampling_ratio=max(int(p.sample_ratio), 0),     # 0: adaptive, as MXNet's -1
                 spatial_scale=float(p.spatial_scale))
    if g.opset >= 16:
        attrs["coordinate_transformation_mode"] = "half_pixel" if p.aligned \
            else "output_half_pixel"
    if g.in_shape(node, 1)[-1] == 4:        # no batch index: every roi reads image 0
        idx = g.add("ConstantOfShape", [g.add("Slice", [
            g.add("Shape", [rois]), g.ints([0], "from"), g.ints([1], "to")])],
            value=g.helper.make_tensor("zero", g.onnx_dtype(np.int64), [1], [0]))
        g.add("RoiAlign", [g.inp(node, 0), rois, idx], [g.out(node)], **attrs)
        return
    # (batch_index, x1, y1, x2, y2): rois whose index is outside the batch give zeros
    idx = g.add("Cast", [g.squeeze(_columns(g, rois, 0, 1), [1])],
                to=g.onnx_dtype(np.int64))
    if 0 in g.varying_in(node, 0):
        last = g.add("Sub", [g.add("Gather", [g.add("Shape", [g.inp(node, 0)]),
                                              g.ints([0], "batch")], axis=0),
                             g.ints([1], "one")])
    else:
        last = g.ints([n_batch - 1], "last")
    inside = g.add("And", [g.add("GreaterOrEqual", [idx, g.ints([0], "zero")]),
                           g.add("LessOrEqual", [idx, last])])
    safe = g.add("Min", [g.add("Max", [idx, g.ints([0], "zero")]), last])
    y = g.add("RoiAlign", [g.inp(node, 0), _columns(g, rois, 1, 5), safe], **attrs)
    g.add("Where", [g.unsqueeze(inside, [1, 2, 3]), y, g.scalar(0, dt, "zero")],
          [g.out(node)])
