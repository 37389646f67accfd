"""ImageDetRecordIter: batches of detection images and their box labels from a RecordIO
file, as MXNet's C++ iterator of that name (det_aug_default augmenter).

Per image: decode with OpenCV, resize the shorter edge to ``resize`` (if set), mirror with
probability ``rand_mirror_prob`` (boxes too: xmin' = 1 - xmax), force-resize to
``data_shape``, swap BGR to RGB, then ``(x - mean) / std * scale``. A label row is
``[channels, height, width, n, raw label (n numbers)...]`` padded with ``label_pad_value``
to ``label_pad_width + 4`` numbers; the raw label is the record's (or the .lst's) flat
detection label, ``[header_width, object_width, ..., objects...]``.
"""
from __future__ import annotations

import numpy as np

from ..base import GpundaError, NotImplementedForGpunda
from .image_rec import ImageRecordIter, _INTER

__all__ = ["ImageDetRecordIter"]

# det_aug_default's random crop/pad and colour augmentations are not built: their no-op values
_UNSUPPORTED_DET_AUG = {"rand_crop_prob": 0.0, "rand_pad_prob": 0.0, "max_pad_scale": 1.0,
                        "random_hue_prob": 0.0, "random_saturation_prob": 0.0,
                        "random_illumination_prob": 0.0, "random_contrast_prob": 0.0,
                        "max_random_hue": 0, "max_random_saturation": 0,
                        "max_random_illumination": 0, "max_random_contrast": 0.0,
                        "resize_mode": "force", "shuffle_chunk_size": 0}
# crop sampler settings only matter with rand_crop_prob > 0; accepted and unused
_CROP_SAMPLER = {"min_crop_scales", "max_crop_scales", "min_crop_aspect_ratios",
                 "max_crop_aspect_ratios", "min_crop_overlaps", "max_crop_overlaps",
                 "min_crop_sample_coverages", "max_crop_sample_coverages",
                 "min_crop_object_coverages", "max_crop_object_coverages", "num_crop_sampler",
                 "crop_emit_mode", "emit_overlap_thresh", "max_crop_trials", "fill_value"}


def _read_label_map(path, label_width):
    """``{image index: flat label}`` of a whitespace separated list (index, labels, path)."""
    labels = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            values = fields[1:1 + label_width] if label_width > 0 else fields[1:-1]
            if not values or (label_width > 0 and len(values) != label_width):
                raise GpundaError(f"ImageDetRecordIter: bad image list format at line {lineno} "
                                  f"of {path!r}")
            labels[int(fields[0])] = np.asarray([float(v) for v in values], np.float32)
    return labels


class ImageDetRecordIter(ImageRecordIter):
    """Float32 batches ``(batch_size,) + data_shape`` of a .rec file of detection images,
    labels ``(batch_size, label_pad_width + 4)``."""

    def __init__(self, path_imgrec, data_shape, batch_size, label_width=-1, label_pad_width=0,
                 label_pad_value=-1.0, path_imglist="", resize=-1, rand_mirror_prob=0.0,
                 data_name="data", label_name="label", **kwargs):
        for k in list(kwargs):
            if k in _UNSUPPORTED_DET_AUG:
                v = kwargs.pop(k)
                if v != _UNSUPPORTED_DET_AUG[k]:
                    raise NotImplementedForGpunda(f"mx.io.ImageDetRecordIter: {k}={v!r} is not "
                                                  f"supported yet")
            elif k in _CROP_SAMPLER:
                kwargs.pop(k)
        for k in ("rand_crop", "rand_mirror", "mirror"):
            if k in kwargs:
                raise GpundaError(f"mx.io.ImageDetRecordIter: unknown argument {k!r} "
                                  f"(use rand_mirror_prob)")
        if not 0.0 <= float(rand_mirror_prob) <= 1.0:
            raise GpundaError(f"ImageDetRecordIter: rand_mirror_prob={rand_mirror_prob} must be "
                              f"in [0, 1]")
        self._mirror_prob = float(rand_mirror_prob)
        self._label_map = _read_label_map(path_imglist, int(label_width)) if path_imglist \
            else None
        self._det_label_width = int(label_width)
        self._pad_value = np.float32(label_pad_value)
        self._requested_pad_width = int(label_pad_width)
        self._pad_width = None
        super().__init__(path_imgrec, data_shape, batch_size, label_width=1, resize=resize,
                         data_name=data_name, label_name=label_name, **kwargs)

    def _init_batching(self, batch_size, round_batch, num):
        # every raw label is read once to size the label rows, as MXNet's parser does
        widest = max((self._raw_label(i).size for i in range(len(self._offsets))), default=0)
        if self._requested_pad_width > 0 and widest > self._requested_pad_width:
            raise GpundaError(f"ImageDetRecordIter: label_pad_width={self._requested_pad_width} "
                              f"is smaller than the widest label, {widest}")
        self._pad_width = max(widest, self._requested_pad_width)
        super()._init_batching(batch_size, round_batch, num)

    def _raw_label(self, i, header=None):
        if header is None:
            header = self._read(i)[0]
        if self._label_map is not None:
            if header.id not in self._label_map:
                raise GpundaError(f"ImageDetRecordIter: no label in the image list for image "
                                  f"id {header.id}")
            return self._label_map[header.id]
        if header.flag <= 0:
            raise GpundaError(f"ImageDetRecordIter: record {i} of {self.path_imgrec!r} has no "
                              f"label array (pack the labels with --pack-label)")
        if self._det_label_width > 0 and header.flag != self._det_label_width:
            raise GpundaError(f"ImageDetRecordIter: record {i} has {header.flag} labels but "
                              f"label_width is {self._det_label_width}")
        return np.asarray(header.label, np.float32)

    def _process(self, i, rng_seed, normalize=True):
        import cv2
        header, buf = self._read(i)
        c, h, w = self.data_shape
        img = cv2.imdecode(np.frombuffer(buf, np.uint8), {1: 0, 3: 1, 4: -1}[c])
        if img is None:
            raise GpundaError(f"ImageDetRecordIter: record {i} of {self.path_imgrec!r} is not a "
                              f"decodable image")
        inter = getattr(cv2, _INTER[self._inter])
        raw = self._raw_label(i, header).copy()
        if self.resize != -1:
            rows, cols = img.shape[:2]
            size = ((self.resize, self.resize * rows // cols) if rows > cols
                    else (self.resize * cols // rows, self.resize))
            img = cv2.resize(img, size, interpolation=inter)
        rng = np.random.RandomState(rng_seed)
        if self._mirror_prob > 0 and rng.rand() < self._mirror_prob:
            img = cv2.flip(img, 1)
            self._mirror_boxes(raw)
        img = cv2.resize(img, (w, h), interpolation=inter).reshape(h, w, -1)
        if c >= 3:
            img = img[:, :, [2, 1, 0, 3][:c]]   # BGR(A) -> RGB(A)
        chw = np.ascontiguousarray(img.transpose(2, 0, 1))
        label = np.full(self._pad_width + 4, self._pad_value, np.float32)
        label[:4] = (c, h, w, raw.size)
        label[4:4 + raw.size] = raw
        return (self._normalize(chw) if normalize else chw), label

    @staticmethod
    def _mirror_boxes(raw):
        header_width, obj_width = int(raw[0]), int(raw[1])
        if raw.size < 7 or obj_width < 5 or (raw.size - header_width) % obj_width:
            raise GpundaError(f"ImageDetRecordIter: label of {raw.size} numbers does not match "
                              f"header width {header_width} and object width {obj_width}")
        objs = raw[header_width:].reshape(-1, obj_width)   # a view: raw changes with it
        objs[:, [1, 3]] = 1.0 - objs[:, [3, 1]]

    def _label_batch_shape(self):
        return (self.batch_size, self._pad_width + 4)
