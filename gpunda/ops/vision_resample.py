"""Whole-map resampling of NCHW data: contrib.BilinearResize2D and
contrib.AdaptiveAvgPooling2D (MXNet 1.9.1 semantics).

Both are linear and separable (NOTE [Separable sampling] in vision.py): the output
plane is ``Ah @ plane @ Aw.T`` with interpolation or averaging matrices that depend
only on the sizes. ``_separable_resample`` applies such a map or its adjoint; the
adjoint of one is the gradient of the other, so gradients of any order are the same
op with ``adjoint`` flipped.
"""
from __future__ import annotations


import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register


def _bilinear_matrix(n_in, n_out, align_corners):
    """(n_out, n_in) weights of MXNet's bilinear resize along one axis (float32 steps)."""
    m = np.zeros((n_out, n_in), dtype=np.float64)
    if n_in == n_out:
        return np.eye(n_in)
    f32 = np.float32
    if n_out > 1:
        scale = f32(n_in - 1) / f32(n_out - 1) if align_corners else f32(n_in) / f32(n_out)
    else:
        scale = f32(0)
    dst = np.arange(n_out, dtype=f32)
    if align_corners:
        src = scale * dst
    else:
        src = np.maximum(scale * (dst + f32(0.5)) - f32(0.5), f32(0))
    low = src.astype(np.int64)
    step = (low < n_in - 1).astype(np.int64)
    lam = (src - low.astype(f32)).astype(np.float64)
    rows = np.arange(n_out)
    np.add.at(m, (rows, low), 1 - lam)
    np.add.at(m, (rows, low + step), lam)
    return m


def _average_matrix(n_in, n_out):
    """(n_out, n_in): row o averages cells floor(o*n_in/n_out) .. ceil((o+1)*n_in/n_out)-1."""
    o = np.arange(n_out)
    start = (o * n_in) // n_out
    end = -((-(o + 1) * n_in) // n_out)
    cells = np.arange(n_in)[None, :]
    inside = (cells >= start[:, None]) & (cells < end[:, None])
    return inside / (end - start)[:, None]


def _matrices(p):
    if p.kind == "bilinear":
        return (_bilinear_matrix(p.in_size[0], p.out_size[0], p.align_corners),
                _bilinear_matrix(p.in_size[1], p.out_size[1], p.align_corners))
    return (_average_matrix(p.in_size[0], p.out_size[0]),
            _average_matrix(p.in_size[1], p.out_size[1]))


def _separable_resample(xp, p, x):
    ah, aw = _matrices(p)
    if p.adjoint:
        ah, aw = ah.T, aw.T
    ah = xp.asarray(ah, dtype=x.dtype)
    aw = xp.asarray(aw, dtype=x.dtype)
    want = p.out_size if not p.adjoint else p.in_size
    have = p.in_size if not p.adjoint else p.out_size
    if tuple(x.shape[2:]) != tuple(have):
        raise GpundaError(f"Operator _separable_resample: input spatial shape "
                          f"{tuple(x.shape[2:])} does not match {tuple(have)}")
    y = xp.matmul(xp.matmul(ah, x), aw.T)
    assert tuple(y.shape[2:]) == tuple(want)
    return y


register(OpDef(
    "_separable_resample", _separable_resample,
    params=[Param("kind", "enum", choices=("bilinear", "average")),
            Param("in_size", "shape"), Param("out_size", "shape"),
            Param("align_corners", "bool", True), Param("adjoint", "bool", False)],
    gradient=lambda F, p, ins, outs, g: [F._separable_resample(
        g[0], kind=p.kind, in_size=p.in_size, out_size=p.out_size,
        align_corners=p.align_corners, adjoint=not p.adjoint)],
    save=(), hidden=True, family="vision",
    doc="A separable linear resampling of NCHW planes (or its adjoint)."))


# ----------------------------------------------------------------------------
# BilinearResize2D

_MODES = ("size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up")


def _resize_hw(p, dshape, like_shape=None):
    op = "_contrib_BilinearResize2D"
    h, w = dshape[2], dshape[3]
    if p.mode == "size":
        if p.scale_height is not None:
            # MXNet 1.9.1 reads scale_width whenever scale_height is given
            if p.scale_width is None:
                raise GpundaError(f"Operator {op}: scale_width must be given with scale_height")
            return int(p.scale_height * h), int(p.scale_width * w)
        return p.height, p.width
    if p.mode == "odd_scale":
        if p.scale_height is None or p.scale_width is None:
            raise GpundaError(f"Operator {op}: mode='odd_scale' needs scale_height and scale_width")
        nh = int(h * p.scale_height) if h % 2 == 0 else int((h - 1) * p.scale_height) + 1
        nw = int(w * p.scale_width) if w % 2 == 0 else int((w - 1) * p.scale_width) + 1
        return nh, nw
    if p.mode == "like":
        return like_shape[2], like_shape[3]
    up = p.mode.endswith("_up")
    parity = 0 if p.mode.startswith("to_even") else 1

    def fix(n):
        return n if n % 2 == parity else (n + 1 if up else n - 1)
    return fix(h), fix(w)


def _resize_kw(p, dshape, out_hw):
    return dict(kind="bilinear", in_size=tuple(dshape[2:]), out_size=tuple(out_hw),
                align_corners=p.align_corners)


def _bilinear_resize(xp, p, data, like=None):
    op = "_contrib_BilinearResize2D"
    if data.ndim != 4:
        raise GpundaError(f"Operator {op}: data must be 4-D (NCHW), got {tuple(data.shape)}")
    out_hw = _resize_hw(p, data.shape, None if like is None else like.shape)
    if min(out_hw) < 1:
        raise GpundaError(f"Operator {op}: output size {out_hw} must be positive")
    return _separable_resample(xp, _resample_params(_resize_kw(p, data.shape, out_hw)), data)


def _resample_params(kw):
    from gpunda.ops.registry import get_op
    return get_op("_separable_resample").parse_params(kw)


def _g_bilinear_resize(F, p, ins, outs, g):
    kw = _resize_kw(p, ins[0].shape, outs[0].shape[2:])
    grads = [F._separable_resample(g[0], adjoint=True, **kw)]
    if p.mode == "like":
        grads.append(F.zeros_like(ins[1]))
    return grads


def _infer_resize(p, in_shapes):
    d = in_shapes[0]
    if d is None or (p.mode == "like" and (len(in_shapes) < 2 or in_shapes[1] is None)):
        return list(in_shapes), None
    nh, nw = _resize_hw(p, d, in_shapes[1] if p.mode == "like" else None)
    return list(in_shapes), [(d[0], d[1], nh, nw)]


register(OpDef(
    "_contrib_BilinearResize2D", _bilinear_resize,
    params=[Param("height", "int", 1, "output height (mode 'size', without scale_height)"),
            Param("width", "int", 1, "output width (mode 'size', without scale_width)"),
            Param("scale_height", "float", None, "height scale (modes 'size', 'odd_scale')"),
            Param("scale_width", "float", None, "width scale (modes 'size', 'odd_scale')"),
            Param("mode", "enum", "size", "how the output size is chosen", choices=_MODES),
            Param("align_corners", "bool", True, "map corner pixel centres onto each other")],
    inputs=lambda p: ["data", "like"] if p.mode == "like" else ["data"],
    gradient=_g_bilinear_resize, save=("inputs", "outputs"), infer_shape=_infer_resize,
    family="vision",
    doc="Bilinear resize of NCHW data to a size given by height/width, scales, a parity "
        "rule or a second input ('like')."))


# ----------------------------------------------------------------------------
# AdaptiveAvgPooling2D


def _pool_hw(p):
    size = p.output_size
    if len(size) == 0:
        return 1, 1
    if len(size) == 1:
        return size[0], size[0]
    if len(size) == 2:
        return size
    raise GpundaError(f"Operator _contrib_AdaptiveAvgPooling2D: output_size={size} must be an "
                      "int or a (height, width) pair")


def _adaptive_avg_pool(xp, p, data):
    if data.ndim != 4:
        raise GpundaError(f"Operator _contrib_AdaptiveAvgPooling2D: data must be 4-D (NCHW), "
                          f"got {tuple(data.shape)}")
    kw = dict(kind="average", in_size=tuple(data.shape[2:]), out_size=tuple(_pool_hw(p)))
    return _separable_resample(xp, _resample_params(kw), data)


def _g_adaptive(F, p, ins, outs, g):
    return [F._separable_resample(g[0], kind="average", in_size=tuple(ins[0].shape[2:]),
                                  out_size=tuple(_pool_hw(p)), adjoint=True)]


def _infer_adaptive(p, in_shapes):
    d = in_shapes[0]
    if d is None:
        return list(in_shapes), None
    return list(in_shapes), [(d[0], d[1]) + tuple(_pool_hw(p))]


register(OpDef(
    "_contrib_AdaptiveAvgPooling2D", _adaptive_avg_pool,
    params=[Param("output_size", "shape", (), "int or (height, width) of the output")],
    gradient=_g_adaptive, save=("inputs",), infer_shape=_infer_adaptive, family="vision",
    doc="Average pooling of NCHW data onto a fixed output size; output cell o averages "
        "input cells floor(o*H/OH) .. ceil((o+1)*H/OH)-1."))
