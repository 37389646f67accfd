"""im2col and col2im as public ops (the unfold/fold pair of MXNet's convolution).

im2col: (N, C, *spatial) -> (N, C * prod(kernel), prod(out_spatial)), channel-major rows
(row c * K + k is channel c at kernel position k). col2im is its adjoint: it sums each
column entry back to the input cell it came from, so each op's gradient is the other.
"""
from __future__ import annotations

import math

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops.nn.conv import _conv_geo
from gpunda.ops.kernels.conv import col2im, conv_out as _conv_out, im2col

_GEO = [Param("kernel", "shape"), Param("stride", "shape", ()), Param("dilate", "shape", ()),
        Param("pad", "shape", ())]


def _im2col_op(xp, p, x):
    kernel, stride, dilate, pad = _conv_geo(p, x.ndim, "im2col")
    cols, _ = im2col(xp, x, kernel, stride, dilate, pad, "im2col")
    # a 1x1 kernel's columns may be a view of the data: an op returns arrays of its own
    return cols.copy() if xp.may_share_memory(cols, x) else cols


def _col2im_op(xp, p, col):
    sp = tuple(p.output_size)
    kernel, stride, dilate, pad = _conv_geo(p, len(sp) + 2, "col2im")
    K = math.prod(kernel)
    out_sp = _conv_out(sp, kernel, stride, dilate, pad, "col2im")
    if col.ndim != 3 or col.shape[1] % K or col.shape[2] != math.prod(out_sp):
        raise GpundaError(f"Operator col2im: input data has shape {tuple(col.shape)}, expected "
                          f"(N, C * {K}, {math.prod(out_sp)}) for output_size={sp}, "
                          f"kernel={kernel}, stride={stride}, dilate={dilate}, pad={pad}")
    N, C = col.shape[0], col.shape[1] // K
    dx = col2im(xp, col, (N, C) + sp, kernel, stride, dilate, pad, out_sp)
    return dx.copy() if dx.base is not None else dx


def _geo_kw(p):
    return dict(kernel=p.kernel, stride=p.stride, dilate=p.dilate, pad=p.pad)


def _infer_im2col(p, s):
    d = s[0]
    if d is None:
        return list(s), None
    kernel, stride, dilate, pad = _conv_geo(p, len(d), "im2col")
    out_sp = _conv_out(d[2:], kernel, stride, dilate, pad, "im2col")
    return list(s), [(d[0], d[1] * math.prod(kernel), math.prod(out_sp))]


def _infer_col2im(p, s):
    d = s[0]
    if d is None:
        return list(s), None
    return list(s), [(d[0], d[1] // math.prod(p.kernel)) + tuple(p.output_size)]


register(OpDef(
    "im2col", _im2col_op, params=_GEO,
    gradient=lambda F, p, i, o, g: [F.col2im(g[0], output_size=i[0].shape[2:], **_geo_kw(p))],
    save=("inputs",), infer_shape=_infer_im2col, family="nn",
    doc="Unfold sliding kernel windows of (N, C, *spatial) data into columns "
        "(N, C * prod(kernel), number of windows)."))
register(OpDef(
    "col2im", _col2im_op, params=[Param("output_size", "shape")] + _GEO,
    gradient=lambda F, p, i, o, g: [F.im2col(g[0], **_geo_kw(p))],
    save=(), infer_shape=_infer_col2im, family="nn",
    doc="Fold columns (N, C * prod(kernel), windows) back into (N, C, *output_size), "
        "summing overlapping windows (the adjoint of im2col)."))
