"""MXNet's ``mx.engine``: the bulk-execution size, per thread.

MXNet's engine could fuse up to ``size`` queued operators into one scheduling
unit. gpunda runs each op as it is called, so the size changes no result; it is
kept (per thread, default 0, as MXNet's) so code that sets and restores it works.
"""
from __future__ import annotations

import threading

from gpunda.base import GpundaError

__all__ = ["set_bulk_size", "bulk"]


class _BulkState(threading.local):
    size = 0


_state = _BulkState()


def set_bulk_size(size):
    """Set the most operators one bulk may hold; returns the previous size."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise GpundaError(f"engine.set_bulk_size: size={size!r} must be an int >= 0")
    prev, _state.size = _state.size, size
    return prev


class _BulkScope:
    """``with`` scope setting the bulk size, restored on exit."""

    def __init__(self, size):
        self._size, self._old_size = size, None

    def __enter__(self):
        self._old_size = set_bulk_size(self._size)
        return self

    def __exit__(self, *exc):
        set_bulk_size(self._old_size)
        return False


def bulk(size):
    """Scope with bulk size ``size``: ``with mx.engine.bulk(10): ...``."""
    return _BulkScope(size)
