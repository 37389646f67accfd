"""MXNet 1.x ``mx.image``: decoding, resizing and cropping images, and the augmenters.

Decoding and resizing go through OpenCV (``pip install 'gpunda[image]'``), as MXNet's did,
so pixels match MXNet's; they run on the host. ``ImageIter`` reads .rec files or image
lists; ``mx.image.detection`` (alias ``mx.image.det``) holds ``ImageDetIter`` and the
detection augmenters.
"""
from gpunda.image.image import (imread, imdecode, imresize, copyMakeBorder, scale_down,  # noqa: F401
                    resize_short, fixed_crop, random_crop, center_crop, color_normalize,
                    random_size_crop, imrotate, random_rotate)
from gpunda.image.augmenters import (Augmenter, SequentialAug, ResizeAug, ForceResizeAug,  # noqa: F401
                         RandomCropAug, RandomSizedCropAug, CenterCropAug, RandomOrderAug,
                         BrightnessJitterAug, ContrastJitterAug, SaturationJitterAug,
                         HueJitterAug, ColorJitterAug, LightingAug, ColorNormalizeAug,
                         RandomGrayAug, HorizontalFlipAug, CastAug, CreateAugmenter)
from gpunda.image import image  # noqa: F401
from gpunda._core.reexports import optional_module_getattr as _optional_module_getattr
from gpunda import ndarray as nd  # noqa: F401
from gpunda.base import numeric_types  # noqa: F401
from gpunda.util import is_np_array  # noqa: F401
from gpunda.image.image_iter import ImageIter  # noqa: F401,E402
from gpunda.image import detection  # noqa: E402
from gpunda.image import detection as det  # noqa: F401,E402
from gpunda.image.detection import (DetAugmenter, DetBorrowAug, DetRandomSelectAug,  # noqa: F401,E402
                        DetHorizontalFlipAug, DetRandomCropAug, DetRandomPadAug,
                        CreateMultiRandCropAugmenter, CreateDetAugmenter, ImageDetIter)


# MXNet's image module shows the cv2 module it imports (None without OpenCV); OpenCV is
# imported on first access, so that importing gpunda.image does not load it
__getattr__ = _optional_module_getattr(__name__, "cv2", "cv2")
