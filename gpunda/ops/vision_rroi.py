"""contrib.RROIAlign: ROI Align over rotated regions (MXNet 1.9.1,
src/operator/contrib/rroi_align.cc).

A rotated grid is not separable into row and column maps (NOTE [Separable sampling] in
vision.py), so each sample gathers its four neighbours directly: per chunk of ROIs, the
sample positions of every bin are one array, the gathers are fancy indexing over all
channels, and the bin average a sum over the sample axes. MXNet registers no gradient
for RROIAlign, so backward through it raises, as in MXNet.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.vision._detection_util import require_real
from gpunda.ops._util import require_same_dtype
from gpunda.ops.registry import OpDef, Param, register

_OP = "_contrib_RROIAlign"
_CHUNK = 1 << 22       # gathered values per ROI chunk: bounds the temporary memory


def _err(msg):
    return GpundaError(f"Operator {_OP}: {msg}")


def _sample_grid(xp, rois, p, height, width, dtype):
    """For ROIs (R, 6): the flat positions (R, PH, PW, G, G, 4), bilinear weights (same
    shape; zero for padded or out-of-map samples) and samples per bin (R,)."""
    ph_n, pw_n = p.pooled_size
    one = dtype.type(1)
    sc = dtype.type(np.float32(p.spatial_scale))
    cx, cy = rois[:, 1] * sc, rois[:, 2] * sc
    rw = xp.maximum(rois[:, 3] * sc, one)
    rh = xp.maximum(rois[:, 4] * sc, one)
    theta = (rois[:, 5].astype(np.float64) * np.pi / 180.0).astype(dtype)
    bin_h, bin_w = rh / dtype.type(ph_n), rw / dtype.type(pw_n)
    if p.sampling_ratio > 0:
        gh = xp.full(rois.shape[0], p.sampling_ratio, dtype=np.int64)
        gw = gh
    else:
        gh = xp.ceil(rh / dtype.type(ph_n)).astype(np.int64)
        gw = xp.ceil(rw / dtype.type(pw_n)).astype(np.int64)
    g = max(int(max(gh.max(), gw.max())) if rois.shape[0] else 1, 1)
    i = xp.arange(g, dtype=dtype)
    col = lambda v: v[:, None, None, None, None]           # noqa: E731 - (R,) -> grid axes
    ph = xp.arange(ph_n, dtype=dtype)[None, :, None, None, None]
    pw = xp.arange(pw_n, dtype=dtype)[None, None, :, None, None]
    yy = col(-rh / 2) + ph * col(bin_h) + (i[None, None, None, :, None] + dtype.type(0.5)) * \
        col(bin_h) / col(gh.astype(dtype))
    xx = col(-rw / 2) + pw * col(bin_w) + (i[None, None, None, None, :] + dtype.type(0.5)) * \
        col(bin_w) / col(gw.astype(dtype))
    cos, sin = col(xp.cos(theta)), col(xp.sin(theta))
    x = xx * cos + yy * sin + col(cx)
    y = yy * cos - xx * sin + col(cy)
    live = (i[None, None, None, :, None] < col(gh)) & (i[None, None, None, None, :] < col(gw))
    live = live & ~((y < -1) | (y > height) | (x < -1) | (x > width))
    y, x = xp.maximum(y, dtype.type(0)), xp.maximum(x, dtype.type(0))
    y_lo, x_lo = y.astype(np.int64), x.astype(np.int64)
    y_top, x_top = y_lo >= height - 1, x_lo >= width - 1
    y_lo = xp.where(y_top, height - 1, y_lo)
    x_lo = xp.where(x_top, width - 1, x_lo)
    y_hi = xp.where(y_top, height - 1, y_lo + 1)
    x_hi = xp.where(x_top, width - 1, x_lo + 1)
    ly = xp.where(y_top, dtype.type(0), y - y_lo.astype(dtype))
    lx = xp.where(x_top, dtype.type(0), x - x_lo.astype(dtype))
    hy, hx = one - ly, one - lx
    zero = dtype.type(0)
    w = xp.stack([hy * hx, hy * lx, ly * hx, ly * lx], axis=-1)
    w = xp.where(live[..., None], w, zero)
    pos = xp.stack([y_lo * width + x_lo, y_lo * width + x_hi,
                    y_hi * width + x_lo, y_hi * width + x_hi], axis=-1)
    # samples that are padding or off the map (or NaN) still need a readable position
    pos = xp.clip(pos, 0, height * width - 1)
    return pos, w, (gh * gw).astype(dtype)


def _rroi_align(xp, p, data, rois):
    if data.ndim != 4:
        raise _err(f"data must be 4-D (batch, channel, height, width), got shape "
                   f"{tuple(data.shape)}")
    if rois.ndim != 2 or rois.shape[1] != 6:
        raise _err(f"rois must have shape (num_rois, 6) (batch_index, x, y, w, h, theta), "
                   f"got {tuple(rois.shape)}")
    require_same_dtype(_OP, ("data", "rois"), data, rois)
    require_real(_OP, [data], ["data"])
    n, c, height, width = data.shape
    dtype = np.dtype(data.dtype)
    ph_n, pw_n = p.pooled_size
    r = rois.shape[0]
    out = xp.zeros((r, c, ph_n, pw_n), dtype=dtype)
    if r == 0:
        return out
    batch = rois[:, 0].astype(np.int64)
    # MXNet reads out of bounds for a bad batch index; gpunda gives that ROI zeros
    ok = (batch >= 0) & (batch < n)
    planes = data.reshape(n, c, height * width)
    per_roi = c * ph_n * pw_n * 4 * max(1, int(_grid_size(xp, rois, p)))
    step = max(1, _CHUNK // per_roi)
    for s in range(0, r, step):
        part = rois[s:s + step]
        pos, w, count = _sample_grid(xp, part, p, height, width, dtype)
        k = part.shape[0]
        src = planes[xp.clip(batch[s:s + step], 0, n - 1)]               # (k, C, H*W)
        vals = xp.take_along_axis(src, pos.reshape(k, 1, -1), axis=2)     # (k, C, S)
        vals = vals.reshape((k, c) + pos.shape[1:]) * w[:, None]
        acc = vals.sum(axis=(4, 5, 6)) / count[:, None, None, None]
        out[s:s + step] = xp.where(ok[s:s + step, None, None, None], acc, dtype.type(0))
    return out


def _grid_size(xp, rois, p):
    """Largest samples per bin (G * G) over the ROIs, for sizing chunks."""
    if p.sampling_ratio > 0:
        return p.sampling_ratio ** 2
    sc = np.float32(p.spatial_scale)
    side = xp.maximum(rois[:, 3:5] * sc, 1) / xp.asarray(p.pooled_size[::-1], dtype=rois.dtype)
    return float(xp.ceil(side).max()) ** 2


def _check(p):
    if len(p.pooled_size) != 2 or min(p.pooled_size) < 1:
        raise _err(f"pooled_size={p.pooled_size} must be two positive integers (h, w)")
    if not 0.0 <= p.spatial_scale <= 1.0:
        raise _err(f"spatial_scale={p.spatial_scale} must be in [0, 1]")


def _infer(p, in_shapes):
    data, rois = in_shapes
    if data is None or rois is None:
        return list(in_shapes), None
    return list(in_shapes), [(rois[0], data[1]) + tuple(p.pooled_size)]


def _no_backward(F, p, i, o, g):
    # MXNet registers a gradient whose kernel fails ("RROIAlign: Backward is not
    # supported"): binding for gradients works, running the backward raises
    raise GpundaError(f"Operator {_OP}: backward is not supported (as in MXNet)")


register(OpDef(
    _OP, _rroi_align, inputs=("data", "rois"), output_names=["output"],
    params=[Param("pooled_size", "shape", doc="output (height, width) of each ROI"),
            Param("spatial_scale", "float", doc="feature map size over image size, in [0, 1]"),
            Param("sampling_ratio", "int", -1, "samples per bin and axis; adaptive when <= 0")],
    check=_check, save=(), infer_shape=_infer, family="vision", gradient=_no_backward,
    capture="sizes its sample grid from the ROIs on the host",
    doc="Rotated ROI Align: each bin of each rotated region (batch_index, center_x, "
        "center_y, width, height, theta in degrees) is the average of bilinear samples "
        "on a regular grid rotated by theta. No gradient, as in MXNet."))
