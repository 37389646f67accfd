"""``_contrib_DeformablePSROIPooling`` (Deformable R-FCN), MXNet 1.9.1 semantics.

Position-sensitive ROI pooling whose bins move by a learned, per-class offset
``trans`` (roi, 2*num_classes, part_size, part_size), scaled by ``trans_std`` and
the ROI's size. Each output bin averages ``sample_per_part**2`` bilinear samples of
its position-sensitive channel; samples more than half a pixel outside the map
are skipped and the others are clamped onto it. The hidden second output,
``top_count``, is the number of samples each bin averaged.

The whole (roi, output_dim, pooled, pooled, samples) grid is computed at once;
its size is that of the output times sample_per_part**2.

The backward follows MXNet's kernel: the offset gradient is the bilinear slope at
the clamped sample position (MXNet keeps it for samples clamped onto the border,
where the forward does not move), rois get no gradient.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops._util import not_differentiable
from gpunda.ops.registry import OpDef, Param, register

_OP = "_contrib_DeformablePSROIPooling"

_PARAMS = [
    Param("spatial_scale", "float", doc="feature map size / image size"),
    Param("output_dim", "int", doc="output channels"),
    Param("group_size", "int", doc="position-sensitive groups per side"),
    Param("pooled_size", "int", doc="output bins per side"),
    Param("part_size", "int", 0, "offset parts per side (0: pooled_size)"),
    Param("sample_per_part", "int", 1, "samples per bin side"),
    Param("trans_std", "float", 0.0, "scale of the offsets"),
    Param("no_trans", "bool", False, "no offsets input"),
]


def _check(p):
    if not 0.0 <= p.spatial_scale <= 1.0:
        raise GpundaError(f"Operator {_OP}: spatial_scale={p.spatial_scale} must be in [0, 1]")
    if not 0.0 <= p.trans_std <= 1.0:
        raise GpundaError(f"Operator {_OP}: trans_std={p.trans_std} must be in [0, 1]")
    for name in ("output_dim", "group_size", "pooled_size", "sample_per_part"):
        if getattr(p, name) < 1:
            raise GpundaError(f"Operator {_OP}: {name}={getattr(p, name)} must be >= 1")
    if p.part_size < 0:
        raise GpundaError(f"Operator {_OP}: part_size={p.part_size} must be >= 0")


def _round_half_away(xp, v):
    return xp.sign(v) * xp.floor(xp.abs(v) + 0.5)


class _Samples:
    """Sample positions, their channels and validity for every output bin."""

    def __init__(self, xp, p, data, rois, trans):
        n, c, h, w = data.shape
        if rois.ndim != 2 or rois.shape[1] != 5:
            raise GpundaError(f"Operator {_OP}: rois must be (num_rois, 5), got "
                              f"{tuple(rois.shape)}")
        r = rois.shape[0]
        pp, g, s, d = p.pooled_size, p.group_size, p.sample_per_part, p.output_dim
        part = p.part_size or pp
        if c != d * g * g:
            raise GpundaError(f"Operator {_OP}: data has {c} channels, expected output_dim * "
                              f"group_size**2 = {d * g * g}")
        ncls = 1 if p.no_trans else trans.shape[1] // 2
        if not p.no_trans and (trans.ndim != 4 or trans.shape[0] != r or trans.shape[1] % 2
                               or trans.shape[2:] != (part, part) or d % ncls):
            raise GpundaError(f"Operator {_OP}: trans must be (num_rois, 2*num_classes, "
                              f"{part}, {part}) with num_classes dividing output_dim={d}, "
                              f"got {tuple(trans.shape)}")
        dt = data.dtype
        # MXNet keeps spatial_scale and trans_std as float32 parameters
        self.trans_std = float(np.float32(p.trans_std))
        box = _round_half_away(xp, rois[:, 1:].astype(dt, copy=False))
        scale = dt.type(np.float32(p.spatial_scale))
        x0 = box[:, 0] * scale - 0.5
        y0 = box[:, 1] * scale - 0.5
        roi_w = xp.maximum((box[:, 2] + 1) * scale - 0.5 - x0, 0.1)
        roi_h = xp.maximum((box[:, 3] + 1) * scale - 0.5 - y0, 0.1)
        bins = np.arange(pp)
        part_idx = np.floor(bins / pp * part).astype(np.int64)
        grp = np.clip(np.floor(bins * g / pp).astype(np.int64), 0, g - 1)
        cls = np.arange(d) // (d // ncls)
        # offsets per (roi, ctop, ph, pw): trans[r, 2*cls (+1), part_h, part_w] * trans_std
        if p.no_trans:
            tx = ty = xp.zeros((r, d, pp, pp), dtype=dt)
        else:
            pi = xp.asarray(part_idx)
            t = trans.reshape(r, ncls, 2, part, part)[:, xp.asarray(cls)][:, :, :, pi][:, :, :, :, pi]
            tx, ty = t[:, :, 0] * self.trans_std, t[:, :, 1] * self.trans_std
        shape6 = (r, 1, 1, 1, 1, 1)
        sub = np.arange(s)
        bh, bw = roi_h / pp, roi_w / pp
        ws = (xp.asarray(bins, dtype=dt)[None, None, None, :, None, None] * bw.reshape(shape6)
              + x0.reshape(shape6) + tx[:, :, :, :, None, None] * roi_w.reshape(shape6)
              + xp.asarray(sub, dtype=dt)[None, None, None, None, None, :] *
              (bw / s).reshape(shape6))
        hs = (xp.asarray(bins, dtype=dt)[None, None, :, None, None, None] * bh.reshape(shape6)
              + y0.reshape(shape6) + ty[:, :, :, :, None, None] * roi_h.reshape(shape6)
              + xp.asarray(sub, dtype=dt)[None, None, None, None, :, None] *
              (bh / s).reshape(shape6))
        self.valid = (ws >= -0.5) & (ws <= w - 0.5) & (hs >= -0.5) & (hs <= h - 0.5)
        ws = xp.clip(ws, 0, w - 1)
        hs = xp.clip(hs, 0, h - 1)
        xl, yl = xp.floor(ws), xp.floor(hs)
        self.fx, self.fy = ws - xl, hs - yl
        xl, yl = xl.astype(np.int64), yl.astype(np.int64)
        xh, yh = xp.ceil(ws).astype(np.int64), xp.ceil(hs).astype(np.int64)
        chan = (np.arange(d)[:, None, None] * g + grp[None, :, None]) * g + grp[None, None, :]
        batch = rois[:, 0].astype(np.int64)
        if r and (int(batch.min()) < 0 or int(batch.max()) >= n):
            raise GpundaError(f"Operator {_OP}: rois batch index out of range [0, {n})")
        plane = ((batch.reshape(r, 1, 1, 1) * c + xp.asarray(chan)[None]) * h)[..., None, None]
        self.index = [(plane + yy) * w + xx for yy, xx in ((yl, xl), (yh, xl), (yl, xh),
                                                            (yh, xh))]
        self.count = self.valid.sum(axis=(4, 5)).astype(dt)
        self.roi_w, self.roi_h, self.cls, self.ncls, self.part = roi_w, roi_h, cls, ncls, part
        self.part_idx = part_idx

    def weights(self):
        fx, fy = self.fx, self.fy
        return [(1 - fx) * (1 - fy), (1 - fx) * fy, fx * (1 - fy), fx * fy]


def _pool(xp, p, data, rois, trans=None):
    sm = _Samples(xp, p, data, rois, trans)
    flat = data.reshape(-1)
    total = 0
    for idx, wt in zip(sm.index, sm.weights()):
        total = total + flat[idx] * wt
    total = (total * sm.valid).sum(axis=(4, 5))
    out = xp.where(sm.count > 0, total / xp.maximum(sm.count, 1), 0).astype(data.dtype)
    return out, sm.count


def _pool_grad(xp, p, og, data, rois, trans=None):
    from gpunda.ops.vision.deformable import _add_at
    sm = _Samples(xp, p, data, rois, trans)
    diff = (og / xp.maximum(sm.count, 1))[..., None, None] * sm.valid
    d_data = xp.zeros(data.size, dtype=data.dtype)
    weights = sm.weights()
    for idx, wt in zip(sm.index, weights):
        _add_at(xp, d_data, idx.reshape(-1), (wt * diff).reshape(-1))
    res = [d_data.reshape(data.shape), xp.zeros_like(rois)]
    if not p.no_trans:
        flat = data.reshape(-1)
        u00, u01, u10, u11 = (flat[idx] for idx in sm.index)
        fx, fy = sm.fx, sm.fy
        r, d, pp = og.shape[0], og.shape[1], og.shape[2]
        gx = (u11 * fy + u10 * (1 - fy) - u01 * fy - u00 * (1 - fy)) * diff
        gy = (u11 * fx + u01 * (1 - fx) - u10 * fx - u00 * (1 - fx)) * diff
        gx = gx.sum(axis=(4, 5)) * sm.trans_std * sm.roi_w.reshape(r, 1, 1, 1)
        gy = gy.sum(axis=(4, 5)) * sm.trans_std * sm.roi_h.reshape(r, 1, 1, 1)
        part = sm.part
        # every (ctop, ph, pw) adds into trans[r, 2*cls (+1), part_h, part_w]
        cls = xp.asarray(sm.cls).reshape(1, d, 1, 1)
        ph = xp.asarray(sm.part_idx).reshape(1, 1, pp, 1)
        pw = xp.asarray(sm.part_idx).reshape(1, 1, 1, pp)
        roi = xp.arange(r).reshape(r, 1, 1, 1)
        pos_x = (((roi * sm.ncls + cls) * 2) * part + ph) * part + pw
        d_trans = xp.zeros(trans.size, dtype=trans.dtype)
        _add_at(xp, d_trans, xp.broadcast_to(pos_x, gx.shape).reshape(-1), gx.reshape(-1))
        _add_at(xp, d_trans, xp.broadcast_to(pos_x + part * part, gy.shape).reshape(-1),
                gy.reshape(-1))
        res.append(d_trans.reshape(trans.shape))
    return tuple(res)


def _infer(p, in_shapes):
    rois = in_shapes[1] if len(in_shapes) > 1 else None
    if rois is None:
        return list(in_shapes), None
    out = (rois[0], p.output_dim, p.pooled_size, p.pooled_size)
    return list(in_shapes), [out, out]


def _names(p):
    return ("data", "rois") if p.no_trans else ("data", "rois", "trans")


def _gradient(F, p, ins, outs, og):
    kw = {name: getattr(p, name) for name in p._given}
    grads = list(F._backward_DeformablePSROIPooling(og[0], *ins, **kw))
    grads[1] = None       # MXNet gives rois no gradient
    return grads


register(OpDef(
    _OP, _pool, params=_PARAMS, check=_check, inputs=_names, num_outputs=2, num_visible=1,
    output_names=["output", "top_count"], gradient=_gradient, save=("inputs",),
    no_grad_inputs=("rois",), infer_shape=_infer, family="deformable",
    doc="Deformable position-sensitive ROI pooling (Deformable R-FCN): "
        "(num_rois, output_dim, pooled_size, pooled_size)."))
register(OpDef(
    "_backward_DeformablePSROIPooling", _pool_grad, params=_PARAMS, check=_check,
    inputs=lambda p: ("ograd",) + _names(p), num_outputs=lambda p: len(_names(p)),
    gradient=not_differentiable("_backward__contrib_DeformablePSROIPooling"), save=(), hidden=True,
    family="deformable",
    doc="DeformablePSROIPooling's gradients wrt data, rois (zero) and trans."))
