"""``mx.image`` augmenters: callables on HWC images, composed by ``CreateAugmenter``.

Random choices use Python's ``random`` and NumPy's global generator, as MXNet's do, so
``random.seed``/``np.random.seed`` reproduce them. Colour augmenters work on float images
(``CastAug`` comes first in ``CreateAugmenter``'s list).
"""
from __future__ import annotations

import json
import random

import numpy as np

from gpunda import ndarray as nd
from gpunda.base import GpundaError
from gpunda.image.image import (center_crop, color_normalize, imresize, interp_method, random_crop,
                    random_size_crop, resize_short)

__all__ = ["Augmenter", "SequentialAug", "ResizeAug", "ForceResizeAug", "RandomCropAug",
           "RandomSizedCropAug", "CenterCropAug", "RandomOrderAug", "BrightnessJitterAug",
           "ContrastJitterAug", "SaturationJitterAug", "HueJitterAug", "ColorJitterAug",
           "LightingAug", "ColorNormalizeAug", "RandomGrayAug", "HorizontalFlipAug", "CastAug",
           "CreateAugmenter"]

# luminance weights of RGB (ITU-R 601), as MXNet's contrast/saturation jitters use them
_LUMA = (0.299, 0.587, 0.114)


class Augmenter:
    """Base class: ``aug(src) -> src``; keyword arguments are kept for ``dumps()``."""

    def __init__(self, **kwargs):
        self._kwargs = {k: (v.asnumpy().tolist() if isinstance(v, nd.NDArray) else
                            v.tolist() if isinstance(v, np.ndarray) else v)
                        for k, v in kwargs.items()}

    def dumps(self):
        """``[class name lower-cased, kwargs]`` as JSON."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError(f"{type(self).__name__} must define __call__")


class SequentialAug(Augmenter):
    """Apply the augmenters ``ts`` in order."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        return [type(self).__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(SequentialAug):
    """Apply the augmenters ``ts`` in a random order."""

    def __call__(self, src):
        order = list(self.ts)
        random.shuffle(order)
        for aug in order:
            src = aug(src)
        return src


class ResizeAug(Augmenter):
    """Resize the shorter edge to ``size``."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(Augmenter):
    """Resize to ``size`` (w, h), ignoring the aspect ratio."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=interp_method(self.interp, sizes))


class RandomCropAug(Augmenter):
    """A random crop of ``size`` (w, h)."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """A crop of random area and aspect ratio, resized to ``size`` (w, h)."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size, self.area, self.ratio, self.interp = size, area, ratio, interp
        self.kwargs = kwargs

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp,
                                **self.kwargs)[0]


class CenterCropAug(Augmenter):
    """The centred crop of ``size`` (w, h)."""

    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Scale by 1 + U(-brightness, brightness)."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.brightness, self.brightness)
        return src * alpha


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean grey by 1 + U(-contrast, contrast)."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        luma = nd.array(np.array(_LUMA).reshape(1, 1, 3), ctx=src.context, dtype=src.dtype)
        grey = src * luma
        grey = (3.0 * (1.0 - alpha) / grey.size) * nd.sum(grey)
        return src * alpha + grey


class SaturationJitterAug(Augmenter):
    """Blend with each pixel's grey by 1 + U(-saturation, saturation)."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        luma = nd.array(np.array(_LUMA).reshape(1, 1, 3), ctx=src.context, dtype=src.dtype)
        grey = nd.sum(src * luma, axis=2, keepdims=True) * (1.0 - alpha)
        return src * alpha + grey


class HueJitterAug(Augmenter):
    """Rotate the hue by U(-hue, hue) half-turns in YIQ space (a linear approximation)."""

    _TYIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
    _ITYIQ = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue

    def __call__(self, src):
        alpha = random.uniform(-self.hue, self.hue)
        u, w = np.cos(alpha * np.pi), np.sin(alpha * np.pi)
        rot = np.array([[1.0, 0.0, 0.0], [0.0, u, -w], [0.0, w, u]])
        t = (self._ITYIQ @ rot @ self._TYIQ).T
        return nd.dot(src, nd.array(t, ctx=src.context, dtype=src.dtype))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitters in a random order (zero ranges skipped)."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA lighting noise: add eigvec @ (alpha * eigval), alpha ~ N(0, alphastd)."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd, self.eigval, self.eigvec = alphastd, np.asarray(eigval), np.asarray(eigvec)

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        return src + nd.array(rgb, ctx=src.context, dtype=src.dtype)


class ColorNormalizeAug(Augmenter):
    """(src - mean) / std."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, nd.NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, nd.NDArray) else nd.array(std)

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability ``p``, replace the pixels by their grey value."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p
        self.mat = np.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.dot(src, nd.array(self.mat, ctx=src.context, dtype=src.dtype))
        return src


class HorizontalFlipAug(Augmenter):
    """With probability ``p``, flip left-right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Cast to ``typ`` (float32 by default)."""

    def __init__(self, typ="float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


_MEAN = (123.68, 116.28, 103.53)
_STD = (58.395, 57.12, 57.375)
_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False, rand_mirror=False,
                    mean=None, std=None, brightness=0, contrast=0, saturation=0, hue=0,
                    pca_noise=0, rand_gray=0, inter_method=2):
    """MXNet's standard augmenter list for ``data_shape`` (C, H, W): resize, crop, mirror,
    cast, colour jitter, hue, PCA lighting, random grey, normalisation, in that order.

    ``mean``/``std`` True take ImageNet's RGB statistics.
    """
    augs = []
    if resize > 0:
        augs.append(ResizeAug(resize, inter_method))
    crop = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise GpundaError("CreateAugmenter: rand_resize=True needs rand_crop=True")
        augs.append(RandomSizedCropAug(crop, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        augs.append(RandomCropAug(crop, inter_method))
    else:
        augs.append(CenterCropAug(crop, inter_method))
    if rand_mirror:
        augs.append(HorizontalFlipAug(0.5))
    augs.append(CastAug())
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        augs.append(HueJitterAug(hue))
    if pca_noise > 0:
        augs.append(LightingAug(pca_noise, _EIGVAL, _EIGVEC))
    if rand_gray > 0:
        augs.append(RandomGrayAug(rand_gray))
    if mean is True:
        mean = nd.array(_MEAN)
    elif mean is not None and not isinstance(mean, nd.NDArray):
        mean = nd.array(mean)
    if std is True:
        std = nd.array(_STD)
    elif std is not None and not isinstance(std, nd.NDArray):
        std = nd.array(std)
    for what, v in (("mean", mean), ("std", std)):
        if v is not None and v.shape[0] not in (1, 3):
            raise GpundaError(f"CreateAugmenter: {what} must have 1 or 3 values, got shape "
                              f"{v.shape}")
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs

