"""``mx.image.detection`` (also ``mx.image.det``): ``ImageDetIter`` and the detection
augmenters.

A detection label is stored flat, as im2rec packs it:
``[header_width, object_width, header extras..., obj0..., obj1..., ...]``: the first
``header_width`` (>= 2) numbers are the header, then one row of ``object_width`` (>= 5)
numbers per object, ``[class_id, xmin, ymin, xmax, ymax, extra...]`` with coordinates as
fractions of the image size. A batch's label is ``(batch_size, max_objects, object_width)``,
rows past a sample's objects filled with -1.
"""
from __future__ import annotations

import logging
import warnings

import numpy as np

from gpunda import ndarray as nd
from gpunda.base import GpundaError
from gpunda.io.io import DataBatch
from gpunda.image.det_augmenters import (DetAugmenter, DetBorrowAug, DetRandomSelectAug,  # noqa: F401
                             DetHorizontalFlipAug, DetRandomCropAug, DetRandomPadAug,
                             CreateMultiRandCropAugmenter, CreateDetAugmenter)
from gpunda.image.image_iter import ImageIter

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
           "DetRandomCropAug", "DetRandomPadAug", "CreateMultiRandCropAugmenter",
           "CreateDetAugmenter", "ImageDetIter"]

_log = logging.getLogger(__name__)


def parse_det_label(label):
    """The ``(objects, object_width)`` rows of a flat detection label, keeping the objects
    with xmax > xmin and ymax > ymin. RuntimeError (the sample is skipped by the iterator)
    for a malformed label."""
    raw = (label.asnumpy() if isinstance(label, nd.NDArray) else np.asarray(label)).ravel()
    if raw.size < 7:
        raise RuntimeError(f"Label shape is invalid: {raw.shape}")
    header_width, obj_width = int(raw[0]), int(raw[1])
    if header_width < 2 or obj_width < 5 or (raw.size - header_width) % obj_width != 0:
        raise RuntimeError(f"Label shape {raw.shape} inconsistent with annotation width "
                           f"{obj_width} (header width {header_width})")
    out = raw[header_width:].reshape(-1, obj_width)
    valid = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2])
    if not valid.any():
        raise RuntimeError("Encounter sample with no valid label.")
    return out[valid]


class ImageDetIter(ImageIter):
    """ImageIter for object detection: images with box labels, augmented together by
    ``aug_list`` (by default ``CreateDetAugmenter(data_shape, **kwargs)``). The label shape
    ``(max objects, object width)`` is found by reading every label once at construction."""

    def __init__(self, batch_size, data_shape, path_imgrec=None, path_imglist=None,
                 path_root=None, path_imgidx=None, shuffle=False, part_index=0, num_parts=1,
                 aug_list=None, imglist=None, data_name="data", label_name="label",
                 last_batch_handle="pad", **kwargs):
        super().__init__(batch_size=batch_size, data_shape=data_shape,
                         path_imgrec=path_imgrec, path_imglist=path_imglist,
                         path_root=path_root, path_imgidx=path_imgidx, shuffle=shuffle,
                         part_index=part_index, num_parts=num_parts, aug_list=[],
                         imglist=imglist, data_name=data_name, label_name=label_name,
                         last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (self.batch_size,) + label_shape)]
        self.label_shape = label_shape

    def _parse_label(self, label):
        return parse_det_label(label)

    def _check_valid_label(self, label):
        """RuntimeError unless ``label`` is (objects, >= 5) with one valid object."""
        if label.ndim != 2 or label.shape[1] < 5:
            raise RuntimeError(f"Label with shape (1+, 5+) required, {label} received.")
        valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not valid.any():
            raise RuntimeError("Invalid label occurs.")

    def _estimate_label_shape(self):
        """(most objects of any sample, object width), over the whole data."""
        max_count, width = 0, None
        self.reset()
        try:
            while True:
                label = self._parse_label(self.next_sample()[0])
                max_count, width = max(max_count, label.shape[0]), label.shape[1]
        except StopIteration:
            pass
        self.reset()
        if width is None:
            raise GpundaError(f"{type(self).__name__}: the data has no samples")
        return (max_count, width)

    def reshape(self, data_shape=None, label_shape=None):
        """Change the data shape (C, H, W) and/or the label shape (objects, width); the
        object count may only grow."""
        if data_shape is not None:
            data_shape = tuple(data_shape)
            self.check_data_shape(data_shape)
            self.provide_data = [(self.provide_data[0][0], (self.batch_size,) + data_shape)]
            self.data_shape = data_shape
        if label_shape is not None:
            label_shape = tuple(label_shape)
            self.check_label_shape(label_shape)
            self.provide_label = [(self.provide_label[0][0], (self.batch_size,) + label_shape)]
            self.label_shape = label_shape

    def check_label_shape(self, label_shape):
        """ValueError unless ``label_shape`` is (objects >= current, same object width)."""
        if len(label_shape) != 2:
            raise ValueError("label_shape should have length 2")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError(f"Attempts to reduce label count from {self.label_shape[0]} to "
                             f"{label_shape[0]}, not allowed.")
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError(f"label_shape object width inconsistent: "
                             f"{self.provide_label[0][1][2]} vs {label_shape[1]}.")

    def augmentation_transform(self, data, label):  # pylint: disable=arguments-differ
        """Apply the detection augmenters in order to (image, label)."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def _store_label(self, batch_label, i, label):
        rows, width = batch_label.shape[1:]
        if label.shape[0] > rows or label.shape[1] != width:
            raise GpundaError(f"{type(self).__name__}: a sample has {label.shape[0]} objects "
                              f"of width {label.shape[1]}; the label shape is {(rows, width)}")
        row = np.full((rows, width), -1, np.float32)
        row[:label.shape[0]] = label
        batch_label[i] = row

    def _sample(self, data, label):
        # the label is parsed, augmented with the image and checked: any of them may
        # find the sample invalid and skip it
        try:
            self.check_valid_image([data])
            label = self._parse_label(label)
            data, label = self.augmentation_transform(data, label)
            self._check_valid_label(label)
        except RuntimeError as e:
            _log.debug("Invalid image, skipping: %s", e)
            return None
        return data, label

    def _new_batch(self):
        data, label = super()._new_batch()
        label[:] = -1
        return data, label

    def sync_label_shape(self, it, verbose=False):
        """Give this iterator and ``it`` (another ImageDetIter, e.g. validation) the larger
        of their object counts; returns ``it``."""
        if not isinstance(it, ImageDetIter):
            raise GpundaError("sync_label_shape: synchronize with invalid iterator "
                              f"({type(it).__name__}, not an ImageDetIter)")
        mine, theirs = self.label_shape, it.label_shape
        if mine[1] != theirs[1]:
            raise GpundaError(f"sync_label_shape: object width mismatch ({mine[1]} vs "
                              f"{theirs[1]})")
        count = max(mine[0], theirs[0])
        if count > mine[0]:
            self.reshape(None, (count, mine[1]))
        if count > theirs[0]:
            it.reshape(None, (count, theirs[1]))
        if verbose and count > min(mine[0], theirs[0]):
            _log.info("Resized label_shape to (%d, %d).", count, mine[1])
        return it

    def draw_next(self, color=None, thickness=2, mean=None, std=None, clip=True,
                  waitKey=None, window_name="draw_next", id2labels=None):
        """Yield the next augmented images (HWC uint8, BGR for OpenCV) with their boxes
        drawn; ``mean``/``std`` (True: ImageNet's) undo a normalisation; ``waitKey`` shows
        each in an OpenCV window."""
        try:
            import cv2
        except ImportError as e:
            warnings.warn(f"Unable to import cv2, skip drawing: {e}")
            return
        std = np.array((58.395, 57.12, 57.375)) if std is True else std
        mean = np.array((123.68, 116.28, 103.53)) if mean is True else mean
        bgr = color[::-1] if color else None
        while True:
            try:
                label, s = self.next_sample()
            except StopIteration:
                return
            data = self.imdecode(s)
            try:
                self.check_valid_image([data])
                label = self._parse_label(label)
            except RuntimeError as e:
                _log.debug("Invalid image, skipping: %s", e)
                continue
            data, label = self.augmentation_transform(data, label)
            image = data.asnumpy().astype(np.float64)
            if std is not None:
                image *= std
            if mean is not None:
                image += mean
            image = image[:, :, (2, 1, 0)]
            if clip:
                image = np.clip(image, 0, 255)
            image = np.ascontiguousarray(image.astype(np.uint8))
            height, width = image.shape[:2]
            for obj in label:
                x1 = int(obj[1] * width)
                if x1 < 0:
                    continue
                y1, x2, y2 = int(obj[2] * height), int(obj[3] * width), int(obj[4] * height)
                box_color = bgr if bgr else tuple(float(c) for c in np.random.rand(3) * 255)
                cv2.rectangle(image, (x1, y1), (x2, y2), box_color, thickness)
                if id2labels is not None and int(obj[0]) in id2labels:
                    text = str(id2labels[int(obj[0])])
                    font = cv2.FONT_HERSHEY_SIMPLEX
                    text_h = cv2.getTextSize(text, font, 0.5, 2)[0][1]
                    cv2.putText(image, text, (x1 + 5, y1 + text_h + 5), font, 0.5,
                                (255, 255, 255), 2)
            if waitKey is not None:
                cv2.imshow(window_name, image)
                cv2.waitKey(waitKey)
            yield image
