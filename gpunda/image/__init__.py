"""MXNet 1.x ``mx.image``: decoding, resizing and cropping images, and the augmenters.

Decoding and resizing go through OpenCV (``pip install 'gpunda[image]'``), as MXNet's did,
so pixels match MXNet's; they run on the host. ``ImageIter`` and the detection module
(``mx.image.detection``) are not built yet: they import and raise when used.
"""
from .image import (imread, imdecode, imresize, copyMakeBorder, scale_down,  # noqa: F401
                    resize_short, fixed_crop, random_crop, center_crop, color_normalize,
                    random_size_crop, imrotate, random_rotate)
from .augmenters import (Augmenter, SequentialAug, ResizeAug, ForceResizeAug,  # noqa: F401
                         RandomCropAug, RandomSizedCropAug, CenterCropAug, RandomOrderAug,
                         BrightnessJitterAug, ContrastJitterAug, SaturationJitterAug,
                         HueJitterAug, ColorJitterAug, LightingAug, ColorNormalizeAug,
                         RandomGrayAug, HorizontalFlipAug, CastAug, CreateAugmenter)
from . import image  # noqa: F401
from .. import ndarray as nd  # noqa: F401
from ..base import numeric_types  # noqa: F401
from ..util import is_np_array  # noqa: F401
from .._not_built import NotBuiltError as _NotBuilt


class ImageIter:
    """MXNet's image iterator over .rec files or image lists: not built yet."""

    def __init__(self, *args, **kwargs):
        raise _NotBuilt("mx.image.ImageIter is not supported yet: gpunda does not build "
                        "MXNet's image iterators yet (use gluon.data.vision datasets)")


class ImageDetIter(ImageIter):
    """MXNet's detection image iterator: not built yet."""


def _not_built(name):
    def fn(*args, **kwargs):
        raise _NotBuilt(f"mx.image.{name} is not supported yet: gpunda does not build "
                        f"MXNet's detection augmenters yet")
    fn.__name__ = name
    return fn


for _name in ("CreateDetAugmenter", "CreateMultiRandCropAugmenter", "DetAugmenter",
              "DetBorrowAug", "DetHorizontalFlipAug", "DetRandomCropAug", "DetRandomPadAug",
              "DetRandomSelectAug"):
    globals()[_name] = _not_built(_name)
