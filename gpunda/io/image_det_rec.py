"""ImageDetRecordIter: batches of detection images and their box labels from a RecordIO
file, as MXNet's C++ iterator of that name (det_aug_default augmenter).

Per image: decode with OpenCV, run the detection augmenter (image_det_aug_default.py:
resize, colour noise, mirror, random pad and crop with the boxes moved along, fit to
``data_shape``), swap BGR to RGB, then ``(x - mean) / std * scale``. A label row is
``[channels, rows, cols, n, label (n numbers)...]`` padded with ``label_pad_value``
to ``label_pad_width + 4`` numbers; the raw label is the record's (or the .lst's) flat
detection label, ``[header_width, object_width, ..., objects...]``, less the boxes the
augmenter dropped.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.io.image_rec import ImageRecordIter

__all__ = ["ImageDetRecordIter"]

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
        for k in ("rand_crop", "rand_mirror", "mirror"):
            if k in kwargs:
                raise GpundaError(f"mx.io.ImageDetRecordIter: unknown argument {k!r} "
                                  f"(use rand_mirror_prob)")
        if not 0.0 <= float(rand_mirror_prob) <= 1.0:
            raise GpundaError(f"ImageDetRecordIter: rand_mirror_prob={rand_mirror_prob} must be "
                              f"in [0, 1]")
        kwargs["rand_mirror_prob"] = rand_mirror_prob
        self._label_map = _read_label_map(path_imglist, int(label_width)) if path_imglist \
            else None
        self._det_label_width = int(label_width)
        self._pad_value = np.float32(label_pad_value)
        self._requested_pad_width = int(label_pad_width)
        self._pad_width = None
        super().__init__(path_imgrec, data_shape, batch_size, label_width=1, resize=resize,
                         data_name=data_name, label_name=label_name, **kwargs)

    def _build_augmenter(self, kwargs, resize, rand_crop):
        from gpunda.io.image_det_aug_default import DET_AUG_DEFAULTS, DefaultImageDetAugmenter
        params = {k: kwargs.pop(k) for k in list(kwargs) if k in DET_AUG_DEFAULTS}
        return DefaultImageDetAugmenter(self.data_shape, "ImageDetRecordIter", resize=resize,
                                        **params)

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
        header, img = self._decode(i)
        c, h, w = self.data_shape
        rng = np.random.RandomState(rng_seed)
        img, raw = self._augmenter(img.reshape(img.shape[:2] + (-1,)),
                                   self._raw_label(i, header), rng)
        rows, cols = img.shape[:2]
        if c >= 3:
            img = img[:, :, [2, 1, 0, 3][:c]]   # BGR(A) -> RGB(A)
        # resize_mode shrink/fit leave the image smaller than data_shape: top-left aligned
        chw = np.zeros((c, h, w), np.uint8)
        chw[:, :rows, :cols] = img.transpose(2, 0, 1)
        label = np.full(self._pad_width + 4, self._pad_value, np.float32)
        label[:4] = (c, rows, cols, raw.size)
        label[4:4 + raw.size] = raw
        return (self._normalize(chw, rng) if normalize else chw), label

    def _label_batch_shape(self):
        return (self.batch_size, self._pad_width + 4)
