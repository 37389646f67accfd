"""Deformable convolutions (MXNet 1.9.1 ``_contrib_DeformableConvolution`` and
``_contrib_ModulatedDeformableConvolution``), 2-D, NCHW.

Each kernel tap (i, j) of output pixel (ho, wo) reads the input at
``(ho*stride - pad + i*dilate + dy, wo*stride - pad + j*dilate + dx)`` where the
offset (dy, dx) comes from the ``offset`` input (per deformable group, channel
``2*(i*kw + j)`` is dy and the next one dx), bilinearly interpolated. The sampled
columns (im2col, "cols" below: (batch, C, K, L) with K taps and L output pixels) are
multiplied by the weight per group, as Convolution does. The two ops differ in
how they sample (NOTE [Deformable sampling]) and the modulated one scales each tap
by a ``mask`` input.

Columns are built for a few images at a time (``_chunks``), so the largest
intermediate stays near ``_CHUNK_ELEMS`` elements whatever the batch.

# NOTE [Deformable sampling]
DeformableConvolution (v1) samples only where 0 <= y < H and 0 <= x < W; at the
last row/column the fraction is dropped, so the value is the border pixel's (and
the slope there is 0). ModulatedDeformableConvolution (v2, DCNv2) samples where
-1 < y < H and -1 < x < W, treating neighbours outside the map as zeros. Both
backward passes are the exact derivative of those forwards.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops._util import matmul, not_differentiable, require_same_dtype
from gpunda.ops.nn.conv import _CONV_PARAMS, _conv_geo, _conv_out, _check_groups
from gpunda.ops.registry import OpDef, Param, register

_CHUNK_ELEMS = 1 << 23

_DEFORM_PARAMS = [p for p in _CONV_PARAMS if p.name not in ("cudnn_tune", "cudnn_off")] + \
    [Param("num_deformable_group", "int", 1, "number of offset groups over the channels")]
_MODULATED_PARAMS = _DEFORM_PARAMS + [Param("im2col_step", "int", 64,
                                            "accepted; gpunda chunks by memory instead")]


def _names(modulated):
    def names(p):
        base = ["data", "offset"] + (["mask"] if modulated else []) + ["weight"]
        return tuple(base if p.no_bias else base + ["bias"])
    return names


def _geometry(opname, p, data, offset, mask, weight, bias):
    """Validated (kernel, stride, dilate, pad, out_hw) for the inputs of one call."""
    kernel, stride, dilate, pad = _conv_geo(p, data.ndim, opname)
    if len(kernel) != 2:
        raise GpundaError(f"Operator {opname}: only 2-D kernels are supported, got "
                          f"kernel={kernel}")
    n, c = data.shape[:2]
    out_hw = _conv_out(data.shape[2:], kernel, stride, dilate, pad, opname)
    _check_groups(opname, c, p.num_filter, p.num_group)
    dg = p.num_deformable_group
    if dg < 1 or c % dg:
        raise GpundaError(f"Operator {opname}: num_deformable_group={dg} must divide the "
                          f"input channels ({c})")
    k = kernel[0] * kernel[1]
    want = {"offset": (n, 2 * dg * k) + out_hw, "mask": (n, dg * k) + out_hw,
            "weight": (p.num_filter, c // p.num_group) + kernel, "bias": (p.num_filter,)}
    for name, arr in (("offset", offset), ("mask", mask), ("weight", weight), ("bias", bias)):
        if arr is not None and tuple(arr.shape) != want[name]:
            raise GpundaError(f"Operator {opname}: input {name} has shape {tuple(arr.shape)}, "
                              f"expected {want[name]} for data {tuple(data.shape)}")
    return kernel, stride, dilate, pad, out_hw


def _positions(xp, offset, kernel, stride, dilate, pad, out_hw, dg):
    """Sampling rows and columns, each (n, dg, K, L)."""
    kh, kw = kernel
    ho, wo = out_hw
    n = offset.shape[0]
    off = offset.reshape(n, dg, kh * kw, 2, ho * wo)
    taps = np.arange(kh * kw)
    pix = np.arange(ho * wo)
    base_y = (pix // wo * stride[0] - pad[0])[None, :] + (taps // kw * dilate[0])[:, None]
    base_x = (pix % wo * stride[1] - pad[1])[None, :] + (taps % kw * dilate[1])[:, None]
    dt = offset.dtype
    return (off[:, :, :, 0] + xp.asarray(base_y, dtype=dt),
            off[:, :, :, 1] + xp.asarray(base_x, dtype=dt))


class _Bilinear:
    """The four neighbours of every sample point: flat indices into one (H*W) map, the
    weights, and the weights' slopes along y and x (see NOTE [Deformable sampling])."""

    def __init__(self, xp, ys, xs, h, w, modulated, slopes=True):
        if modulated:
            inside = (ys > -1) & (ys < h) & (xs > -1) & (xs < w)
        else:
            inside = (ys >= 0) & (ys < h) & (xs >= 0) & (xs < w)
        y0, x0 = xp.floor(ys), xp.floor(xs)
        fy, fx = ys - y0, xs - x0
        y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
        live_y = live_x = 1
        if modulated:
            y1, x1 = y0 + 1, x0 + 1
        else:       # the border pixel's value, flat: the fraction and the slope vanish
            at_y, at_x = y0 >= h - 1, x0 >= w - 1
            fy, fx = xp.where(at_y, 0, fy), xp.where(at_x, 0, fx)
            live_y, live_x = (~at_y).astype(ys.dtype), (~at_x).astype(ys.dtype)
            y1, x1 = xp.where(at_y, y0, y0 + 1), xp.where(at_x, x0, x0 + 1)
        gy, gx = 1 - fy, 1 - fx
        self.index, self.weight, self.dy, self.dx = [], [], [], []
        mask = inside.astype(ys.dtype)
        for yy, xx, wy, wx, sy, sx in ((y0, x0, gy, gx, -1, -1), (y0, x1, gy, fx, -1, 1),
                                       (y1, x0, fy, gx, 1, -1), (y1, x1, fy, fx, 1, 1)):
            ok = inside & (yy >= 0) & (yy <= h - 1) & (xx >= 0) & (xx <= w - 1)
            self.index.append(xp.where(ok, yy * w + xx, 0))
            okf = ok.astype(ys.dtype)
            self.weight.append(wy * wx * okf)
            if slopes:      # only the backward needs them
                self.dy.append(sy * wx * okf * live_y * mask)
                self.dx.append(sx * wy * okf * live_x * mask)


def _gather(xp, maps, index):
    """maps (n, dg, Cg, H*W), index (n, dg, K, L) -> (n, dg, Cg, K, L)."""
    n, dg, cg, _ = maps.shape
    k, l = index.shape[2:]
    got = xp.take_along_axis(maps, index.reshape(n, dg, 1, k * l), axis=3)
    return got.reshape(n, dg, cg, k, l)


def _chunks(n, per_image):
    step = max(1, _CHUNK_ELEMS // max(per_image, 1))
    return [slice(s, min(n, s + step)) for s in range(0, n, step)]


def _inputs(modulated, p, arrays):
    data, offset = arrays[0], arrays[1]
    mask = arrays[2] if modulated else None
    rest = arrays[3:] if modulated else arrays[2:]
    weight = rest[0]
    bias = None if p.no_bias else rest[1]
    return data, offset, mask, weight, bias


def _sample_cols(xp, data, offset, mask, geo, dg, modulated):
    """The deformable columns (n, dg, Cg, K, L) (forward only)."""
    kernel, stride, dilate, pad, out_hw = geo
    n, c, h, w = data.shape
    ys, xs = _positions(xp, offset, kernel, stride, dilate, pad, out_hw, dg)
    bl = _Bilinear(xp, ys, xs, h, w, modulated, slopes=False)
    maps = data.reshape(n, dg, c // dg, h * w)
    cols = 0
    for idx, wt in zip(bl.index, bl.weight):
        cols = cols + _gather(xp, maps, idx) * wt[:, :, None]
    if mask is not None:
        cols = cols * mask.reshape(n, dg, 1, kernel[0] * kernel[1], -1)
    return cols


def _deformable_conv(modulated):
    opname = "_contrib_ModulatedDeformableConvolution" if modulated else \
        "_contrib_DeformableConvolution"

    def compute(xp, p, *arrays):
        data, offset, mask, weight, bias = _inputs(modulated, p, arrays)
        present = [(nm, a) for nm, a in zip(("data", "offset", "mask", "weight", "bias"),
                                            (data, offset, mask, weight, bias)) if a is not None]
        require_same_dtype(opname, [x[0] for x in present], *[x[1] for x in present])
        geo = _geometry(opname, p, data, offset, mask, weight, bias)
        n, c = data.shape[:2]
        k = geo[0][0] * geo[0][1]
        ho, wo = geo[4]
        g, f = p.num_group, p.num_filter
        wmat = weight.reshape(g, f // g, (c // g) * k)
        out = xp.empty((n, f, ho * wo), dtype=data.dtype)
        for sl in _chunks(n, c * k * ho * wo * 4):
            cols = _sample_cols(xp, data[sl], offset[sl],
                                      None if mask is None else mask[sl], geo,
                                      p.num_deformable_group, modulated)
            cols = cols.reshape(cols.shape[0], g, (c // g) * k, ho * wo)
            out[sl] = matmul(xp, wmat[None], cols).reshape(cols.shape[0], f, ho * wo)
        if bias is not None:
            out += bias.reshape(1, f, 1)
        return out.reshape(n, f, ho, wo)

    def backward(xp, p, og, *arrays):
        data, offset, mask, weight, bias = _inputs(modulated, p, arrays)
        geo = _geometry(opname, p, data, offset, mask, weight, bias)
        n, c, h, w = data.shape
        kh, kw = geo[0]
        k = kh * kw
        ho, wo = geo[4]
        g, f, dg = p.num_group, p.num_filter, p.num_deformable_group
        wmat = weight.reshape(g, f // g, (c // g) * k)
        d_data = xp.zeros((n, dg, (c // dg) * h * w), dtype=data.dtype)
        d_offset = xp.empty((n, dg, k, 2, ho * wo), dtype=data.dtype)
        d_mask = None if mask is None else xp.empty((n, dg, k, ho * wo), dtype=data.dtype)
        d_weight = xp.zeros(wmat.shape, dtype=data.dtype)
        gy = og.reshape(n, g, f // g, ho * wo)
        for sl in _chunks(n, c * k * ho * wo * 4):
            m = None if mask is None else mask[sl]
            b = data[sl].shape[0]
            ys, xs = _positions(xp, offset[sl], *geo[:4], geo[4], dg)
            bl = _Bilinear(xp, ys, xs, h, w, modulated)
            maps = data[sl].reshape(b, dg, c // dg, h * w)
            gs = gy[sl]
            # the columns' gradient needs no columns: W^T @ dy
            d_cols = matmul(xp, xp.swapaxes(wmat, 1, 2)[None], gs)
            d_cols = d_cols.reshape(b, dg, c // dg, k, ho * wo)
            mk = None if m is None else m.reshape(b, dg, k, ho * wo)
            # one gather per neighbour serves the columns (for the weight gradient), the
            # slopes (offsets) and the unmasked samples (mask)
            cols, gy_off, gx_off, g_mask = 0, 0, 0, 0
            for idx, wt, sy, sx in zip(bl.index, bl.weight, bl.dy, bl.dx):
                v = _gather(xp, maps, idx)
                cols = cols + v * wt[:, :, None]
                t = (d_cols * v).sum(axis=2)
                gy_off, gx_off = gy_off + t * sy, gx_off + t * sx
                if mk is not None:
                    g_mask = g_mask + t * wt
            if mk is not None:
                cols = cols * mk[:, :, None]
                gy_off, gx_off = gy_off * mk, gx_off * mk
                d_mask[sl] = g_mask
                d_cols = d_cols * mk[:, :, None]
            d_weight += matmul(xp, gs, xp.swapaxes(cols.reshape(b, g, (c // g) * k, ho * wo),
                                                   2, 3)).sum(axis=0)
            d_offset[sl] = xp.stack([gy_off, gx_off], axis=3)
            _scatter_data(xp, d_data[sl], d_cols, bl, h * w)
        res = [d_data.reshape(data.shape), d_offset.reshape(offset.shape)]
        if mask is not None:
            res.append(d_mask.reshape(mask.shape))
        res.append(d_weight.reshape(weight.shape))
        if bias is not None:
            res.append(og.sum(axis=(0, 2, 3)))
        return tuple(res)

    return opname, compute, backward


def _scatter_data(xp, target, d_cols, bl, hw):
    """Add each column gradient, times its bilinear weight, into the four neighbours."""
    b, dg, cg, k, l = d_cols.shape
    rows = (xp.arange(cg, dtype=np.int64) * hw).reshape(1, 1, cg, 1)
    flat = target.reshape(b, dg, cg * hw)
    for idx, wt in zip(bl.index, bl.weight):
        pos = (idx.reshape(b, dg, 1, k * l) + rows).reshape(b * dg, -1)
        vals = (d_cols * wt[:, :, None]).reshape(b * dg, -1)
        base = (xp.arange(b * dg, dtype=np.int64) * (cg * hw)).reshape(-1, 1)
        _add_at(xp, flat.reshape(-1), (pos + base).reshape(-1), vals.reshape(-1))


def _add_at(xp, flat, index, vals):
    if xp is np:
        flat += np.bincount(index, weights=vals, minlength=flat.size).astype(flat.dtype,
                                                                             copy=False)
    else:
        from gpunda.ops.tensor.indexing import scatter_add
        scatter_add(xp, flat, index, vals)


def _infer(modulated):
    def infer(p, in_shapes):
        data = in_shapes[0]
        shapes = list(in_shapes)
        if data is None:
            return shapes, None
        opname = "_contrib_DeformableConvolution"
        kernel, stride, dilate, pad = _conv_geo(p, len(data), opname)
        out_hw = _conv_out(data[2:], kernel, stride, dilate, pad, opname)
        k = kernel[0] * kernel[1]
        dg = p.num_deformable_group
        shapes[1] = (data[0], 2 * dg * k) + out_hw
        wi = 2
        if modulated:
            shapes[2] = (data[0], dg * k) + out_hw
            wi = 3
        shapes[wi] = (p.num_filter, data[1] // p.num_group) + kernel
        if not p.no_bias:
            shapes[wi + 1] = (p.num_filter,)
        return shapes, [(data[0], p.num_filter) + out_hw]
    return infer


def _register(modulated):
    opname, compute, backward = _deformable_conv(modulated)
    short = opname[len("_contrib_"):]
    grad_name = "_backward_" + short
    names = _names(modulated)
    params = _MODULATED_PARAMS if modulated else _DEFORM_PARAMS

    def gradient(F, p, ins, outs, og):
        kw = {name: getattr(p, name) for name in p._given}
        return list(getattr(F, grad_name)(og[0], *ins, **kw))

    register(OpDef(
        opname, compute, params=params, inputs=names, gradient=gradient, save=("inputs",),
        infer_shape=_infer(modulated), capture="gemm", family="deformable",
        doc=("Modulated deformable convolution (DCNv2): taps sampled at learned offsets and "
             "scaled by a mask." if modulated else
             "Deformable convolution (DCNv1): each kernel tap samples the input at a learned "
             "offset, bilinearly.")))
    register(OpDef(
        grad_name, backward, params=params,
        inputs=lambda p: ("ograd",) + names(p),
        num_outputs=lambda p: len(names(p)), gradient=not_differentiable("_backward_" + opname),
        save=(), hidden=True,
        family="deformable", doc=f"{short}'s gradients wrt all its inputs."))


_register(False)
_register(True)
