"""DataLoader workers (``num_workers > 0``): processes or threads that build batches while
the training loop runs.

NOTE [DataLoader workers]
A pool is made once per DataLoader, as MXNet's: ``thread_pool=True`` gives a
``ThreadPool`` that shares the dataset; otherwise worker processes
(``_process_pool.ProcessPool``: start method, shared memory and clean-up are in
NOTE [DataLoader worker processes]) that get the dataset and batchify_fn once,
at start, so every batch task carries only its sample indices. The iterator
keeps up to ``prefetch`` tasks in flight and hands batches back strictly in
sampler order, so the batches are exactly those of ``num_workers=0``. A failing
sample is caught in the worker and comes back as an error naming the sample
index and carrying the worker's traceback, raised when that batch is due; a
worker process that dies shuts the pool down and raises at once (the loader
starts new workers for its next pass).

The pool is shut down as soon as its DataLoader is dropped (a ``weakref.finalize``
on the loader, which nothing in the iterator points back to, so no reference
cycle waits for the garbage collector) and at interpreter exit.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.context
import multiprocessing.pool
import threading

from gpunda.base import GpundaError
from gpunda.gluon.data._process_pool import ProcessPool, collect, from_shared, SampleError

_CLOSE_TIMEOUT = 10.0


def _thread_init(np_shape, np_array):
    from gpunda.util import set_np
    set_np(shape=np_shape, array=np_array)


def _thread_task(samples, batchify_fn, dataset):
    return collect(dataset, samples, batchify_fn)


def resolve_context(mp_context):
    """The multiprocessing context for worker processes: ``mp_context`` (a start-method
    name or a context) or, when None, Python's default (``multiprocessing.set_start_method``)."""
    if mp_context is None:
        return multiprocessing.get_context()
    if isinstance(mp_context, str):
        if mp_context not in multiprocessing.get_all_start_methods():
            raise GpundaError(f"DataLoader: multiprocessing_context={mp_context!r} is not a "
                              f"start method of this platform "
                              f"{multiprocessing.get_all_start_methods()}")
        return multiprocessing.get_context(mp_context)
    if isinstance(mp_context, multiprocessing.context.BaseContext):
        return mp_context
    raise GpundaError(f"DataLoader: multiprocessing_context={mp_context!r} must be a start "
                      f"method name or a multiprocessing context")


def make_pool(num_workers, dataset, thread_pool, batchify_fn=None, mp_context=None):
    """A ThreadPool, or worker processes holding ``dataset`` and ``batchify_fn``."""
    from gpunda.util import is_np_array, is_np_shape
    flags = (is_np_shape(), is_np_array())
    if thread_pool:
        return multiprocessing.pool.ThreadPool(num_workers, initializer=_thread_init,
                                               initargs=flags)
    return ProcessPool(num_workers, dataset, batchify_fn, resolve_context(mp_context), flags)


def close_pool(pool):
    """Shut ``pool`` down without ever blocking the caller for long.

    Worker processes are killed and reaped and their shared-memory files unlinked
    (``ProcessPool.terminate``). A ThreadPool's terminate is left to a daemon thread
    joined for at most ``_CLOSE_TIMEOUT`` seconds: threads cannot be killed, and a
    thread stuck in a sample must not hang the caller.
    """
    if isinstance(pool, ProcessPool):
        pool.terminate()
        return
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


def close_pools(pools):
    """Shut down and remove every pool in the list ``pools`` (a DataLoader's)."""
    while pools:
        close_pool(pools.pop())


def _timeout_error(kind, timeout, seq):
    return multiprocessing.TimeoutError(
        f"DataLoader: a worker {kind} timed out after {timeout} s on batch {seq}; a slow "
        f"transform needs a larger `timeout`"
        + ("" if kind == "thread" else ", and a large batch may lack shared memory (use fewer "
                                       "workers)"))


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
        self._pending = {}          # seq -> AsyncResult (threads) or worker index (processes)
        self._sent = 0
        self._rcvd = 0
        self._tag = None if thread_pool else pool.new_tag()
        for _ in range(max(prefetch, 1)):
            self._push_next()

    def __len__(self):
        return self._len

    def __iter__(self):
        return self

    def __del__(self):
        self._done()

    def _done(self):
        # results of this pass still in flight are dropped (their files unlinked)
        if getattr(self, "_tag", None) is not None:
            self._pool.forget(self._tag)
            self._tag = None

    def _push_next(self):
        samples = next(self._iter, None)
        if samples is None:
            return
        if self._thread_pool:
            self._pending[self._sent] = self._pool.apply_async(
                _thread_task, (samples, self._batchify_fn, self._dataset))
        else:
            self._pending[self._sent] = self._pool.send(self._tag, self._sent, samples)
        self._sent += 1

    def __next__(self):
        if self._rcvd == self._sent:
            self._done()
            raise StopIteration
        self._push_next()
        seq = self._rcvd
        pending = self._pending.pop(seq)
        if self._thread_pool:
            try:
                out = pending.get(self._timeout)
            except multiprocessing.TimeoutError:
                raise _timeout_error("thread", self._timeout, seq) from None
        else:
            try:
                out = self._pool.result(self._tag, seq, pending, self._timeout)
            except BaseException:
                self._done()
                raise
            if out is None:
                self._done()
                raise _timeout_error("process", self._timeout, seq)
        self._rcvd += 1
        if isinstance(out, SampleError):
            out.raise_()
        if not self._thread_pool:
            out = from_shared(out)
        return self._post(out)

    next = __next__
