"""Running out of device memory: free gpunda's own caches, retry once, explain.

Only the failure paths come here (the ``except`` clauses where an op's error
already surfaces: imperative dispatch, CachedOp calls, the backward walk), so
a successful op pays nothing. On an out-of-memory error of the backend
(CuPy's ``cupy.cuda.memory.OutOfMemoryError``, NumPy's ``MemoryError``) gpunda
drops what it holds for speed only: every CachedOp's static buffers and
captured CUDA graphs (rebuilt on the next call) and the memory pool's cached
blocks. The op is then retried once; if it still does not fit, a GpundaError
names the op, its inputs' shapes and dtypes and the bytes asked for.
"""
from __future__ import annotations

import weakref

from gpunda.base import GpundaError

__all__ = ["is_oom", "free_caches", "oom_error", "track_cached_op", "stats"]

from gpunda.base import gpunda_log as _log
_cached_ops = weakref.WeakSet()
_stats = {"ooms": 0, "recovered": 0, "freed_cached_ops": 0}


def track_cached_op(cop):
    """Remember a CachedOp so an out-of-memory error can release its buffers."""
    _cached_ops.add(cop)


def stats():
    """Counters: ooms seen, recovered by the retry, CachedOps whose caches were freed."""
    return dict(_stats)


def is_oom(err, ctx=None):
    """Whether ``err`` (or what caused it) is the device running out of memory."""
    classes = [MemoryError]
    if ctx is not None:
        b = ctx._backend
        c = getattr(b, "oom_error", None) if b is not None else None
        if c is not None:
            classes.append(c)
    classes = tuple(classes)
    seen = 0
    while err is not None and seen < 4:
        if isinstance(err, classes) or type(err).__name__ == "OutOfMemoryError":
            return True
        err = err.__cause__
        seen += 1
    return False


def free_caches(ctx=None):
    """Release every CachedOp's static buffers and graphs and the pool's free blocks."""
    n = 0
    for cop in list(_cached_ops):
        release = getattr(cop, "_release_device_caches", None)
        if release is not None and release():
            n += 1
    _stats["freed_cached_ops"] += n
    import gc
    gc.collect()
    if ctx is not None and ctx.device_type == "gpu" and ctx._backend is not None:
        ctx._backend.empty_cache()
    return n


def _asked(err):
    import re
    while err is not None:
        m = re.search(r"allocating ([\d,]+) bytes", str(err))
        if m:
            return int(m.group(1).replace(",", ""))
        err = err.__cause__
    return None


def oom_error(where, ctx, err, retried=True):
    """The GpundaError for an allocation that failed (after freeing the caches).

    ``where`` names the op and its inputs (shapes, dtypes)."""
    n = _asked(err)
    asked = f"{n:,} bytes" if n is not None else "an allocation"
    what = ("even after gpunda freed its caches (CachedOp static buffers, captured graphs, "
            "pooled blocks) and retried once" if retried else
            "; gpunda freed its caches (CachedOp static buffers, captured graphs, pooled "
            "blocks), so the next step can run")
    return GpundaError(f"{where} -- out of memory on {ctx} asking for {asked} {what}. "
                       f"Reduce the batch size or free arrays you still hold")


def describe(where, shape, dtype):
    """``where`` with the shape and dtype being created, for a creation's OOM message."""
    import numpy as np
    return f"{where}: creating shape {tuple(shape)} dtype {np.dtype(dtype).name}"


def retry(fn, ctx, describe, err):
    """After OOM ``err``: free the caches, run ``fn()`` once more; GpundaError if it fails.

    ``describe(e)`` gives the message prefix naming the op and its inputs."""
    _stats["ooms"] += 1
    n = free_caches(ctx)
    _log.warning("gpunda: out of memory on %s; freed the caches of %d CachedOp(s), retrying "
                 "once", ctx, n)
    try:
        r = fn()
    except Exception as e2:   # noqa: BLE001 -- re-raised below, with the OOM explained
        if is_oom(e2, ctx):
            raise oom_error(str(describe(e2)), ctx, e2) from e2
        raise describe(e2) if not isinstance(e2, GpundaError) else e2
    _stats["recovered"] += 1
    return r
