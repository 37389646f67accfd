"""Samplers: which sample indices a DataLoader visits, and in which batches."""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError, GpundaValueError

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler"]


class Sampler:
    """Base class: iterates over sample indices."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start+1, ..., start+length-1``."""

    def __init__(self, length, start=0):
        self._length, self._start = length, start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A random permutation of ``range(length)`` each epoch (NumPy's global generator,
    so ``np.random.seed`` makes it reproducible, as in MXNet)."""

    def __init__(self, length):
        self._length = length

    def __iter__(self):
        return iter(np.random.permutation(self._length).tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of ``dataset`` for which ``fn(sample)`` is true
    (``fn`` runs once per sample, when the sampler is made)."""

    def __init__(self, fn, dataset):
        if not callable(fn):
            raise GpundaError(f"FilterSampler: fn={fn!r} must be callable")
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``.

    ``last_batch``: 'keep' (a smaller last batch), 'discard' (drop it) or
    'rollover' (carry the remainder into the next epoch).
    """

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if last_batch not in ("keep", "discard", "rollover"):
            raise GpundaValueError(f"BatchSampler: last_batch={last_batch!r} must be one of "
                                   f"'keep', 'discard' or 'rollover'")
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise GpundaError(f"BatchSampler: batch_size={batch_size!r} must be a positive "
                              f"integer")
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        n = len(self._sampler)
        if self._last_batch == "keep":
            return (n + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return n // self._batch_size
        return (len(self._prev) + n) // self._batch_size
