"""Sampling grids for spatial transformers: GridGenerator (MXNet 1.9.1 semantics).

A grid holds, per output pixel, the source (x, y) in [-1, 1] coordinates: for
'affine' it is theta (N, 2, 3) times the target pixel's normalised (x, y, 1), for
'warp' it is the pixel plus an optical flow, normalised. Both are linear (plus a
constant) in the input, so the gradient is the adjoint map, ``_grid_adjoint``, and
the adjoint's gradient is the linear part again.
"""
from __future__ import annotations

import numpy as np

from ..base import GpundaError
from .registry import OpDef, Param, register


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
