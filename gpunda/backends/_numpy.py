"""The CPU backend: NumPy arrays, SciPy sparse matrices."""
from __future__ import annotations

import contextlib

import numpy as np


class Backend:
    """What an array library must offer gpunda. Subclasses fill it in."""

    name = "abstract"
    xp = None                 # the array module
    is_gpu = False
    supports_graphs = False   # CUDA-graph capture

    @property
    def sp(self):
        """The sparse module (scipy.sparse or cupyx.scipy.sparse)."""
        raise NotImplementedError

    def device_scope(self):
        """A ``with`` block making this backend's device current."""
        return contextlib.nullcontext()

    def from_host(self, arr):
        """A backend array holding a copy of NumPy array ``arr``."""
        raise NotImplementedError

    def to_host(self, arr):
        """A NumPy array holding the values of backend array ``arr``."""
        raise NotImplementedError

    oom_error = MemoryError   # what running out of this backend's memory raises

    def is_array(self, obj):
        return isinstance(obj, self.xp.ndarray)

    def synchronize(self):
        """Wait for all queued work on the device."""

    def memory_info(self):
        """(free, total) bytes."""
        raise NotImplementedError

    def empty_cache(self):
        """Return pooled memory to the system."""


class NumpyBackend(Backend):
    name = "numpy"
    xp = np
    is_gpu = False

    def __init__(self):
        from gpunda.backends._host_memory import keep_freed_memory
        keep_freed_memory()     # NOTE [Host memory pool]

    @property
    def sp(self):
        import scipy.sparse
        return scipy.sparse

    @property
    def special(self):
        import scipy.special
        return scipy.special

    def from_host(self, arr):
        return np.array(arr, copy=True)

    def to_host(self, arr):
        return arr

    def memory_info(self):
        try:
            with open("/proc/meminfo") as f:
                info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
            return info.get("MemAvailable", 0), info.get("MemTotal", 0)
        except OSError:
            return 0, 0

    def empty_cache(self):
        from gpunda.backends._host_memory import release_free_memory
        release_free_memory()
