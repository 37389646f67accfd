"""MXNet's default detection augmenter (``det_aug_default``) for ImageDetRecordIter.

Order as in MXNet 1.9.1's C++ augmenter: resize the shorter edge, HLS and
contrast noise (each with its probability), mirror, random padding (zoom out),
a random crop from one of ``num_crop_sampler`` samplers (zoom in, constrained
by IoU / coverage against the ground-truth boxes), then fit to ``data_shape``
(``resize_mode``).  Boxes are ``[id, xmin, ymin, xmax, ymax, extra...]`` in
[0, 1] image coordinates and move with every geometric step; boxes with no
area are dropped, as MXNet does even when no augmentation is on.  Random
numbers come from the NumPy ``RandomState`` the iterator gives per image.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.io.image_aug_default import cv_inter, hls_shift, resize_shorter, saturate_affine

__all__ = ["DetLabel", "DefaultImageDetAugmenter", "DET_AUG_DEFAULTS"]

_SAMPLER_DEFAULTS = {"min_crop_scales": 0.0, "max_crop_scales": 1.0,
                     "min_crop_aspect_ratios": 1.0, "max_crop_aspect_ratios": 1.0,
                     "min_crop_overlaps": 0.0, "max_crop_overlaps": 1.0,
                     "min_crop_sample_coverages": 0.0, "max_crop_sample_coverages": 1.0,
                     "min_crop_object_coverages": 0.0, "max_crop_object_coverages": 1.0,
                     "max_crop_trials": 25}
DET_AUG_DEFAULTS = dict(
    resize=-1, rand_crop_prob=0.0, num_crop_sampler=1, crop_emit_mode="center",
    emit_overlap_thresh=0.3, rand_pad_prob=0.0, max_pad_scale=1.0, max_random_hue=0,
    random_hue_prob=0.0, max_random_saturation=0, random_saturation_prob=0.0,
    max_random_illumination=0, random_illumination_prob=0.0, max_random_contrast=0.0,
    random_contrast_prob=0.0, rand_mirror_prob=0.0, fill_value=127, inter_method=1,
    resize_mode="force", **_SAMPLER_DEFAULTS)
_INT_PARAMS = {"resize", "num_crop_sampler", "max_random_hue", "max_random_saturation",
               "max_random_illumination", "fill_value", "inter_method"}
_F32 = np.float32


def _tuple(v):
    if isinstance(v, str):
        v = [s for s in v.strip("()[] ").split(",") if s.strip()]
    return tuple(v) if isinstance(v, (tuple, list, np.ndarray)) else (v,)


def _intersection(a, b):
    """Area of the intersection of two ``(x, y, w, h)`` boxes (0 if they do not meet)."""
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


class DetLabel:
    """A flat detection label ``[header_width, object_width, header..., objects...]``."""

    def __init__(self, raw):
        raw = np.asarray(raw, np.float32)
        if raw.size < 7 or int(raw[0]) < 2 or int(raw[1]) < 5 \
                or (raw.size - int(raw[0])) % int(raw[1]):
            raise GpundaError(f"ImageDetRecordIter: a detection label of {raw.size} numbers must "
                              f"be a header of header_width >= 2 numbers then objects of "
                              f"object_width >= 5, got header_width {raw[0] if raw.size else '-'}"
                              f" and object_width {raw[1] if raw.size > 1 else '-'}")
        hw, ow = int(raw[0]), int(raw[1])
        self.header = raw[:hw].copy()
        objs = raw[hw:].reshape(-1, ow).copy()
        self.objects = objs[(objs[:, 3] > objs[:, 1]) & (objs[:, 4] > objs[:, 2])]

    def to_array(self):
        return np.concatenate([self.header, self.objects.ravel()])

    def boxes(self):
        """``(x, y, w, h)`` of every object."""
        o = self.objects
        return np.stack([o[:, 1], o[:, 2], o[:, 3] - o[:, 1], o[:, 4] - o[:, 2]], axis=1)

    @staticmethod
    def project(objects, box):
        """Objects in the coordinates of ``box`` (x, y, w, h), clipped to [0, 1]."""
        x, y, w, h = (_F32(v) for v in box)
        out = objects.copy()
        out[:, 1] = np.maximum(_F32(0), (out[:, 1] - x) / w)
        out[:, 2] = np.maximum(_F32(0), (out[:, 2] - y) / h)
        out[:, 3] = np.minimum(_F32(1), (objects[:, 3] - x) / w)
        out[:, 4] = np.minimum(_F32(1), (objects[:, 4] - y) / h)
        return out

    def mirror(self):
        left = self.objects[:, 1].copy()
        self.objects[:, 1] = 1 - self.objects[:, 3]
        self.objects[:, 3] = 1 - left

    def pad(self, box):
        self.objects = self.project(self.objects, box)

    def try_crop(self, box, s, emit_mode, emit_thresh):
        """Crop to ``box`` if some box meets sampler ``s``'s constraints and an object stays."""
        if len(self.objects) == 0:
            return True
        gts = self.boxes()
        area = box[2] * box[3]
        checks = [(s["min_crop_overlaps"], s["max_crop_overlaps"],
                   lambda i, g: i / (area + g[2] * g[3] - i) if i > 0 else 0.0),
                  (s["min_crop_sample_coverages"], s["max_crop_sample_coverages"],
                   lambda i, g: i / area),
                  (s["min_crop_object_coverages"], s["max_crop_object_coverages"],
                   lambda i, g: i / (g[2] * g[3]))]
        checks = [c for c in checks if c[0] > 0 or c[1] < 1]
        if checks and not any(all(lo <= f(_intersection(box, g), g) <= hi for lo, hi, f in checks)
                              for g in gts):
            return False
        if emit_mode == "center":
            cx = (self.objects[:, 1] + self.objects[:, 3]) * _F32(0.5)
            cy = (self.objects[:, 2] + self.objects[:, 4]) * _F32(0.5)
            keep = (cx >= box[0]) & (cx < box[0] + box[2]) & (cy >= box[1]) & (cy < box[1] + box[3])
        else:
            keep = np.array([_intersection(box, g) / (g[2] * g[3]) > emit_thresh for g in gts],
                            bool)
        if not keep.any():
            return False
        self.objects = self.project(self.objects[keep], box)
        return True


class DefaultImageDetAugmenter:
    """Callable ``(bgr_image, raw_label, rng) -> (bgr_image, new_raw_label)``."""

    def __init__(self, data_shape, owner="ImageDetRecordIter", **kwargs):
        self.owner = owner
        self.c, self.h, self.w = (int(s) for s in data_shape)
        p = {}
        for k, default in DET_AUG_DEFAULTS.items():
            v = kwargs.get(k, default)
            if k in _SAMPLER_DEFAULTS:
                cast = int if k == "max_crop_trials" else (lambda x: float(_F32(x)))
                v = tuple(cast(float(x)) for x in _tuple(v))
            elif k in ("crop_emit_mode", "resize_mode"):
                v = str(v)
            elif k in _INT_PARAMS:
                v = int(float(v))
            else:
                v = float(_F32(v))
            p[k] = v
        self.p = p
        self._check()

    def _fail(self, msg):
        raise GpundaError(f"{self.owner}: {msg}")

    def _check(self):
        p, n = self.p, self.p["num_crop_sampler"]
        if p["inter_method"] not in (0, 1, 2, 3, 4, 9, 10):
            self._fail(f"inter_method={p['inter_method']} is invalid (0-4, 9 or 10)")
        if p["crop_emit_mode"] not in ("center", "overlap"):
            self._fail(f"crop_emit_mode={p['crop_emit_mode']!r} must be 'center' or 'overlap'")
        if p["resize_mode"] not in ("force", "shrink", "fit"):
            self._fail(f"resize_mode={p['resize_mode']!r} must be 'force', 'shrink' or 'fit'")
        if p["emit_overlap_thresh"] < 0:
            self._fail(f"emit_overlap_thresh={p['emit_overlap_thresh']} must be >= 0")
        for k in _SAMPLER_DEFAULTS:
            if n == 1 and len(p[k]) != 1 or n > 1 and len(p[k]) not in (1, n):
                self._fail(f"{k}={p[k]} must have one value or one per crop sampler "
                           f"(num_crop_sampler={n})")
            if n > 1 and len(p[k]) == 1:
                p[k] = p[k] * n
        self.samplers = [{k: p[k][i] for k in _SAMPLER_DEFAULTS} for i in range(max(n, 0))]
        for i, s in enumerate(self.samplers):
            bad = [f"{a}={s[a]} > {b}={s[b]}" for a, b in
                   (("min_crop_aspect_ratios", "max_crop_aspect_ratios"),
                    ("min_crop_overlaps", "max_crop_overlaps"),
                    ("min_crop_sample_coverages", "max_crop_sample_coverages"),
                    ("min_crop_object_coverages", "max_crop_object_coverages")) if s[a] > s[b]]
            if not 0 <= s["min_crop_scales"] < s["max_crop_scales"] <= 1:
                bad.append(f"crop scales [{s['min_crop_scales']}, {s['max_crop_scales']}] "
                           f"must satisfy 0 <= min < max <= 1")
            if s["min_crop_aspect_ratios"] < 0:
                bad.append(f"min_crop_aspect_ratios={s['min_crop_aspect_ratios']} < 0")
            if bad:
                self._fail(f"crop sampler {i}: " + "; ".join(bad))

    def __call__(self, img, raw_label, rng):
        p = self.p
        if p["resize"] != -1:
            img = resize_shorter(img, p["resize"], p["inter_method"], rng)
        label = DetLabel(raw_label)
        if (p["random_hue_prob"] > 0 or p["random_saturation_prob"] > 0
                or p["random_illumination_prob"] > 0 or p["random_contrast_prob"] > 0):
            img = self._colour(img, rng)
        if p["rand_mirror_prob"] > 0 and rng.rand() < p["rand_mirror_prob"]:
            label.mirror()
            img = img[:, ::-1]
        if p["rand_pad_prob"] > 0 and p["max_pad_scale"] > 1 and rng.rand() < p["rand_pad_prob"]:
            img = self._pad(img, label, rng)
        if p["rand_crop_prob"] > 0 and self.samplers and rng.rand() < p["rand_crop_prob"]:
            img = self._crop(img, label, rng)
        return self._fit(img, rng), label.to_array()

    def _colour(self, img, rng):
        p = self.p
        h, s, l = (int(_F32((rng.rand() * 2 - 1) * p[k])) for k in
                   ("max_random_hue", "max_random_saturation", "max_random_illumination"))
        c = float(_F32((rng.rand() * 2 - 1) * p["max_random_contrast"]))
        h = h if rng.rand() < p["random_hue_prob"] else 0
        s = s if rng.rand() < p["random_saturation_prob"] else 0
        l = l if rng.rand() < p["random_illumination_prob"] else 0
        c = c if rng.rand() < p["random_contrast_prob"] else 0.0
        if h or s or l:
            if img.shape[2] != 3:
                self._fail(f"random hue/saturation/illumination need 3-channel images, "
                           f"data_shape has {self.c}")
            img = hls_shift(np.ascontiguousarray(img), h, l, s)
        if abs(c) > 1e-3:
            img = saturate_affine(np.ascontiguousarray(img), c + 1.0, 0.0).reshape(img.shape)
        return img

    def _pad(self, img, label, rng):
        import cv2
        scale = float(_F32(1 + rng.rand() * (self.p["max_pad_scale"] - 1)))
        if scale < 1.05:        # too little zoom-out to be worth it
            return img
        x0, y0 = (float(_F32(rng.rand() * (scale - 1))) for _ in range(2))
        label.pad((-x0, -y0, scale, scale))
        rows, cols = img.shape[:2]
        top, left = int(y0 * rows), int(x0 * cols)
        bottom, right = int((scale - y0 - 1) * rows), int((scale - x0 - 1) * cols)
        v = self.p["fill_value"]
        out = cv2.copyMakeBorder(np.ascontiguousarray(img), top, bottom, left, right,
                                 cv2.BORDER_CONSTANT, value=(v, v, v, v))
        return out.reshape(out.shape[:2] + img.shape[2:])

    @staticmethod
    def crop_box(s, img_aspect, rng):
        """A random crop ``(x, y, w, h)`` in [0, 1] coordinates for sampler ``s``."""
        scale = _F32(s["min_crop_scales"] + rng.rand() * (s["max_crop_scales"]
                                                          - s["min_crop_scales"])) + _F32(1e-12)
        lo = max(s["min_crop_aspect_ratios"] / img_aspect, scale * scale)
        hi = min(s["max_crop_aspect_ratios"] / img_aspect, 1.0 / (scale * scale))
        ratio = _F32(np.sqrt(_F32(lo + rng.rand() * (hi - lo))))
        w, h = min(_F32(1), scale * ratio), min(_F32(1), scale / ratio)
        x0 = _F32(rng.rand() * (1 - w))
        y0 = _F32(rng.rand() * (1 - h))
        return (float(x0), float(y0), float(w), float(h))

    def _crop(self, img, label, rng):
        rows, cols = img.shape[:2]
        for i in rng.permutation(len(self.samplers)):
            s = self.samplers[i]
            for _ in range(s["max_crop_trials"]):
                box = self.crop_box(s, cols / rows, rng)
                if label.try_crop(box, s, self.p["crop_emit_mode"],
                                  self.p["emit_overlap_thresh"]):
                    x, y = int(box[0] * cols), int(box[1] * rows)
                    w, h = max(1, int(box[2] * cols)), max(1, int(box[3] * rows))
                    return img[y:y + h, x:x + w]
        return img

    def _fit(self, img, rng):
        import cv2
        rows, cols = img.shape[:2]
        mode, h, w = self.p["resize_mode"], self.h, self.w
        if mode == "force":
            new_h, new_w = h, w
        else:
            if mode == "shrink" and rows <= h and cols <= w:
                return img
            ratio = min(_F32(h) / _F32(rows), _F32(w) / _F32(cols))
            new_h, new_w = int(ratio * _F32(rows)), int(ratio * _F32(cols))
        inter = cv_inter(self.p["inter_method"], cols, rows, new_w, new_h, rng)
        out = cv2.resize(np.ascontiguousarray(img), (new_w, new_h), interpolation=inter)
        return out.reshape(out.shape[:2] + img.shape[2:])
