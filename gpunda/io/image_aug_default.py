"""MXNet's default image augmenter (``aug_default``) for ImageRecordIter.

The steps and their order are those of MXNet 1.9.1's C++ augmenter: resize the
shorter edge, one affine warp (shear, rotation, random scale, aspect ratio,
size limits), constant padding, a crop (random-resized, random-size or the
plain centre/random crop to ``data_shape``), colour jitter (brightness,
contrast, saturation in random order), an HLS shift and PCA lighting noise.
Images are OpenCV BGR ``uint8`` arrays, HWC.  Random numbers come from the
NumPy ``RandomState`` the iterator gives per image, so the values drawn differ
from MXNet's ``mt19937``; the distributions are the same.
"""
from __future__ import annotations

import math

import numpy as np

from gpunda.base import GpundaError

__all__ = ["DefaultImageAugmenter", "AUG_DEFAULTS", "cv_inter"]

# parameter -> default, as MXNet's DefaultImageAugmentParam declares them
AUG_DEFAULTS = {
    "resize": -1, "rand_crop": False, "random_resized_crop": False, "max_rotate_angle": 0,
    "max_aspect_ratio": 0.0, "min_aspect_ratio": None, "max_shear_ratio": 0.0,
    "max_crop_size": -1, "min_crop_size": -1, "max_random_scale": 1.0,
    "min_random_scale": 1.0, "max_random_area": 1.0, "min_random_area": 1.0,
    "max_img_size": 1e10, "min_img_size": 0.0, "brightness": 0.0, "contrast": 0.0,
    "saturation": 0.0, "pca_noise": 0.0, "random_h": 0, "random_s": 0, "random_l": 0,
    "rotate": -1, "fill_value": 255, "inter_method": 1, "pad": 0, "rotate_list": (),
}
_INT_PARAMS = {"resize", "max_rotate_angle", "max_crop_size", "min_crop_size", "random_h",
               "random_s", "random_l", "rotate", "fill_value", "inter_method", "pad"}
_BOOL_PARAMS = {"rand_crop", "random_resized_crop"}

# ImageNet RGB eigenvectors scaled by their eigenvalues (AlexNet's lighting noise)
_PCA_EIGVEC = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                        [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                        [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]], np.float32)
_F32_1E10 = float(np.float32(1e10))


def _parse_bool(v):
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true")
    return bool(v)


def _parse_rotate_list(v):
    if isinstance(v, str):
        return tuple(int(s) for s in v.split(",") if s.strip())
    return tuple(int(s) for s in v)


def cv_inter(method, old_w, old_h, new_w, new_h, rng):
    """OpenCV interpolation flag for MXNet's ``inter_method`` (9: by scale, 10: random)."""
    if method == 9:
        if new_w > old_w and new_h > old_h:
            return 2        # cubic to enlarge
        if new_w < old_w and new_h < old_h:
            return 3        # area to shrink
        return 1
    if method == 10:
        return int(rng.randint(0, 5))
    return method


def resize_shorter(img, size, method, rng):
    """Scale ``img`` so its shorter edge is ``size`` (integer arithmetic as MXNet's)."""
    import cv2
    rows, cols = img.shape[:2]
    new_w, new_h = (size, size * rows // cols) if rows > cols else (size * cols // rows, size)
    return cv2.resize(img, (new_w, new_h),
                      interpolation=cv_inter(method, cols, rows, new_w, new_h, rng))


def saturate_affine(img, alpha, beta):
    """``saturate_cast<uchar>(alpha * img + beta)`` as OpenCV's ``convertTo`` computes it."""
    import cv2
    return cv2.addWeighted(img, float(alpha), img, 0.0, float(beta))


def _keep_shape(out, like):
    # OpenCV drops the channel axis of one-channel images
    return out.reshape(out.shape[:2] + like.shape[2:]) if out.ndim < like.ndim else out


def hls_shift(img, h, l, s):
    """Add ``(h, l, s)`` to an image's HLS channels, clamped to OpenCV's 8-bit ranges."""
    import cv2
    hls = cv2.cvtColor(img, cv2.COLOR_BGR2HLS).astype(np.int32)
    hls += np.array([h, l, s], np.int32)
    np.clip(hls, 0, np.array([180, 255, 255]), out=hls)
    return cv2.cvtColor(hls.astype(np.uint8), cv2.COLOR_HLS2BGR)


class DefaultImageAugmenter:
    """Callable ``(bgr_image, rng) -> bgr_image`` of ``data_shape[1:]`` pixels."""

    def __init__(self, data_shape, owner="ImageRecordIter", **kwargs):
        p = {}
        for k, default in AUG_DEFAULTS.items():
            v = kwargs.get(k, default)
            if k == "rotate_list":
                v = _parse_rotate_list(v)
            elif k == "min_aspect_ratio":
                v = None if v is None or v == "None" else float(v)
            elif k in _BOOL_PARAMS:
                v = _parse_bool(v)
            elif k in _INT_PARAMS:
                v = int(float(v))
            else:
                v = float(np.float32(v))
            p[k] = v
        self.p, self.owner = p, owner
        self.c, self.h, self.w = (int(s) for s in data_shape)
        if p["min_aspect_ratio"] is not None:
            self._ratio_range = (p["min_aspect_ratio"], p["max_aspect_ratio"])
        else:
            self._ratio_range = (1 - p["max_aspect_ratio"], 1 + p["max_aspect_ratio"])
        self._check()

    def _fail(self, msg):
        raise GpundaError(f"{self.owner}: {msg}")

    def _check(self):
        p = self.p
        if p["inter_method"] not in (0, 1, 2, 3, 4, 9, 10):
            self._fail(f"inter_method={p['inter_method']} is invalid (0-4, 9 or 10)")
        lo, hi = self._ratio_range
        self._affine = (p["max_rotate_angle"] > 0 or p["max_shear_ratio"] > 0 or p["rotate"] > 0
                        or p["rotate_list"] or p["max_random_scale"] != 1.0
                        or p["min_random_scale"] != 1.0
                        or (not p["random_resized_crop"] and (lo != 1.0 or hi != 1.0))
                        or p["max_img_size"] != _F32_1E10 or p["min_img_size"] != 0.0)
        if self._affine and p["inter_method"] == 0:
            self._fail("inter_method=0 is invalid with rotation, shear, scale or aspect "
                       "augmentation (1-4, 9 or 10)")
        crop_sized = p["max_crop_size"] != -1 or p["min_crop_size"] != -1
        if p["random_resized_crop"]:
            if (p["min_random_scale"] != 1.0 or p["max_random_scale"] != 1.0 or crop_sized
                    or p["rand_crop"]):
                self._fail("random_resized_crop=True conflicts with min_random_scale, "
                           "max_random_scale, min_crop_size, max_crop_size and rand_crop")
            self._resized_crop = (p["max_random_area"] != 1.0 or p["min_random_area"] != 1.0
                                  or lo != 1.0 or hi != 1.0)
            if self._resized_crop and not (lo > 0 and lo <= hi
                                           and p["min_random_area"] <= p["max_random_area"]):
                self._fail(f"random_resized_crop needs 0 < min_aspect_ratio <= max_aspect_ratio "
                           f"and min_random_area <= max_random_area, got aspect ratios "
                           f"[{lo}, {hi}], areas [{p['min_random_area']}, "
                           f"{p['max_random_area']}]")
        else:
            self._resized_crop = False
        self._sized_crop = crop_sized and not p["random_resized_crop"]
        if self._sized_crop and not 0 < p["min_crop_size"] <= p["max_crop_size"]:
            self._fail(f"min_crop_size={p['min_crop_size']} and max_crop_size="
                       f"{p['max_crop_size']} must satisfy 0 < min_crop_size <= max_crop_size")
        self._jitter = p["brightness"] > 0 or p["contrast"] > 0 or p["saturation"] > 0
        self._hls = p["random_h"] != 0 or p["random_s"] != 0 or p["random_l"] != 0
        # the jitter always runs its three steps (factor 1 for the unset ones), and the
        # gray-level and HLS conversions take BGR: MXNet's OpenCV calls fail otherwise
        if (self._jitter or self._hls or p["pca_noise"] > 0) and self.c != 3:
            self._fail(f"brightness, contrast, saturation, random_h/s/l and pca_noise need "
                       f"3-channel images, data_shape has {self.c}")

    def __call__(self, img, rng):
        p = self.p
        if p["resize"] != -1:
            img = resize_shorter(img, p["resize"], p["inter_method"], rng)
        if self._affine:
            img = self._warp(img, rng)
        if p["pad"] > 0:
            img = self._pad(img)
        cropped = None
        if self._resized_crop:
            cropped = self._random_resized_crop(img, rng)
        elif self._sized_crop:
            cropped = self._random_size_crop(img, rng)
        img = self._fit_crop(img, rng) if cropped is None else cropped
        if self._jitter:
            img = self._colour_jitter(img, rng)
        if self._hls:
            img = self._hls_noise(img, rng)
        if p["pca_noise"] > 0:
            img = self._pca_noise(img, rng)
        return img

    def _pad(self, img):
        import cv2
        n, v = self.p["pad"], self.p["fill_value"]
        return _keep_shape(cv2.copyMakeBorder(img, n, n, n, n, cv2.BORDER_CONSTANT,
                                              value=(v, v, v, v)), img)

    def affine_matrix(self, rows, cols, rng):
        """The 2x3 float32 warp matrix and output size ``(width, height)`` MXNet would use."""
        p, f32 = self.p, np.float32
        s = f32(rng.rand() * p["max_shear_ratio"] * 2 - p["max_shear_ratio"])
        angle = int(rng.randint(-p["max_rotate_angle"], p["max_rotate_angle"] + 1))
        if p["rotate"] > 0:
            angle = p["rotate"]
        if p["rotate_list"]:
            angle = p["rotate_list"][rng.randint(0, len(p["rotate_list"]))]
        a, b = f32(math.cos(angle / 180.0 * math.pi)), f32(math.sin(angle / 180.0 * math.pi))
        scale = ratio = f32(1.0)
        if not p["random_resized_crop"]:
            scale = f32(rng.rand() * (p["max_random_scale"] - p["min_random_scale"])
                        + p["min_random_scale"])
            lo, hi = self._ratio_range
            ratio = f32(rng.rand() * (hi - lo) + lo)
        hs = f32(2) * scale / (f32(1) + ratio)
        ws = ratio * hs
        new_w = max(f32(p["min_img_size"]), min(f32(p["max_img_size"]), scale * f32(cols)))
        new_h = max(f32(p["min_img_size"]), min(f32(p["max_img_size"]), scale * f32(rows)))
        m = np.empty((2, 3), np.float32)
        m[0, 0], m[0, 1] = hs * a - s * b * ws, hs * b + s * a * ws
        m[1, 0], m[1, 1] = -b * ws, a * ws
        m[0, 2] = (new_w - (m[0, 0] * f32(cols) + m[0, 1] * f32(rows))) / f32(2)
        m[1, 2] = (new_h - (m[1, 0] * f32(cols) + m[1, 1] * f32(rows))) / f32(2)
        return m, (int(new_w), int(new_h))

    def _warp(self, img, rng):
        import cv2
        rows, cols = img.shape[:2]
        m, size = self.affine_matrix(rows, cols, rng)
        inter = cv_inter(self.p["inter_method"], cols, rows, size[0], size[1], rng)
        v = self.p["fill_value"]
        return _keep_shape(cv2.warpAffine(img, m, size, flags=inter,
                                          borderMode=cv2.BORDER_CONSTANT,
                                          borderValue=(v, v, v, v)), img)

    def _resize_to_shape(self, roi, rng):
        import cv2
        inter = cv_inter(self.p["inter_method"], roi.shape[1], roi.shape[0], self.w, self.h, rng)
        return _keep_shape(cv2.resize(roi, (self.w, self.h), interpolation=inter), roi)

    def _random_resized_crop(self, img, rng):
        p = self.p
        rows, cols = img.shape[:2]
        lo, hi = self._ratio_range
        area = float(np.float32(rows * cols))
        for _ in range(10):
            target = area * (p["min_random_area"]
                             + rng.rand() * (p["max_random_area"] - p["min_random_area"]))
            ratio = lo + rng.rand() * (hi - lo)
            y_len = int(math.floor(math.sqrt(target / ratio) + 0.5))
            x_len = int(math.floor(math.sqrt(target * ratio) + 0.5))
            if rng.rand() > 0.5:
                y_len, x_len = x_len, y_len
            if y_len <= rows and x_len <= cols:
                y = rng.randint(0, rows - y_len + 1)
                x = rng.randint(0, cols - x_len + 1)
                return self._resize_to_shape(img[y:y + y_len, x:x + x_len], rng)
        return None

    def _random_size_crop(self, img, rng):
        p = self.p
        rows, cols = img.shape[:2]
        if cols < p["max_crop_size"] or rows < p["max_crop_size"]:
            self._fail(f"image of {rows}x{cols} pixels is smaller than max_crop_size="
                       f"{p['max_crop_size']}")
        size = int(rng.randint(p["min_crop_size"], p["max_crop_size"] + 1))
        y, x = rows - size, cols - size
        y, x = (rng.randint(0, y + 1), rng.randint(0, x + 1)) if p["rand_crop"] else (y // 2,
                                                                                      x // 2)
        return self._resize_to_shape(img[y:y + size, x:x + size], rng)

    def _fit_crop(self, img, rng):
        """Scale up an image smaller than data_shape, then crop data_shape (centre or random)."""
        import cv2
        h, w = self.h, self.w
        inter = cv_inter(self.p["inter_method"], img.shape[1], img.shape[0], w, h, rng)
        if img.shape[0] < h:
            img = _keep_shape(cv2.resize(img, (int(np.float32(h) / np.float32(img.shape[0])
                                                   * np.float32(img.shape[1])), h),
                                         interpolation=inter), img)
        if img.shape[1] < w:
            img = _keep_shape(cv2.resize(img, (w, int(np.float32(w) / np.float32(img.shape[1])
                                                      * np.float32(img.shape[0]))),
                                         interpolation=inter), img)
        if img.shape[0] < h or img.shape[1] < w:
            self._fail(f"image of {img.shape[0]}x{img.shape[1]} pixels is smaller than "
                       f"data_shape {h}x{w}")
        y, x = img.shape[0] - h, img.shape[1] - w
        y, x = (rng.randint(0, y + 1), rng.randint(0, x + 1)) if self.p["rand_crop"] else (y // 2,
                                                                                           x // 2)
        return img[y:y + h, x:x + w]

    def _colour_jitter(self, img, rng):
        import cv2
        p = self.p
        alphas = [1.0 + (rng.rand() * 2 - 1) * p[k] for k in ("brightness", "contrast",
                                                              "saturation")]
        for step in rng.permutation(3):
            alpha = float(np.float32(alphas[step]))
            if step == 0:
                img = saturate_affine(img, alpha, 0.0)
            elif step == 1:
                # MXNet converts its BGR pixels with the RGB weights: kept for equal output
                gray_mean = float(np.float32(cv2.mean(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY))[0]))
                img = saturate_affine(img, alpha, (1 - alpha) * gray_mean)
            else:
                gray = cv2.cvtColor(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2BGR)
                img = cv2.addWeighted(img, alpha, gray, 1 - alpha, 0.0)
        return img

    def _hls_noise(self, img, rng):
        p = self.p
        # (u + 4u') / 5 is a bell-shaped draw in [0, 1]: fewer extreme shifts than uniform
        r = [(rng.rand() + 4 * rng.rand()) / 5 for _ in range(3)]
        h, s, l = (int(np.float32(ri * m * 2 - m)) for ri, m in
                   zip(r, (p["random_h"], p["random_s"], p["random_l"])))
        return hls_shift(img, h, l, s)

    def _pca_noise(self, img, rng):
        alpha = rng.normal(0, self.p["pca_noise"], 3).astype(np.float32)
        rgb = _PCA_EIGVEC @ alpha
        noise = rgb[::-1].astype(np.float32)               # added to B, G, R
        out = np.trunc(img.astype(np.float32) + noise)
        return np.clip(out, 0, 255).astype(np.uint8)
