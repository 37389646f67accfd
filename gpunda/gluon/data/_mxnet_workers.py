"""MXNet 1.9.1's own DataLoader worker machinery, for code that uses it by name
(``gluon.data.dataloader.Queue``, ``reduce_ndarray``, ``_MultiWorkerIter``, ``DataLoaderV1``,
...). gpunda's ``DataLoader`` runs on its own pool (``_workers.py``); these pieces work the
way MXNet's do, so that code built from them (GluonCV's and GluonNLP's loaders) runs.

NOTE [NDArrays through multiprocessing]
Importing this module registers ``reduce_ndarray`` / ``reduce_np_ndarray`` with
multiprocessing's ``ForkingPickler`` (as importing MXNet's dataloader does): an NDArray sent
through a multiprocessing Queue, Pipe or Pool result is then written once into an anonymous
shared-memory file and only the file's descriptor travels (``DupFd``: handed to the
receiving process over multiprocessing's resource sharer, or to a child being started).
The receiver maps the file, copies the array out into a new NDArray on ``cpu_shared(0)``
(MXNet's arrays rebuilt from shared memory live there) and closes its descriptor; the memory
goes when the last descriptor does. ``pickle.dumps`` is not affected: NDArrays pickle by
value there, as before.
"""
from __future__ import annotations

import io
import mmap
import multiprocessing
import multiprocessing.pool
import multiprocessing.queues
import os
import pickle
import tempfile
import threading
import weakref
from multiprocessing import context as _mp_context
from multiprocessing.reduction import DupFd, ForkingPickler

import numpy as np

from gpunda.base import GpundaError

_JOIN_TIMEOUT = 5.0     # seconds a terminated worker gets before SIGKILL

__all__ = ["rebuild_ndarray", "reduce_ndarray", "rebuild_np_ndarray", "reduce_np_ndarray",
           "ConnectionWrapper", "Queue", "SimpleQueue", "worker_loop_v1", "fetcher_loop_v1",
           "_MultiWorkerIterV1", "DataLoaderV1", "_MultiWorkerIter"]


# -- NDArrays through shared memory ---------------------------------------------------------
def _shm_fd():
    """A new, anonymous shared-memory file open for reading and writing."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("gpunda-ndarray", os.MFD_CLOEXEC)
    where = "/dev/shm" if os.path.isdir("/dev/shm") else None
    fd, path = tempfile.mkstemp(prefix="gpunda-ndarray-", dir=where)
    os.unlink(path)          # lives as long as a descriptor does
    return fd


def _to_shared_mem(data):
    """(pid, fd, shape, dtype) of a shared-memory file holding ``data``'s values."""
    host = np.ascontiguousarray(data.asnumpy())
    fd = _shm_fd()
    try:
        view = memoryview(host.reshape(-1).view(np.uint8))
        while view.nbytes:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        raise
    return os.getpid(), fd, host.shape, host.dtype.type


def _read_shared_mem(fd, shape, dtype):
    """The values of the shared-memory file ``fd`` (closed here) as a NumPy array."""
    dtype = np.dtype(dtype)
    try:
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes == 0:
            return np.empty(shape, dtype=dtype)
        with mmap.mmap(fd, nbytes, access=mmap.ACCESS_READ) as mm:
            return np.frombuffer(mm, dtype=dtype).reshape(shape).copy()
    finally:
        os.close(fd)


def _share(data, rebuild):
    """The reduction of ``data`` for ForkingPickler: its values in shared memory, whose
    descriptor travels as a ``DupFd``."""
    from gpunda.context import Context
    if data.stype != "default":
        return data.__reduce__()        # sparse arrays go by value
    data = data.as_in_context(Context("cpu_shared", 0))
    pid, fd, shape, dtype = _to_shared_mem(data)
    popen = _mp_context.get_spawning_popen()
    dup = DupFd(fd)
    if popen is None:
        os.close(fd)            # the resource sharer holds its own duplicate
    else:
        # a child being started receives this descriptor as it starts: open until then
        weakref.finalize(popen, os.close, fd)
    return rebuild, (pid, dup, shape, dtype)


def rebuild_ndarray(pid, fd, shape, dtype):
    """The NDArray ``reduce_ndarray`` sent: read from the shared-memory file behind ``fd``
    (a ``DupFd``), on ``cpu_shared(0)``. ``pid`` is the sending process."""
    from gpunda.context import Context
    from gpunda.ndarray import array
    host = _read_shared_mem(fd.detach(), shape, dtype)
    return array(host, ctx=Context("cpu_shared", 0), dtype=host.dtype)


def reduce_ndarray(data):
    """ForkingPickler's reduction of an NDArray: ``(rebuild_ndarray, (pid, fd, shape,
    dtype))`` with the values in shared memory (NOTE [NDArrays through multiprocessing])."""
    return _share(data, rebuild_ndarray)


def rebuild_np_ndarray(pid, fd, shape, dtype):
    """``rebuild_ndarray`` for ``mx.np.ndarray``."""
    return rebuild_ndarray(pid, fd, shape, dtype).as_np_ndarray()


def reduce_np_ndarray(data):
    """``reduce_ndarray`` for ``mx.np.ndarray``."""
    return _share(data, rebuild_np_ndarray)


def _register():
    from gpunda.ndarray import NDArray
    from gpunda.numpy import ndarray as np_ndarray
    ForkingPickler.register(NDArray, reduce_ndarray)
    ForkingPickler.register(np_ndarray, reduce_np_ndarray)


_register()


class ConnectionWrapper:
    """A multiprocessing Connection whose ``send``/``recv`` pickle with ForkingPickler, so
    NDArrays travel through shared memory; everything else is the wrapped connection's."""

    def __init__(self, conn):
        self._conn = conn

    def send(self, obj):
        """Send ``obj`` (pickled with ForkingPickler)."""
        buf = io.BytesIO()
        ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(obj)
        self.send_bytes(buf.getvalue())

    def recv(self):
        """Receive one object."""
        return pickle.loads(self.recv_bytes())

    def __getattr__(self, name):
        conn = self.__dict__.get("_conn")
        if conn is None:
            raise AttributeError(name)
        return getattr(conn, name)


def _wrap_pipe_ends(queue):
    # the queue's pipe ends pickle through ForkingPickler (NDArrays by shared memory)
    queue._reader = ConnectionWrapper(queue._reader)
    queue._writer = ConnectionWrapper(queue._writer)
    queue._send = queue._writer.send
    queue._recv = queue._reader.recv


class Queue(multiprocessing.queues.Queue):
    """A multiprocessing Queue (default context) that sends NDArrays through shared memory."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, ctx=multiprocessing.get_context(), **kwargs)
        _wrap_pipe_ends(self)


class SimpleQueue(multiprocessing.queues.SimpleQueue):
    """A multiprocessing SimpleQueue (no feeder thread) that sends NDArrays through shared
    memory."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, ctx=multiprocessing.get_context(), **kwargs)
        _wrap_pipe_ends(self)


# -- DataLoaderV1: worker processes fed through queues ---------------------------------------
def worker_loop_v1(dataset, key_queue, data_queue, batchify_fn):
    """A DataLoaderV1 worker: take ``(idx, samples)`` from ``key_queue`` and put
    ``(idx, batch)`` on ``data_queue`` until an ``idx`` of None."""
    while True:
        idx, samples = key_queue.get()
        if idx is None:
            break
        data_queue.put((idx, batchify_fn([dataset[i] for i in samples])))


def fetcher_loop_v1(data_queue, data_buffer, pin_memory=False, pin_device_id=0,
                    data_buffer_lock=None):
    """Move ``(idx, batch)`` from ``data_queue`` into the dict ``data_buffer`` (on
    ``cpu_pinned(pin_device_id)`` with ``pin_memory``, else ``cpu()``) until an ``idx`` of
    None; ``data_buffer_lock`` (a Lock or Condition) guards the dict."""
    from gpunda.context import cpu, cpu_pinned
    from gpunda.gluon.data.dataloader import _as_in_context
    while True:
        idx, batch = data_queue.get()
        if idx is None:
            break
        batch = _as_in_context(batch, cpu_pinned(pin_device_id) if pin_memory else cpu())
        if data_buffer_lock is None:
            data_buffer[idx] = batch
            continue
        with data_buffer_lock:
            data_buffer[idx] = batch
            notify = getattr(data_buffer_lock, "notify_all", None)
            if notify is not None:
                notify()


class _MultiWorkerIterV1:
    """DataLoaderV1's iterator: ``num_workers`` daemon processes running ``worker_fn`` on a
    key Queue, a fetcher thread collecting their batches; batches come back in order."""

    def __init__(self, num_workers, dataset, batchify_fn, batch_sampler, pin_memory=False,
                 pin_device_id=0, worker_fn=worker_loop_v1):
        if num_workers <= 0:
            raise GpundaError(f"_MultiWorkerIterV1: num_workers={num_workers} must be > 0")
        self._num_workers = num_workers
        self._dataset = dataset
        self._batchify_fn = batchify_fn
        self._batch_sampler = batch_sampler
        self._key_queue = Queue()
        self._data_queue = SimpleQueue()
        self._data_buffer = {}
        # a Condition: __next__ sleeps until the fetcher stores a batch
        self._data_buffer_lock = threading.Condition()
        self._rcvd_idx = 0
        self._sent_idx = 0
        self._iter = iter(batch_sampler)
        self._shutdown = False
        # Python's default start method (multiprocessing.set_start_method), as MXNet's
        # multiprocessing.Process; the workers start before this iterator's threads do
        ctx = multiprocessing.get_context()
        self._workers = []
        for _ in range(num_workers):
            w = ctx.Process(target=worker_fn, args=(dataset, self._key_queue, self._data_queue,
                                                    batchify_fn))
            w.daemon = True
            w.start()
            self._workers.append(w)
        self._fetcher = threading.Thread(
            target=fetcher_loop_v1, args=(self._data_queue, self._data_buffer, pin_memory,
                                          pin_device_id, self._data_buffer_lock),
            name="gpunda-dataloader-v1-fetcher", daemon=True)
        self._fetcher.start()
        for _ in range(2 * num_workers):
            self._push_next()

    def __len__(self):
        return len(self._batch_sampler)

    def __del__(self):
        self.shutdown()

    def _push_next(self):
        samples = next(self._iter, None)
        if samples is None:
            return
        self._key_queue.put((self._sent_idx, samples))
        self._sent_idx += 1

    def __next__(self):
        if self._shutdown:
            raise GpundaError("_MultiWorkerIterV1: next() after shutdown()")
        if self._rcvd_idx == self._sent_idx:
            if self._data_buffer:
                raise GpundaError("_MultiWorkerIterV1: batches left after the last one")
            self.shutdown()
            raise StopIteration
        with self._data_buffer_lock:
            while self._rcvd_idx not in self._data_buffer:
                self._data_buffer_lock.wait(1.0)
            batch = self._data_buffer.pop(self._rcvd_idx)
        self._rcvd_idx += 1
        self._push_next()
        return batch

    next = __next__

    def __iter__(self):
        return self

    def shutdown(self):
        """Stop the fetcher, then the workers (terminating any still alive), and wait for
        them and the key queue's feeder thread, so that no thread or process of this
        iterator outlives it (a later fork then copies no running thread)."""
        if getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        self._data_queue.put((None, None))
        self._fetcher.join()
        for _ in range(self._num_workers):
            self._key_queue.put((None, None))
        for w in self._workers:
            if w.is_alive():
                w.terminate()
        for w in self._workers:
            w.join(_JOIN_TIMEOUT)
            if w.exitcode is None:
                w.kill()
                w.join(_JOIN_TIMEOUT)
        _close_and_join(self._key_queue)
        # batches still in the data queue hold descriptors of shared memory: dropped with it
        self._data_queue.close()


def _close_and_join(q):
    # the feeder thread ends once it has written what it holds; if the workers left keys
    # unread and the pipe is full it cannot (nobody reads the pipe: reading it here is
    # unsafe, a killed worker may have left half a message), and is left to the daemon
    q.close()
    feeder = getattr(q, "_thread", None)
    if feeder is not None:
        feeder.join(_JOIN_TIMEOUT)
        if feeder.is_alive():
            q.cancel_join_thread()


def _batch_sampler(dataset, batch_size, shuffle, sampler, last_batch, batch_sampler):
    from gpunda.gluon.data.sampler import BatchSampler, RandomSampler, SequentialSampler
    if batch_sampler is None:
        if batch_size is None:
            raise ValueError("batch_size must be specified unless batch_sampler is specified")
        if sampler is None:
            sampler = RandomSampler(len(dataset)) if shuffle else SequentialSampler(len(dataset))
        elif shuffle:
            raise ValueError("shuffle must not be specified if sampler is specified")
        return BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")
    if batch_size is not None or shuffle or sampler is not None or last_batch is not None:
        raise ValueError("batch_size, shuffle, sampler and last_batch must not be specified "
                         "if batch_sampler is specified.")
    return batch_sampler


class DataLoaderV1:
    """MXNet's first DataLoader: mini-batches of ``dataset``, built by ``num_workers``
    processes fed through multiprocessing queues (each pass starts its own workers); with
    ``num_workers=0`` in this process. ``batch_size``/``shuffle``/``sampler``/``last_batch``
    or ``batch_sampler``, ``batchify_fn``, ``pin_memory``/``pin_device_id`` as DataLoader's.
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False,
                 pin_device_id=0):
        from gpunda.gluon.data.dataloader import default_batchify_fn, default_mp_batchify_fn
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._batch_sampler = _batch_sampler(dataset, batch_size, shuffle, sampler, last_batch,
                                             batch_sampler)
        self._num_workers = num_workers if num_workers >= 0 else 0
        if batchify_fn is None:
            batchify_fn = default_mp_batchify_fn if num_workers > 0 else default_batchify_fn
        self._batchify_fn = batchify_fn

    def __iter__(self):
        if self._num_workers == 0:
            return self._same_process_iter()
        return _MultiWorkerIterV1(self._num_workers, self._dataset, self._batchify_fn,
                                  self._batch_sampler, self._pin_memory, self._pin_device_id)

    def _same_process_iter(self):
        from gpunda.context import cpu_pinned
        from gpunda.gluon.data.dataloader import _as_in_context
        for batch in self._batch_sampler:
            ret = self._batchify_fn([self._dataset[i] for i in batch])
            if self._pin_memory:
                ret = _as_in_context(ret, cpu_pinned(self._pin_device_id))
            yield ret

    def __len__(self):
        return len(self._batch_sampler)


# -- DataLoader's iterator over a worker pool (MXNet's signature) ----------------------------
class _MultiWorkerIter:
    """Batches of ``batch_sampler`` built by ``worker_pool`` (a multiprocessing Pool running
    ``dataloader._worker_fn``, whose results are ForkingPickler bytes, or a ThreadPool running
    ``_thread_worker_fn`` with ``dataset`` given), ``prefetch`` ahead, returned in order;
    ``timeout`` seconds per batch."""

    def __init__(self, worker_pool, batchify_fn, batch_sampler, pin_memory=False,
                 pin_device_id=0, worker_fn=None, prefetch=0, dataset=None, data_loader=None,
                 timeout=120):
        if worker_fn is None:
            from gpunda.gluon.data.dataloader import _worker_fn as worker_fn
        self._worker_pool = worker_pool
        self._batchify_fn = batchify_fn
        self._batch_sampler = batch_sampler
        self._data_buffer = {}
        self._rcvd_idx = 0
        self._sent_idx = 0
        self._iter = iter(batch_sampler)
        self._worker_fn = worker_fn
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._dataset = dataset
        self._data_loader = data_loader
        self._timeout = timeout
        for _ in range(prefetch):
            self._push_next()

    def __len__(self):
        return len(self._batch_sampler)

    def _push_next(self):
        samples = next(self._iter, None)
        if samples is None:
            return
        self._data_buffer[self._sent_idx] = self._worker_pool.apply_async(
            self._worker_fn, (samples, self._batchify_fn, self._dataset))
        self._sent_idx += 1

    def __next__(self):
        self._push_next()
        if self._rcvd_idx == self._sent_idx:
            if self._data_buffer:
                raise GpundaError("_MultiWorkerIter: batches left after the last one")
            raise StopIteration
        ret = self._data_buffer.pop(self._rcvd_idx)
        try:
            batch = ret.get(self._timeout)
            if self._dataset is None:
                batch = pickle.loads(batch)
            if self._pin_memory:
                from gpunda.context import cpu_pinned
                from gpunda.gluon.data.dataloader import _as_in_context
                batch = _as_in_context(batch, cpu_pinned(self._pin_device_id))
            self._rcvd_idx += 1
            return batch
        except multiprocessing.TimeoutError:
            msg = (f"Worker timed out after {self._timeout} seconds. This might be caused by a "
                   f"slow transform: increase `timeout` to allow slower data loading.")
            if not isinstance(self._worker_pool, multiprocessing.pool.ThreadPool):
                msg += (" If `timeout` is large enough, shared memory may be insufficient: "
                        "reduce `num_workers` or increase the system's shared memory.")
            print(msg)
            raise
        except Exception:
            self._worker_pool.terminate()
            raise

    next = __next__

    def __iter__(self):
        return self
