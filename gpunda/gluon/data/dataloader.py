"""DataLoader (MXNet 1.x ``gluon.data.DataLoader``): batches from a Dataset.

Batches are assembled in this process (``num_workers`` is accepted for
compatibility; the work is small next to a training step). ArrayDatasets of
NumPy arrays or NDArrays with the default batchify take a fast path that
gathers a whole batch with one fancy index per column.
"""
from __future__ import annotations

import numpy as np

from ...base import GpundaError
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_batchify_fn"]


def default_batchify_fn(data):
    """Stack a list of samples into a batch (tuples are batched element by element)."""
    from ...ndarray import NDArray, array
    first = data[0]
    if isinstance(first, NDArray):
        host = np.stack([d.asnumpy() for d in data])
        return array(host, ctx=first.context, dtype=first.dtype)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(col)) for col in zip(*data)]
    host = np.asarray(data)
    if host.dtype == object:
        raise GpundaError("DataLoader: cannot batchify samples of ragged shapes or non-numeric "
                          "types; pass a batchify_fn")
    return array(host, dtype=host.dtype)


def _np_batch(out):
    """A default batch in NumPy mode: ``mx.np.ndarray`` (as MXNet's batchify makes there)."""
    from ...ndarray import NDArray
    if isinstance(out, NDArray):
        from .._np_mode import to_np
        return to_np([out])[0]
    if isinstance(out, (list, tuple)):
        return type(out)(_np_batch(o) for o in out)
    return out


class DataLoader:
    """Iterate over ``dataset`` in mini-batches.

    ``batch_size`` with ``shuffle`` and ``last_batch`` ('keep', 'discard',
    'rollover'), or a ``sampler``/``batch_sampler``; ``batchify_fn`` merges a
    list of samples into a batch.
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False,
                 pin_device_id=0, prefetch=None, thread_pool=False, timeout=120):
        self._dataset = dataset
        if batch_sampler is None:
            if batch_size is None:
                raise GpundaError("DataLoader: batch_size must be given when batch_sampler is not")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle else SequentialSampler(len(dataset))
            elif shuffle:
                raise GpundaError("DataLoader: shuffle must not be given together with sampler")
            batch_sampler = BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise GpundaError("DataLoader: batch_size, shuffle, sampler and last_batch must not "
                              "be given together with batch_sampler")
        if not isinstance(num_workers, int) or num_workers < 0:
            raise GpundaError(f"DataLoader: num_workers={num_workers!r} must be an integer >= 0")
        self._batch_sampler = batch_sampler
        self._num_workers = num_workers
        self._pin_memory = pin_memory
        self._default = batchify_fn is None
        self._batchify_fn = default_batchify_fn if batchify_fn is None else batchify_fn

    def __iter__(self):
        fast = getattr(self._dataset, "_batch", None) if self._default else None
        from ...util import is_np_array
        as_np = _np_batch if self._default and is_np_array() else (lambda b: b)
        for batch in self._batch_sampler:
            if fast is not None:
                out = fast(np.asarray(batch, dtype=np.int64))
                if out is not None:
                    yield as_np(out)
                    continue
                fast = None
            yield as_np(self._batchify_fn([self._dataset[i] for i in batch]))

    def __len__(self):
        return len(self._batch_sampler)
