"""Host memory kept for reuse: the CPU backend's memory pool is glibc's malloc, tuned.

# NOTE [Host memory pool]
A training step allocates and frees many arrays of a few MB (an RNN's reserve, gradients,
im2col buffers). With glibc's defaults a block that large is mmap-ed and given back to the
kernel when freed (or the heap's top is trimmed), so the next step's array of the same size
page-faults its memory in again, zero-filled: on a 2-layer LSTM step that was a third of
the time. MXNet keeps freed blocks in its own storage pool; gpunda lets malloc do it:
blocks under ``_MMAP_MAX_BYTES`` come from the heap, and up to ``_TRIM_BYTES`` free at its
top stay mapped. ``empty_cache()`` (``malloc_trim``) hands the free memory back.

``GPUNDA_CPU_MEM_POOL=0`` keeps malloc's defaults. Elsewhere than glibc this does nothing.
"""
from __future__ import annotations

import os
import sys

_M_TRIM_THRESHOLD = -1      # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_MMAP_MAX_BYTES = 32 << 20  # glibc's own ceiling for its adaptive threshold
_TRIM_BYTES = 256 << 20

_state = {"libc": None, "tuned": False}


def _glibc():
    if _state["libc"] is None:
        _state["libc"] = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes
                libc = ctypes.CDLL(None)
                libc.gnu_get_libc_version       # noqa: B018 (only glibc has it)
                _state["libc"] = libc
            except (OSError, AttributeError):
                pass
    return _state["libc"]


def keep_freed_memory():
    """Tune malloc once so freed host blocks are reused rather than returned (NOTE above).
    Returns whether it is tuned."""
    if _state["tuned"] or os.environ.get("GPUNDA_CPU_MEM_POOL", "1") == "0":
        return _state["tuned"]
    libc = _glibc()
    if libc:
        ok = libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX_BYTES) == 1
        ok = libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES) == 1 and ok
        _state["tuned"] = ok
    return _state["tuned"]


def release_free_memory():
    """Give the heap's free memory back to the system (``malloc_trim(0)``)."""
    libc = _glibc()
    if libc:
        libc.malloc_trim(0)
