"""Detection augmenters of ``mx.image.detection``: callables ``aug(src, label) -> (src, label)``.

``src`` is an HWC image NDArray; ``label`` a NumPy array with one row per object,
``[class_id, xmin, ymin, xmax, ymax, extra...]``, coordinates as fractions of the image's
width and height. Random choices use Python's ``random``, as MXNet's do.
"""
from __future__ import annotations

import logging
import math
import random
import warnings

import numpy as np

from gpunda import ndarray as nd
from gpunda.base import GpundaError, numeric_types
from gpunda.image.augmenters import (Augmenter, CastAug, ColorJitterAug, ColorNormalizeAug,
                         ForceResizeAug, HueJitterAug, LightingAug, RandomGrayAug, ResizeAug,
                         _EIGVAL, _EIGVEC, _MEAN, _STD)
from gpunda.image.image import copyMakeBorder, fixed_crop

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
           "DetRandomCropAug", "DetRandomPadAug", "CreateMultiRandCropAugmenter",
           "CreateDetAugmenter"]

_log = logging.getLogger(__name__)


class DetAugmenter:
    """Base class of the detection augmenters; keyword arguments are kept for ``dumps()``."""

    __init__ = Augmenter.__init__
    dumps = Augmenter.dumps

    def __call__(self, src, label):
        raise NotImplementedError(f"{type(self).__name__} must define __call__")


class DetBorrowAug(DetAugmenter):
    """Apply a classification ``Augmenter`` to the image only (for augmenters that do not
    move pixels: colour, cast, normalisation, or resizes, since boxes are fractions)."""

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError("Borrowing from invalid Augmenter")
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        return [type(self).__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """Apply one augmenter of ``aug_list`` chosen at random, or (probability ``skip_prob``)
    none."""

    def __init__(self, aug_list, skip_prob=0):
        super().__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError("Allow DetAugmenter in list only")
        self.aug_list = list(aug_list)
        self.skip_prob = skip_prob if self.aug_list else 1

    def dumps(self):
        return [type(self).__name__.lower(), [a.dumps() for a in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)   # MXNet picks by shuffling the list itself
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """Mirror the image left-right with probability ``p``; boxes become
    ``xmin' = 1 - xmax``, ``xmax' = 1 - xmin`` (the label is updated in place)."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
            self._flip_label(label)
        return src, label

    @staticmethod
    def _flip_label(label):
        xmin = 1.0 - label[:, 3]
        label[:, 3] = 1.0 - label[:, 1]
        label[:, 1] = xmin


def _pair(value, what, where):
    if isinstance(value, (tuple, list)):
        return tuple(value)
    if not isinstance(value, numeric_types):
        raise GpundaError(f"{where}: {what}={value!r} must be a number or a (min, max) pair")
    _log.info("Using fixed %s: %s in %s", what, value, where)
    return (value, value)


def _box_areas(boxes):
    """Areas of ``[xmin, ymin, xmax, ymax]`` rows (0 for inverted boxes)."""
    return np.maximum(0, boxes[:, 3] - boxes[:, 1]) * np.maximum(0, boxes[:, 2] - boxes[:, 0])


class DetRandomCropAug(DetAugmenter):
    """Crop a random region of aspect ratio in ``aspect_ratio_range`` and area fraction in
    ``area_range`` such that every object it overlaps is covered more than
    ``min_object_covered``; objects left with less than ``min_eject_coverage`` of their
    area are dropped. After ``max_attempts`` failed proposals the sample is unchanged."""

    def __init__(self, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                 area_range=(0.05, 1.0), min_eject_coverage=0.3, max_attempts=50):
        aspect_ratio_range = _pair(aspect_ratio_range, "aspect ratio", "DetRandomCropAug")
        area_range = _pair(area_range, "area range", "DetRandomCropAug")
        super().__init__(min_object_covered=min_object_covered,
                         aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range, self.area_range = aspect_ratio_range, area_range
        self.enabled = False
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            warnings.warn(f"Skip DetRandomCropAug due to invalid area_range: {area_range}")
        elif aspect_ratio_range[0] > aspect_ratio_range[1] or aspect_ratio_range[0] <= 0:
            warnings.warn(f"Skip DetRandomCropAug due to invalid aspect_ratio_range: "
                          f"{aspect_ratio_range}")
        else:
            self.enabled = True

    def __call__(self, src, label):
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _intersect(self, boxes, xmin, ymin, xmax, ymax):
        """Boxes clipped to the region; all-zero rows for those outside it."""
        out = boxes.copy()
        out[:, 0] = np.maximum(boxes[:, 0], xmin)
        out[:, 1] = np.maximum(boxes[:, 1], ymin)
        out[:, 2] = np.minimum(boxes[:, 2], xmax)
        out[:, 3] = np.minimum(boxes[:, 3], ymax)
        out[(out[:, 0] >= out[:, 2]) | (out[:, 1] >= out[:, 3]), :] = 0
        return out

    def _check_satisfy_constraints(self, label, xmin, ymin, xmax, ymax, width, height):
        """Whether the pixel region covers each object it touches by > min_object_covered."""
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False
        areas = _box_areas(label[:, 1:])
        valid = np.where(areas * width * height > 2)[0]
        if valid.size < 1:
            return False
        clipped = self._intersect(label[valid, 1:], float(xmin) / width, float(ymin) / height,
                                  float(xmax) / width, float(ymax) / height)
        coverages = _box_areas(clipped) / areas[valid]
        coverages = coverages[coverages > 0]
        return coverages.size > 0 and np.amin(coverages) > self.min_object_covered

    def _update_labels(self, label, crop_box, height, width):
        """Boxes in the crop's coordinates, without the ejected ones (None if none is left)."""
        x0, y0 = float(crop_box[0]) / width, float(crop_box[1]) / height
        w, h = float(crop_box[2]) / width, float(crop_box[3]) / height
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] - x0) / w
        out[:, (2, 4)] = (out[:, (2, 4)] - y0) / h
        out[:, 1:5] = np.clip(out[:, 1:5], 0, 1)
        coverage = _box_areas(out[:, 1:]) * w * h / _box_areas(label[:, 1:])
        keep = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]) & \
            (coverage > self.min_eject_coverage)
        return out[keep] if keep.any() else None

    def _random_crop_proposal(self, label, height, width):
        for ratio, h, max_h, min_area, max_area in _shape_attempts(self, height, width):
            if round(max_h * ratio) > width:
                max_h = int((width + 0.4999999) / ratio)   # largest h with round(h*ratio) <= width
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            area = w * h
            # rounding may leave the area just outside the range: one step back in
            if area < min_area:
                h += 1
                w = int(round(h * ratio))
                area = w * h
            if area > max_area:
                h -= 1
                w = int(round(h * ratio))
                area = w * h
            if not (min_area <= area <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._check_satisfy_constraints(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()



def _shape_attempts(aug, height, width):
    """The attempts of a random crop or pad proposal (MXNet's shared loop): per attempt
    the drawn aspect ratio, the heights that give ``area_range``'s smallest and largest
    area at it, and those areas; none when ``aug`` is disabled or the image empty."""
    if not aug.enabled or height <= 0 or width <= 0:
        return
    min_area = aug.area_range[0] * height * width
    max_area = aug.area_range[1] * height * width
    for _ in range(aug.max_attempts):
        ratio = random.uniform(*aug.aspect_ratio_range)
        if ratio <= 0:
            continue
        yield (ratio, int(round(math.sqrt(min_area / ratio))),
               int(round(math.sqrt(max_area / ratio))), min_area, max_area)

class DetRandomPadAug(DetAugmenter):
    """Place the image at a random spot of a larger canvas (area ``area_range`` times the
    image's, aspect ratio in ``aspect_ratio_range``) filled with ``pad_val``."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0),
                 max_attempts=50, pad_val=(128, 128, 128)):
        if not isinstance(pad_val, (list, tuple)) and not isinstance(pad_val, numeric_types):
            raise GpundaError(f"DetRandomPadAug: pad_val={pad_val!r} must be a number or "
                              f"per-channel values")
        aspect_ratio_range = _pair(aspect_ratio_range, "aspect ratio", "DetRandomPadAug")
        area_range = _pair(area_range, "area range", "DetRandomPadAug")
        super().__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         max_attempts=max_attempts, pad_val=pad_val)
        self.pad_val = pad_val
        self.aspect_ratio_range, self.area_range = aspect_ratio_range, area_range
        self.max_attempts = max_attempts
        self.enabled = False
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            warnings.warn(f"Skip DetRandomPadAug due to invalid parameters: {area_range}")
        elif aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            warnings.warn(f"Skip DetRandomPadAug due to invalid aspect_ratio_range: "
                          f"{aspect_ratio_range}")
        else:
            self.enabled = True

    def __call__(self, src, label):
        height, width = src.shape[0], src.shape[1]
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            fill = dict(values=tuple(self.pad_val)) if isinstance(self.pad_val, (list, tuple)) \
                else dict(value=float(self.pad_val))
            src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, **fill)
        return src, label

    @staticmethod
    def _update_labels(label, pad_box, height, width):
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label, height, width):
        for ratio, h, max_h, _, _ in _shape_attempts(self, height, width):
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)
            h = max(h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue   # a margin this thin does not help
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return (x, y, w, h, self._update_labels(label, (x, y, w, h), height, width))
        return ()


def CreateMultiRandCropAugmenter(min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                                 area_range=(0.05, 1.0), min_eject_coverage=0.3,
                                 max_attempts=50, skip_prob=0):
    """A ``DetRandomSelectAug`` over several ``DetRandomCropAug``: each parameter is one
    value for all of them or a list with one value per crop augmenter."""
    params = [p if isinstance(p, list) else [p] for p in
              (min_object_covered, aspect_ratio_range, area_range, min_eject_coverage,
               max_attempts)]
    num = max(len(p) for p in params)
    for k, p in enumerate(params):
        if len(p) != num:
            if len(p) != 1:
                raise GpundaError(f"CreateMultiRandCropAugmenter: parameter lists must have "
                                  f"1 or {num} entries, got {len(p)}")
            params[k] = p * num
    augs = [DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar,
                             min_eject_coverage=mec, max_attempts=ma)
            for moc, arr, ar, mec, ma in zip(*params)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def _stats(value, default, what):
    if value is True:
        return np.array(default)
    if value is not None and not (isinstance(value, np.ndarray) and value.shape[0] in (1, 3)):
        raise GpundaError(f"CreateDetAugmenter: {what} must be True, None or a NumPy array of "
                          f"1 or 3 values, got {value!r}")
    return value


def CreateDetAugmenter(data_shape, resize=0, rand_crop=0, rand_pad=0, rand_gray=0,
                       rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                       saturation=0, pca_noise=0, hue=0, inter_method=2, min_object_covered=0.1,
                       aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 3.0),
                       min_eject_coverage=0.3, max_attempts=50, pad_val=(127, 127, 127)):
    """MXNet's detection augmenter list for ``data_shape`` (C, H, W): resize, random crop
    (probability ``rand_crop``), mirror, random pad (``rand_pad``), force resize, cast,
    colour jitter, hue, PCA lighting, random grey, normalisation, in that order."""
    augs = []
    if resize > 0:
        augs.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        augs.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range,
                                                 area_range, min_eject_coverage, max_attempts,
                                                 skip_prob=1 - rand_crop))
    if rand_mirror > 0:
        augs.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:   # padding late: the canvas is bigger than the image
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        augs.append(DetRandomSelectAug([pad], 1 - rand_pad))
    augs.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    augs.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        augs.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        augs.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        augs.append(DetBorrowAug(LightingAug(pca_noise, _EIGVAL, _EIGVEC)))
    if rand_gray > 0:
        augs.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean, std = _stats(mean, _MEAN, "mean"), _stats(std, _STD, "std")
    if mean is not None or std is not None:
        augs.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return augs
