"""Correlation (FlowNet's correlation layer), MXNet 1.9.1 semantics.

For every output pixel (i, j) and displacement (dy, dx) of the neighbourhood grid,
the output is the mean over a kernel_size x kernel_size patch and all channels of
``data1[y1 + h, x1 + w] * data2[y1 + dy + h, x1 + dx + w]`` (or ``|a - b|`` when
``is_multiply=False``), with ``y1 = i * stride1 + max_displacement`` in the
zero-padded maps. The loop runs over displacements (top_channels of them); each
step works on whole (batch, C, H, W) slabs, so memory stays that of the inputs.
The two hidden outputs are MXNet's tmp1/tmp2: the padded inputs in NHWC layout.
"""
from __future__ import annotations

import math

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops._util import not_differentiable, require_same_dtype
from gpunda.ops.registry import OpDef, Param, register

_PARAMS = [
    Param("kernel_size", "int", 1, "patch size; must be odd"),
    Param("max_displacement", "int", 1, "largest displacement compared"),
    Param("stride1", "int", 1, "stride over data1"),
    Param("stride2", "int", 1, "stride of the displacements within the neighbourhood"),
    Param("pad_size", "int", 0, "zero padding of both inputs"),
    Param("is_multiply", "bool", True, "multiply (True) or absolute difference (False)"),
]


def _check(p):
    op = "Correlation"
    for name in ("kernel_size", "stride1", "stride2"):
        if getattr(p, name) < 1:
            raise GpundaError(f"Operator {op}: {name}={getattr(p, name)} must be >= 1")
    for name in ("max_displacement", "pad_size"):
        if getattr(p, name) < 0:
            raise GpundaError(f"Operator {op}: {name}={getattr(p, name)} must be >= 0")


def _geometry(p, shape):
    """(top_channels, top_height, top_width, grid_radius) for an NCHW input shape."""
    if len(shape) != 4:
        raise GpundaError(f"Operator Correlation: data must be a 4-D (batch, C, H, W) tensor, "
                          f"got shape {tuple(shape)}")
    border = p.max_displacement + (p.kernel_size - 1) // 2
    ph, pw = shape[2] + 2 * p.pad_size, shape[3] + 2 * p.pad_size
    th = math.ceil((ph - 2 * border) / p.stride1)
    tw = math.ceil((pw - 2 * border) / p.stride1)
    if th < 1 or tw < 1:
        raise GpundaError(
            f"Operator Correlation: cannot be done with input shape {tuple(shape)}, "
            f"kernel_size={p.kernel_size}, max_displacement={p.max_displacement}, "
            f"pad_size={p.pad_size}: the neighbourhood and kernel don't fit in the padded map "
            f"({ph}x{pw})")
    radius = p.max_displacement // p.stride2
    return (2 * radius + 1) ** 2, th, tw, radius


def _displacements(p, radius):
    width = 2 * radius + 1
    for ch in range(width * width):
        yield ch, (ch // width - radius) * p.stride2, (ch % width - radius) * p.stride2


def _prepare(xp, p, data1, data2):
    require_same_dtype("Correlation", ("data1", "data2"), data1, data2)
    if tuple(data1.shape) != tuple(data2.shape):
        raise GpundaError(f"Operator Correlation: data1 and data2 must have the same shape, got "
                          f"{tuple(data1.shape)} and {tuple(data2.shape)}")
    geo = _geometry(p, data1.shape)
    # MXNet checks this when it runs, after shape inference
    if p.kernel_size % 2 == 0:
        raise GpundaError(f"Operator Correlation: kernel_size={p.kernel_size} must be an odd "
                          f"number")
    # float16 accumulates in float32, as the rounding of one final cast is all MXNet shows
    acc = np.float32 if data1.dtype == np.float16 else data1.dtype
    q = p.pad_size
    widths = ((0, 0), (0, 0), (q, q), (q, q))
    a = xp.pad(data1.astype(acc, copy=False), widths)
    b = xp.pad(data2.astype(acc, copy=False), widths)
    return geo, a, b


def _region(p, th, tw, a, b, dy, dx):
    """The slabs of padded data1/data2 that displacement (dy, dx) reads."""
    md, k = p.max_displacement, p.kernel_size
    rows, cols = (th - 1) * p.stride1 + k, (tw - 1) * p.stride1 + k
    ar = a[:, :, md:md + rows, md:md + cols]
    br = b[:, :, md + dy:md + dy + rows, md + dx:md + dx + cols]
    return ar, br


def _correlation(xp, p, data1, data2):
    (nch, th, tw, radius), a, b = _prepare(xp, p, data1, data2)
    n, c = data1.shape[:2]
    k, s = p.kernel_size, p.stride1
    out = xp.zeros((n, nch, th, tw), dtype=a.dtype)
    for ch, dy, dx in _displacements(p, radius):
        ar, br = _region(p, th, tw, a, b, dy, dx)
        m = (ar * br).sum(axis=1) if p.is_multiply else xp.abs(ar - br).sum(axis=1)
        acc = out[:, ch]
        for h in range(k):
            for w in range(k):
                acc += m[:, h:h + (th - 1) * s + 1:s, w:w + (tw - 1) * s + 1:s]
    out /= k * k * c
    dt = data1.dtype
    tmp1 = xp.ascontiguousarray(xp.moveaxis(a, 1, 3)).astype(dt, copy=False)
    tmp2 = xp.ascontiguousarray(xp.moveaxis(b, 1, 3)).astype(dt, copy=False)
    return out.astype(dt, copy=False), tmp1, tmp2


def _correlation_grad(xp, p, og, data1, data2):
    """Gradients wrt data1 and data2; gradient that lands in the padding is dropped."""
    (nch, th, tw, radius), a, b = _prepare(xp, p, data1, data2)
    n, c, hgt, wid = data1.shape
    k, s, q = p.kernel_size, p.stride1, p.pad_size
    og = og.astype(a.dtype, copy=False) / (k * k * c)
    da, db = xp.zeros_like(a), xp.zeros_like(b)
    rows, cols = (th - 1) * s + k, (tw - 1) * s + k
    for ch, dy, dx in _displacements(p, radius):
        ar, br = _region(p, th, tw, a, b, dy, dx)
        # the output gradient spread back over every patch position that fed it
        gm = xp.zeros((n, rows, cols), dtype=a.dtype)
        for h in range(k):
            for w in range(k):
                gm[:, h:h + (th - 1) * s + 1:s, w:w + (tw - 1) * s + 1:s] += og[:, ch]
        gm = gm[:, None]
        dar, dbr = _region(p, th, tw, da, db, dy, dx)
        if p.is_multiply:
            dar += gm * br
            dbr += gm * ar
        else:
            sign = xp.where(ar >= br, 1.0, -1.0).astype(a.dtype, copy=False)
            dar += gm * sign
            dbr -= gm * sign
    dt = data1.dtype
    return (da[:, :, q:q + hgt, q:q + wid].astype(dt), db[:, :, q:q + hgt, q:q + wid].astype(dt))


def _infer_shape(p, in_shapes):
    d = next((s for s in in_shapes if s is not None), None)
    if d is None:
        return list(in_shapes), None
    nch, th, tw, _ = _geometry(p, d)
    padded = (d[0], d[2] + 2 * p.pad_size, d[3] + 2 * p.pad_size, d[1])
    return [tuple(d), tuple(d)], [(d[0], nch, th, tw), padded, padded]


def _kw(p):
    return {name: getattr(p, name) for name in p._given}


register(OpDef(
    "Correlation", _correlation, params=_PARAMS, check=_check, inputs=("data1", "data2"),
    num_outputs=3, num_visible=1, output_names=["output", "tmp1", "tmp2"],
    gradient=lambda F, p, ins, outs, g: list(F._backward_Correlation(g[0], ins[0], ins[1],
                                                                     **_kw(p))),
    save=("inputs",), infer_shape=_infer_shape, family="correlation",
    doc="FlowNet's correlation of two NCHW feature maps over a grid of displacements; "
        "output (batch, (2*(max_displacement//stride2)+1)**2, top_height, top_width)."))
register(OpDef(
    "_backward_Correlation", _correlation_grad, params=_PARAMS, check=_check,
    inputs=("ograd", "data1", "data2"), num_outputs=2,
    gradient=not_differentiable("_backward_Correlation"), save=(), hidden=True,
    family="correlation", doc="Correlation's gradients wrt data1 and data2."))
