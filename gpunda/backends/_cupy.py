"""The GPU backend: CuPy arrays and cupyx.scipy.sparse matrices on one CUDA ordinal."""
from __future__ import annotations

import numpy as np

from gpunda.backends._numpy import Backend


class CupyBackend(Backend):
    name = "cupy"
    is_gpu = True

    def __init__(self, device_id):
        import cupy
        self.xp = cupy
        self.device_id = device_id
        self._device = cupy.cuda.Device(device_id)
        # CuPy >= 11 has stream capture; HIP builds do not.
        self.supports_graphs = (hasattr(cupy.cuda.Stream, "begin_capture")
                                and not cupy.cuda.runtime.is_hip)

    @property
    def sp(self):
        import cupyx.scipy.sparse
        return cupyx.scipy.sparse

    @property
    def special(self):
        import cupyx.scipy.special
        return cupyx.scipy.special

    @property
    def oom_error(self):
        return self.xp.cuda.memory.OutOfMemoryError

    def device_scope(self):
        return self._device

    def from_host(self, arr):
        with self._device:
            return self.xp.array(np.asarray(arr), copy=True)

    def to_host(self, arr):
        return self.xp.asnumpy(arr)

    def synchronize(self):
        with self._device:
            self.xp.cuda.get_current_stream().synchronize()

    def memory_info(self):
        with self._device:
            return self.xp.cuda.runtime.memGetInfo()

    def empty_cache(self):
        with self._device:
            self.xp.get_default_memory_pool().free_all_blocks()
