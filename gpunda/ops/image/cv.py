"""MXNet's OpenCV ops (src/io/image_io.cc, and the legacy ``_imdecode`` of
src/ndarray/ndarray.cc): decode, read, resize and pad HWC images on the host.

OpenCV is imported when one of them first runs (``pip install 'gpunda[image]'``); results
go back to the input's device. ``_cvimdecode``/``_cvimread``/``_cvimresize`` are also
``_npi_cv*`` (MXNet's aliases, ops/_mxnet_aliases.py).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register

_FAMILY = "image_io"


def _cv2(name):
    try:
        import cv2
    except ImportError:
        raise GpundaError(f"Operator {name} needs OpenCV: pip install 'gpunda[image]' "
                          f"(opencv-python-headless)") from None
    return cv2


def _host(x):
    get = getattr(x, "get", None)
    return np.asarray(get() if get is not None else x)


def _hwc(img):
    return img[:, :, None] if img.ndim == 2 else img


def _decode(name, raw, flag, to_rgb):
    cv2 = _cv2(name)
    raw = np.ascontiguousarray(raw.reshape(-1)).view(np.uint8)
    if raw.size == 0:
        raise GpundaError(f"Operator {name}: Input cannot be an empty buffer")
    try:
        img = cv2.imdecode(raw, cv2.IMREAD_COLOR if flag else cv2.IMREAD_GRAYSCALE)
    except cv2.error as e:      # MXNet reports OpenCV's failures as MXNetError
        img = None
        detail = f" (OpenCV: {str(e).strip()})"
    else:
        detail = ""
    if img is None:
        raise GpundaError(f"Operator {name}: Decoding failed. Invalid image file: the "
                          f"{raw.size} bytes given are not an image OpenCV can decode{detail}")
    if img.ndim == 3 and to_rgb:
        img = img[:, :, ::-1]
    return np.ascontiguousarray(_hwc(img))


_DECODE = [Param("flag", "int", 1, "1: colour (3 channels), 0: grey (1 channel)"),
           Param("to_rgb", "bool", True, "RGB order (MXNet's); False keeps OpenCV's BGR")]


def _cvimdecode(xp, p, buf):
    if buf.dtype != np.uint8:
        raise GpundaError(f"Operator _cvimdecode: buf must be a uint8 array of encoded bytes, "
                          f"got dtype {buf.dtype}")
    return xp.asarray(_decode("_cvimdecode", _host(buf), p.flag, p.to_rgb))


def _cvimread(xp, p, ctx):
    try:
        with open(p.filename, "rb") as f:
            data = f.read()
    except OSError as e:
        raise GpundaError(f"Operator _cvimread: cannot read {p.filename!r}: {e.strerror}") \
            from None
    return xp.asarray(_decode("_cvimread", np.frombuffer(data, np.uint8), p.flag, p.to_rgb))


def _cvimresize(xp, p, src):
    cv2 = _cv2("_cvimresize")
    if p.w <= 0 or p.h <= 0:
        raise GpundaError(f"Operator _cvimresize: w={p.w} and h={p.h} must be positive")
    if p.interp not in (0, 1, 2, 3, 4):
        raise GpundaError(f"Operator _cvimresize: interp={p.interp} must be 0 (nearest), "
                          f"1 (bilinear), 2 (bicubic), 3 (area) or 4 (Lanczos)")
    img = _host(src)
    return xp.asarray(_hwc(cv2.resize(img, (p.w, p.h), interpolation=p.interp)))


def _cvcopymakeborder(xp, p, src):
    cv2 = _cv2("_cvcopyMakeBorder")
    if p.type not in (0, 1, 2, 3, 4):
        raise GpundaError(f"Operator _cvcopyMakeBorder: type={p.type} must be 0 (constant), "
                          f"1 (replicate), 2 (reflect), 3 (wrap) or 4 (reflect_101)")
    if min(p.top, p.bot, p.left, p.right) < 0:
        raise GpundaError(f"Operator _cvcopyMakeBorder: margins top={p.top} bot={p.bot} "
                          f"left={p.left} right={p.right} must be >= 0")
    fill = [float(v) for v in p.values] if len(p.values) else [p.value] * 4
    img = _host(src)
    res = cv2.copyMakeBorder(img, p.top, p.bot, p.left, p.right, p.type, value=fill)
    return xp.asarray(_hwc(res))


register(OpDef("_cvimdecode", _cvimdecode, inputs=("buf",), params=_DECODE, nondiff=True,
               save=(), hidden=True, family=_FAMILY, capture="host OpenCV",
               doc="Decode an encoded image (uint8 bytes) to HWC uint8 with OpenCV."))
register(OpDef("_cvimread", _cvimread, inputs=(), wants_ctx=True, nondiff=True, save=(),
               hidden=True, family=_FAMILY, capture="host OpenCV",
               params=[Param("filename", "str", doc="the image file")] + _DECODE,
               doc="Read and decode an image file to HWC uint8 with OpenCV."))
register(OpDef("_cvimresize", _cvimresize, inputs=("src",), nondiff=True, save=(),
               hidden=True, family=_FAMILY, capture="host OpenCV",
               params=[Param("w", "int"), Param("h", "int"), Param("interp", "int", 1)],
               doc="Resize an HWC image to (h, w) with OpenCV (interp as cv2's codes)."))
register(OpDef("_cvcopyMakeBorder", _cvcopymakeborder, inputs=("src",), nondiff=True, save=(),
               hidden=True, family=_FAMILY, capture="host OpenCV",
               params=[Param("top", "int"), Param("bot", "int"), Param("left", "int"),
                       Param("right", "int"), Param("type", "int", 0),
                       Param("value", "float", 0.0), Param("values", "floats", ())],
               doc="Pad an HWC image's border with OpenCV (type as cv2's border codes; "
                   "values per channel, or the single value)."))


def _imdecode(xp, p, mean):
    cv2 = _cv2("_imdecode")
    data = p.str_img.encode("latin-1") if isinstance(p.str_img, str) else bytes(p.str_img)
    raw = np.frombuffer(data[:p.size] if p.size else data, np.uint8)
    img = cv2.imdecode(raw, cv2.IMREAD_GRAYSCALE if p.c == 1 else cv2.IMREAD_UNCHANGED) \
        if raw.size else None
    if img is None:
        raise GpundaError("Operator _imdecode: OpenCV failed to decode the image")
    img = _hwc(img)
    x0, y0, x1, y1 = p.x0, p.y0, p.x1, p.y1
    if y1 == y0:                    # no crop box: the whole image
        x0, y0, x1, y1 = 0, 0, img.shape[1], img.shape[0]
    if p.c > img.shape[2] or x1 > img.shape[1] or y1 > img.shape[0] or x0 > x1 or y0 > y1:
        raise GpundaError(f"Operator _imdecode: c={p.c} and box ({x0}, {y0}, {x1}, {y1}) do "
                          f"not fit the decoded image of shape {img.shape}")
    chw = np.transpose(img[y0:y1, x0:x1, :p.c], (2, 0, 1)).astype(mean.dtype)
    m = _host(mean)
    if m.size:
        if m.shape != chw.shape:
            raise GpundaError(f"Operator _imdecode: mean has shape {m.shape}, the crop is "
                              f"{chw.shape} (c, h, w)")
        chw = chw - m
    return xp.asarray(chw)


register(OpDef("_imdecode", _imdecode, inputs=("mean",), nondiff=True, save=(), hidden=True,
               family=_FAMILY, capture="host OpenCV",
               params=[Param("index", "int", 0, "accepted; the result is one (c, h, w) image"),
                       Param("x0", "int", 0), Param("y0", "int", 0), Param("x1", "int", 0),
                       Param("y1", "int", 0), Param("c", "int", 3), Param("size", "int", 0),
                       Param("str_img", "any", b"", "the encoded image bytes")],
               doc="MXNet's legacy decode: the image (OpenCV's channel order) cropped to "
                   "(x0, y0, x1, y1), channels first, minus mean (same shape; an empty "
                   "mean subtracts nothing)."))
