"""DataLoader (MXNet 1.x ``gluon.data.DataLoader``): batches from a Dataset.

With ``num_workers=0`` batches are assembled in this process; ArrayDatasets of
NumPy arrays or NDArrays with the default batchify take a fast path that
gathers a whole batch with one fancy index per column. With ``num_workers > 0``
a pool of processes (or threads, ``thread_pool=True``) builds them, in the same
order (NOTE [DataLoader workers] in ``_workers.py``). ``pin_memory`` puts the
batches on ``cpu_pinned(pin_device_id)``.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.gluon.data.sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]


def default_batchify_fn(data):
    """Stack a list of samples into a batch (tuples are batched element by element)."""
    from gpunda.ndarray import NDArray, array
    first = data[0]
    if isinstance(first, NDArray):
        host = np.stack([d.asnumpy() for d in data])
        return array(host, ctx=first.context, dtype=first.dtype)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(col)) for col in zip(*data)]
    host = np.asarray(data)
    if host.dtype == object:
        raise GpundaError("DataLoader: cannot batchify samples of ragged shapes or non-numeric "
                          "types; pass a batchify_fn")
    return array(host, dtype=host.dtype)


def _np_batch(out):
    """A default batch in NumPy mode: ``mx.np.ndarray`` (as MXNet's batchify makes there)."""
    from gpunda.ndarray import NDArray
    if isinstance(out, NDArray):
        from gpunda.gluon._np_mode import to_np
        return to_np([out])[0]
    if isinstance(out, (list, tuple)):
        return type(out)(_np_batch(o) for o in out)
    return out


def default_mp_batchify_fn(data):
    """``default_batchify_fn`` for worker processes: batches on ``cpu_shared(0)``, as MXNet's."""
    from gpunda.context import Context
    from gpunda.ndarray import NDArray, array
    first = data[0]
    if isinstance(first, tuple):
        return [default_mp_batchify_fn(list(col)) for col in zip(*data)]
    if isinstance(first, NDArray):
        host = np.stack([d.asnumpy() for d in data])
        return array(host, ctx=Context("cpu_shared", 0), dtype=first.dtype)
    host = np.asarray(data)
    if host.dtype == object:
        raise GpundaError("DataLoader: cannot batchify samples of ragged shapes or non-numeric "
                          "types; pass a batchify_fn")
    return array(host, ctx=Context("cpu_shared", 0), dtype=host.dtype)


def _as_in_context(data, ctx):
    from gpunda.ndarray import NDArray
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


def _unchanged(batch):
    return batch


class _Pin:
    """Moves a batch to ``cpu_pinned(device_id)``."""

    def __init__(self, device_id):
        self.device_id = device_id

    def __call__(self, batch):
        from gpunda.context import cpu_pinned
        return _as_in_context(batch, cpu_pinned(self.device_id))


class DataLoader:
    """Iterate over ``dataset`` in mini-batches.

    ``batch_size`` with ``shuffle`` and ``last_batch`` ('keep', 'discard',
    'rollover'), or a ``sampler``/``batch_sampler``; ``batchify_fn`` merges a
    list of samples into a batch. ``num_workers`` processes (threads with
    ``thread_pool``) build up to ``prefetch`` (default ``2 * num_workers``)
    batches ahead; a batch not ready after ``timeout`` seconds raises
    ``multiprocessing.TimeoutError``. ``auto_reload`` starts the next epoch's
    prefetch as soon as one epoch ends (and the first at construction).
    ``multiprocessing_context`` (gpunda's addition; a start-method name such as
    ``'forkserver'`` or a ``multiprocessing`` context) starts the worker
    processes; by default Python's default context, which
    ``multiprocessing.set_start_method`` sets, as MXNet's ``multiprocessing.Pool``
    (NOTE [DataLoader worker processes] in ``_process_pool.py``).
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False,
                 pin_device_id=0, prefetch=None, thread_pool=False, timeout=120,
                 auto_reload=False, multiprocessing_context=None):
        self._dataset = dataset
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("DataLoader: batch_size must be given when batch_sampler is not")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle else SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("DataLoader: shuffle must not be given together with sampler")
            batch_sampler = BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("DataLoader: batch_size, shuffle, sampler and last_batch must not "
                             "be given together with batch_sampler")
        if not isinstance(num_workers, (int, np.integer)) or num_workers < 0:
            raise GpundaError(f"DataLoader: num_workers={num_workers!r} must be an integer >= 0")
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise GpundaError(f"DataLoader: timeout={timeout!r} must be a positive number of "
                              f"seconds")
        if prefetch is not None and (not isinstance(prefetch, (int, np.integer)) or prefetch < 0):
            raise GpundaError(f"DataLoader: prefetch={prefetch!r} must be an integer >= 0")
        self._batch_sampler = batch_sampler
        self._num_workers = int(num_workers)
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = bool(thread_pool)
        self._timeout = timeout
        self._prefetch = int(prefetch) if prefetch is not None else 2 * self._num_workers
        self._default = batchify_fn is None
        if batchify_fn is None:
            # workers of either kind batch on cpu_shared(0), as MXNet 1.9.1's DataLoader
            batchify_fn = default_mp_batchify_fn if self._num_workers else default_batchify_fn
        self._batchify_fn = batchify_fn
        self._pools = []            # the current pool, the only item (shared with _close)
        if self._num_workers:
            import weakref
            from gpunda.gluon.data._workers import close_pools, resolve_context
            self._mp_context = (None if self._thread_pool
                                else resolve_context(multiprocessing_context))
            self._new_pool()
            # shut down as soon as the loader is dropped, or at interpreter exit: a pool
            # is not reliably shut down by garbage collection (bpo-34172)
            self._close = weakref.finalize(self, close_pools, self._pools)
        self.auto_reload = auto_reload
        self._iter = None
        if auto_reload:
            self.refresh()

    def _new_pool(self):
        from gpunda.gluon.data._workers import close_pools, make_pool
        close_pools(self._pools)
        self._pools.append(make_pool(self._num_workers, self._dataset, self._thread_pool,
                                     self._batchify_fn, self._mp_context))

    @property
    def _worker_pool(self):
        return self._pools[0] if self._pools else None

    @_worker_pool.setter
    def _worker_pool(self, pool):
        # subclasses that run their own pool set it, as on MXNet's DataLoader (GluonCV's)
        pools = self.__dict__.setdefault("_pools", [])
        pools[:] = [] if pool is None else [pool]

    def _post(self, batch):
        if self._pin_memory:
            return _Pin(self._pin_device_id)(batch)
        return batch

    def _same_process_iter(self):
        fast = getattr(self._dataset, "_batch", None) if self._default else None
        for batch in self._batch_sampler:
            if fast is not None:
                out = fast(np.asarray(batch, dtype=np.int64))
                if out is not None:
                    yield self._post(out)
                    continue
                fast = None
            yield self._post(self._batchify_fn([self._dataset[i] for i in batch]))

    def _prefetch_iter(self):
        if not self._num_workers:
            return self._same_process_iter()
        from gpunda.gluon.data._workers import MultiWorkerIter
        # a function that does not hold the loader: an auto_reload loader keeps its iterator
        post = _Pin(self._pin_device_id) if self._pin_memory else _unchanged
        if getattr(self._worker_pool, "closed", False):
            self._new_pool()        # a worker died (or Ctrl-C) in an earlier pass
        return MultiWorkerIter(self._dataset, self._worker_pool, self._thread_pool,
                               self._batchify_fn, self._batch_sampler, self._prefetch,
                               self._timeout, post)

    def refresh(self):
        """Start (prefetching) a new pass over the data for the next ``iter()``."""
        self._iter = self._prefetch_iter()

    def clean(self):
        """Drop the prefetched pass; the next ``iter()`` starts a fresh one."""
        self._iter = None

    def __iter__(self):
        if self._iter is None:
            self.refresh()
        it, self._iter = self._iter, None
        from gpunda.util import is_np_array
        if self._default and is_np_array():     # NumPy mode: batches are mx.np.ndarray
            for b in it:
                yield _np_batch(b)
        else:
            yield from it
        if self._iter is None and self.auto_reload:
            self.refresh()

    def __len__(self):
        return len(self._batch_sampler)


# MXNet's worker functions, for code that builds its own pool from them (GluonCV's loaders):
# a process pool made with _worker_initializer runs _worker_fn (batches pickled with
# ForkingPickler, so NDArrays travel through shared memory), a ThreadPool made with
# _thread_worker_initializer runs _thread_worker_fn; _MultiWorkerIter collects either.
# gpunda's DataLoader runs on its own pool (_workers.py).
_worker_dataset = None      # set in each worker process by _worker_initializer


def _thread_worker_initializer(active_shape, active_array):
    """ThreadPool initializer: the NumPy-shape/array modes of the loader's thread."""
    from gpunda.util import set_np
    set_np(shape=active_shape, array=active_array)


def _worker_initializer(dataset, active_shape, active_array):
    """Process-pool initializer: keep ``dataset`` in this worker (``_worker_dataset``) and
    take the NumPy-shape/array modes of the loader's process."""
    global _worker_dataset
    _worker_dataset = dataset
    from gpunda.util import set_np
    set_np(shape=active_shape, array=active_array)


def _worker_fn(samples, batchify_fn, dataset=None):
    """A process worker's task: the batch of ``samples`` of ``_worker_dataset``, as
    ForkingPickler bytes (NDArrays in shared memory). ``dataset`` is ignored."""
    import io
    import pickle
    from gpunda.gluon.data import _mxnet_workers
    batch = batchify_fn([_worker_dataset[i] for i in samples])
    buf = io.BytesIO()
    _mxnet_workers.ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(batch)
    return buf.getvalue()


def _thread_worker_fn(samples, batchify_fn, dataset):
    """A thread worker's task: the batch of ``samples`` of ``dataset``."""
    return batchify_fn([dataset[i] for i in samples])


# MXNet's multiprocessing machinery (gluon/data/_mxnet_workers.py), loaded on first use so that
# `import gpunda` does not pay for multiprocessing; it registers the shared-memory pickling of
# NDArrays with ForkingPickler when it loads
_MP_NAMES = frozenset(("ForkingPickler", "ConnectionWrapper", "Queue", "SimpleQueue",
                       "rebuild_ndarray", "reduce_ndarray", "rebuild_np_ndarray",
                       "reduce_np_ndarray", "worker_loop_v1", "fetcher_loop_v1",
                       "_MultiWorkerIterV1", "DataLoaderV1", "_MultiWorkerIter"))


def __getattr__(name):
    if name in _MP_NAMES:
        from gpunda.gluon.data import _mxnet_workers
        value = getattr(_mxnet_workers, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
