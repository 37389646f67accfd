"""Sampling grids for spatial transformers: GridGenerator (MXNet 1.9.1 semantics).

A grid holds, per output pixel, the source (x, y) in [-1, 1] coordinates: for
'affine' it is theta (N, 2, 3) times the target pixel's normalised (x, y, 1), for
'warp' it is the pixel plus an optical flow, normalised. Both are linear (plus a
constant) in the input, so the gradient is the adjoint map, ``_grid_adjoint``, and
the adjoint's gradient is the linear part again.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops._util import not_differentiable
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops._util import not_real


def _affine_base(xp, h, w, dtype):
    """(3, H*W): normalised x, y and 1 of each target pixel, row-major."""
    k = np.arange(h * w)
    base = np.stack([-1.0 + (k % w) * (2.0 / (w - 1)) if w > 1 else np.full(h * w, -1.0),
                     -1.0 + (k // w) * (2.0 / (h - 1)) if h > 1 else np.full(h * w, -1.0),
                     np.ones(h * w)])
    return xp.asarray(base, dtype=dtype)


def _warp_scale(xp, h, w, dtype):
    return xp.asarray([(w - 1) / 2.0, (h - 1) / 2.0], dtype=dtype).reshape(1, 2, 1, 1)


def _grid_generator(xp, p, data):
    op = "GridGenerator"
    if data.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
        raise not_real(op, "data", data.dtype)
    if p.transform_type == "affine":
        if data.ndim != 2 or data.shape[1] != 6:
            raise GpundaError(f"Operator {op}: affine data must be (batch, 6), got "
                              f"{tuple(data.shape)}")
        h, w = p.target_shape
        base = _affine_base(xp, h, w, data.dtype)
        out = (data.reshape(-1, 2, 3) @ base).reshape(data.shape[0], 2, h, w)
        return out, base
    if data.ndim != 4 or data.shape[1] != 2:
        raise GpundaError(f"Operator {op}: warp data must be a flow (batch, 2, height, width), "
                          f"got {tuple(data.shape)}")
    h, w = data.shape[2:]
    gx = xp.broadcast_to(xp.arange(w, dtype=data.dtype)[None, :], (h, w))
    gy = xp.broadcast_to(xp.arange(h, dtype=data.dtype)[:, None], (h, w))
    base = xp.stack([gx, gy])
    out = (data + base[None]) / _warp_scale(xp, h, w, data.dtype) - 1
    return out, base


def _grid_linear(xp, p, x, adjoint):
    """The linear part of the grid map (``adjoint``: its transpose), on raw arrays."""
    if p.transform_type == "affine":
        h, w = p.target_shape
        base = _affine_base(xp, h, w, x.dtype)
        if adjoint:                                    # (N, 2, H, W) -> (N, 6)
            return (x.reshape(x.shape[0], 2, h * w) @ base.T).reshape(x.shape[0], 6)
        return (x.reshape(-1, 2, 3) @ base).reshape(x.shape[0], 2, h, w)
    return x / _warp_scale(xp, x.shape[2], x.shape[3], x.dtype)


def _grid_adjoint(xp, p, g):
    return _grid_linear(xp, p, g, adjoint=not p.forward)


_PARAMS = [Param("transform_type", "enum", choices=("affine", "warp"),
                 doc="affine: data is (batch, 6) theta; warp: data is a flow"),
           Param("target_shape", "shape", (0, 0), "output (height, width) for affine")]


def _kw(p):
    return {k: getattr(p, k) for k in p._given}


register(OpDef(
    "_grid_adjoint", _grid_adjoint, params=_PARAMS + [Param("forward", "bool", False)],
    gradient=lambda F, p, ins, outs, g: [F._grid_adjoint(g[0], forward=not p.forward,
                                                         **{k: getattr(p, k) for k in
                                                            ("transform_type", "target_shape")})],
    save=(), hidden=True, family="vision",
    doc="GridGenerator's linear map (forward=True) or its transpose (the gradient)."))


def _infer_grid(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), None
    if p.transform_type == "affine":
        h, w = p.target_shape
        return list(in_shapes), [(d[0], 2, h, w), (3, h * w)]
    return list(in_shapes), [tuple(d), (2, d[2], d[3])]


def _check(p):
    if p.transform_type == "affine" and (len(p.target_shape) != 2 or min(p.target_shape) < 1):
        raise GpundaError(f"Operator GridGenerator: target_shape={p.target_shape} must be a "
                          "positive (height, width) for transform_type='affine'")


register(OpDef(
    "GridGenerator", _grid_generator, params=_PARAMS, check=_check, num_outputs=2,
    num_visible=1, output_names=["output", "grid_dst"],
    gradient=lambda F, p, ins, outs, g: [F._grid_adjoint(g[0], **_kw(p))],
    save=(), infer_shape=_infer_grid, family="vision",
    doc="A sampling grid (batch, 2, H, W) in [-1, 1] coordinates from an affine theta "
        "(batch, 6) or an optical flow (batch, 2, H, W), for BilinearSampler."))


# ----------------------------------------------------------------------------
# BilinearSampler and SpatialTransformer


def _corners(xp, data, grid):
    """The four neighbours of every sample: flat data positions (N, 4, Ho, Wo) (0 where
    outside, with weight 0) and weights, plus what the grid gradient needs."""
    n, c, h, w = data.shape
    ys = (grid[:, 1] + 1) * (h - 1) / 2
    xs = (grid[:, 0] + 1) * (w - 1) / 2
    y0, x0 = xp.floor(ys), xp.floor(xs)
    wy, wx = 1 - (ys - y0), 1 - (xs - x0)         # weights of the top/left neighbour
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    pos, inside = [], []
    for dy in (0, 1):
        for dx in (0, 1):
            yy, xx = y0 + dy, x0 + dx
            ok = (yy >= 0) & (yy <= h - 1) & (xx >= 0) & (xx <= w - 1)
            pos.append(xp.where(ok, yy * w + xx, 0))
            inside.append(ok)
    return xp.stack(pos, 1), xp.stack(inside, 1), wy, wx


def _gather_corners(xp, data, pos, inside):
    """(N, C, 4, Ho, Wo): the neighbours' values, zero outside the map."""
    n, c = data.shape[:2]
    flat = data.reshape(n, c, -1)
    got = xp.take_along_axis(flat, pos.reshape(n, 1, -1), axis=2).reshape((n, c) + pos.shape[1:])
    return got * inside[:, None].astype(data.dtype)


def _bilinear_sampler(xp, p, data, grid):
    op = "BilinearSampler"
    if data.ndim != 4 or grid.ndim != 4 or grid.shape[1] != 2 or grid.shape[0] != data.shape[0]:
        raise GpundaError(f"Operator {op}: data must be (batch, C, H, W) and grid (batch, 2, "
                          f"Ho, Wo); got {tuple(data.shape)} and {tuple(grid.shape)}")
    pos, inside, wy, wx = _corners(xp, data, grid)
    v = _gather_corners(xp, data, pos, inside)
    wy, wx = wy[:, None], wx[:, None]
    out = (v[:, :, 0] * wy * wx + v[:, :, 1] * wy * (1 - wx) +
           v[:, :, 2] * (1 - wy) * wx + v[:, :, 3] * (1 - wy) * (1 - wx))
    return out.astype(data.dtype, copy=False), xp.moveaxis(grid, 1, -1).copy()


def _bilinear_sampler_grad(xp, p, og, data, grid):
    """Gradients of data (scattered to the neighbours) and of grid (the weights' slopes)."""
    n, c, h, w = data.shape
    pos, inside, wy, wx = _corners(xp, data, grid)
    v = _gather_corners(xp, data, pos, inside)
    wy4, wx4 = wy[:, None], wx[:, None]
    weights = xp.stack([wy4 * wx4, wy4 * (1 - wx4), (1 - wy4) * wx4, (1 - wy4) * (1 - wx4)], 2)
    contrib = og[:, :, None] * weights * inside[:, None]              # (N, C, 4, Ho, Wo)
    from gpunda.ops.tensor.indexing import scatter_add
    d_data = xp.zeros((n, c, h * w), dtype=og.dtype)
    flat_pos = xp.broadcast_to(pos[:, None], contrib.shape).reshape(n, c, -1)
    rows = (xp.arange(n * c) * (h * w)).reshape(n, c, 1)
    scatter_add(xp, d_data.reshape(-1), (flat_pos + rows).reshape(-1), contrib.reshape(-1))
    tl, tr, bl, br = v[:, :, 0], v[:, :, 1], v[:, :, 2], v[:, :, 3]
    mix = tl - tr - bl + br
    gy = -(og * (tr - br + mix * wx4)).sum(axis=1)
    gx = -(og * (bl - br + mix * wy4)).sum(axis=1)
    d_grid = xp.stack([gx * (w - 1) / 2, gy * (h - 1) / 2], 1)
    return d_data.reshape(data.shape), d_grid.astype(grid.dtype, copy=False)


def _infer_sampler(p, in_shapes):
    d, g = in_shapes[0], in_shapes[1] if len(in_shapes) > 1 else None
    if d is None or g is None:
        return list(in_shapes), None
    return list(in_shapes), [(d[0], d[1], g[2], g[3]), (g[0], g[2], g[3], 2)]


register(OpDef(
    "BilinearSampler", _bilinear_sampler, inputs=("data", "grid"), num_outputs=2,
    num_visible=1, output_names=["output", "tmp"],
    params=[Param("cudnn_off", "bool", None, "accepted for MXNet compatibility")],
    gradient=lambda F, p, ins, outs, g: list(F._backward_BilinearSampler(g[0], ins[0], ins[1])),
    save=("inputs",), infer_shape=_infer_sampler, family="vision",
    doc="Bilinear sampling of NCHW data at a grid (batch, 2, Ho, Wo) of (x, y) in [-1, 1]; "
        "neighbours outside the map count as zero."))
register(OpDef(
    "_backward_BilinearSampler", _bilinear_sampler_grad, inputs=("ograd", "data", "grid"),
    num_outputs=2, gradient=not_differentiable("_backward_BilinearSampler"), save=(), hidden=True,
    family="vision",
    doc="BilinearSampler's gradients wrt data and grid."))


def _spatial_transformer(xp, p, data, loc):
    if p.transform_type != "affine" or p.sampler_type != "bilinear":
        raise GpundaError("Operator SpatialTransformer: only transform_type='affine' and "
                          "sampler_type='bilinear' exist in MXNet")
    gp = _grid_params(p)
    grid, base = _grid_generator(xp, gp, loc)
    out, _ = _bilinear_sampler(xp, None, data, grid)
    n = loc.shape[0]
    return out, base, grid.reshape(n, 2, -1)


def _grid_params(p):
    from gpunda.ops.registry import get_op
    return get_op("GridGenerator").parse_params(
        {"transform_type": "affine", "target_shape": p.target_shape})


def _g_spatial_transformer(F, p, ins, outs, g):
    h, w = p.target_shape
    grid = F.reshape(outs[2], shape=(outs[2].shape[0], 2, h, w))
    d_data, d_grid = F._backward_BilinearSampler(g[0], ins[0], grid)
    return [d_data, F._grid_adjoint(d_grid, transform_type="affine", target_shape=(h, w))]


def _infer_st(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), None
    h, w = p.target_shape
    return list(in_shapes), [(d[0], d[1], h, w), (3, h * w), (d[0], 2, h * w)]


register(OpDef(
    "SpatialTransformer", _spatial_transformer, inputs=("data", "loc"), num_outputs=3,
    num_visible=1, output_names=["output", "grid_dst", "grid_src"],
    params=[Param("target_shape", "shape", (0, 0), "output (height, width)"),
            Param("transform_type", "enum", choices=("affine",)),
            Param("sampler_type", "enum", choices=("bilinear",)),
            Param("cudnn_off", "bool", None, "accepted for MXNet compatibility")],
    check=lambda p: _check(_grid_params(p)),
    gradient=_g_spatial_transformer, save=("inputs", "outputs"), infer_shape=_infer_st,
    family="vision",
    doc="An affine spatial transformer: GridGenerator(loc) then BilinearSampler(data, grid)."))
