"""Image functions of ``mx.image``: OpenCV decoding/resizing/padding and the crops.

Images are HWC NDArrays (uint8 from the decoders, any dtype after). OpenCV runs on the
host: an image on a GPU is copied to the host and the result back.
"""
from __future__ import annotations

import math
import random

import numpy as np

from gpunda import ndarray as nd
from gpunda.base import GpundaError, numeric_types
from gpunda.util import is_np_array

__all__ = ["imread", "imdecode", "imresize", "copyMakeBorder", "scale_down", "resize_short",
           "fixed_crop", "random_crop", "center_crop", "color_normalize", "random_size_crop",
           "imrotate", "random_rotate"]


def _cv2(where):
    try:
        import cv2
    except ImportError:
        raise GpundaError(f"{where} needs OpenCV: pip install 'gpunda[image]' "
                          f"(opencv-python-headless)") from None
    return cv2


def _host(src, where):
    if not isinstance(src, nd.NDArray):
        raise GpundaError(f"{where}: src must be an NDArray, got {type(src).__name__}")
    return src.asnumpy()


def _np_flavour(src=None):
    """Whether a result goes back as an ``mx.np.ndarray``: under NumPy semantics (MXNet's
    image functions then run their ``_npi`` ops) or for an ``mx.np.ndarray`` source."""
    if is_np_array():
        return True
    from gpunda.numpy import ndarray as np_ndarray
    return isinstance(src, np_ndarray)


def _result(res, src, img, out):
    """OpenCV's result as an HWC NDArray on ``src``'s context (written into ``out``)."""
    if res.ndim == 2:           # OpenCV drops a single channel
        res = res[:, :, None]
    res = nd.array(res, ctx=src.context, dtype=img.dtype)
    if out is not None:
        out[:] = res
        return out
    return res.as_np_ndarray() if _np_flavour(src) else res


def _interp(interp, where):
    if isinstance(interp, bool) or not isinstance(interp, (int, np.integer)) or \
            interp not in (0, 1, 2, 3, 4):
        raise GpundaError(f"{where}: interp={interp!r} must be 0 (nearest), 1 (bilinear), "
                          f"2 (bicubic), 3 (area) or 4 (Lanczos)")
    return int(interp)


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decode an encoded image (bytes, a uint8 NumPy array or NDArray) to an HWC uint8 NDArray.

    ``flag=1`` gives 3 channels, ``flag=0`` one (grey); ``to_rgb=1`` orders them RGB
    (MXNet's default), ``0`` BGR as OpenCV does. An empty or undecodable buffer raises
    MXNetError, as MXNet's ``_cvimdecode`` does, never OpenCV's own exception.
    """
    cv2 = _cv2("imdecode")
    if isinstance(buf, nd.NDArray):     # MXNet hands an NDArray to _cvimdecode unchanged
        if buf.dtype != np.uint8:
            raise GpundaError(f"imdecode: buf must be a uint8 array of encoded bytes, got "
                              f"dtype {np.dtype(buf.dtype).name}")
        raw = np.ascontiguousarray(buf.asnumpy()).reshape(-1)
    elif isinstance(buf, (bytes, bytearray, memoryview)):
        raw = np.frombuffer(bytes(buf), dtype=np.uint8)
    elif isinstance(buf, np.ndarray):
        raw = np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
    else:
        # MXNet's own check and class (ValueError) for str, None, lists, ...
        raise ValueError(f"imdecode: buf must be of type bytes, bytearray or numpy.ndarray, "
                         f"got {type(buf).__name__}; if you would like to input type str, "
                         f"please convert to bytes")
    if raw.size == 0:
        raise GpundaError("imdecode: Input cannot be an empty buffer")
    try:
        img = cv2.imdecode(raw, cv2.IMREAD_COLOR if flag else cv2.IMREAD_GRAYSCALE)
    except cv2.error as e:
        raise GpundaError(f"imdecode: Decoding failed. Invalid image file ({raw.size} bytes; "
                          f"OpenCV: {str(e).strip()})") from None
    if img is None:
        raise GpundaError(f"imdecode: Decoding failed. Invalid image file: the {raw.size} "
                          f"bytes given are not an image OpenCV can decode")
    if img.ndim == 2:
        img = img[:, :, None]
    elif to_rgb:
        img = img[:, :, ::-1]
    res = nd.array(np.ascontiguousarray(img), dtype="uint8")
    if out is not None:
        out[:] = res
        return out
    # an mx.np buffer gives an mx.np image, as gpunda's legacy ops do (docs/compat.md)
    return res.as_np_ndarray() if _np_flavour(buf) else res


def imread(filename, flag=1, to_rgb=1, out=None):
    """Read and decode an image file (see ``imdecode``)."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError as e:
        raise GpundaError(f"imread: cannot read {filename!r}: {e.strerror}") from None
    try:
        return imdecode(data, flag, to_rgb, out)
    except GpundaError as e:
        raise GpundaError(f"imread: {filename!r}: {e}") from None


def imresize(src, w, h, interp=1, out=None):
    """Resize an HWC image to width ``w`` and height ``h`` with OpenCV (``interp`` as cv2)."""
    cv2 = _cv2("imresize")
    interp = _interp(interp, "imresize")
    if int(w) <= 0 or int(h) <= 0:
        raise GpundaError(f"imresize: w={w} and h={h} must be positive")
    img = _host(src, "imresize")
    return _result(cv2.resize(img, (int(w), int(h)), interpolation=interp), src, img, out)


def copyMakeBorder(src, top, bot, left, right, type=0, value=0.0, values=(), out=None):  # noqa: A002
    """Pad an HWC image's border with OpenCV (``type`` 0 constant, 1 reflect, 2 reflect_101,
    3 replicate, 4 wrap; ``values`` per channel or ``value``)."""
    cv2 = _cv2("copyMakeBorder")
    if type not in (0, 1, 2, 3, 4):
        raise GpundaError(f"copyMakeBorder: type={type!r} must be 0..4")
    img = _host(src, "copyMakeBorder")
    fill = list(values) if len(values) else [value] * 4
    res = cv2.copyMakeBorder(img, int(top), int(bot), int(left), int(right), int(type),
                             value=fill)
    return _result(res, src, img, out)


def interp_method(interp, sizes=()):
    """MXNet's interp codes: 9 chooses by the size change, 10 at random."""
    if interp == 9:
        if not sizes:
            return 2
        oh, ow, nh, nw = sizes
        if nh > oh and nw > ow:
            return 2
        if nh < oh and nw < ow:
            return 3
        return 1
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError(f"Unknown interp method {interp}")
    return interp


_get_interp_method = interp_method      # MXNet's name


def scale_down(src_size, size):
    """``size`` (w, h) shrunk, keeping its aspect ratio, to fit in ``src_size`` (w, h)."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def resize_short(src, size, interp=2):
    """Resize so that the shorter edge is ``size``, keeping the aspect ratio."""
    h, w = src.shape[:2]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """The (x0, y0, w, h) box of an HWC image, resized to ``size`` (w, h) when given."""
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        sizes = (h, w, size[1], size[0])
        out = imresize(out, *size, interp=interp_method(interp, sizes))
    return out


def random_crop(src, size, interp=2):
    """A random crop of ``size`` (w, h), scaled down to fit; returns (image, (x0, y0, w, h))."""
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """The centred crop of ``size`` (w, h) (scaled down to fit), resized to ``size``."""
    h, w = src.shape[:2]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """(src - mean) / std, broadcast over the channels."""
    if mean is not None:
        src = src - mean
    if std is not None:
        src = src / std
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """A crop of random area fraction (``area``: min or (min, max)) and aspect ratio
    (``ratio``: (min, max)) resized to ``size``; the center crop when ten draws fail."""
    h, w = src.shape[:2]
    if isinstance(area, numeric_types):
        area = (area, 1.0)
    for _ in range(10):
        target = random.uniform(area[0], area[1]) * h * w
        new_ratio = math.exp(random.uniform(math.log(ratio[0]), math.log(ratio[1])))
        new_w = int(round(math.sqrt(target * new_ratio)))
        new_h = int(round(math.sqrt(target / new_ratio)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


from gpunda.image.rotate import imrotate, random_rotate  # noqa: E402


# MXNet's image.py also defines the augmenters and ImageIter; gpunda's live in sibling
# modules of the package (which imports this one), served from there on first access
from gpunda._core.reexports import forwarding_getattr as _forwarding_getattr  # noqa: E402

__getattr__ = _forwarding_getattr(__name__, (
    "Augmenter", "BrightnessJitterAug", "CastAug", "CenterCropAug", "ColorJitterAug",
    "ColorNormalizeAug", "ContrastJitterAug", "CreateAugmenter", "ForceResizeAug",
    "HorizontalFlipAug", "HueJitterAug", "ImageIter", "LightingAug", "RandomCropAug",
    "RandomGrayAug", "RandomOrderAug", "RandomSizedCropAug", "ResizeAug", "SaturationJitterAug",
    "SequentialAug"), "gpunda.image")
