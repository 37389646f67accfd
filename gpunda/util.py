"""MXNet's ``mx.util``: NumPy-shape semantics switches."""
from __future__ import annotations

import functools
import threading

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array",
           "set_np", "reset_np", "use_np", "getenv", "setenv"]


class _NpState(threading.local):
    np_shape = False
    np_array = False


_np = _NpState()


def is_np_shape():
    """Whether 0-d and zero-size shapes follow NumPy (True) or MXNet's legacy rules."""
    return _np.np_shape


def set_np_shape(active):
    """Turn NumPy shape semantics on or off; returns the previous value."""
    prev = _np.np_shape
    _np.np_shape = bool(active)
    return prev


class np_shape:
    """Scope with NumPy shape semantics on (``with mx.util.np_shape(True):``)."""

    def __init__(self, active=True):
        self._active, self._prev = active, None

    def __enter__(self):
        self._prev = set_np_shape(self._active)
        return self

    def __exit__(self, *exc):
        set_np_shape(self._prev)
        return False


def use_np_shape(func):
    """Decorator running ``func`` with NumPy shape semantics."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with np_shape(True):
            return func(*args, **kwargs)
    return wrapper


def is_np_array():
    """Whether MXNet's NumPy-array mode is on (gpunda keeps the nd API: always False)."""
    return _np.np_array


def set_np(shape=True, array=False):
    """Turn NumPy shape semantics on (gpunda has no separate mx.np array type)."""
    if array:
        from .base import GpundaError
        raise GpundaError("set_np: array=True (the mx.np namespace) is not supported by gpunda; "
                          "use mx.nd with set_np_shape(True)")
    set_np_shape(shape)


def reset_np():
    set_np_shape(False)


def use_np(func):
    return use_np_shape(func)


def getenv(name):
    import os
    return os.environ.get(name)


def setenv(name, value):
    import os
    os.environ[name] = value
