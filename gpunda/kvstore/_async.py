"""``dist_async`` over MPI: MXNet's asynchronous parameter server as a thread of rank 0.

What MXNet does (src/kvstore/kvstore_dist_server.h, async mode): the server keeps the
master copy of every key; a worker's push is applied with the optimizer the moment it
arrives (no merge across workers, no barrier), a pull returns the value as it is then,
and a server without an updater refuses async pushes ("Updater needs to be set for async
mode"). Compressed pushes are dequantised on arrival and applied the same way.

gpunda runs that server as a thread of rank 0 of ``mpiexec -n N python train.py``, on
its own duplicate of COMM_WORLD; every rank (rank 0 too) is a worker that talks to it
with point-to-point messages: a pickled header on ``_TAG_REQ`` and, for a push, the raw
payload on ``_TAG_DATA`` (the dense values, or MXNet's packed 2-bit words); replies on
``_TAG_REPLY``. MPI keeps the messages of one sender in order, so a worker's pull sees
all of its own earlier pushes applied. MPI must be initialised with MPI_THREAD_MULTIPLE
(mpi4py's default).
"""
from __future__ import annotations

import atexit
import pickle
import threading
import time

import numpy as np

from gpunda.base import GpundaError
from gpunda.kvstore.gradient_compression import dequantize_2bit

_TAG_REQ, _TAG_DATA, _TAG_REPLY = 7101, 7102, 7103
_SERVER = 0


class AsyncServer:
    """The server loop (a daemon thread on rank 0): holds the master values, applies
    each push with the updater as it arrives, answers pulls."""

    def __init__(self, comm, nworkers):
        self.comm = comm
        self.nworkers = nworkers
        self.store = {}          # key -> NDArray on the CPU (the master copy)
        self.updater = None
        self.error = None        # the first failure, reported to the next pull
        self.applied = 0         # pushes applied (for tests and logging)
        self.lock = threading.Lock()
        self._stopped = 0
        self.thread = threading.Thread(target=self._loop, name="gpunda-kvstore-server",
                                       daemon=True)
        self.thread.start()

    def set_value(self, key, value):
        """Install ``key``'s initial value (a NumPy array): MXNet's first push of a key."""
        from gpunda.context import cpu
        from gpunda.ndarray import array
        with self.lock:     # on the CPU, as MXNet's servers keep their values
            self.store[key] = array(value, ctx=cpu(), dtype=value.dtype)

    def _loop(self):
        from mpi4py import MPI
        status = MPI.Status()
        delay = 1e-5
        while self._stopped < self.nworkers:
            # poll, not block: the main thread of rank 0 shares the MPI library
            if not self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=_TAG_REQ, status=status):
                time.sleep(delay)
                delay = min(delay * 2, 1e-3)
                continue
            delay = 1e-5
            src = status.Get_source()
            raw = np.empty(status.Get_count(MPI.BYTE), np.uint8)
            self.comm.Recv([raw, MPI.BYTE], source=src, tag=_TAG_REQ)
            head = pickle.loads(raw.tobytes())
            try:
                self._handle(src, head)
            except Exception as e:   # noqa: BLE001 - kept and reported to the workers
                if self.error is None:
                    self.error = f"{type(e).__name__}: {e}"

    def _handle(self, src, head):
        op = head[0]
        if op == "stop":
            self._stopped += 1
        elif op in ("push", "pushc"):
            _, key, shape, dtype, extra = head
            if op == "pushc":
                nbytes = extra[1] * 4                  # the packed float32 words
            else:
                nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            buf = np.empty(nbytes, np.uint8)
            self.comm.Recv(buf, source=src, tag=_TAG_DATA)
            if op == "pushc":
                n = int(np.prod(shape))
                grad = dequantize_2bit(buf.view(np.float32), n, extra[0]).reshape(shape)
            else:
                grad = buf.view(np.dtype(dtype)).reshape(shape)
            self._apply(key, grad)
        elif op == "pushrs":
            # a row_sparse gradient: its row ids, then its rows
            _, key, shape, dtype, nrows = head
            ids = np.empty(nrows, np.int64)
            self.comm.Recv(ids, source=src, tag=_TAG_DATA)
            rows = np.empty((nrows,) + tuple(shape[1:]), np.dtype(dtype))
            self.comm.Recv(rows, source=src, tag=_TAG_DATA)
            self._apply(key, (rows, ids, shape))
        elif op == "pull":
            key = head[1]
            with self.lock:
                stored = self.store.get(key)
                data = None if stored is None else np.ascontiguousarray(stored.asnumpy())
            if self.error is not None:
                reply = ("error", self.error)
            elif data is None:
                reply = ("error", f"key {key!r} has not been initialised on the server")
            else:
                reply = ("ok", data.shape, data.dtype.str)
            self.comm.Send(np.frombuffer(pickle.dumps(reply), np.uint8), dest=src, tag=_TAG_REPLY)
            if reply[0] == "ok":
                self.comm.Send(data.view(np.uint8).reshape(-1), dest=src, tag=_TAG_REPLY)
        else:
            raise GpundaError(f"kvstore server: unknown request {op!r}")

    def _apply(self, key, grad):
        from gpunda.context import cpu
        from gpunda.ndarray import array, sparse
        if isinstance(grad, tuple):
            rows, ids, shape = grad
            grad_nd = sparse.row_sparse_array((rows, ids), shape=tuple(shape), ctx=cpu(),
                                              dtype=rows.dtype)
        else:
            grad_nd = array(grad, ctx=cpu(), dtype=grad.dtype)
        with self.lock:
            stored = self.store.get(key)
            if stored is None:
                raise GpundaError(f"push to key {key!r}, which has not been initialised")
            if self.updater is None:
                raise GpundaError("Updater needs to be set for async mode")
            # the gradient is applied as it arrives: MXNet's async ApplyUpdates
            self.updater(key, grad_nd, stored)
            self.applied += 1

    def join(self, timeout):
        """Wait for the loop to end (every worker sent 'stop')."""
        self.thread.join(timeout)


class AsyncClient:
    """A worker's side of ``dist_async``: pushes and pulls as messages to rank 0's server."""

    def __init__(self, mpi):
        from mpi4py import MPI
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            raise GpundaError("kvstore 'dist_async' runs its server as a thread of rank 0 and "
                              "needs MPI initialised with MPI_THREAD_MULTIPLE (mpi4py's default; "
                              "check mpi4py.rc.thread_level and your MPI build)")
        self.mpi = mpi
        self.comm = mpi.comm.Dup()      # collective: every rank makes its store together
        self.server = AsyncServer(self.comm, mpi.size) if mpi.rank == _SERVER else None
        self._closed = False
        atexit.register(self.close)

    def _send(self, head, payload=None):
        data = pickle.dumps(head)
        self.mpi.header_bytes += len(data)
        self.mpi._wait(self.comm.Isend([data, self.mpi.MPI.BYTE], dest=_SERVER, tag=_TAG_REQ),
                       f"kvstore request {head[0]!r}")
        if payload is not None:
            self.mpi.bytes_sent += payload.nbytes
            self.mpi._wait(self.comm.Isend(payload, dest=_SERVER, tag=_TAG_DATA),
                           f"kvstore push of key {head[1]!r}")

    def push(self, key, host):
        """Send the dense gradient ``host`` (a NumPy array) for ``key``."""
        host = np.ascontiguousarray(host)
        self._send(("push", key, host.shape, host.dtype.str, None),
                   host.view(np.uint8).reshape(-1))

    def push_row_sparse(self, key, shape, rows, ids):
        """Send a row_sparse gradient of ``shape``: row ids ``ids`` holding ``rows``."""
        ids = np.ascontiguousarray(ids, np.int64)
        rows = np.ascontiguousarray(rows)
        self._send(("pushrs", key, tuple(shape), rows.dtype.str, int(ids.size)))
        for buf in (ids, rows):
            self.mpi.bytes_sent += buf.nbytes
            self.mpi._wait(self.comm.Isend(buf, dest=_SERVER, tag=_TAG_DATA),
                           f"kvstore push of key {key!r}")

    def push_compressed(self, key, shape, words, threshold):
        """Send MXNet's packed 2-bit ``words`` (float32) standing for a gradient of ``shape``."""
        words = np.ascontiguousarray(words)
        self._send(("pushc", key, tuple(shape), "<f4", (float(threshold), int(words.size))),
                   words.view(np.uint8))

    def pull(self, key):
        """The server's current value of ``key`` as a NumPy array."""
        self._send(("pull", key))
        reply = self._recv_obj()
        if reply[0] == "error":
            raise GpundaError(f"KVStore (dist_async): the server failed: {reply[1]}")
        shape, dtype = reply[1], np.dtype(reply[2])
        buf = np.empty(int(np.prod(shape)) * dtype.itemsize, np.uint8)
        self.mpi._wait(self.comm.Irecv(buf, source=_SERVER, tag=_TAG_REPLY), "kvstore pull")
        return buf.view(dtype).reshape(shape)

    def _recv_obj(self):
        # the reply header's size is unknown: probe for it, then receive it
        from mpi4py import MPI
        status = MPI.Status()
        deadline = time.monotonic() + self.mpi.timeout
        while not self.comm.Iprobe(source=_SERVER, tag=_TAG_REPLY, status=status):
            if time.monotonic() > deadline:
                raise GpundaError(f"KVStore: rank {self.mpi.rank}: the dist_async server did "
                                  f"not answer within {self.mpi.timeout:.0f} s "
                                  f"(GPUNDA_KVSTORE_TIMEOUT)")
            time.sleep(1e-5)
        buf = np.empty(status.Get_count(MPI.BYTE), np.uint8)
        self.comm.Recv([buf, MPI.BYTE], source=_SERVER, tag=_TAG_REPLY)
        return pickle.loads(buf.tobytes())

    def close(self):
        """Tell the server this worker is done; rank 0 then waits for the server to finish
        every worker's pushes (MXNet's workers stop the servers at exit, too)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._send(("stop",))
            if self.server is not None:
                self.server.join(self.mpi.timeout)
        except Exception:   # noqa: BLE001 - at exit a failed peer is reported elsewhere
            pass
