"""Colour augmentations of HWC images (MXNet's ``_image_random_*`` and
``_image_adjust_lighting``), written once against ``xp``.

Arithmetic is float32, as MXNet's kernels (float64 for float64 images); a uint8 result is clamped to
[0, 255] and truncated (MXNet's ``saturate_cast``), other dtypes are cast.
Random factors come from the context's generator in ``gpunda.random``, so
``mx.random.seed`` makes them reproducible.

Quirk kept on purpose: MXNet 1.9.1's saturation kernel assigns instead of
summing the grey value, so its "grey" is 0.114 * blue alone; gpunda matches
MXNet's pixels (tests/data/image_mxnet191.npz).

Gradients: brightness keeps its factor as a hidden output and scales the head
gradient by it; lighting adds a constant, so its gradient is the identity;
contrast, saturation, hue and color_jitter are declared non-differentiable
(MXNet's ``_copy`` rule is not their derivative; NOTE [Image gradients]).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.image.transforms import check_image
from gpunda.ops.registry import OpDef, Param, register

_F32 = np.float32
_GRAY = (0.299, 0.587, 0.114)
# AlexNet's PCA lighting: eigenvalues times eigenvectors of ImageNet RGB
_EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                 [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                 [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]])
# HLS -> RGB: which of (p2, p1, falling, rising) each sector gives to (b, g, r)
_HLS_SECTORS = np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])


def saturate(xp, val, dtype):
    """float32 values stored as ``dtype`` the way MXNet's saturate_cast does."""
    if dtype == np.uint8:
        return xp.clip(val, 0.0, 255.0).astype(np.uint8)
    return val.astype(dtype, copy=False)


def _wide(x):
    """The working precision: float32 as MXNet's kernels, float64 for float64 images."""
    return np.float64 if x.dtype == np.float64 else _F32


def _rng(ctx):
    from gpunda import random as _r
    return _r._generator(ctx)


def _uniform(ctx, lo, hi):
    return float(_rng(ctx).uniform(lo, hi))


def brightness(xp, x, alpha):
    return saturate(xp, x.astype(_wide(x)) * _F32(alpha), x.dtype)


def contrast(xp, x, alpha):
    xf = x.astype(_wide(x))
    if x.shape[-1] > 1:
        gray = xf[..., 0] * _F32(_GRAY[0]) + xf[..., 1] * _F32(_GRAY[1]) \
            + xf[..., 2] * _F32(_GRAY[2])
    else:
        gray = xf[..., 0]
    mean = _F32(float(gray.sum(dtype=np.float64)) / (x.shape[0] * x.shape[1]))
    beta = _F32((1.0 - _F32(alpha)) * mean)
    return saturate(xp, xf * _F32(alpha) + beta, x.dtype)


def saturation(xp, x, alpha):
    if x.shape[-1] == 1:
        return x.copy()
    xf = x.astype(_wide(x))
    gray = xf[..., 2:3] * _F32(_GRAY[2]) * _F32(1.0 - _F32(alpha))   # MXNet's kernel, see above
    return saturate(xp, gray + xf * _F32(alpha), x.dtype)


def _rgb_to_hls(xp, r, g, b):
    r, g, b = r / _F32(255), g / _F32(255), b / _F32(255)
    vmax = xp.maximum(xp.maximum(r, g), b)
    vmin = xp.minimum(xp.minimum(r, g), b)
    diff = vmax - vmin
    light = (vmax + vmin) * _F32(0.5)
    chroma = diff > np.finfo(np.float32).eps
    safe = xp.where(chroma, diff, _F32(1))
    sat = xp.where(light < 0.5, safe / xp.where(chroma, vmax + vmin, _F32(1)),
                   safe / xp.where(chroma, _F32(2) - vmax - vmin, _F32(1)))
    scale = _F32(60) / safe
    hue = xp.where(vmax == r, (g - b) * scale,
                   xp.where(vmax == g, (b - r) * scale + _F32(120), (r - g) * scale + _F32(240)))
    hue = xp.where(hue < 0, hue + _F32(360), hue)
    return xp.where(chroma, hue, _F32(0)), light, xp.where(chroma, sat, _F32(0))


def _hls_to_rgb(xp, h, light, s):
    p2 = xp.where(light <= 0.5, light * (_F32(1) + s), light + s - light * s)
    p1 = _F32(2) * light - p2
    h = h * _F32(1.0 / 60.0)
    h = xp.where(h < 0, h + _F32(6) * xp.ceil(-h / _F32(6)), h)
    h = xp.where(h >= 6, h - _F32(6) * xp.floor(h / _F32(6)), h)
    sector = xp.clip(h.astype(np.int64), 0, 5)
    frac = h - sector
    tab = xp.stack([p2, p1, p1 + (p2 - p1) * (_F32(1) - frac), p1 + (p2 - p1) * frac])
    pick = xp.asarray(_HLS_SECTORS)[sector]                       # (..., 3): b, g, r
    chan = [xp.take_along_axis(tab, pick[None, ..., k], 0)[0] for k in range(3)]
    gray = s == 0
    b, g, r = (xp.where(gray, light, c) * _F32(255) for c in chan)
    return r, g, b


def hue(xp, x, alpha):
    if x.shape[-1] == 1:
        return x.copy()
    xf = x.astype(_wide(x))
    h, light, s = _rgb_to_hls(xp, xf[..., 0], xf[..., 1], xf[..., 2])
    r, g, b = _hls_to_rgb(xp, h + _F32(alpha) * _F32(360), light, s)
    return saturate(xp, xp.stack([r, g, b], axis=-1), x.dtype)


def lighting(xp, x, alpha):
    if x.shape[-1] == 1:
        return x.copy()
    pca = (_EIG @ np.asarray(alpha[:3], dtype=np.float64)).astype(_wide(x))
    return saturate(xp, x.astype(_wide(x)) + xp.asarray(pca), x.dtype)


# ----------------------------------------------------------------------------
# registration

_ENHANCE = [Param("min_factor", "float", doc="minimum factor (>= 0)"),
            Param("max_factor", "float", doc="maximum factor (>= 0)")]


def _check_factors(p):
    for name in ("min_factor", "max_factor"):
        if getattr(p, name) < 0:
            raise GpundaError(f"Operator random enhance: {name}={getattr(p, name)} must be >= 0")


def _random_brightness(xp, p, x, ctx):
    check_image("_image_random_brightness", x, batch=False)
    alpha = _uniform(ctx, p.min_factor, p.max_factor)
    return brightness(xp, x, alpha), xp.full((1,), alpha, dtype=np.float32)


register(OpDef(
    "_image_random_brightness", _random_brightness, aliases=("_npx__image_random_brightness",),
    params=_ENHANCE, check=_check_factors, num_outputs=2, num_visible=1,
    output_names=("output", "factor"), wants_ctx=True, random=True, save=("outputs",),
    gradient=lambda F, p, i, o, g: [F.broadcast_mul(g[0], F.Cast(o[1], dtype=g[0].dtype))],
    capture="random numbers drawn on the host", family="image",
    doc="Scales an HWC image by a factor drawn from U[min_factor, max_factor]."))


def _enhance(name, fn):
    def compute(xp, p, x, ctx):
        check_image(name, x, batch=False)
        return fn(xp, x, _uniform(ctx, p.min_factor, p.max_factor))
    return compute


for _name, _fn, _doc in (
        ("contrast", contrast, "Blends an HWC image with its mean grey level"),
        ("saturation", saturation, "Blends an HWC image with its grey image"),
        ("hue", hue, "Rotates the hue of an HWC RGB image by factor * 360 degrees")):
    _op = f"_image_random_{_name}"
    register(OpDef(
        _op, _enhance(_op, _fn), aliases=("_npx_" + _op,), params=_ENHANCE,
        check=_check_factors, wants_ctx=True, random=True, nondiff=True, family="image",
        capture="random numbers drawn on the host",
        doc=f"{_doc}, with a factor drawn from U[min_factor, max_factor]."))


def _color_jitter(xp, p, x, ctx):
    check_image("_image_random_color_jitter", x, batch=False)
    gen = _rng(ctx)
    out = x
    for step in [int(i) for i in gen.permutation(4).tolist()]:
        if step == 0 and p.brightness > 0:
            out = brightness(xp, out, 1.0 + _uniform(ctx, -p.brightness, p.brightness))
        elif step == 1 and p.contrast > 0:
            out = contrast(xp, out, 1.0 + _uniform(ctx, -p.contrast, p.contrast))
        elif step == 2 and p.saturation > 0:
            out = saturation(xp, out, 1.0 + _uniform(ctx, -p.saturation, p.saturation))
        elif step == 3 and p.hue > 0:
            out = hue(xp, out, _uniform(ctx, -p.hue, p.hue))
    return out.copy() if out is x else out


register(OpDef(
    "_image_random_color_jitter", _color_jitter, aliases=("_npx__image_random_color_jitter",),
    params=[Param("brightness", "float"), Param("contrast", "float"),
            Param("saturation", "float"), Param("hue", "float")],
    wants_ctx=True, random=True, nondiff=True, family="image",
    capture="random numbers drawn on the host",
    doc="Brightness, contrast, saturation and hue jitter, applied in a random order."))


def _adjust_lighting(xp, p, x):
    check_image("_image_adjust_lighting", x, batch=False)
    if len(p.alpha) != 3:
        raise GpundaError(f"Operator _image_adjust_lighting: alpha={p.alpha} must have 3 "
                          f"elements (R, G, B)")
    return lighting(xp, x, p.alpha)


def _random_lighting(xp, p, x, ctx):
    check_image("_image_random_lighting", x, batch=False)
    alpha = [float(a) for a in _rng(ctx).normal(0.0, p.alpha_std, size=3).tolist()]
    return lighting(xp, x, alpha)


def _as_alpha(p):
    if not isinstance(p.alpha, tuple):
        raise GpundaError(f"Operator _image_adjust_lighting: alpha={p.alpha} must be a tuple "
                          f"of 3 floats")


register(OpDef(
    "_image_adjust_lighting", _adjust_lighting, aliases=("_npx__image_adjust_lighting",),
    params=[Param("alpha", "float_or_tuple", doc="lighting alphas for R, G, B")],
    check=_as_alpha, save=(), gradient=lambda F, p, i, o, g: [g[0]], family="image",
    doc="AlexNet-style PCA lighting with the given alphas."))
register(OpDef(
    "_image_random_lighting", _random_lighting, aliases=("_npx__image_random_lighting",),
    params=[Param("alpha_std", "float", 0.05, "standard deviation of the alphas")],
    save=(), gradient=lambda F, p, i, o, g: [g[0]], wants_ctx=True, random=True,
    capture="random numbers drawn on the host", family="image",
    doc="AlexNet-style PCA lighting with alphas drawn from N(0, alpha_std**2)."))
