"""Data iterators (MXNet's ``mx.io``): DataDesc, DataBatch, DataIter, NDArrayIter."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .base import GpundaError

__all__ = ["DataDesc", "DataBatch", "DataIter", "NDArrayIter"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name, shape, dtype and layout of one input."""

    def __new__(cls, name, shape, dtype=np.float32, layout="NCHW"):
        ret = super().__new__(cls, name, tuple(shape))
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{np.dtype(self.dtype).name},{self.layout}]"


class DataBatch:
    """One batch: lists of data and label arrays, and how many samples are padding."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        self.data, self.label, self.pad, self.index = data, label, pad, index
        self.bucket_key = bucket_key
        self.provide_data, self.provide_label = provide_data, provide_label

    def __repr__(self):
        shapes = [d.shape for d in self.data] if self.data else []
        return f"DataBatch: data shapes: {shapes} pad: {self.pad}"


class DataIter:
    """Base class of iterators: ``reset()``, ``next()`` and Python iteration."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        pass

    def next(self):
        raise StopIteration

    def __next__(self):
        return self.next()


def _init_data(data, default_name):
    from . import ndarray as nd
    if data is None:
        return []
    if isinstance(data, (np.ndarray, nd.NDArray)):
        data = [data]
    if isinstance(data, (list, tuple)):
        names = [default_name] if len(data) == 1 else [f"_{i}_{default_name}" for i in range(len(data))]
        data = dict(zip(names, data))
    if not isinstance(data, dict):
        raise GpundaError(f"NDArrayIter: {default_name} must be an array, a list or a dict of "
                          f"arrays, got {type(data).__name__}")
    out = []
    for k, v in data.items():
        arr = v.asnumpy() if isinstance(v, nd.NDArray) else np.asarray(v)
        out.append((k, arr))
    return out


class NDArrayIter(DataIter):
    """Iterate over in-memory arrays in batches.

    ``last_batch_handle``: 'pad' (fill the last batch from the start and report
    ``pad``), 'discard' (drop it) or 'roll_over' (carry the rest into the next epoch).
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad",
                 data_name="data", label_name="softmax_label"):
        super().__init__(batch_size)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise GpundaError(f"NDArrayIter: batch_size={batch_size!r} must be a positive integer")
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise GpundaError(f"NDArrayIter: last_batch_handle={last_batch_handle!r} is not one "
                              f"of ['pad', 'discard', 'roll_over']")
        self.data = _init_data(data, data_name)
        self.label = _init_data(label, label_name)
        n = {len(a) for _, a in self.data + self.label}
        if len(n) != 1:
            raise GpundaError(f"NDArrayIter: data and label have different lengths {sorted(n)}")
        self.num_data = n.pop()
        self.shuffle, self.last_batch_handle = shuffle, last_batch_handle
        self._order = np.arange(self.num_data)
        self._carry = np.array([], dtype=np.int64)
        self.reset()

    @property
    def provide_data(self):
        return [DataDesc(k, (self.batch_size,) + a.shape[1:], a.dtype) for k, a in self.data]

    @property
    def provide_label(self):
        return [DataDesc(k, (self.batch_size,) + a.shape[1:], a.dtype) for k, a in self.label]

    def reset(self):
        """Start a new epoch (reshuffling when ``shuffle``)."""
        order = np.random.permutation(self.num_data) if self.shuffle else np.arange(self.num_data)
        self._order = np.concatenate([self._carry, order]) if len(self._carry) else order
        self._carry = np.array([], dtype=np.int64)
        self._cursor = 0

    def next(self):
        from . import ndarray as nd
        start = self._cursor
        if start >= len(self._order):
            raise StopIteration
        idx = self._order[start:start + self.batch_size]
        pad = self.batch_size - len(idx)
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over":
                self._carry = idx
                raise StopIteration
            idx = np.concatenate([idx, self._order[:pad]])
        self._cursor = start + self.batch_size
        data = [nd.array(a[idx], dtype=a.dtype) for _, a in self.data]
        label = [nd.array(a[idx], dtype=a.dtype) for _, a in self.label]
        return DataBatch(data, label, pad=pad, index=idx)

    def getpad(self):
        return max(0, self._cursor - len(self._order))
