"""Rotation of CHW images by bilinear sampling (``mx.image.imrotate``/``random_rotate``)."""
from __future__ import annotations

import math
from numbers import Number

import numpy as np


def _zoom(h, w, rad, zoom_in):
    """The grid scale that keeps the rotated image inside (zoom_in) or whole (zoom_out)."""
    rho = math.hypot(h, w)
    corner = math.atan(h / w)
    a = abs(rad)
    max_x = max(abs(rho * math.cos(corner + a)), abs(rho * math.cos(corner - a)))
    max_y = max(abs(rho * math.sin(corner + a)), abs(rho * math.sin(corner - a)))
    if zoom_in:
        return min(w / max_x, h / max_y)
    return max(max_x / w, max_y / h)


def _bilinear_rotate(xp, img, rad, scale):
    """One CHW image rotated by ``rad`` about its centre; samples outside are 0."""
    c, h, w = img.shape
    hs, ws = (h - 1) / 2.0, (w - 1) / 2.0
    hm = xp.arange(h, dtype=np.float32)[:, None] - hs
    wm = xp.arange(w, dtype=np.float32)[None, :] - ws
    cos, sin = np.float32(math.cos(rad)), np.float32(math.sin(rad))
    # MXNet normalises the grid to [-1, 1] and BilinearSampler maps it back
    sx = ((wm * cos - hm * sin) / ws * scale + 1) * ws if w > 1 else xp.zeros((h, w))
    sy = ((wm * sin + hm * cos) / hs * scale + 1) * hs if h > 1 else xp.zeros((h, w))
    x0, y0 = xp.floor(sx).astype(np.int64), xp.floor(sy).astype(np.int64)
    fx, fy = (sx - x0).astype(img.dtype), (sy - y0).astype(img.dtype)
    out = xp.zeros_like(img)
    for dy, wy in ((0, 1 - fy), (1, fy)):
        for dx, wx in ((0, 1 - fx), (1, fx)):
            yy, xx = y0 + dy, x0 + dx
            inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            vals = img[:, xp.clip(yy, 0, h - 1), xp.clip(xx, 0, w - 1)]
            out += vals * (wy * wx * inside)[None]
    return out


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotate a float32 CHW image (or NCHW batch) by degrees, counter-clockwise."""
    from gpunda.ndarray.ndarray import _new
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    if src.dtype != np.float32:
        raise TypeError("Only `float32` images are supported by this function")
    single = src.ndim == 3
    if single:
        if not isinstance(rotation_degrees, Number):
            raise TypeError("When a single image is passed the rotation angle is required "
                            "to be a scalar.")
        batch = src.expand_dims(axis=0)
    elif src.ndim == 4:
        batch = src
    else:
        raise ValueError("Only 3D and 4D are supported by this function")
    if isinstance(rotation_degrees, Number):
        degrees = [float(rotation_degrees)] * len(batch)
    else:
        degrees = [float(d) for d in np.asarray(
            rotation_degrees.asnumpy() if hasattr(rotation_degrees, "asnumpy")
            else rotation_degrees).reshape(-1)]
    if len(degrees) != len(batch):
        raise ValueError("The number of images must be equal to the number of rotation angles")
    xp = batch.context.backend.xp
    data = batch._data
    _, _, h, w = data.shape
    outs = []
    for img, deg in zip(data, degrees):
        rad = math.pi * deg / 180.0
        scale = _zoom(h, w, rad, zoom_in) if (zoom_in or zoom_out) else 1.0
        outs.append(_bilinear_rotate(xp, img, rad, scale))
    out = _new(xp.stack(outs).astype(np.float32, copy=False), batch.context)
    return out[0] if single else out


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """Rotate by angles drawn from U(angle_limits) (one per image of a batch)."""
    if src.ndim == 3:
        degrees = np.random.uniform(*angle_limits)
    else:
        degrees = np.random.uniform(*angle_limits, size=src.shape[0])
    return imrotate(src, degrees, zoom_in=zoom_in, zoom_out=zoom_out)

