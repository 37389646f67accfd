"""DataLoader's worker processes (``num_workers > 0`` without ``thread_pool``).

NOTE [DataLoader worker processes]
Each worker is a daemon process with its own duplex pipe; the parent sends
``(tag, seq, samples)`` to the worker with the fewest unfinished tasks, which
answers ``(tag, seq, result)`` in the order it got them (``tag`` names the pass, so
results of an abandoned pass are told apart and dropped). The parent runs no thread of its own for this (a
``multiprocessing.Pool`` runs three): a second loader's workers, forked while a
first loader's are running, are then forked from a process that has no
gpunda thread in it, which is what fork needs to be safe (CPython 3.12+ warns
"multi-threaded, use of fork() may lead to deadlocks" otherwise).

Start method: the ``multiprocessing_context`` given to the DataLoader (a name or
a context), else Python's default context, which ``multiprocessing.set_start_method``
sets (fork on Linux up to Python 3.13, forkserver from 3.14, spawn on macOS and
Windows), as MXNet's ``multiprocessing.Pool()`` does. gpunda never switches the
method by itself: forkserver and spawn re-import the main module and need a
picklable dataset and batchify_fn, which many MXNet scripts (lambdas in
``transform``, no ``__main__`` guard) do not have. Under fork the dataset and
batchify_fn are inherited, not pickled.

Shared memory: a worker writes each array of a batch to a file named
``<prefix><random>`` in /dev/shm (``prefix`` is per pool and names the parent's
pid) and sends only names, shapes and dtypes; the parent reads each file back
and unlinks it at once. Files that are never read (batches in flight when an
iterator or loader is dropped, a worker killed mid-write) are unlinked by the
pool: results of abandoned iterators as they arrive, and everything with the
prefix once ``close`` has killed and reaped every worker, so no worker can
create a file afterwards. ``close`` runs when the loader is dropped, when a
worker dies, and at interpreter exit (a ``weakref.finalize``), so the files go
on every path but a SIGKILL of the parent itself; a worker whose parent is gone
exits on its own (it polls ``os.getppid``: its parent is the loader's process, or
under forkserver the server, which exits with the loader's process).
"""
from __future__ import annotations

import glob
import itertools
import os
import pickle
import secrets
import signal
import tempfile
import threading
import time
import traceback
from multiprocessing import connection

import numpy as np

from gpunda.base import GpundaError

_SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
_MAX_TRACE = 8000
_PARENT_POLL = 2.0          # seconds between a waiting worker's checks that its parent lives
_JOIN_TIMEOUT = 5.0         # seconds a worker gets to die after SIGTERM before SIGKILL
_tags = itertools.count()

_worker_dataset = None      # in a worker process: the loader's dataset
_worker_prefix = None       # in a worker process: the pool's shared-memory file prefix


# -- batches through shared-memory files -----------------------------------------------------
class SharedArray:
    """An array a worker left in a shared-memory file (read back and unlinked by ``load``)."""

    def __init__(self, arr, ctx):
        host = np.ascontiguousarray(arr)
        fd, self.path = tempfile.mkstemp(prefix=_worker_prefix, dir=_SHM_DIR)
        with os.fdopen(fd, "wb") as f:
            f.write(host.tobytes())
        self.shape, self.dtype, self.ctx = host.shape, host.dtype.str, ctx

    def load(self):
        """The array as an NDArray on the context it was made on; the file is unlinked."""
        from gpunda.ndarray import array
        try:
            host = np.fromfile(self.path, dtype=np.dtype(self.dtype)).reshape(self.shape)
        finally:
            _unlink(self.path)
        return array(host, ctx=self.ctx, dtype=host.dtype)


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _to_shared(batch):
    from gpunda.ndarray import NDArray
    if isinstance(batch, NDArray) and batch.stype == "default":
        return SharedArray(batch.asnumpy(), batch.context)
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_shared(b) for b in batch)
    return batch


def from_shared(batch):
    """``batch`` with every SharedArray read back into an NDArray (its file unlinked)."""
    if isinstance(batch, SharedArray):
        return batch.load()
    if isinstance(batch, (list, tuple)):
        return type(batch)(from_shared(b) for b in batch)
    return batch


def _discard(batch):
    """Unlink the files of a batch that nobody will read."""
    if isinstance(batch, SharedArray):
        _unlink(batch.path)
    elif isinstance(batch, (list, tuple)):
        for b in batch:
            _discard(b)


def delete_files(prefix):
    """Unlink every shared-memory file of the pool with ``prefix``."""
    for path in glob.glob(os.path.join(_SHM_DIR, glob.escape(prefix) + "*")):
        _unlink(path)


# -- errors from workers -----------------------------------------------------------------------
class SampleError:
    """What a worker sends back instead of a batch when reading sample ``index`` failed."""

    def __init__(self, index, exc):
        self.index = index
        self.kind = type(exc).__name__
        self.message = str(exc)[:_MAX_TRACE]
        # bounded, so an error result stays a small message on the pipe
        self.trace = traceback.format_exc()[-_MAX_TRACE:]

    def raise_(self):
        where = "batchify_fn" if self.index is None else f"sample {self.index}"
        raise GpundaError(f"DataLoader: a worker failed on {where}: {self.kind}: "
                          f"{self.message}\nworker traceback:\n{self.trace}")


def collect(dataset, samples, batchify_fn):
    """The batch of ``samples`` (a SampleError when a sample or batchify_fn fails)."""
    items = []
    for i in samples:
        try:
            items.append(dataset[i])
        except Exception as e:      # noqa: BLE001 (sent to the parent, raised there)
            return SampleError(i, e)
    try:
        return batchify_fn(items)
    except Exception as e:          # noqa: BLE001
        return SampleError(None, e)


# -- the worker process ----------------------------------------------------------------------
def _worker_main(conn, dataset, batchify_fn, prefix, np_shape, np_array):
    global _worker_dataset, _worker_prefix
    # the loader's process (fork, spawn) or the forkserver, which exits with it
    parent = os.getppid()
    # the parent handles Ctrl-C and shuts the workers down
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_dataset, _worker_prefix = dataset, prefix
    from gpunda.util import set_np
    set_np(shape=np_shape, array=np_array)
    while True:
        try:
            if not conn.poll(_PARENT_POLL):
                if os.getppid() != parent:
                    return          # orphaned: the parent was killed
                continue
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        tag, seq, samples = task
        out = collect(dataset, samples, batchify_fn)
        if not isinstance(out, SampleError):
            out = _to_shared(out)
        try:
            conn.send_bytes(pickle.dumps((tag, seq, out), protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, ValueError):
            _discard(out)
            return


class _SigintIgnored:
    """SIGINT ignored while workers start, so that a fork inherits SIG_IGN (as MXNet's
    DataLoader does); only the main thread may change signal handlers."""

    def __enter__(self):
        self._old = None
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


class ProcessPool:
    """``num_workers`` worker processes of ``ctx`` holding ``dataset`` and ``batchify_fn``.

    Results come back per worker in task order; ``result(tag, seq, worker)`` waits for
    one, keeping any other tag's result that arrives first. ``terminate`` (also
    ``close``) kills the workers and unlinks every file left (NOTE [DataLoader worker
    processes]).
    """

    def __init__(self, num_workers, dataset, batchify_fn, ctx, np_flags):
        self._owner = os.getpid()
        self.prefix = f"gpunda-dl-{self._owner}-{secrets.token_hex(4)}-"
        self.start_method = ctx.get_start_method()
        self._workers = []          # (process, connection)
        self._busy = [0] * num_workers      # tasks sent to each worker and not read back
        self._stash = {}            # (tag, seq) -> result of a live tag that came early
        self._live = set()          # tags of iterators that still want their results
        self._error = None
        self.closed = False
        try:
            with _SigintIgnored():
                for i in range(num_workers):
                    here, there = ctx.Pipe(duplex=True)
                    proc = ctx.Process(target=_worker_main, name=f"gpunda-dataloader-{i}",
                                       args=(there, dataset, batchify_fn, self.prefix)
                                       + tuple(np_flags), daemon=True)
                    try:
                        proc.start()
                    except (pickle.PicklingError, AttributeError, TypeError) as e:
                        here.close()
                        if self.start_method == "fork":
                            raise
                        raise GpundaError(
                            f"DataLoader: the dataset and batchify_fn are pickled for "
                            f"{self.start_method!r} worker processes (Python's default start "
                            f"method, or the one set with multiprocessing.set_start_method or "
                            f"multiprocessing_context), and could not be: {e}. Define them "
                            f"at module level (no lambdas or local functions), or use "
                            f"multiprocessing_context='fork' where the platform has it"
                        ) from e
                    finally:
                        there.close()
                    self._workers.append((proc, here))
        except BaseException:
            self.terminate()
            raise

    def __len__(self):
        return len(self._workers)

    @property
    def pids(self):
        """The worker processes' ids."""
        return [p.pid for p, _ in self._workers]

    def new_tag(self):
        """A tag for one pass's tasks; ``forget`` it when the pass is done."""
        tag = next(_tags)
        self._live.add(tag)
        return tag

    def forget(self, tag):
        """Results of ``tag`` still to come are not wanted: their files are unlinked."""
        if os.getpid() != self._owner:
            return      # a forked worker's copy: the files are the parent's
        self._live.discard(tag)
        for key in [k for k in self._stash if k[0] == tag]:
            _discard(self._stash.pop(key))

    def send(self, tag, seq, samples):
        """Give batch ``seq`` of pass ``tag`` to the worker with the fewest unfinished tasks
        (round robin among equals); returns the worker's index. A worker that the OS runs
        less (a busy machine) is then given less, as a shared task queue would."""
        self._check()
        self._drain()
        n = len(self._workers)
        worker = min(range(n), key=lambda w: (self._busy[w], (w - seq) % n))
        try:
            self._workers[worker][1].send((tag, seq, list(samples)))
        except (OSError, ValueError):
            self._died(worker)
        self._busy[worker] += 1
        return worker

    def result(self, tag, seq, worker, timeout):
        """The result of batch ``seq`` of ``tag`` from ``worker`` (shared arrays not yet
        read back); None if it is not there within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        proc, conn = self._workers[worker]
        while (tag, seq) not in self._stash:
            self._check()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready = connection.wait([conn, proc.sentinel], left)
            if conn in ready:
                self._read(worker)
            elif ready:
                self._died(worker)
        return self._stash.pop((tag, seq))

    def _drain(self):
        # results already there: read now, so that _busy counts unfinished tasks
        conns = {conn: w for w, (_, conn) in enumerate(self._workers)}
        for conn in connection.wait(list(conns), 0):
            self._read(conns[conn])

    def _read(self, worker):
        conn = self._workers[worker][1]
        try:
            got_tag, got_seq, out = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            self._died(worker)
        except BaseException:
            # interrupted mid-message (Ctrl-C): the pipe cannot be trusted any more
            self.terminate()
            raise
        self._busy[worker] -= 1
        if got_tag in self._live:
            self._stash[(got_tag, got_seq)] = out
        else:
            _discard(out)

    def _check(self):
        if self._error is not None:
            raise GpundaError(self._error)

    def _died(self, worker):
        proc = self._workers[worker][0]
        proc.join(0.5)
        self._error = (f"DataLoader: worker process {proc.pid} died (exit code "
                       f"{proc.exitcode}) while building a batch; the loader's workers are shut "
                       f"down (its next pass starts new ones)")
        self.terminate()
        raise GpundaError(self._error)

    def terminate(self):
        """Stop every worker (SIGTERM, then SIGKILL after ``_JOIN_TIMEOUT`` s), reap them and
        unlink every shared-memory file of this pool. Idempotent."""
        if self.closed:
            return
        self.closed = True
        if os.getpid() != self._owner:
            return      # a forked worker's copy: the workers and files are the parent's
        if self._error is None:
            self._error = "DataLoader: the worker processes were shut down"
        for proc, _ in self._workers:
            if proc.exitcode is None:
                proc.terminate()
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for proc, _ in self._workers:
            proc.join(max(deadline - time.monotonic(), 0))
            if proc.exitcode is None:
                proc.kill()
                proc.join(_JOIN_TIMEOUT)
        for _, conn in self._workers:
            conn.close()
        for out in self._stash.values():
            _discard(out)
        self._stash.clear()
        # after the workers are gone: no file can be made any more
        delete_files(self.prefix)

    close = terminate
