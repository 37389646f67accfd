"""``mx.image.ImageIter``: batches of augmented images read from a .rec file or from image
files named in a .lst file (or a Python list), as MXNet 1.x's Python iterator.

Each sample is decoded (``imdecode``), passed through the augmenter list (by default
``CreateAugmenter(data_shape, **kwargs)``), transposed HWC -> CHW and written into a float32
batch. The end of the data follows ``last_batch_handle``:

- ``pad``: the last batch is filled up with samples from the start; ``pad`` says how many.
- ``discard``: an incomplete last batch is dropped.
- ``roll_over``: an incomplete last batch is kept and completed, after ``reset()``, by the
  first samples of the next epoch. That batch reports ``pad`` = the number of samples the new
  epoch supplied, as MXNet's does.
"""
from __future__ import annotations

import logging
import os
import random

import numpy as np

from gpunda import ndarray as nd
from gpunda.base import GpundaError, numeric_types
from gpunda.io.io import DataBatch, DataIter
from gpunda.image.augmenters import CreateAugmenter
from gpunda.image.image import imdecode

__all__ = ["ImageIter"]

_LABEL_DTYPES = ("int32", "float32", "int64", "float64")
_LAST_BATCH = ("pad", "discard", "roll_over")
_log = logging.getLogger(__name__)


def _label_array(values, dtype):
    """Labels as an NDArray of ``dtype``; text from a .lst is read as numbers first, so that
    '3.000000' (what im2rec writes) gives 3 for an integer dtype too."""
    return nd.array(np.asarray(values, dtype=np.float64).astype(dtype), dtype=dtype)


def read_image_list(path, dtype):
    """``{index: (label NDArray, relative path)}`` and the indices in file order of a .lst
    file (tab separated: index, one or more labels, path)."""
    entries, keys = {}, []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.strip().split("\t")
            if len(parts) < 2:
                if not line.strip():
                    continue
                raise GpundaError(f"ImageIter: line {lineno} of {path!r} has {len(parts)} "
                                  f"field(s); a .lst line is index<TAB>label(s)<TAB>path")
            try:
                key = int(parts[0])
                label = _label_array([float(v) for v in parts[1:-1]], dtype)
            except ValueError as e:
                raise GpundaError(f"ImageIter: line {lineno} of {path!r}: {e}") from None
            entries[key] = (label, parts[-1])
            keys.append(key)
    return entries, keys


def _python_image_list(imglist, dtype):
    """The ``imglist`` argument ([label(s)..., path] entries) keyed '1', '2', ... as MXNet."""
    entries, keys = {}, []
    for n, item in enumerate(imglist, 1):
        if len(item) > 2:
            label = _label_array(item[:-1], dtype)
        elif isinstance(item[0], numeric_types):
            label = _label_array([item[0]], dtype)
        else:
            label = _label_array(item[0], dtype)
        entries[str(n)] = (label, item[-1])
        keys.append(str(n))
    return entries, keys


class ImageIter(DataIter):
    """Batches ``(batch_size,) + data_shape`` of images from ``path_imgrec`` (with
    ``path_imgidx`` for shuffling and partitions), ``path_imglist`` + ``path_root`` or
    ``imglist``; labels ``(batch_size,)`` or ``(batch_size, label_width)``.

    ``aug_list`` replaces the augmenters; otherwise ``kwargs`` go to ``CreateAugmenter``.
    ``dtype`` is the dtype labels are parsed to (the label batch is float32, as MXNet's).
    """

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None,
                 path_imglist=None, path_root=None, path_imgidx=None, shuffle=False,
                 part_index=0, num_parts=1, aug_list=None, imglist=None, data_name="data",
                 label_name="softmax_label", dtype="float32", last_batch_handle="pad",
                 **kwargs):
        super().__init__()
        name = type(self).__name__
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise GpundaError(f"{name}: give path_imgrec, path_imglist or imglist (a list)")
        if dtype not in _LABEL_DTYPES:
            raise GpundaError(f"{name}: dtype={dtype!r} label not supported "
                              f"(one of {', '.join(_LABEL_DTYPES)})")
        if last_batch_handle not in _LAST_BATCH:
            raise GpundaError(f"{name}: last_batch_handle={last_batch_handle!r} must be "
                              f"'pad', 'discard' or 'roll_over'")
        if int(batch_size) < 1:
            raise GpundaError(f"{name}: batch_size={batch_size} must be >= 1")
        from gpunda import recordio
        self.imgidx = None
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        else:
            self.imgrec = None
        keys = None
        if path_imglist:
            self.imglist, keys = read_image_list(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist, keys = _python_image_list(imglist, dtype)
        else:
            self.imglist = None
        self.path_root = path_root
        data_shape = tuple(data_shape)
        self.check_data_shape(data_shape)
        self.provide_data = [(data_name, (batch_size,) + data_shape)]
        self.provide_label = [(label_name, (batch_size, label_width) if label_width > 1
                               else (batch_size,))]
        self.batch_size, self.data_shape = batch_size, data_shape
        self.label_width, self.shuffle = label_width, shuffle
        if self.imgrec is None:
            self.seq = keys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise GpundaError(f"{name}: shuffle and num_parts > 1 need path_imgidx "
                                  f"with path_imgrec")
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise GpundaError(f"{name}: part_index={part_index} must be in "
                                  f"[0, num_parts={num_parts})")
            per_part = len(self.seq) // num_parts   # the remainder is left out, as MXNet's
            self.seq = self.seq[part_index * per_part:(part_index + 1) * per_part]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._read_in_epoch = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache_data = self._cache_label = self._cache_idx = None
        self.reset()

    # -- epochs ------------------------------------------------------------------------
    def reset(self):
        """Back to the start of the data (a rolled-over batch is kept for the next ``next``)."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            self._rewind()
            self._allow_read = True

    def hard_reset(self):
        """Back to the start, dropping a rolled-over batch."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        self._rewind()
        self._allow_read = True
        self._cache_data = self._cache_label = self._cache_idx = None

    def _rewind(self):
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._read_in_epoch = 0

    # -- samples -----------------------------------------------------------------------
    def next_sample(self):
        """(label, encoded image bytes) of the next sample; StopIteration at the end."""
        if not self._allow_read:
            raise StopIteration
        from gpunda import recordio
        if self.seq is not None:
            if self.cur >= self.num_image:
                if self.last_batch_handle != "discard":
                    self.cur = 0
                raise StopIteration
            idx = self.seq[self.cur]
            self.cur += 1
            if self.imgrec is not None:
                header, img = recordio.unpack(self.imgrec.read_idx(idx))
                label = header.label if self.imglist is None else self.imglist[idx][0]
                return label, img
            label, fname = self.imglist[idx]
            return label, self.read_image(fname)
        s = self.imgrec.read()
        if s is None:
            if self.last_batch_handle != "discard":
                self.imgrec.reset()
                self._read_in_epoch = 0
            raise StopIteration
        self._read_in_epoch += 1
        header, img = recordio.unpack(s)
        return header.label, img

    def read_image(self, fname):
        """The bytes of image file ``fname`` (relative to ``path_root``)."""
        with open(os.path.join(self.path_root or "", fname), "rb") as f:
            return f.read()

    def imdecode(self, s):
        """Decode image bytes to an HWC NDArray; a failure names the file or record."""
        try:
            return imdecode(s)
        except Exception as e:  # noqa: BLE001 -- re-raised with where it came from
            raise RuntimeError(f"Broken image {self._locate()}, {e}") from None

    def _locate(self):
        if self.seq is not None:
            idx = self.seq[(self.cur - 1) % self.num_image]
        else:
            idx = self._read_in_epoch - 1
        if self.imglist is not None and idx in self.imglist:
            return f"filename: {self.imglist[idx][1]}"
        return f"index: {idx}"

    def check_data_shape(self, data_shape):
        """data_shape must be (3, height, width)."""
        if len(data_shape) != 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if data_shape[0] != 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data):
        """RuntimeError (the sample is skipped) for an image with no shape."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def augmentation_transform(self, data):
        """Apply the augmenters in order."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        """HWC image -> CHW, as it goes into the batch."""
        return nd.transpose(datum, axes=(2, 0, 1))

    def _store_label(self, batch_label, i, label):
        slot = self.provide_label[0][1][1:]
        values = label.asnumpy() if isinstance(label, nd.NDArray) else np.asarray(label)
        if values.size != int(np.prod(slot)):
            raise GpundaError(f"{type(self).__name__}: a sample has {values.size} label(s) "
                              f"but label_width is {self.label_width}")
        batch_label[i] = values.reshape(slot) if slot else float(values.reshape(-1)[0])

    def _sample(self, data, label):
        """One decoded sample augmented, as ``(data, label)``; None (logged) to skip an
        invalid image. Subclasses with labels to check or augment override it."""
        try:
            self.check_valid_image(data)
        except RuntimeError as e:
            _log.debug("Invalid image, skipping: %s", e)
            return None
        return self.augmentation_transform(data), label

    def _batchify(self, batch_data, batch_label, start=0):
        """Fill the batch from row ``start``; the number of rows filled in all."""
        i = start
        try:
            while i < self.batch_size:
                label, s = self.next_sample()
                sample = self._sample(self.imdecode(s), label)
                if sample is None:
                    continue
                data, label = sample
                batch_data[i] = self.postprocess_data(data)
                self._store_label(batch_label, i, label)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _new_batch(self):
        return (nd.zeros(self.provide_data[0][1]), nd.empty(self.provide_label[0][1]))

    def next(self):
        """The next DataBatch; StopIteration at the end of the epoch."""
        if self._cache_data is not None:
            batch_data, batch_label, i = self._cache_data, self._cache_label, self._cache_idx
        else:
            batch_data, batch_label = self._new_batch()
            i = self._batchify(batch_data, batch_label)
        pad = self.batch_size - i
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = batch_data, batch_label, i
                raise StopIteration
            self._batchify(batch_data, batch_label, i)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._cache_data = self._cache_label = self._cache_idx = None
        return DataBatch([batch_data], [batch_label], pad=pad)
