"""Image ops (MXNet's ``_image_*``, exposed as ``nd.image.*`` / ``sym.image.*``):
layout and geometry (to_tensor, normalize, crop, resize, flips). The colour
augmentations are in ``image_color.py``.

Images are HWC (or NHWC where MXNet allows a batch), tensors CHW / NCHW.
``resize`` is OpenCV's ``cv2.resize``, as in MXNet, so its pixels match
MXNet's; it is a host-side op (NOTE [Host-side image ops]).

# NOTE [Host-side image ops]
OpenCV runs on the host. On a GPU context ``resize`` copies the image to the
host, resizes it there and copies the result back; the first time it does so
it logs one line, so a pipeline that resizes on the GPU knows why it is slow.
cv2 is imported on first use: ``import gpunda`` never loads it, and without
it the op raises a GpundaError naming the extra to install.

# NOTE [Image gradients]
MXNet 1.9.1 registers ``_copy`` (the identity) as the gradient of every image
op except normalize and crop, which is not the derivative of a flip, and fails
on to_tensor (whose output has another shape). gpunda's rules are the true
derivatives: a flip's gradient is the flipped head gradient, to_tensor's is
the head gradient moved back to HWC over 255. ``resize`` (OpenCV's
interpolation kernels) has no rule and is declared non-differentiable.
"""
from __future__ import annotations


import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register

from gpunda.base import gpunda_log as _log


def _err(op, msg):
    return GpundaError(f"Operator {op}: {msg}")


def check_image(op, x, batch=True):
    """Raise unless ``x`` is HWC (or NHWC with ``batch``) with 1 or 3 channels."""
    ndims = (3, 4) if batch else (3,)
    if x.ndim not in ndims:
        want = "(height, width, channels) or (N, height, width, channels)" if batch \
            else "(height, width, channels)"
        raise _err(op, f"input image must have shape {want}, but got {tuple(x.shape)}")
    if x.shape[-1] not in (1, 3):
        raise _err(op, f"the last dimension of the input image must be the channel dimension "
                       f"with either 1 or 3 elements, but got input with shape {tuple(x.shape)}")


# ----------------------------------------------------------------------------
# to_tensor and normalize


def _to_tensor(xp, p, x):
    if x.ndim not in (3, 4):
        raise _err("_image_to_tensor", "input image must have shape (height, width, channels) "
                   f"or (N, height, width, channels), but got {tuple(x.shape)}")
    # MXNet divides in the input's precision (double for float64) and stores float32
    wide = np.float64 if x.dtype == np.float64 else np.float32
    out = x.astype(wide) / wide(255.0)
    return xp.ascontiguousarray(xp.moveaxis(out, -1, -3).astype(np.float32, copy=False))


def _g_to_tensor(F, p, ins, outs, g):
    og = g[0]
    axes = (1, 2, 0) if og.ndim == 3 else (0, 2, 3, 1)
    return [F.Cast(F.transpose(og, axes=axes), dtype=ins[0].dtype) / 255.0]


register(OpDef(
    "_image_to_tensor", _to_tensor, aliases=("_npx__image_to_tensor",), gradient=_g_to_tensor,
    save=("inputs",), family="image",
    doc="An HWC (or NHWC) image with values in [0, 255] as a float32 CHW (NCHW) tensor in "
        "[0, 1]."))


def _per_channel(op, name, values, nchannels):
    vals = values if isinstance(values, tuple) else (values,)
    if len(vals) not in (1, nchannels):
        raise _err(op, f"{name}={vals} must have either 1 or {nchannels} elements for an input "
                       f"with {nchannels} channel(s)")
    return vals * nchannels if len(vals) == 1 else vals


def _normalize_stats(x, p):
    op = "_image_normalize"
    if x.ndim not in (3, 4):
        raise _err(op, "input tensor must have shape (channels, height, width) or "
                       f"(N, channels, height, width), but got {tuple(x.shape)}")
    c = x.shape[-3]
    if c not in (1, 3):
        raise _err(op, "the channel dimension of the input tensor must have either 1 or 3 "
                       f"elements, but got input with shape {tuple(x.shape)}")
    return _per_channel(op, "mean", p.mean, c), _per_channel(op, "std", p.std, c)


def _normalize(xp, p, x):
    mean, std = _normalize_stats(x, p)
    wide = np.float64 if x.dtype == np.float64 else np.float32
    m = xp.asarray(mean, dtype=wide).reshape(-1, 1, 1)
    s = xp.asarray(std, dtype=wide).reshape(-1, 1, 1)
    return ((x - m) / s).astype(x.dtype, copy=False)


def _g_normalize(F, p, ins, outs, g):
    _, std = _normalize_stats(ins[0], p)
    return [F._backward_image_normalize(g[0], scale=tuple(1.0 / s for s in std))]


register(OpDef(
    "_image_normalize", _normalize, aliases=("_npx__image_normalize",),
    params=[Param("mean", "float_or_tuple", (0.0, 0.0, 0.0, 0.0), "per-channel means"),
            Param("std", "float_or_tuple", (1.0, 1.0, 1.0, 1.0), "per-channel std deviations")],
    gradient=_g_normalize, save=("inputs",), family="image",
    doc="(data - mean[c]) / std[c] per channel of a CHW (or NCHW) tensor."))


def _channel_scale(xp, p, x):
    s = xp.asarray(p.scale, dtype=x.dtype if x.dtype.kind == "f" else np.float32)
    return x * s.reshape(-1, 1, 1)


register(OpDef(
    "_backward_image_normalize", _channel_scale, params=[Param("scale", "float_or_tuple")],
    hidden=True, save=(), family="image",
    gradient=lambda F, p, i, o, g: [F._backward_image_normalize(g[0], scale=p.scale)],
    doc="Multiplies channel c of a CHW/NCHW tensor by scale[c] (normalize's gradient)."))


# ----------------------------------------------------------------------------
# flips


def _flip(op, axis):
    def compute(xp, p, x):
        check_image(op, x, batch=False)
        return xp.flip(x, axis).copy()
    return compute


for _name, _axis in (("_image_flip_left_right", 1), ("_image_flip_top_bottom", 0)):
    register(OpDef(
        _name, _flip(_name, _axis), aliases=("_npx_" + _name,), save=(), family="image",
        gradient=(lambda ax: lambda F, p, i, o, g: [F.reverse(g[0], axis=ax)])(_axis),
        doc=f"Flips an HWC image along axis {_axis} "
            f"({'left-right' if _axis == 1 else 'top-bottom'})."))


def _random_flip(op, axis):
    def compute(xp, p, x, ctx):
        from gpunda import random as _r
        check_image(op, x, batch=False)
        flip = float(_r._generator(ctx).uniform(0.0, 1.0)) < 0.5
        out = xp.flip(x, axis).copy() if flip else x.copy()
        return out, xp.full((1,), 1.0 if flip else 0.0, dtype=np.float32)
    return compute


def _g_random_flip(axis):
    def rule(F, p, ins, outs, g):
        flag = F.Cast(outs[1], dtype=g[0].dtype)
        return [g[0] + F.broadcast_mul(F.reverse(g[0], axis=axis) - g[0], flag)]
    return rule


for _name, _axis in (("_image_random_flip_left_right", 1),
                     ("_image_random_flip_top_bottom", 0)):
    register(OpDef(
        _name, _random_flip(_name, _axis), aliases=("_npx_" + _name,), num_outputs=2,
        num_visible=1, output_names=("output", "flipped"), wants_ctx=True, random=True,
        gradient=_g_random_flip(_axis), save=("outputs",), family="image",
        capture="random numbers drawn on the host",
        doc=f"Flips an HWC image along axis {_axis} with probability 0.5."))


# ----------------------------------------------------------------------------
# crop


def _crop_box(op, shape, p):
    if len(shape) not in (3, 4) or shape[-1] not in (1, 3):
        raise _err(op, "input image must have shape (height, width, channels) or "
                       f"(N, height, width, channels) with 1 or 3 channels, but got {shape}")
    if p.height <= 0 or p.width <= 0:
        raise _err(op, f"height={p.height} and width={p.width} must be greater than 0")
    if p.x < 0 or p.y < 0:
        raise _err(op, f"x={p.x} and y={p.y} must be >= 0")
    if p.x + p.width > shape[-2]:
        raise _err(op, f"x + width = {p.x + p.width} exceeds the input width {shape[-2]}")
    if p.y + p.height > shape[-3]:
        raise _err(op, f"y + height = {p.y + p.height} exceeds the input height {shape[-3]}")
    return (Ellipsis, slice(p.y, p.y + p.height), slice(p.x, p.x + p.width), slice(None))


def _crop(xp, p, x):
    return x[_crop_box("_image_crop", tuple(x.shape), p)].copy()


def _crop_backward(xp, p, g):
    out = xp.zeros(p.in_shape, dtype=g.dtype)
    out[_crop_box("_image_crop", tuple(p.in_shape), p)] = g
    return out


_CROP = [Param("x", "int", doc="left edge"), Param("y", "int", doc="top edge"),
         Param("width", "int"), Param("height", "int")]

register(OpDef(
    "_image_crop", _crop, aliases=("_npx__image_crop",), params=_CROP, save=("inputs",),
    gradient=lambda F, p, i, o, g: [F._backward_image_crop(
        g[0], x=p.x, y=p.y, width=p.width, height=p.height, in_shape=tuple(i[0].shape))],
    family="image", doc="The (x, y, width, height) box of an HWC (or NHWC) image."))
register(OpDef(
    "_backward_image_crop", _crop_backward, params=_CROP + [Param("in_shape", "shape")],
    hidden=True, save=(), family="image",
    gradient=lambda F, p, i, o, g: [F._image_crop(g[0], x=p.x, y=p.y, width=p.width,
                                                  height=p.height)],
    doc="The crop's gradient: the head gradient placed in a zero image of in_shape."))


# ----------------------------------------------------------------------------
# resize (OpenCV)

_CV_DTYPES = ("uint8", "float32", "float64")
_gpu_logged = []


def load_cv2(where):
    """The cv2 module; GpundaError naming the extra to install when it is absent."""
    try:
        import cv2
    except ImportError:
        raise GpundaError(f"{where} needs OpenCV (cv2), which is not installed: "
                          f"pip install 'gpunda[image]'") from None
    return cv2


def resize_hw(h, w, size, keep_ratio, op="_image_resize"):
    """The output (height, width) of MXNet's resize for an h x w image."""
    if len(size) not in (1, 2):
        raise _err(op, f"size={size} must have 1 or 2 elements (size or (width, height))")
    if any(s <= 0 for s in size):
        raise _err(op, f"size={size} must be greater than 0")
    if len(size) == 2:
        return size[1], size[0]
    s = size[0]
    if not keep_ratio:
        return s, s
    if h > w:
        return h * s // w, s
    return s, w * s // h


def cv_resize(img, out_h, out_w, interp, op="_image_resize"):
    """One HWC host image through cv2.resize (channels kept even when 1)."""
    cv2 = load_cv2(op)
    if interp not in (0, 1, 2, 3, 4):
        raise _err(op, f"interp={interp} must be one of 0 (nearest), 1 (bilinear), 2 (area), "
                       f"3 (bicubic), 4 (lanczos)")
    try:
        out = cv2.resize(np.ascontiguousarray(img), (out_w, out_h), interpolation=interp)
    except cv2.error as e:
        raise _err(op, f"OpenCV cannot resize this input: {str(e).strip()}") from None
    return out.reshape(out_h, out_w, img.shape[-1])


def _resize(xp, p, x):
    op = "_image_resize"
    if x.ndim not in (3, 4):
        raise _err(op, f"input image dimension should be 3 or 4 but got {x.ndim}")
    if x.dtype.name not in _CV_DTYPES:
        raise _err(op, f"dtype {x.dtype.name} is not supported by OpenCV's resize; "
                       f"use one of {', '.join(_CV_DTYPES)}")
    out_h, out_w = resize_hw(x.shape[-3], x.shape[-2], p.size, p.keep_ratio)
    host = x
    if xp is not np:
        from gpunda.backends import backend_of_xp
        if not _gpu_logged:
            _gpu_logged.append(True)
            _log.info("image.resize runs OpenCV on the host: GPU images are copied to the host "
                      "and back (logged once)")
        backend = backend_of_xp(xp)
        host = backend.to_host(x)
    if host.ndim == 3:
        out = cv_resize(host, out_h, out_w, p.interp)
    else:
        out = np.empty((host.shape[0], out_h, out_w, host.shape[-1]), dtype=host.dtype)
        for i in range(host.shape[0]):
            out[i] = cv_resize(host[i], out_h, out_w, p.interp)
    return out if xp is np else backend.from_host(out)


register(OpDef(
    "_image_resize", _resize, aliases=("_npx__image_resize",),
    params=[Param("size", "shape", (), "(width, height) or (size,)"),
            Param("keep_ratio", "bool", False, "with one size: resize the short edge to it"),
            Param("interp", "int", 1, "OpenCV interpolation: 0 nearest, 1 bilinear, 2 area, "
                                      "3 bicubic, 4 lanczos")],
    nondiff=True, family="image", capture="OpenCV runs on the host",
    doc="Resizes an HWC (or NHWC) image with OpenCV (host-side)."))
