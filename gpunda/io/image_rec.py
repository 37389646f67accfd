"""ImageRecordIter and its uint8/int8 variants: batches of images stored in a
RecordIO file by ``recordio.pack_img`` / im2rec.

Per image, as MXNet's ImageRecordIter2 does: decode with OpenCV, run the
default augmenter (image_aug_default.py: resize, affine warp, pad, crop to
``data_shape``, colour noise), mirror, swap BGR to RGB, then
``(x - mean) * c / std + i / std`` with ``c = scale * (1 + U(-max_random_contrast,
max_random_contrast))`` and ``i = scale * U(-max_random_illumination, ...)``
(float32 output only).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gpunda.base import GpundaError
from gpunda.io.native import _RoundBatchIter, _batch_shape, _check_batch_size

__all__ = ["ImageRecordIter", "ImageRecordUInt8Iter", "ImageRecordInt8Iter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter_v1"]

_ACCEPTED = {"path_imglist", "aug_seq", "verbose", "device_id", "prefetch_buffer", "ctx",
             "shuffle_chunk_size", "shuffle_chunk_seed", "seed_aug", "data_name", "label_name",
             "max_random_contrast", "max_random_illumination"}


def _record_starts(path):
    """Byte offset of every record of a .rec file, and the file size."""
    from gpunda.recordio import MXRecordIO
    r = MXRecordIO(path, "r")
    starts = []
    try:
        while True:
            pos = r.tell()
            if r.read() is None:
                break
            starts.append(pos)
        return starts, r.tell()
    finally:
        r.close()


class ImageRecordIter(_RoundBatchIter):
    """Float32 batches ``(batch_size,) + data_shape`` (RGB, CHW) of a .rec file of images."""

    _out_dtype = np.float32

    def __init__(self, path_imgrec, data_shape, batch_size, path_imgidx="", label_width=1,
                 shuffle=False, seed=0, preprocess_threads=4, num_parts=1, part_index=0,
                 round_batch=True, resize=-1, rand_crop=False, rand_mirror=False, mirror=False,
                 mean_img="", mean_r=0.0, mean_g=0.0, mean_b=0.0, mean_a=0.0,
                 std_r=1.0, std_g=1.0, std_b=1.0, std_a=1.0, scale=1.0, dtype=None,
                 data_name="data", label_name="softmax_label", **kwargs):
        name = type(self).__name__
        super().__init__(data_name, label_name)
        self.data_shape = tuple(int(s) for s in data_shape)
        if len(self.data_shape) != 3 or self.data_shape[0] not in (1, 3, 4):
            raise GpundaError(f"{name}: data_shape={data_shape} must be (channels, height, width) "
                              f"with 1, 3 or 4 channels")
        self._augmenter = self._build_augmenter(kwargs, resize=resize, rand_crop=rand_crop)
        for k in kwargs:
            if k not in _ACCEPTED:
                raise GpundaError(f"mx.io.{name}: unknown argument {k!r}")
        if preprocess_threads < 1:
            raise GpundaError(f"{name}: preprocess_threads={preprocess_threads} must be >= 1")
        if not path_imgrec or not os.path.exists(path_imgrec):
            raise GpundaError(f"{name}: path_imgrec={path_imgrec!r} does not exist")
        self._random_contrast = float(kwargs.get("max_random_contrast", 0.0))
        self._random_illumination = float(kwargs.get("max_random_illumination", 0.0))
        seed_aug = kwargs.get("seed_aug")
        self._seed_aug = None if seed_aug in (None, "None") else int(seed_aug)
        self.path_imgrec, self.label_width = path_imgrec, int(label_width)
        self.rand_mirror, self.mirror = bool(rand_mirror), bool(mirror)
        c = self.data_shape[0]
        self._mean = np.array([mean_r, mean_g, mean_b, mean_a][:c] if c > 1 else [mean_r], np.float32)
        self._std = np.array([std_r, std_g, std_b, std_a][:c] if c > 1 else [std_r], np.float32)
        self.scale = float(scale)
        self._dtype, self._label_dtype = self._out_dtype, np.float32
        self.shuffle = bool(shuffle)
        self._rng = np.random.RandomState(seed)
        starts, size = _record_starts(path_imgrec)
        self._offsets = self._part(starts, size, num_parts, part_index, name)
        self._chunks, self._chunk_rng = self._shuffle_chunks(
            starts, size, num_parts, part_index, name, int(kwargs.get("shuffle_chunk_size", 0)),
            int(kwargs.get("shuffle_chunk_seed", 0)))
        self._threads = int(preprocess_threads)
        self._order = np.arange(len(self._offsets))
        self._mean_img = self._load_mean(mean_img) if mean_img else None
        self._init_batching(_check_batch_size(name, batch_size), round_batch, len(self._offsets))
        self._new_epoch()

    def _build_augmenter(self, kwargs, **explicit):
        """The per-image augmenter; takes its parameters out of ``kwargs``."""
        from gpunda.io.image_aug_default import AUG_DEFAULTS, DefaultImageAugmenter
        params = {k: kwargs.pop(k) for k in list(kwargs) if k in AUG_DEFAULTS}
        return DefaultImageAugmenter(self.data_shape, type(self).__name__, **params, **explicit)

    @staticmethod
    def _part(starts, size, num_parts, part_index, name):
        if num_parts < 1 or not 0 <= part_index < num_parts:
            raise GpundaError(f"{name}: part_index={part_index} must be in [0, num_parts={num_parts})")
        step = -(-size // num_parts)

        def boundary(b):
            return next((s for s in starts if s >= min(b, size)), size)
        lo, hi = boundary(step * part_index), boundary(step * (part_index + 1))
        return [s for s in starts if lo <= s < hi]

    def _shuffle_chunks(self, starts, size, num_parts, part_index, name, chunk_mb, seed):
        """MXNet's ``shuffle_chunk_size`` (MB): this part of the file is cut into
        ``ceil(size * 1.1 / (num_parts * chunk))`` byte ranges (at record starts), read
        whole, in an order shuffled every epoch (dmlc's InputSplitShuffle); one range
        leaves the file order. Returns the ranges (indices into ``_offsets``), or None,
        and their generator (seeded by ``shuffle_chunk_seed``; NumPy's draws, not
        MXNet's)."""
        import logging
        if chunk_mb < 0:
            raise GpundaError(f"{name}: shuffle_chunk_size={chunk_mb} must be >= 0")
        if chunk_mb == 0:
            return None, None
        log = logging.getLogger("gpunda.io")
        if chunk_mb > 4096:
            log.info("Chunk size: %d MB which is larger than 4096 MB, please set smaller "
                     "chunk size", chunk_mb)
        if chunk_mb < 4:
            log.info("Chunk size: %d MB which is less than 4 MB, please set larger chunk "
                     "size", chunk_mb)
        n = -(-int(size * 11) // (10 * num_parts * (chunk_mb << 20)))   # ceil of the 1.1 ratio
        if n <= 1:
            return None, None
        index = {s: i for i, s in enumerate(self._offsets)}
        chunks = [np.array([index[s] for s in self._part(starts, size, num_parts * n,
                                                          part_index * n + k, name)], np.int64)
                  for k in range(n)]
        return chunks, np.random.RandomState(seed)

    def _new_epoch(self):
        if self.shuffle:
            self._order = self._rng.permutation(len(self._offsets))
        elif self._chunks is not None:      # whole byte ranges, in a new order
            self._order = np.concatenate([self._chunks[k] for k in
                                          self._chunk_rng.permutation(len(self._chunks))])

    def reset(self):
        super().reset()
        if self._pos == 0:
            self._new_epoch()

    def _read(self, i):
        from gpunda.recordio import MXRecordIO, unpack
        r = MXRecordIO(self.path_imgrec, "r")
        try:
            r._seek(self._offsets[i])
            return unpack(r.read())
        finally:
            r.close()

    def _decode(self, i):
        """Record ``i``'s header and its image as OpenCV decodes it (BGR(A), HWC) with
        data_shape's channel count."""
        import cv2
        header, buf = self._read(i)
        flag = {1: 0, 3: 1, 4: -1}[self.data_shape[0]]
        # OpenCV raises its own error for an empty buffer; MXNet reports it as MXNetError
        img = cv2.imdecode(np.frombuffer(buf, np.uint8), flag) if len(buf) else None
        if img is None:
            raise GpundaError(f"{type(self).__name__}: record {i} of {self.path_imgrec!r} "
                              f"is not a decodable image")
        return header, img

    def _process(self, i, rng_seed, normalize=True):
        header, img = self._decode(i)
        c, h, w = self.data_shape
        rng = np.random.RandomState(rng_seed)
        img = self._augmenter(img.reshape(img.shape[:2] + (-1,)), rng)
        img = img.reshape(h, w, -1)
        if c >= 3:
            img = img[:, :, [2, 1, 0, 3][:c]]  # BGR(A) -> RGB(A)
        chw = np.ascontiguousarray(img.transpose(2, 0, 1))
        if (self.rand_mirror and rng.rand() < 0.5) or self.mirror:
            chw = chw[:, :, ::-1]
        if header.flag > 0 and header.flag != self.label_width:
            raise GpundaError(f"{type(self).__name__}: record {i} of {self.path_imgrec!r} has "
                              f"{header.flag} labels but label_width is {self.label_width}")
        label = (np.asarray(header.label, np.float32) if header.flag > 0
                 else np.full(self.label_width, header.label, np.float32))
        return (self._normalize(chw, rng) if normalize else chw), label

    def _normalize(self, chw, rng):
        x = chw.astype(np.float32)
        x = x - (self._mean_img if self._mean_img is not None else self._mean[:, None, None])
        contrast, illumination = np.float32(self.scale), np.float32(0)
        if self._random_contrast or self._random_illumination:
            mc, mi = self._random_contrast, self._random_illumination
            contrast = np.float32((rng.rand() * mc * 2 - mc + 1) * self.scale)
            illumination = np.float32((rng.rand() * mi * 2 - mi) * self.scale)
        std = self._std[:, None, None]
        return x * (contrast / std) + illumination / std

    def _load_mean(self, path):
        from gpunda import ndarray as nd
        if os.path.exists(path):
            arr = nd.load(path)
            arr = next(iter(arr.values())) if isinstance(arr, dict) else arr[0]
            mean = arr.asnumpy().astype(np.float32)
            if mean.shape != self.data_shape:
                raise GpundaError(f"{type(self).__name__}: mean_img {path!r} has shape "
                                  f"{mean.shape}, data_shape is {self.data_shape}")
            return mean
        # MXNet computes the mean image over the data once and saves it
        total = np.zeros(self.data_shape, np.float64)
        for i in range(len(self._offsets)):
            total += self._process(i, 0, normalize=False)[0]
        mean = (total / max(1, len(self._offsets))).astype(np.float32)
        nd.save(path, {"mean_img": nd.array(mean)})
        return mean

    def _data_batch_shape(self):
        return (self.batch_size,) + self.data_shape

    def _label_batch_shape(self):
        return _batch_shape(self.batch_size, (self.label_width,))

    def _make(self, idx):
        from gpunda import ndarray as nd
        if self._seed_aug is not None:
            # seed_aug makes each image's augmentation depend only on its position
            seeds = [(self._seed_aug + int(self._order[i])) % 2 ** 31 for i in idx]
        else:
            seeds = self._rng.randint(0, 2 ** 31 - 1, size=len(idx))
        jobs = [(int(self._order[i]), int(s)) for i, s in zip(idx, seeds)]
        if self._threads > 1 and len(jobs) > 1:
            with ThreadPoolExecutor(self._threads) as pool:
                out = list(pool.map(lambda a: self._process(*a), jobs))
        else:
            out = [self._process(*a) for a in jobs]
        data = np.stack([d for d, _ in out]).astype(self._dtype, copy=False)
        label = np.stack([lb for _, lb in out]).reshape(self._label_batch_shape())
        return nd.array(data, dtype=self._dtype), nd.array(label)


class ImageRecordUInt8Iter(ImageRecordIter):
    """ImageRecordIter giving the raw uint8 pixels (no mean/std/scale)."""

    _out_dtype = np.uint8

    def _normalize(self, chw, rng=None):
        return chw


class ImageRecordInt8Iter(ImageRecordIter):
    """ImageRecordIter giving int8 ``saturate(pixel - round(mean))``."""

    _out_dtype = np.int8

    def _normalize(self, chw, rng=None):
        mean = (np.round(self._mean_img) if self._mean_img is not None
                else np.round(self._mean)[:, None, None])
        return np.clip(chw.astype(np.int16) - mean, -128, 127).astype(np.int8)


# MXNet 1.9.1 keeps its first record iterator (iter_image_recordio.cc) beside the second under
# the _v1 names, with the same parameters; the two give the same batches (checked on MXNet,
# tests/test_io_native.py), except that v2's last batch with round_batch=False is padded with
# uninitialised memory and reports pad=0 where v1 wraps around and reports the pad, which is what
# gpunda's ImageRecordIter does for both names (docs/compat.md)
class ImageRecordIter_v1(ImageRecordIter):
    """MXNet's ``ImageRecordIter_v1``: ImageRecordIter's parameters and batches."""


class ImageRecordUInt8Iter_v1(ImageRecordUInt8Iter):
    """MXNet's ``ImageRecordUInt8Iter_v1``: ImageRecordUInt8Iter's parameters and batches."""
