"""Crop (MXNet's legacy spatial crop of NCHW data, to h_w or to a second input's size)."""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register


def _crop_geometry(p, dshape, like_shape):
    """((top, left), (h, w)) of the crop window, validated as MXNet's shape check."""
    if len(dshape) != 4:
        raise GpundaError(f"Operator Crop: input data must be 4-D (N, C, H, W), got shape "
                          f"{tuple(dshape)}")
    H, W = dshape[2:]
    if like_shape is None:
        h, w = (tuple(p.h_w) + (0, 0))[:2]
        if not (1 <= h <= H and 1 <= w <= W):
            raise GpundaError(f"Operator Crop: h_w={tuple(p.h_w)} must be within 1..{(H, W)} "
                              f"(the data's height and width)")
    else:
        if len(like_shape) < 2:
            raise GpundaError(f"Operator Crop: crop_like has shape {tuple(like_shape)}, needs "
                              f"at least 2 dimensions")
        h, w = like_shape[-2:]
        if h > H or w > W:
            raise GpundaError(f"Operator Crop: crop_like size {(h, w)} exceeds the data's "
                              f"{(H, W)}")
    if p.center_crop:
        return ((H - h) // 2, (W - w) // 2), (h, w)
    top, left = (tuple(p.offset) + (0, 0))[:2]
    if not (0 <= top <= H - h and 0 <= left <= W - w):
        raise GpundaError(f"Operator Crop: offset={tuple(p.offset)} puts a {(h, w)} window "
                          f"outside data of size {(H, W)}")
    return (top, left), (h, w)


def _crop(xp, p, x, like=None):
    if p.num_args not in (1, 2):
        raise GpundaError(f"Operator Crop: num_args={p.num_args} must be 1 or 2")
    (t, l), (h, w) = _crop_geometry(p, x.shape, None if like is None else like.shape)
    return x[:, :, t:t + h, l:l + w].copy()


def _grad_crop(F, p, ins, outs, og):
    x = ins[0]
    like = ins[1] if len(ins) > 1 else None
    (t, l), (h, w) = _crop_geometry(p, x.shape, None if like is None else like.shape)
    H, W = x.shape[2:]
    dx = F.Pad(og[0], mode="constant", constant_value=0.0,
               pad_width=(0, 0, 0, 0, t, H - h - t, l, W - w - l))
    return [dx] + ([F.zeros_like(like)] if like is not None else [])


def _infer_crop(p, in_shapes):
    d = in_shapes[0]
    like = in_shapes[1] if len(in_shapes) > 1 else None
    if d is None or (p.num_args == 2 and like is None):
        return list(in_shapes), None
    _, (h, w) = _crop_geometry(p, d, like)
    return list(in_shapes), [(d[0], d[1], h, w)]


register(OpDef(
    "Crop", _crop, inputs=lambda p: ("data", "crop_like")[:p.num_args],
    key_var_num_args="num_args",
    params=[Param("num_args", "int"), Param("offset", "shape", (0, 0)),
            Param("h_w", "shape", (0, 0)), Param("center_crop", "bool", False)],
    gradient=_grad_crop, save=("inputs",), infer_shape=_infer_crop, family="nn",
    doc="Crop the H, W axes of NCHW data to h_w (num_args=1) or to crop_like's last two "
        "dims (num_args=2), at `offset` or centred with center_crop."))
