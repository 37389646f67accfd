"""``cupy.cuda`` of the test stand-in GPU: device, streams, memory pools, stream capture.

Test-only (see _standin.py). What it simulates, strictly:

* Memory. Every array the stand-in creates is a "device allocation" drawn from
  the current allocator: the default ``MemoryPool`` or the one installed with
  ``using_allocator(pool.malloc)``. With ``GPUNDA_TEST_STANDIN_GPU_MEMORY=bytes``
  live allocations past that cap raise CuPy's own
  ``cupy.cuda.memory.OutOfMemoryError`` (sizes rounded to 512 bytes as CuPy's
  pool does).
* Stream capture (``Stream.begin_capture`` .. ``end_capture`` -> ``Graph``). While
  the current stream captures, each array operation still computes (shapes must
  be known and intermediate values stay valid), is recorded for replay, and its
  effect on memory that existed before the capture is undone at
  ``end_capture``; arrays allocated during the capture are filled with garbage
  then, as nothing has run on a real GPU until the first ``Graph.launch``.
  Inside a capture these raise as CuPy does: host synchronisation and
  host<->device copies (RuntimeError), cuBLAS/cuSOLVER/cuRAND/cuSPARSE-backed
  calls (NotImplementedError), and, stricter than CuPy (where it is silent
  memory corruption, cupy#9655), any allocation not from a private pool.
"""
from __future__ import annotations

import contextlib
import os
import threading
import weakref

import numpy as np

__all__ = ["Device", "Stream", "Event", "Graph", "MemoryPool", "using_allocator",
           "get_current_stream", "capturing", "note_alloc", "check_sync", "check_h2d",
           "check_library", "runtime", "memory"]

_ROUND = 512


class _Tls(threading.local):
    def __init__(self):
        self.stream = None
        self.allocator = None     # None: the default pool's malloc


_tls = _Tls()


class _Capture:
    __slots__ = ("ops", "allocated", "snapshots", "invalid")

    def __init__(self):
        self.ops = []            # replay closures, in order
        self.allocated = []      # weakrefs to roots allocated during the capture
        self.snapshots = {}      # id(root) -> (root, copy before its first write)
        self.invalid = None      # reason once a CUDA-level violation invalidated it


# ------------------------------------------------------------------------- memory

def _cap_bytes():
    v = os.environ.get("GPUNDA_TEST_STANDIN_GPU_MEMORY", "").strip()
    return int(v) if v else 80 * 2**30


class MemoryPool:
    """Bookkeeping of one pool: bytes of live arrays drawn from it."""

    def __init__(self, allocator=None):
        self._used = 0

    def malloc(self, size):
        raise NotImplementedError("the gpunda test stand-in allocates through its arrays; "
                                  "MemoryPool.malloc is only an allocator token")

    def used_bytes(self):
        return self._used

    def total_bytes(self):
        return self._used

    def free_bytes(self):
        return 0

    def free_all_blocks(self, stream=None):
        """Cached blocks go back to the device (the stand-in caches none)."""

    def n_free_blocks(self):
        return 0

    def set_limit(self, size=None, fraction=None):
        raise NotImplementedError("use GPUNDA_TEST_STANDIN_GPU_MEMORY to cap the stand-in")


_default_pool = MemoryPool()
_live = {}          # id(root) -> (weakref, nbytes, pool)
_total = [0]


def _freed(key, ref):
    ent = _live.get(key)
    if ent is not None and ent[0] is ref:
        del _live[key]
        ent[2]._used -= ent[1]
        _total[0] -= ent[1]


def _current_pool():
    a = _tls.allocator
    if a is None:
        return _default_pool
    return getattr(a, "__self__", _default_pool)


def note_alloc(root):
    """Account ``root`` (a NumPy array owning memory) as a device allocation, once."""
    key = id(root)
    ent = _live.get(key)
    if ent is not None and ent[0]() is root:
        return
    pool = _current_pool()
    cap = capturing()
    if cap is not None and pool is _default_pool:
        raise RuntimeError(
            "gpunda test stand-in: an array was allocated from the default memory pool "
            "during stream capture; a captured graph must allocate from its own pool "
            "(cupy.cuda.using_allocator(pool.malloc)), else freed blocks are reused "
            "under the graph (cupy#9655)")
    n = -(-max(root.nbytes, 1) // _ROUND) * _ROUND
    limit = _cap_bytes()
    if _total[0] + n > limit:
        import cupy.cuda.memory as real
        raise real.OutOfMemoryError(n, _total[0], limit)
    ref = weakref.ref(root, lambda r, k=key: _freed(k, r))
    _live[key] = (ref, n, pool)
    pool._used += n
    _total[0] += n
    if cap is not None:
        cap.allocated.append(ref)


def used_bytes():
    """Bytes of live stand-in arrays (all pools)."""
    return _total[0]


def using_allocator(allocator=None):
    """Make ``allocator`` (a ``MemoryPool.malloc``) current for this thread."""
    @contextlib.contextmanager
    def scope():
        prev = _tls.allocator
        _tls.allocator = allocator
        try:
            yield
        finally:
            _tls.allocator = prev
    return scope()


# ------------------------------------------------------------------- capture rules

def capturing():
    """The capture of this thread's current stream, or None."""
    s = _tls.stream
    return None if s is None else s._capture


def check_sync(what):
    """``what`` waits for the device: refused on a capturing stream, as CuPy does."""
    if capturing() is not None:
        raise RuntimeError(f"the current stream is capturing, so synchronous API calls "
                           f"are disallowed ({what})")


def check_h2d(what):
    if capturing() is not None:
        raise RuntimeError(f"the current stream is capturing, so H2D transfers are "
                           f"disallowed ({what})")


def check_library(lib, what):
    if capturing() is not None:
        raise NotImplementedError(f"calling {lib} API during stream capture is currently "
                                  f"unsupported ({what})")


def snapshot(target):
    """Before a capture writes ``target`` in place: keep its pre-capture contents."""
    cap = capturing()
    if cap is None or not isinstance(target, np.ndarray):
        return
    root = target
    while isinstance(root.base, np.ndarray):
        root = root.base
    if id(root) in cap.snapshots:
        return
    if any(r() is root for r in cap.allocated):
        return
    cap.snapshots[id(root)] = (root, root.copy())


def record(fn):
    """Add a replay closure to the current capture (no-op outside one)."""
    cap = capturing()
    if cap is not None:
        cap.ops.append(fn)


# ------------------------------------------------------------------------ streams

class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.done = True

    def record(self, stream=None):
        return None

    def synchronize(self):
        check_sync("Event.synchronize")


class Graph:
    """A captured sequence of array operations; ``launch`` replays it."""

    def __init__(self, ops):
        self._ops = ops

    def launch(self, stream=None):
        for op in self._ops:
            op()

    def upload(self, stream=None):
        pass


class Stream:
    """A CUDA stream; ``with stream:`` makes it current for this thread."""

    null = None

    def __init__(self, null=False, non_blocking=False, ptr=None):
        self.is_null = null
        self.non_blocking = non_blocking
        self.ptr = 0 if null else id(self)
        self._capture = None
        self._prev = []

    def __enter__(self):
        self._prev.append(_tls.stream)
        _tls.stream = self
        return self

    def __exit__(self, *exc):
        _tls.stream = self._prev.pop()
        return False

    def use(self):
        _tls.stream = self
        return self

    @property
    def done(self):
        if self._capture is not None:
            self._capture.invalid = "cudaErrorStreamCaptureUnsupported (stream query)"
            raise _cuda_error(900)
        return True

    def synchronize(self):
        if self._capture is not None:
            self._capture.invalid = "cudaErrorStreamCaptureUnsupported (synchronize)"
            raise _cuda_error(900)

    def record(self, event=None):
        e = event or Event()
        return e

    def wait_event(self, event):
        pass

    def begin_capture(self, mode=None):
        if self.is_null:
            raise RuntimeError("cannot capture the null stream")
        if self._capture is not None:
            raise _cuda_error(401)       # cudaErrorIllegalState
        self._capture = _Capture()

    def is_capturing(self):
        c = self._capture
        if c is not None and c.invalid:
            raise RuntimeError(f"the capture was invalidated: {c.invalid}")
        return c is not None

    def end_capture(self):
        c = self._capture
        if c is None:
            raise _cuda_error(401)
        self._capture = None
        for root, saved in reversed(list(c.snapshots.values())):
            np.copyto(root, saved)           # nothing ran on the device yet
        for ref in c.allocated:
            a = ref()
            if a is not None and a.size:
                _poison(a)
        if c.invalid:
            raise _cuda_error(901)           # cudaErrorStreamCaptureInvalidated
        return Graph(c.ops)


def _poison(a):
    if a.dtype.kind in "fc":
        a.fill(np.nan)
    elif a.flags.c_contiguous:
        a.view(np.uint8).fill(0xA5)


def _cuda_error(status):
    from cupy_backends.cuda.api.runtime import CUDARuntimeError
    return CUDARuntimeError(status)


Stream.null = Stream(null=True)
_tls.stream = Stream.null


def get_current_stream(device_id=None):
    s = _tls.stream
    if s is None:
        s = _tls.stream = Stream.null
    return s


class Device:
    """CUDA device ``id`` (the stand-in has one: 0)."""

    def __init__(self, device=None):
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise _cuda_error(101)           # cudaErrorInvalidDevice

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        pass

    def synchronize(self):
        check_sync("Device.synchronize")

    @property
    def pci_bus_id(self):
        return "0000:00:00.0"

    @property
    def compute_capability(self):
        return "90"

    def __repr__(self):
        return f"<CUDA Device {self.id} (gpunda test stand-in)>"


class _Runtime:
    """The few ``cupy.cuda.runtime`` calls gpunda makes."""

    is_hip = False
    streamCaptureModeGlobal, streamCaptureModeThreadLocal, streamCaptureModeRelaxed = 0, 1, 2

    @staticmethod
    def getDeviceCount():
        return 1

    @staticmethod
    def getDevice():
        return 0

    @staticmethod
    def memGetInfo():
        cap = _cap_bytes()
        return max(cap - _total[0], 0), cap

    @staticmethod
    def getDeviceProperties(i):
        if i != 0:
            raise _cuda_error(101)
        return {"name": b"gpunda test stand-in (CuPy rules on NumPy)",
                "totalGlobalMem": _cap_bytes(), "major": 9, "minor": 0}

    @staticmethod
    def deviceSynchronize():
        check_sync("deviceSynchronize")

    @property
    def CUDARuntimeError(self):
        from cupy_backends.cuda.api.runtime import CUDARuntimeError
        return CUDARuntimeError


runtime = _Runtime()


class _MemoryModule:
    MemoryPool = MemoryPool

    @property
    def OutOfMemoryError(self):
        import cupy.cuda.memory as real
        return real.OutOfMemoryError


memory = _MemoryModule()


def get_default_memory_pool():
    return _default_pool


def is_available():
    return True
