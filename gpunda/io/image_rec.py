"""ImageRecordIter and its uint8/int8 variants: batches of images stored in a
RecordIO file by ``recordio.pack_img`` / im2rec.

Per image, as MXNet's default augmenter and ImageRecordIter2 do: decode with
OpenCV, resize the shorter edge to ``resize``, crop ``data_shape`` (center, or
random with ``rand_crop``; images smaller than it are scaled up first), mirror,
swap BGR to RGB, then ``(x - mean) * scale / std`` (float32 output only).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..base import GpundaError, NotImplementedForGpunda
from .native import _RoundBatchIter, _batch_shape, _check_batch_size

__all__ = ["ImageRecordIter", "ImageRecordUInt8Iter", "ImageRecordInt8Iter"]

# augmentations of MXNet's default augmenter not built here, with their no-op values
_UNSUPPORTED_AUG = {"max_rotate_angle": 0, "max_aspect_ratio": 0.0, "min_aspect_ratio": None,
                    "max_shear_ratio": 0.0, "max_crop_size": -1, "min_crop_size": -1,
                    "max_random_scale": 1.0, "min_random_scale": 1.0, "max_random_area": 1.0,
                    "min_random_area": 1.0, "max_img_size": 1e10, "min_img_size": 0.0,
                    "brightness": 0.0, "contrast": 0.0, "saturation": 0.0, "pca_noise": 0.0,
                    "random_h": 0, "random_s": 0, "random_l": 0, "rotate": -1,
                    "max_random_contrast": 0.0, "max_random_illumination": 0.0,
                    "fill_value": 255, "pad": 0, "rotate_list": (), "shuffle_chunk_size": 0}
_ACCEPTED = {"path_imglist", "aug_seq", "verbose", "device_id", "prefetch_buffer", "ctx",
             "shuffle_chunk_seed", "seed_aug", "inter_method", "data_name", "label_name"}
_INTER = {0: "INTER_NEAREST", 1: "INTER_LINEAR", 2: "INTER_CUBIC", 3: "INTER_AREA",
          4: "INTER_LANCZOS4"}


def _record_starts(path):
    """Byte offset of every record of a .rec file, and the file size."""
    from ..recordio import MXRecordIO
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
        for k, v in kwargs.items():
            if k in _UNSUPPORTED_AUG:
                if v != _UNSUPPORTED_AUG[k]:
                    raise NotImplementedForGpunda(f"mx.io.{name}: {k}={v!r} is not supported yet")
            elif k not in _ACCEPTED:
                raise GpundaError(f"mx.io.{name}: unknown argument {k!r}")
        self.data_shape = tuple(int(s) for s in data_shape)
        if len(self.data_shape) != 3 or self.data_shape[0] not in (1, 3, 4):
            raise GpundaError(f"{name}: data_shape={data_shape} must be (channels, height, width) "
                              f"with 1, 3 or 4 channels")
        if preprocess_threads < 1:
            raise GpundaError(f"{name}: preprocess_threads={preprocess_threads} must be >= 1")
        if not path_imgrec or not os.path.exists(path_imgrec):
            raise GpundaError(f"{name}: path_imgrec={path_imgrec!r} does not exist")
        self._inter = int(kwargs.get("inter_method", 1))
        if self._inter not in _INTER:
            raise NotImplementedForGpunda(f"mx.io.{name}: inter_method={self._inter} is not "
                                          f"supported yet (0-4 are)")
        self.path_imgrec, self.label_width = path_imgrec, int(label_width)
        self.resize, self.rand_crop = int(resize), bool(rand_crop)
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
        self._threads = int(preprocess_threads)
        self._order = np.arange(len(self._offsets))
        self._mean_img = self._load_mean(mean_img) if mean_img else None
        self._init_batching(_check_batch_size(name, batch_size), round_batch, len(self._offsets))
        self._new_epoch()

    @staticmethod
    def _part(starts, size, num_parts, part_index, name):
        if num_parts < 1 or not 0 <= part_index < num_parts:
            raise GpundaError(f"{name}: part_index={part_index} must be in [0, num_parts={num_parts})")
        step = -(-size // num_parts)

        def boundary(b):
            return next((s for s in starts if s >= min(b, size)), size)
        lo, hi = boundary(step * part_index), boundary(step * (part_index + 1))
        return [s for s in starts if lo <= s < hi]

    def _new_epoch(self):
        if self.shuffle:
            self._order = self._rng.permutation(len(self._offsets))

    def reset(self):
        super().reset()
        if self._pos == 0:
            self._new_epoch()

    def _read(self, i):
        from ..recordio import MXRecordIO, unpack
        r = MXRecordIO(self.path_imgrec, "r")
        try:
            r._seek(self._offsets[i])
            return unpack(r.read())
        finally:
            r.close()

    def _process(self, i, rng_seed, normalize=True):
        import cv2
        header, buf = self._read(i)
        c, h, w = self.data_shape
        img = cv2.imdecode(np.frombuffer(buf, np.uint8), {1: 0, 3: 1, 4: -1}[c])
        if img is None:
            raise GpundaError(f"{type(self).__name__}: record {i} of {self.path_imgrec!r} "
                              f"is not a decodable image")
        inter = getattr(cv2, _INTER[self._inter])
        rng = np.random.RandomState(rng_seed)
        if self.resize != -1:
            rows, cols = img.shape[:2]
            size = ((self.resize, self.resize * rows // cols) if rows > cols
                    else (self.resize * cols // rows, self.resize))
            img = cv2.resize(img, size, interpolation=inter)
        if img.shape[0] < h:
            img = cv2.resize(img, (int(h / img.shape[0] * img.shape[1]), h), interpolation=inter)
        if img.shape[1] < w:
            img = cv2.resize(img, (w, int(w / img.shape[1] * img.shape[0])), interpolation=inter)
        y, x = img.shape[0] - h, img.shape[1] - w
        y, x = (rng.randint(0, y + 1), rng.randint(0, x + 1)) if self.rand_crop else (y // 2, x // 2)
        img = img[y:y + h, x:x + w]
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
        return (self._normalize(chw) if normalize else chw), label

    def _normalize(self, chw):
        x = chw.astype(np.float32)
        x = x - (self._mean_img if self._mean_img is not None else self._mean[:, None, None])
        return x * (np.float32(self.scale) / self._std[:, None, None])

    def _load_mean(self, path):
        from .. import ndarray as nd
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
        from .. import ndarray as nd
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

    def _normalize(self, chw):
        return chw


class ImageRecordInt8Iter(ImageRecordIter):
    """ImageRecordIter giving int8 ``saturate(pixel - round(mean))``."""

    _out_dtype = np.int8

    def _normalize(self, chw):
        mean = (np.round(self._mean_img) if self._mean_img is not None
                else np.round(self._mean)[:, None, None])
        return np.clip(chw.astype(np.int16) - mean, -128, 127).astype(np.int8)
