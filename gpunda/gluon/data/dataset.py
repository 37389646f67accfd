"""Datasets (MXNet 1.x ``gluon.data``): anything with ``__getitem__`` and ``__len__``."""
from __future__ import annotations

import os

import numpy as np

from gpunda.base import GpundaError

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Abstract dataset: subclasses define ``__getitem__(idx)`` and ``__len__()``."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def filter(self, fn):
        """A dataset of the samples for which ``fn(sample)`` is true (read on access)."""
        from gpunda.gluon.data.sampler import FilterSampler
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards, index):
        """Part ``index`` of ``num_shards`` contiguous parts (earlier parts get the remainder)."""
        if not 0 <= index < num_shards:
            raise GpundaError(f"Dataset.shard: index={index} must be in [0, {num_shards})")
        length = len(self)
        size = length // num_shards
        rest = length % num_shards
        start = size * index + min(index, rest)
        end = start + size + (1 if index < rest else 0)
        return _Slice(self, start, end)

    def take(self, count):
        """The first ``count`` samples (all when None)."""
        if count is None or count >= len(self):
            return self
        return _Slice(self, 0, count)

    def sample(self, sampler):
        """The samples in the order ``sampler`` yields indices."""
        return SimpleDataset([self[i] for i in sampler])

    def transform(self, fn, lazy=True):
        """A dataset of ``fn(*sample)`` (computed on access when ``lazy``)."""
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn, lazy=True):
        """Apply ``fn`` to the first element of each sample (the data, not the label)."""
        return self.transform(_TransformFirstClosure(fn), lazy)


class _Slice(Dataset):
    def __init__(self, data, start, end):
        self._data, self._start, self._end = data, start, end

    def __len__(self):
        return self._end - self._start

    def __getitem__(self, idx):
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} out of range for a dataset of {len(self)} samples")
        return self._data[self._start + (idx % len(self))]


class _SampledDataset(Dataset):
    """The samples of ``data`` at the indices ``sampler`` yields, read on access."""

    def __init__(self, data, sampler):
        self._data = data
        self._indices = list(sampler)

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._data[self._indices[idx]]


class _FilteredDataset(Dataset):
    """The samples of ``dataset`` for which ``fn(sample)`` is true, chosen once at
    construction."""

    def __init__(self, dataset, fn):
        self._dataset = dataset
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class SimpleDataset(Dataset):
    """A dataset over a list (or anything indexable with a length)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data, self._fn = data, fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure:
    """``fn`` applied to the first element of a sample (a class, so that it pickles)."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class ArrayDataset(Dataset):
    """Samples ``(a[i], b[i], ...)`` from arrays of equal length (one array: ``a[i]``)."""

    def __init__(self, *args):
        if not args:
            raise GpundaError("ArrayDataset: needs at least one array")
        from gpunda.ndarray import NDArray
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise GpundaError(f"ArrayDataset: all arrays must have the same length; "
                                  f"array 0 has length {self._length} while array {i} has "
                                  f"{len(data)}")
            if isinstance(data, NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length

    def _batch(self, indices):
        """Whole batches straight from array columns (the DataLoader's fast path), or None."""
        from gpunda.ndarray import NDArray, array
        out = []
        for data in self._data:
            if isinstance(data, np.ndarray):
                b = data[indices]
                out.append(array(b, dtype=b.dtype))
            elif isinstance(data, NDArray):
                out.append(array(data.asnumpy()[indices], dtype=data.dtype)
                           if data.context.device_type == "cpu"
                           else data[array(indices, ctx=data.context, dtype="int64")])
            else:
                return None
        return out[0] if len(out) == 1 else out


class _DownloadedDataset(Dataset):
    """MXNet's base of the data sets kept under a ``root`` folder: makes the folder, has
    ``_get_data`` fill ``_data`` and ``_label``, and samples ``(data[i], label[i])`` (through
    ``transform(data, label)`` when given)."""

    def __init__(self, root, transform):
        super().__init__()
        self._transform = transform
        self._data = None
        self._label = None
        self._root = os.path.expanduser(root)
        os.makedirs(self._root, exist_ok=True)
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError(f"{type(self).__name__} must define _get_data")


class RecordFileDataset(Dataset):
    """The raw records of a RecordIO file: sample ``i`` is the bytes of the ``i``-th key
    of ``filename``'s index (the ``.idx`` file beside it)."""

    def __init__(self, filename):
        from gpunda import recordio
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        for path in (filename, self.idx_file):
            if not os.path.exists(path):
                raise GpundaError(f"RecordFileDataset: {path!r} does not exist; it needs the "
                                  f".rec file and its .idx index")
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)
