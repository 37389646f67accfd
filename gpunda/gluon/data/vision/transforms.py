"""Image transforms (MXNet 1.9.1's ``gluon.data.vision.transforms``).

Each transform is a Block over the ``image`` ops (``F.image.*``); those MXNet
makes HybridBlocks are HybridBlocks here too, so a ``Compose`` of them
hybridizes into one graph. Images are HWC uint8 (or float) until
``ToTensor`` turns them into CHW float32 tensors.
"""
from __future__ import annotations

import random

import numpy as np

from gpunda.base import numeric_types  # noqa: F401  (MXNet's module exposes it)
from gpunda.util import is_np_array  # noqa: F401
from gpunda.gluon.block import Block, HybridBlock
from gpunda.gluon.nn import Sequential, HybridSequential
from gpunda.image import image

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Rotate", "RandomRotation",
           "RandomResizedCrop", "CropResize", "CenterCrop", "Resize", "RandomFlipLeftRight",
           "RandomFlipTopBottom", "RandomBrightness", "RandomContrast", "RandomSaturation",
           "RandomHue", "RandomColorJitter", "RandomLighting", "RandomApply"]


class Compose(Sequential):
    """Runs ``transforms`` in order; each run of consecutive HybridBlocks becomes one
    hybridized HybridSequential.

    Example::

        t = Compose([Resize(300), CenterCrop(256), ToTensor()])
        t(mx.nd.ones((224, 224, 3), dtype="uint8")).shape   # (3, 256, 256)
    """

    def __init__(self, transforms):
        super().__init__()
        run = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock):
                run.append(t)
                continue
            if len(run) == 1:
                self.add(run[0])
            elif len(run) > 1:
                block = HybridSequential()
                for r in run:
                    block.add(r)
                block.hybridize()
                self.add(block)
            run = []
            if t is not None:
                self.add(t)


class Cast(HybridBlock):
    """Casts the input to ``dtype`` (default float32)."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(HybridBlock):
    """HWC (NHWC) image in [0, 255] -> CHW (NCHW) float32 tensor in [0, 1]."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """``(x - mean[c]) / std[c]`` per channel of a CHW (NCHW) tensor; scalars apply to all."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean, self._std = mean, std

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, self._mean, self._std)


class Rotate(Block):
    """Rotates a float32 CHW (NCHW) tensor by ``rotation_degrees``; ``zoom_in`` leaves no
    padding, ``zoom_out`` keeps the whole image."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        if x.dtype != np.float32:
            raise TypeError("This transformation only supports float32. "
                            "Consider calling it after ToTensor")
        return image.imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotates by an angle drawn from ``angle_limits`` with probability
    ``rotate_with_proba`` (float32 CHW/NCHW tensors)."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError("`angle_limits` must be an ordered tuple")
        if not 0 <= rotate_with_proba <= 1:
            raise ValueError("Probability of rotating the image should be between 0 and 1")
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._rotate_with_proba:
            return x
        if x.dtype != np.float32:
            raise TypeError("This transformation only supports float32. "
                            "Consider calling it after ToTensor")
        return image.random_rotate(x, *self._args)


class RandomResizedCrop(Block):
    """A crop of random area (``scale`` of the image) and aspect ratio (``ratio``),
    resized to ``size`` (int or (w, h)); HWC images."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        if isinstance(size, numeric_types):
            size = (size, size)
        self._args = (size, scale, ratio, interpolation)

    def forward(self, x):
        return image.random_size_crop(x, *self._args)[0]


class CropResize(HybridBlock):
    """The (x, y, width, height) box, resized to ``size`` when given (HWC or NHWC)."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._box = (x, y, width, height)
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, *self._box)
        if self._size:
            out = F.image.resize(out, self._size, False, self._interpolation)
        return out


class CenterCrop(Block):
    """The centred crop of ``size`` (int or (w, h)), upsampled when the image is smaller."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        if isinstance(size, numeric_types):
            size = (size, size)
        self._args = (size, interpolation)

    def forward(self, x):
        return image.center_crop(x, *self._args)[0]


class Resize(HybridBlock):
    """Resizes HWC (NHWC) images to ``size`` (int or (w, h)); with an int and
    ``keep_ratio`` the short edge becomes ``size``. OpenCV interpolation codes."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._size, self._keep, self._interpolation = size, keep_ratio, interpolation

    def hybrid_forward(self, F, x):
        return F.image.resize(x, self._size, self._keep, self._interpolation)


class RandomFlipLeftRight(HybridBlock):
    """Flips an HWC image left-right with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(HybridBlock):
    """Flips an HWC image top-bottom with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_top_bottom(x)


class _RandomEnhance(HybridBlock):
    """A factor drawn from [max(0, 1 - amount), 1 + amount] for op ``image.<_op>``."""
    _op = ""

    def __init__(self, amount):
        super().__init__()
        self._args = (max(0, 1 - amount), 1 + amount)

    def hybrid_forward(self, F, x):
        return getattr(F.image, self._op)(x, *self._args)


class RandomBrightness(_RandomEnhance):
    """Scales brightness by a factor from [max(0, 1 - brightness), 1 + brightness]."""
    _op = "random_brightness"

    def __init__(self, brightness):
        super().__init__(brightness)


class RandomContrast(_RandomEnhance):
    """Jitters contrast by a factor from [max(0, 1 - contrast), 1 + contrast]."""
    _op = "random_contrast"

    def __init__(self, contrast):
        super().__init__(contrast)


class RandomSaturation(_RandomEnhance):
    """Jitters saturation by a factor from [max(0, 1 - saturation), 1 + saturation]."""
    _op = "random_saturation"

    def __init__(self, saturation):
        super().__init__(saturation)


class RandomHue(_RandomEnhance):
    """Shifts hue by a factor from [max(0, 1 - hue), 1 + hue] (times 360 degrees)."""
    _op = "random_hue"

    def __init__(self, hue):
        super().__init__(hue)


class RandomColorJitter(HybridBlock):
    """Brightness, contrast, saturation and hue jitter in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        return F.image.random_color_jitter(x, *self._args)


class RandomLighting(HybridBlock):
    """AlexNet-style PCA lighting noise with standard deviation ``alpha``."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, self._alpha)


class RandomApply(Sequential):
    """Applies ``transforms`` with probability ``p`` (Python's ``random``, as MXNet)."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)
