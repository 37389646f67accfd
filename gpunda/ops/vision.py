"""Region and resampling ops of detection/vision models: ROIPooling, contrib.ROIAlign
and contrib.AdaptiveAvgPooling2D (MXNet 1.9.1 semantics).

# NOTE [Separable sampling]
A bilinear sample at (y, x) weighs pixel (h, w) by wy(h) * wx(w), and an average over
a rectangle weighs it by ay(h) * ax(w). So ROIAlign and adaptive pooling are, per
region, ``Ay @ plane @ Ax.T`` with small dense matrices Ay (out rows x H) and Ax
(out cols x W) that already hold the sample grid and its averaging. Both the forward
and its adjoint (the gradient wrt data) are then batched matmuls, with no loop over
regions, channels or samples. ROIs pick their image through a one-hot over the batch
folded into Ay, so the matmul reads the whole batch at once (N is small in detection).
"""
from __future__ import annotations


import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.vision._roi_cells import apply_maps_cells
from gpunda.ops.registry import OpDef, Param, register


def _err(op, msg):
    return GpundaError(f"Operator {op}: {msg}")


def _check_rois(op, data, rois, cols=(5,)):
    if data.ndim != 4:
        raise _err(op, f"data must be 4-D (batch, channel, height, width), got shape "
                       f"{tuple(data.shape)}")
    if rois.ndim != 2 or rois.shape[1] not in cols:
        want = " or ".join(str(c) for c in cols)
        raise _err(op, f"rois must have shape (num_rois, {want}), got {tuple(rois.shape)}")


# ----------------------------------------------------------------------------
# ROIPooling: max over integer bins of each ROI


def _roi_pool_bins(xp, rois, p, height, width):
    """Per ROI and bin, start and end (exclusive) rows/cols as MXNet rounds them."""
    ph_n, pw_n = p.pooled_size
    # std::round rounds halves away from zero
    scaled = rois[:, 1:5].astype(np.float64) * p.spatial_scale
    box = (xp.sign(scaled) * xp.floor(xp.abs(scaled) + 0.5)).astype(np.int64)
    x1, y1, x2, y2 = box[:, 0], box[:, 1], box[:, 2], box[:, 3]
    roi_h = xp.maximum(y2 - y1 + 1, 1).astype(rois.dtype)
    roi_w = xp.maximum(x2 - x1 + 1, 1).astype(rois.dtype)

    def edges(start, size, n_bins, limit):
        b = (size / rois.dtype.type(n_bins))[:, None]
        k = xp.arange(n_bins, dtype=rois.dtype)[None, :]
        lo = xp.floor(k * b).astype(np.int64) + start[:, None]
        hi = xp.ceil((k + 1) * b).astype(np.int64) + start[:, None]
        return xp.clip(lo, 0, limit), xp.clip(hi, 0, limit)

    hs, he = edges(y1, roi_h, ph_n, height)
    ws, we = edges(x1, roi_w, pw_n, width)
    return hs, he, ws, we


def _roi_pooling(xp, p, data, rois):
    op = "ROIPooling"
    _check_rois(op, data, rois)
    n, c, height, width = data.shape
    r = rois.shape[0]
    ph_n, pw_n = p.pooled_size
    hs, he, ws, we = _roi_pool_bins(xp, rois, p, height, width)
    batch = rois[:, 0].astype(np.int64)
    valid_roi = (batch >= 0) & (batch < n)
    kh = max(int((he - hs).max()) if r else 1, 1)
    kw = max(int((we - ws).max()) if r else 1, 1)
    hidx = hs[:, :, None] + xp.arange(kh)[None, None, :]          # (R, PH, KH)
    widx = ws[:, :, None] + xp.arange(kw)[None, None, :]          # (R, PW, KW)
    hok = hidx < he[:, :, None]
    wok = widx < we[:, :, None]
    hidx = xp.minimum(hidx, height - 1)
    widx = xp.minimum(widx, width - 1)
    b = xp.clip(batch, 0, n - 1)
    # (R, PH, KH, PW, KW, C): every bin's window, padded to the largest one
    win = data[b[:, None, None, None, None], :, hidx[:, :, :, None, None],
               widx[:, None, None, :, :]]
    ok = hok[:, :, :, None, None] & wok[:, None, None, :, :]
    lowest = xp.asarray(-np.finfo(data.dtype).max if data.dtype.kind == "f" else
                        np.iinfo(data.dtype).min, dtype=data.dtype)
    win = xp.where(ok[..., None], win, lowest)
    win = win.transpose(0, 5, 1, 3, 2, 4).reshape(r, c, ph_n, pw_n, kh * kw)
    pos = xp.argmax(win, axis=-1)                                # first max, row-major
    out = xp.take_along_axis(win, pos[..., None], axis=-1)[..., 0]
    ri = xp.arange(r)[:, None, None, None]
    qh = hidx[ri, xp.arange(ph_n)[None, None, :, None], pos // kw]
    qw = widx[ri, xp.arange(pw_n)[None, None, None, :], pos % kw]
    empty = ~(ok.any(axis=(2, 4)) & valid_roi[:, None, None])[:, None, :, :]
    out = xp.where(empty, xp.zeros((), data.dtype), out)
    maxidx = xp.where(empty, -1, qh * width + qw).astype(data.dtype)
    return out, maxidx


def _roi_pooling_grad(xp, p, og, maxidx, rois, data):
    """Adds each bin's gradient to the pixel its max came from."""
    n, c, height, width = data.shape
    dx = xp.zeros(data.shape, dtype=og.dtype)
    idx = maxidx.astype(np.int64)
    keep = idx >= 0
    batch = xp.clip(rois[:, 0].astype(np.int64), 0, n - 1)
    flat = (batch[:, None, None, None] * c + xp.arange(c)[None, :, None, None]) \
        * (height * width) + xp.maximum(idx, 0)
    vals = xp.where(keep, og, xp.zeros((), og.dtype))
    from gpunda.ops.tensor.indexing import scatter_add
    scatter_add(xp, dx.reshape(-1), flat.reshape(-1), vals.reshape(-1))
    return dx


def _g_roi_pooling(F, p, ins, outs, ograds):
    return [F._backward_ROIPooling(ograds[0], outs[1], ins[1], ins[0], **_kw(p)), None]


def _roi_pooling_gather(xp, p, gg, maxidx, rois):
    """The adjoint of ``_backward_ROIPooling`` in the head gradient: read each bin's pixel."""
    r, c, ph_n, pw_n = maxidx.shape
    n = gg.shape[0]
    idx = maxidx.astype(np.int64)
    batch = xp.clip(rois[:, 0].astype(np.int64), 0, n - 1)
    planes = gg.reshape(n, c, -1)[batch]                         # (R, C, H*W)
    got = xp.take_along_axis(planes, xp.maximum(idx, 0).reshape(r, c, -1), axis=-1)
    return xp.where(idx >= 0, got.reshape(idx.shape), xp.zeros((), gg.dtype))


def _kw(p):
    return {k: getattr(p, k) for k in p._given}


def _infer_roi(channels_out):
    def infer(p, in_shapes):
        data, rois = in_shapes[0], in_shapes[1]
        if data is None or rois is None:
            return list(in_shapes), None
        out = (rois[0], channels_out(p, data[1])) + tuple(p.pooled_size)
        return list(in_shapes), [out] * 2
    return infer


_ROI_POOL_PARAMS = [
    Param("pooled_size", "shape", doc="output (height, width) of each ROI"),
    Param("spatial_scale", "float", doc="feature map size over image size")]


def _check_pool(p):
    if len(p.pooled_size) != 2 or min(p.pooled_size) < 1:
        raise GpundaError(f"Operator ROIPooling: pooled_size={p.pooled_size} must be two "
                          "positive integers (h, w)")


register(OpDef(
    "ROIPooling", _roi_pooling, params=_ROI_POOL_PARAMS, check=_check_pool,
    inputs=("data", "rois"), num_outputs=2, num_visible=1, output_names=["output", "maxidx"],
    gradient=_g_roi_pooling, save=("inputs", "outputs"), no_grad_inputs=("rois",),
    infer_shape=_infer_roi(lambda p, c: c), family="vision",
    doc="Max pooling over each region of interest (batch_index, x1, y1, x2, y2) of an "
        "NCHW feature map into a (num_rois, C, pooled_h, pooled_w) output."))
register(OpDef(
    "_backward_ROIPooling", _roi_pooling_grad, params=_ROI_POOL_PARAMS,
    inputs=("ograd", "maxidx", "rois", "data"), save=("inputs",), hidden=True,
    no_grad_inputs=("maxidx", "rois", "data"),
    gradient=lambda F, p, ins, outs, g: [
        F._roi_pooling_gather(g[0], ins[1], ins[2], **_kw(p)), None, None, None],
    family="vision", doc="ROIPooling's gradient wrt data."))
register(OpDef(
    "_roi_pooling_gather", _roi_pooling_gather, params=_ROI_POOL_PARAMS,
    inputs=("data", "maxidx", "rois"), save=("inputs",), hidden=True,
    no_grad_inputs=("maxidx", "rois"),
    gradient=lambda F, p, ins, outs, g: [
        F._backward_ROIPooling(g[0], ins[1], ins[2], ins[0], **_kw(p)), None, None],
    family="vision", doc="The values of ROIPooling's max positions (its double backward)."))


# ----------------------------------------------------------------------------
# ROIAlign: averages of bilinear samples on a regular grid in each bin


def _axis_weights(xp, start, bin_size, grid, n_bins, size, dtype):
    """(R, n_bins, size): the averaged bilinear weights of one axis (NOTE [Separable
    sampling]); ``grid`` (R,) holds each ROI's samples per bin on this axis."""
    r = start.shape[0]
    g_max = max(int(grid.max()) if r else 1, 1)
    k = xp.arange(n_bins, dtype=dtype)[None, :, None]
    i = xp.arange(g_max, dtype=dtype)[None, None, :]
    gr = grid.astype(dtype)[:, None, None]
    pos = start[:, None, None] + k * bin_size[:, None, None] + \
        (i + dtype.type(0.5)) * bin_size[:, None, None] / gr          # (R, bins, G)
    live = (i < gr) & (pos >= -1.0) & (pos <= size)
    pos = xp.maximum(pos, dtype.type(0))
    low = xp.floor(pos).astype(np.int64)
    top = low >= size - 1
    low = xp.where(top, size - 1, low)
    high = xp.where(top, size - 1, low + 1)
    pos = xp.where(top, low.astype(dtype), pos)
    frac = pos - low.astype(dtype)
    cells = xp.arange(size)[None, None, None, :]
    wgt = ((low[..., None] == cells) * (1 - frac)[..., None] +
           (high[..., None] == cells) * frac[..., None]) * live[..., None]
    return wgt.sum(axis=2).astype(dtype)                           # (R, bins, size)


def _roi_align_maps(xp, p, data, rois, fold=True):
    """The per-ROI matrices Ay (R, PH, N*H), Ax (R, PW, W); with ``fold`` False, Ay
    (R, PH, H), Ax and the batch index of each ROI."""
    n, c, height, width = data.shape
    dtype = np.dtype(data.dtype)
    ph_n, pw_n = p.pooled_size
    rois = rois.astype(dtype)
    if rois.shape[1] == 5:
        batch = rois[:, 0].astype(np.int64)
        box = rois[:, 1:5]
    else:
        batch = xp.zeros(rois.shape[0], dtype=np.int64)
        box = rois
    offset = dtype.type(0.5) if p.aligned else dtype.type(0)
    sc = dtype.type(p.spatial_scale)
    x1, y1 = box[:, 0] * sc - offset, box[:, 1] * sc - offset
    x2, y2 = box[:, 2] * sc - offset, box[:, 3] * sc - offset
    roi_w, roi_h = x2 - x1, y2 - y1
    if not p.aligned:     # MXNet forces malformed ROIs to 1x1
        roi_w, roi_h = xp.maximum(roi_w, dtype.type(1)), xp.maximum(roi_h, dtype.type(1))
    bh, bw = roi_h / dtype.type(ph_n), roi_w / dtype.type(pw_n)
    if p.sample_ratio > 0:
        gh = xp.full(rois.shape[0], p.sample_ratio, dtype=np.int64)
        gw = gh
    else:
        gh = xp.ceil(roi_h / dtype.type(ph_n)).astype(np.int64)
        gw = xp.ceil(roi_w / dtype.type(pw_n)).astype(np.int64)
    count = xp.maximum(gh * gw, 1).astype(dtype)
    ay = _axis_weights(xp, y1, bh, gh, ph_n, height, dtype)
    ax = _axis_weights(xp, x1, bw, gw, pw_n, width, dtype)
    ay = ay / count[:, None, None]
    if not fold:
        return ay, ax, batch
    return _fold_batch(xp, ay, batch, n), ax


def _fold_batch(xp, ay, batch, n):
    """(R, PH, H) -> (R, PH, N*H): row map of each ROI on the stacked batch, zero for
    ROIs whose batch index is out of range (MXNet outputs zeros for them)."""
    onehot = (batch[:, None] == xp.arange(n)[None, :]).astype(ay.dtype)
    return (onehot[:, None, :, None] * ay[:, :, None, :]).reshape(ay.shape[0], ay.shape[1], -1)


def _apply_maps(xp, data, ay, ax):
    """(R, C, PH, PW) = per ROI ``Ay @ plane @ Ax.T`` over all channels."""
    n, c, height, width = data.shape
    r, ph_n = ay.shape[:2]
    planes = data.transpose(0, 2, 1, 3).reshape(n * height, c * width)
    rows = (ay.reshape(r * ph_n, -1) @ planes).reshape(r, ph_n, c, width)
    return (rows @ xp.swapaxes(ax, 1, 2)[:, None]).transpose(0, 2, 1, 3)


def _apply_maps_adjoint(xp, og, ay, ax, shape):
    """The adjoint of ``_apply_maps`` in data: (R, C, PH, PW) -> ``shape`` (N, C, H, W)."""
    n, c, height, width = shape
    r, ph_n = ay.shape[:2]
    cols = og @ ax[:, None]                                    # (R, C, PH, W)
    cols = cols.transpose(0, 2, 1, 3).reshape(r * ph_n, c * width)
    dx = ay.reshape(r * ph_n, -1).T @ cols                     # (N*H, C*W)
    return dx.reshape(n, height, c, width).transpose(0, 2, 1, 3).copy()


def _pick_channels(xp, full, cidx):
    """Bin (ph, pw) of output channel k reads input channel ``cidx[k, ph, pw]``."""
    ph_n, pw_n = cidx.shape[1:]
    return full[:, xp.asarray(cidx), xp.arange(ph_n)[:, None], xp.arange(pw_n)[None, :]]


def _spread_channels(xp, og, cidx, channels):
    """The adjoint of ``_pick_channels`` (each (channel, bin) is read at most once)."""
    r = og.shape[0]
    ph_n, pw_n = cidx.shape[1:]
    full = xp.zeros((r, channels, ph_n, pw_n), dtype=og.dtype)
    full[:, xp.asarray(cidx), xp.arange(ph_n)[:, None], xp.arange(pw_n)[None, :]] = og
    return full


def _align_channels(p, c):
    """Input channel of each (out channel, bin) for ROIAlign, None unless position-sensitive."""
    if not p.position_sensitive:
        return None
    ph_n, pw_n = p.pooled_size
    k = np.arange(c // (ph_n * pw_n))[:, None, None]
    return k * ph_n * pw_n + np.arange(ph_n)[None, :, None] * pw_n + np.arange(pw_n)[None, None, :]


def _roi_align(xp, p, data, rois):
    op = "_contrib_ROIAlign"
    _check_rois(op, data, rois, cols=(4, 5))
    c = data.shape[1]
    ph_n, pw_n = p.pooled_size
    if p.position_sensitive and c % (ph_n * pw_n):
        raise _err(op, f"position_sensitive needs channels ({c}) divisible by "
                       f"pooled_h * pooled_w ({ph_n * pw_n})")
    ay, ax, batch = _roi_align_maps(xp, p, data, rois, fold=False)
    full = apply_maps_cells(xp, data, ay, ax, batch)
    cidx = _align_channels(p, c)
    return xp.ascontiguousarray(full if cidx is None else _pick_channels(xp, full, cidx))


def _roi_align_grad(xp, p, og, rois, data):
    """The adjoint of ROIAlign in data: spreads each bin's gradient over its samples."""
    ay, ax = _roi_align_maps(xp, p, data, rois)
    og = og.astype(data.dtype)
    cidx = _align_channels(p, data.shape[1])
    if cidx is not None:
        og = _spread_channels(xp, og, cidx, data.shape[1])
    return _apply_maps_adjoint(xp, og, ay, ax, data.shape)


def _g_roi_align(F, p, ins, outs, ograds):
    return [F._backward_ROIAlign(ograds[0], ins[1], ins[0], **_kw(p)), None]


_ROI_ALIGN_PARAMS = [
    Param("pooled_size", "shape", doc="output (height, width) of each ROI"),
    Param("spatial_scale", "float", doc="feature map size over image size"),
    Param("sample_ratio", "int", -1, "samples per bin and axis; adaptive when <= 0"),
    Param("position_sensitive", "bool", False, "position-sensitive pooling (R-FCN)"),
    Param("aligned", "bool", False, "Detectron2's half-pixel-shifted, unclamped boxes")]


def _ps_channels(p, c):
    return c // (p.pooled_size[0] * p.pooled_size[1]) if p.position_sensitive else c


def _infer_align(p, in_shapes):
    shapes, outs = _infer_roi(_ps_channels)(p, in_shapes)
    return shapes, outs[:1] if outs else outs


register(OpDef(
    "_contrib_ROIAlign", _roi_align, params=_ROI_ALIGN_PARAMS,
    inputs=("data", "rois"), gradient=_g_roi_align, save=("inputs",),
    no_grad_inputs=("rois",), infer_shape=_infer_align, family="vision",
    doc="ROI Align (Mask R-CNN): each bin of each region of interest is the average of "
        "bilinear samples on a regular grid; rois are (batch_index, x1, y1, x2, y2) or "
        "(x1, y1, x2, y2). The gradient wrt rois is zero, as in MXNet."))
register(OpDef(
    "_backward_ROIAlign", _roi_align_grad, params=_ROI_ALIGN_PARAMS,
    inputs=("ograd", "rois", "data"), save=("inputs",), hidden=True,
    no_grad_inputs=("rois", "data"),
    gradient=lambda F, p, ins, outs, g: [
        F._contrib_ROIAlign(g[0], ins[1], **_kw(p)), None, None],
    family="vision", doc="ROIAlign's gradient wrt data (linear in ograd: its own gradient "
                         "is ROIAlign again)."))


# ----------------------------------------------------------------------------
# PSROIPooling: position-sensitive average over integer bins (R-FCN)


def _box_average(xp, start, size, n_bins, limit, dtype):
    """(R, n_bins, limit): 1/len over cells floor(start + k*bin) .. ceil(start + (k+1)*bin)-1."""
    b = (size / dtype.type(n_bins))[:, None]
    k = xp.arange(n_bins, dtype=dtype)[None, :]
    lo = xp.clip(xp.floor(k * b + start[:, None]).astype(np.int64), 0, limit)
    hi = xp.clip(xp.ceil((k + 1) * b + start[:, None]).astype(np.int64), 0, limit)
    cells = xp.arange(limit)[None, None, :]
    inside = (cells >= lo[..., None]) & (cells < hi[..., None])
    return (inside / xp.maximum(hi - lo, 1)[..., None]).astype(dtype)


def _psroi_maps(xp, p, data, rois):
    n, c, height, width = data.shape
    dtype = np.dtype(data.dtype)
    rounded = xp.sign(rois[:, 1:5]) * xp.floor(xp.abs(rois[:, 1:5]) + 0.5)   # C round()
    box = rounded.astype(dtype)
    sc = dtype.type(p.spatial_scale)
    x1, y1 = box[:, 0] * sc, box[:, 1] * sc
    x2, y2 = (box[:, 2] + 1) * sc, (box[:, 3] + 1) * sc
    tiny = dtype.type(0.1)
    roi_w, roi_h = xp.maximum(x2 - x1, tiny), xp.maximum(y2 - y1, tiny)
    ay = _box_average(xp, y1, roi_h, p.pooled_size, height, dtype)
    ax = _box_average(xp, x1, roi_w, p.pooled_size, width, dtype)
    return _fold_batch(xp, ay, rois[:, 0].astype(np.int64), n), ax


def _psroi_channels(p):
    k, g = p.pooled_size, _group(p)
    gi = np.clip(np.floor(np.arange(k) * g / k).astype(np.int64), 0, g - 1)
    top = np.arange(p.output_dim)[:, None, None]
    return (top * g + gi[None, :, None]) * g + gi[None, None, :]


def _group(p):
    return p.group_size if p.group_size > 0 else p.pooled_size


def _check_psroi(data, rois, p):
    op = "_contrib_PSROIPooling"
    _check_rois(op, data, rois)
    g = _group(p)
    if data.shape[1] != p.output_dim * g * g:
        raise _err(op, f"data has {data.shape[1]} channels; output_dim * group_size^2 = "
                       f"{p.output_dim * g * g} expected")


def _psroi_pooling(xp, p, data, rois):
    _check_psroi(data, rois, p)
    wide = data.astype(np.float32) if data.dtype == np.float16 else data
    ay, ax = _psroi_maps(xp, p, wide, rois.astype(wide.dtype))
    out = _pick_channels(xp, _apply_maps(xp, wide, ay, ax), _psroi_channels(p))
    return xp.ascontiguousarray(out.astype(data.dtype, copy=False))


def _psroi_pooling_grad(xp, p, og, rois, data):
    wide = np.float32 if data.dtype == np.float16 else data.dtype
    ay, ax = _psroi_maps(xp, p, data.astype(wide), rois.astype(wide))
    full = _spread_channels(xp, og.astype(wide), _psroi_channels(p), data.shape[1])
    return _apply_maps_adjoint(xp, full, ay, ax, data.shape).astype(data.dtype, copy=False)


_PSROI_PARAMS = [
    Param("spatial_scale", "float", doc="feature map size over image size"),
    Param("output_dim", "int", doc="output channels"),
    Param("pooled_size", "int", doc="output height and width of each ROI"),
    Param("group_size", "int", 0, "position-sensitive groups per axis (0: pooled_size)")]


def _infer_psroi(p, in_shapes):
    rois = in_shapes[1] if len(in_shapes) > 1 else None
    if rois is None:
        return list(in_shapes), None
    return list(in_shapes), [(rois[0], p.output_dim, p.pooled_size, p.pooled_size)]


register(OpDef(
    "_contrib_PSROIPooling", _psroi_pooling, params=_PSROI_PARAMS, inputs=("data", "rois"),
    gradient=lambda F, p, ins, outs, g: [
        F._backward_PSROIPooling(g[0], ins[1], ins[0], **_kw(p)), None],
    save=("inputs",), no_grad_inputs=("rois",), infer_shape=_infer_psroi, family="vision",
    doc="Position-sensitive ROI pooling (R-FCN): bin (i, j) of output channel k averages "
        "input channel (k * group + gi) * group + gj over the bin."))
register(OpDef(
    "_backward_PSROIPooling", _psroi_pooling_grad, params=_PSROI_PARAMS,
    inputs=("ograd", "rois", "data"), save=("inputs",), hidden=True,
    no_grad_inputs=("rois", "data"),
    gradient=lambda F, p, ins, outs, g: [
        F._contrib_PSROIPooling(g[0], ins[1], **_kw(p)), None, None],
    family="vision", doc="PSROIPooling's gradient wrt data (its own gradient is "
                         "PSROIPooling again)."))
