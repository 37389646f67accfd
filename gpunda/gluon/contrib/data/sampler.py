"""MXNet's ``mxnet.gluon.contrib.data.sampler``: ``IntervalSampler``."""
from __future__ import annotations

from gpunda.base import GpundaAssertionError
from gpunda.gluon.data.sampler import Sampler

__all__ = ["IntervalSampler"]


class IntervalSampler(Sampler):
    """The indices ``0, interval, 2*interval, ...`` below ``length``; with ``rollover``
    (the default) then ``1, 1+interval, ...`` and so on until every index is visited.

    ``len()`` is ``length`` either way, as in MXNet 1.9.1.
    """

    def __init__(self, length, interval, rollover=True):
        if not interval <= length:
            raise GpundaAssertionError(f"IntervalSampler: interval={interval} must be at most "
                                       f"length={length}")
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        for first in range(self._interval if self._rollover else 1):
            yield from range(first, self._length, self._interval)

    def __len__(self):
        return self._length
