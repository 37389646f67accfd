"""DataLoader workers (``num_workers > 0``): a pool of processes or threads that build
batches while the training loop runs.

NOTE [DataLoader workers]
A pool is made once per DataLoader, as MXNet's: ``thread_pool=True`` gives a
``ThreadPool`` that shares the dataset; otherwise a process pool (fork where the
platform has it) whose workers receive the dataset once, at start, and keep it
in a module global, so every batch task carries only its sample indices. A
process worker writes each array of its batch to a file in shared memory
(/dev/shm where it exists) and returns only the file names, shapes and dtypes,
as MXNet passes batches through shared memory: the result pipe then never
fills up, which would deadlock ``Pool.terminate`` (CPython's pool blocks
putting its sentinel on a full pipe). The parent reads each file into a new
NDArray and deletes it; files of batches never collected are deleted with the
pool (they share a per-pool name prefix). The iterator keeps up to ``prefetch`` tasks
in flight and hands batches back strictly in sampler order, so the batches are
exactly those of ``num_workers=0``. A failing sample is caught in the worker and
comes back as an error naming the sample index and carrying the worker's
traceback, raised in the parent when that batch is due.

A pool is terminated as soon as its DataLoader is dropped (a ``weakref.finalize``
on the loader, which nothing in the iterator points back to, so no reference
cycle waits for the garbage collector), and ``close_pool`` never blocks the
caller for long even if CPython's terminate gets stuck.
"""
from __future__ import annotations

import glob
import multiprocessing
import multiprocessing.pool
import os
import pickle
import signal
import tempfile
import threading
import traceback
import uuid
import weakref

import numpy as np

from gpunda.base import GpundaError

_worker_dataset = None
_worker_prefix = None
_MAX_TRACE = 8000
_CLOSE_TIMEOUT = 10.0
_SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


class _SharedArray:
    """An array a worker left in a shared-memory file (read back by ``load``)."""

    def __init__(self, arr, ctx):
        host = np.ascontiguousarray(arr)
        fd, self.path = tempfile.mkstemp(prefix=_worker_prefix, dir=_SHM_DIR)
        with os.fdopen(fd, "wb") as f:
            f.write(host.tobytes())
        self.shape, self.dtype, self.ctx = host.shape, host.dtype.str, ctx

    def load(self):
        from gpunda.ndarray import array
        try:
            host = np.fromfile(self.path, dtype=np.dtype(self.dtype)).reshape(self.shape)
        finally:
            os.unlink(self.path)
        return array(host, ctx=self.ctx, dtype=host.dtype)


def _to_shared(batch):
    from gpunda.ndarray import NDArray
    if isinstance(batch, NDArray) and batch.stype == "default":
        return _SharedArray(batch.asnumpy(), batch.context)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_shared(b) for b in batch)
    return batch


def _from_shared(batch):
    if isinstance(batch, _SharedArray):
        return batch.load()
    if isinstance(batch, (list, tuple)):
        return type(batch)(_from_shared(b) for b in batch)
    return batch


class _SampleError:
    """What a worker sends back instead of a batch when reading sample ``index`` failed."""

    def __init__(self, index, exc):
        self.index = index
        self.kind = type(exc).__name__
        self.message = str(exc)
        # bounded, so an error result stays a small message on the result pipe
        self.trace = traceback.format_exc()[-_MAX_TRACE:]

    def raise_(self):
        where = "batchify_fn" if self.index is None else f"sample {self.index}"
        raise GpundaError(f"DataLoader: a worker failed on {where}: {self.kind}: "
                          f"{self.message}\nworker traceback:\n{self.trace}")


def _collect(dataset, samples, batchify_fn):
    """The batch of ``samples`` (a _SampleError when a sample or batchify_fn fails)."""
    items = []
    for i in samples:
        try:
            items.append(dataset[i])
        except Exception as e:      # noqa: BLE001 (sent to the parent, raised there)
            return _SampleError(i, e)
    try:
        return batchify_fn(items)
    except Exception as e:          # noqa: BLE001
        return _SampleError(None, e)


def _process_init(dataset, prefix, np_shape, np_array):
    global _worker_dataset, _worker_prefix
    _worker_dataset = dataset
    _worker_prefix = prefix
    from gpunda.util import set_np
    set_np(shape=np_shape, array=np_array)
    # the parent handles Ctrl-C and shuts the pool down
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _thread_init(np_shape, np_array):
    from gpunda.util import set_np
    set_np(shape=np_shape, array=np_array)


def _process_task(samples, batchify_fn):
    out = _collect(_worker_dataset, samples, batchify_fn)
    if not isinstance(out, _SampleError):
        out = _to_shared(out)
    return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


def _thread_task(samples, batchify_fn, dataset):
    return _collect(dataset, samples, batchify_fn)


def make_pool(num_workers, dataset, thread_pool):
    """A ThreadPool, or a process pool holding ``dataset`` in each worker."""
    from gpunda.util import is_np_array, is_np_shape
    flags = (is_np_shape(), is_np_array())
    if thread_pool:
        return multiprocessing.pool.ThreadPool(num_workers, initializer=_thread_init,
                                               initargs=flags)
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    prefix = f"gpunda-dl-{os.getpid()}-{uuid.uuid4().hex[:8]}-"
    pool = ctx.Pool(num_workers, initializer=_process_init, initargs=(dataset, prefix) + flags)
    # files of batches never collected go with the pool, or at interpreter exit
    weakref.finalize(pool, _delete_files, prefix)
    return pool


def _delete_files(prefix):
    for path in glob.glob(os.path.join(_SHM_DIR, prefix + "*")):
        try:
            os.unlink(path)
        except OSError:
            pass


def close_pool(pool):
    """Terminate ``pool`` without ever blocking the caller for long.

    ``Pool.terminate`` can block for good when a worker holds the result pipe's
    lock while writing to a full pipe (CPython's pool puts a sentinel on it under
    that lock). Results are kept small so this should not happen; if it does
    anyway, the terminate is left to a daemon thread and the workers are killed
    after ``_CLOSE_TIMEOUT`` seconds. Shared-memory files go when the pool is
    collected.
    """
    closer = threading.Thread(target=pool.terminate, name="gpunda-dataloader-close",
                              daemon=True)
    closer.start()
    closer.join(_CLOSE_TIMEOUT)
    if closer.is_alive():
        for proc in getattr(pool, "_pool", ()):
            kill = getattr(proc, "kill", None)
            if kill is not None:
                try:
                    kill()
                except (OSError, ValueError, AttributeError):
                    pass


class MultiWorkerIter:
    """Batches of ``batch_sampler`` built by ``pool``, returned in order.

    Holds the dataset, not the DataLoader: a loader keeps its prefetched iterator
    (``auto_reload``), and a reference back would make a cycle that leaves the
    pool running until the garbage collector finds it.
    """

    def __init__(self, dataset, pool, thread_pool, batchify_fn, batch_sampler, prefetch,
                 timeout, post):
        self._dataset = dataset
        self._pool = pool
        self._thread_pool = thread_pool
        self._batchify_fn = batchify_fn
        self._iter = iter(batch_sampler)
        self._len = len(batch_sampler)
        self._timeout = timeout
        self._post = post
        self._pending = {}
        self._sent = 0
        self._rcvd = 0
        for _ in range(max(prefetch, 1)):
            self._push_next()

    def __len__(self):
        return self._len

    def __iter__(self):
        return self

    def _push_next(self):
        samples = next(self._iter, None)
        if samples is None:
            return
        if self._thread_pool:
            task = self._pool.apply_async(_thread_task, (samples, self._batchify_fn,
                                                         self._dataset))
        else:
            task = self._pool.apply_async(_process_task, (samples, self._batchify_fn))
        self._pending[self._sent] = task
        self._sent += 1

    def __next__(self):
        self._push_next()
        if self._rcvd == self._sent:
            if self._pending:
                raise GpundaError("DataLoader: internal error, batches left after the last one")
            raise StopIteration
        task = self._pending.pop(self._rcvd)
        try:
            out = task.get(self._timeout)
        except multiprocessing.TimeoutError:
            kind = "thread" if self._thread_pool else "process"
            raise multiprocessing.TimeoutError(
                f"DataLoader: a worker {kind} timed out after {self._timeout} s on batch "
                f"{self._rcvd}; a slow transform needs a larger `timeout`"
                + ("" if self._thread_pool else
                   ", and a large batch may lack shared memory (use fewer workers)")) from None
        self._rcvd += 1
        if not self._thread_pool:
            out = pickle.loads(out)
        if isinstance(out, _SampleError):
            out.raise_()
        if not self._thread_pool:
            out = _from_shared(out)
        return self._post(out)

    next = __next__
