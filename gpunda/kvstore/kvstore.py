"""Key-value stores for data-parallel training (MXNet 1.x's KVStore API).

Types:
- ``local`` / ``device``: one process; values pushed from several contexts are
  summed on the store's context.
- ``dist_sync`` (alias ``dist_sync_device``, ``dist``): processes started with
  ``mpiexec -n N python train.py``; pushes are summed across ranks with MPI
  all-reduce through mpi4py (host-staged for GPU arrays unless the MPI is
  CUDA-aware). Every rank keeps a replica of every value, so an optimizer set
  with ``set_optimizer`` is applied identically on every rank.
- ``dist_async``: the same launch; rank 0 runs MXNet's asynchronous server as a
  thread (``_async.py``) that applies each worker's push with the optimizer as it
  arrives; pulls read its current value.
- ``nccl``: like dist_sync, with the all-reduce done by NCCL through CuPy on
  GPU arrays; the NCCL communicator is set up over MPI.

``set_gradient_compression`` (``device`` and ``dist`` types) quantises pushes to
MXNet's packed 2-bit form (``gradient_compression.py``).

Transport is never home-made: MPI (mpi4py) or NCCL (cupy.cuda.nccl) only.
A collective waits at most ``GPUNDA_KVSTORE_TIMEOUT`` seconds (default 300)
and then raises, so a rank that died makes the others fail instead of hang.
"""
from __future__ import annotations

import os
import pickle
import sys
import time

import numpy as np

from gpunda._engine import autograd as _ag
from gpunda.base import GpundaError, np_dtype
from gpunda.context import cpu
from gpunda.kvstore.base import KVStoreBase, KVStoreServer
from gpunda.kvstore.gradient_compression import GradientCompression
from gpunda.kvstore.kvstore_server import _check_launcher_env

__all__ = ["KVStore", "KVStoreBase", "KVStoreServer", "create", "allreduce_", "num_workers",
           "rank"]

_TYPES = ("local", "device", "local_allreduce_cpu", "local_allreduce_device", "dist_sync",
          "dist_sync_device", "dist", "dist_async", "nccl", "horovod")
_DIST = ("dist_sync", "dist_sync_device", "dist", "dist_async", "horovod")


def _key(k):
    if isinstance(k, (int, np.integer)):
        return int(k)
    if isinstance(k, str):
        return k
    raise GpundaError(f"KVStore: key {k!r} must be an int or a str")


def _pairs(key, value, what):
    """(keys, values) as lists; values may be lists (one per device) per key."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise GpundaError(f"KVStore.{what}: {len(key)} keys need {len(key)} values")
        return [_key(k) for k in key], list(value)
    return [_key(key)], [value]


_sparse_pull_logged = False


def _log_sparse_pull_ignored():
    global _sparse_pull_logged
    if not _sparse_pull_logged:
        _sparse_pull_logged = True
        import logging
        logging.getLogger("gpunda").info(
            "KVStore.pull: row_sparse outs are left untouched (ignore_sparse=True); pull their "
            "rows with row_sparse_pull(), or pass ignore_sparse=False for the whole value")


def _nd_type():
    from gpunda.ndarray import NDArray
    return NDArray


def _as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


class _MPIComm:
    """mpi4py's COMM_WORLD with time-limited collectives."""

    def __init__(self):
        try:
            from mpi4py import MPI
        except ImportError:
            raise GpundaError(
                "KVStore: distributed types need MPI: pip install mpich mpi4py (or use your "
                "system's MPI with mpi4py), then launch with: mpiexec -n N python train.py") from None
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.timeout = float(os.environ.get("GPUNDA_KVSTORE_TIMEOUT", "300"))
        # payload bytes this rank handed to MPI to send (what gradient compression shrinks)
        self.bytes_sent = 0
        self.header_bytes = 0    # request headers of dist_async (pickled, a few dozen bytes)
        _install_abort_hook(self.comm)

    def _wait(self, req, what):
        # spin first (a collective usually completes in well under 50 ms), then poll gently;
        # a non-blocking request lets us give up after the timeout instead of hanging
        now = time.monotonic()
        spin_until, deadline = now + 0.05, now + self.timeout
        delay = 1e-5
        while not req.Test():
            now = time.monotonic()
            if now < spin_until:
                continue
            if now > deadline:
                raise GpundaError(
                    f"KVStore: rank {self.rank}: {what} did not complete within "
                    f"{self.timeout:.0f} s (GPUNDA_KVSTORE_TIMEOUT); another rank probably failed")
            time.sleep(delay)
            delay = min(delay * 2, 1e-3)

    def allreduce_inplace(self, buf):
        """Sum a contiguous NumPy buffer across ranks, in place."""
        self.bytes_sent += buf.nbytes
        self._wait(self.comm.Iallreduce(self.MPI.IN_PLACE, buf, op=self.MPI.SUM), "all-reduce")
        return buf

    def allreduce(self, buf):
        out = np.empty_like(buf)
        self.bytes_sent += buf.nbytes
        self._wait(self.comm.Iallreduce(buf, out, op=self.MPI.SUM), "all-reduce")
        return out

    def bcast(self, buf, root=0):
        if self.rank == root:
            self.bytes_sent += buf.nbytes
        self._wait(self.comm.Ibcast(buf, root=root), "broadcast")
        return buf

    def allgather_obj(self, obj):
        data = pickle.dumps(obj)
        n = np.array([len(data)], np.int64)
        sizes = np.empty(self.size, np.int64)
        self._wait(self.comm.Iallgather(n, sizes), "metadata exchange")
        buf = np.zeros(int(sizes.sum()), np.uint8)
        send = np.frombuffer(data, np.uint8)
        self.bytes_sent += send.nbytes
        self._wait(self.comm.Iallgatherv(send, [buf, sizes]), "metadata exchange")
        out, off = [], 0
        for s in sizes:
            out.append(pickle.loads(buf[off:off + s].tobytes()))
            off += s
        return out

    def allgather(self, buf):
        """Every rank's copy of the same-sized NumPy buffer ``buf``, stacked in rank order."""
        out = np.empty((self.size,) + buf.shape, buf.dtype)
        self.bytes_sent += buf.nbytes
        self._wait(self.comm.Iallgather(buf, out), "all-gather")
        return out

    def barrier(self):
        self._wait(self.comm.Ibarrier(), "barrier")


_hooked = False


def _install_abort_hook(comm):
    """An uncaught exception on one rank aborts the whole job instead of leaving peers waiting."""
    global _hooked
    if _hooked or comm.Get_size() == 1:
        return
    _hooked = True
    prev = sys.excepthook

    def hook(tp, val, tb):
        prev(tp, val, tb)
        sys.stderr.flush()
        # The launcher forwards a rank's output through its proxy, and Abort kills that proxy:
        # a moment's wait lets the traceback reach the user instead of dying in the pipe.
        import time
        time.sleep(1.0)
        comm.Abort(1)
    sys.excepthook = hook


class KVStore(KVStoreBase):
    """A key-value store; create one with ``gpunda.kv.create(name)``."""

    def __init__(self, kvtype="local"):
        self._type = kvtype
        self._store = {}
        self._updater = None
        self._optimizer = None
        self._comm = None
        self._nccl = None
        self._checked = set()
        self._key_type = None    # int or str, fixed by the first call
        self._gc = GradientCompression()
        self._async_updater = False
        self._async = None       # dist_async: the client of rank 0's server thread
        if kvtype in _DIST or kvtype == "nccl":
            self._comm = _MPIComm()
            _check_launcher_env(self._comm.size)
        if kvtype == "dist_async":
            from gpunda.kvstore._async import AsyncClient
            self._async = AsyncClient(self._comm)
        if kvtype == "nccl":
            self._nccl = _NcclComm(self._comm)

    # -- properties ------------------------------------------------------------
    @property
    def type(self):
        """The store's type string."""
        return self._type

    @property
    def rank(self):
        """This worker's rank (0 for single-process stores)."""
        return self._comm.rank if self._comm else 0

    @property
    def num_workers(self):
        """Number of worker processes."""
        return self._comm.size if self._comm else 1

    def is_capable(self, capability):
        """Whether the store supports ``capability``; every gpunda store runs optimizers."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return True
        raise ValueError(f"Unknown capability: {capability}")

    # -- data ----------------------------------------------------------------------
    def init(self, key, value):
        """Set initial values; in distributed stores rank 0's value is broadcast."""
        keys, values = _pairs(key, value, "init")
        self._check_key_type(keys, "init")
        if self._comm is not None:
            meta = [(k, tuple(_as_list(v)[0].shape), np.dtype(_as_list(v)[0].dtype).name)
                    for k, v in zip(keys, values)]
            everyone = self._comm.allgather_obj(meta)
            for r, m in enumerate(everyone):
                if m != meta:
                    diff = [(a, b) for a, b in zip(meta, m) if a != b] or [(meta, m)]
                    raise GpundaError(f"KVStore.init: rank {r} has different keys, shapes or "
                                      f"dtypes than rank {self.rank}: {diff[0][1]} vs {diff[0][0]}")
        for k, v in zip(keys, values):
            v0 = _as_list(v)[0]
            stored = v0.copyto(v0.context)
            if self._comm is not None:
                host = np.ascontiguousarray(stored.asnumpy())
                if self._async is not None and self._async.server is not None:
                    # the server holds rank 0's value before any rank can leave the
                    # broadcast below and push to it
                    self._async.server.set_value(k, host)
                self._comm.bcast(host)
                stored[:] = host
            self._store[k] = stored

    def _get(self, k, what):
        if k not in self._store:
            raise GpundaError(f"KVStore.{what}: key {k!r} has not been initialised (call init first)")
        return self._store[k]

    def push(self, key, value, priority=0):
        """Sum ``value`` (over devices, then over ranks) into the store for ``key``.

        With an optimizer set, the sum is the gradient applied to the stored
        weight; otherwise it replaces the stored value.
        """
        keys, values = _pairs(key, value, "push")
        self._check_key_type(keys, "push")
        for k, v in zip(keys, values):
            stored = self._get(k, "push")
            parts = _as_list(v)
            for i, p in enumerate(parts):
                if tuple(p.shape) != tuple(stored.shape):
                    raise GpundaError(f"KVStore.push: value {i} for key {k!r} has shape "
                                      f"{tuple(p.shape)} but the key holds {tuple(stored.shape)}")
                if np_dtype(p.dtype) != np_dtype(stored.dtype):
                    raise GpundaError(f"KVStore.push: value {i} for key {k!r} has dtype "
                                      f"{np_dtype(p.dtype).name} but the key holds "
                                      f"{np.dtype(stored.dtype).name}")
            if self._async is not None:
                self._push_async(k, parts, stored)
                continue
            merged = self._reduce(k, parts, stored)
            if self._updater is not None:
                self._updater(k, merged, stored)
            else:
                stored[:] = merged

    def _reduce(self, k, parts, stored):
        ctx = stored.context
        if self._gc.active:
            for p in parts:
                self._gc.check_value(k, p)
            if self._comm is None:
                return self._gc.reduce_local(k, parts, stored)
        if getattr(parts[0], "stype", "default") == "row_sparse":
            return self._reduce_row_sparse(parts, stored)
        total = parts[0].as_in_context(ctx).copy() if len(parts) == 1 else None
        if total is None:
            total = parts[0].as_in_context(ctx).copy()
            for p in parts[1:]:
                total += p.as_in_context(ctx)
        if self._gc.active:
            # the workers' merged gradients travel packed, as MXNet's worker-to-server
            # pushes do (the devices of one worker are merged uncompressed first)
            total[:] = self._gc.allreduce((k, "dist"), total, self._comm)
        elif self._comm is not None and self._comm.size > 1:
            if self._nccl is not None and ctx.device_type == "gpu":
                self._nccl.allreduce_(total)
            else:
                host = np.ascontiguousarray(total.asnumpy())
                total[:] = self._comm.allreduce(host)
        return total

    def _push_async(self, k, parts, stored):
        """dist_async: merge this worker's devices, then send the sum (packed when
        compression is on) to the server, which applies it on arrival."""
        if not self._async_updater:
            raise GpundaError(f"KVStore.push: key {k!r}: a 'dist_async' store applies pushes "
                              f"with the optimizer on its server: call set_optimizer first "
                              f"(MXNet: Updater needs to be set for async mode)")
        if self._gc.active:
            for p in parts:
                self._gc.check_value(k, p)
        ctx = stored.context
        if getattr(parts[0], "stype", "default") == "row_sparse":
            # only the rows present on some device travel, as MXNet's row_sparse push
            ids = np.unique(np.concatenate([p.indices.asnumpy() for p in parts])).astype(np.int64)
            dense = parts[0].tostype("default").asnumpy()
            for p in parts[1:]:
                dense = dense + p.tostype("default").asnumpy()
            self._async.push_row_sparse(k, stored.shape, dense[ids], ids)
            return
        total = parts[0].as_in_context(ctx).copy()
        for p in parts[1:]:
            total += p.as_in_context(ctx)
        if self._gc.active:
            words = self._gc.pack_to_host((k, "dist"), total)
            self._async.push_compressed(k, total.shape, words, self._gc.threshold)
        else:
            self._async.push(k, total.asnumpy())

    def _refresh_async(self, k):
        """dist_async: this rank's copy of ``k`` set to the server's value as it is now."""
        value = self._async.pull(k)
        stored = self._store[k]
        if stored.stype == "default":
            stored[:] = value
        else:
            from gpunda.ndarray import array
            stored = self._store[k] = array(value, ctx=stored.context,
                                            dtype=value.dtype).tostype(stored.stype)
        return stored

    def _reduce_row_sparse(self, parts, stored):
        from gpunda.ndarray import sparse
        ctx = stored.context
        dense = parts[0].tostype("default").as_in_context(ctx)
        for p in parts[1:]:
            dense = dense + p.tostype("default").as_in_context(ctx)
        if self._comm is not None and self._comm.size > 1:
            # only the rows present anywhere travel: first agree on the row set
            rows = np.unique(np.concatenate([p.indices.asnumpy() for p in parts])).astype(np.int64)
            all_rows = np.unique(np.concatenate(self._comm.allgather_obj(rows))).astype(np.int64)
            vals = np.ascontiguousarray(dense.asnumpy()[all_rows])
            vals = self._comm.allreduce(vals)
            return sparse.row_sparse_array((vals, all_rows), shape=stored.shape, ctx=ctx)
        return dense.tostype("row_sparse")

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy the stored value of ``key`` into ``out`` (one array or one per device).

        With ``ignore_sparse`` (the default, as MXNet) a row_sparse ``out`` is left
        untouched (pull its rows with ``row_sparse_pull``); with ``ignore_sparse=False``
        it receives the whole stored value.
        """
        if out is None:
            raise GpundaError("KVStore.pull: out= is required")
        keys, outs = _pairs(key, out, "pull")
        self._check_key_type(keys, "pull")
        for k, o in zip(keys, outs):
            stored = self._get(k, "pull")
            if self._async is not None:
                stored = self._refresh_async(k)
            for i, t in enumerate(_as_list(o)):
                if tuple(t.shape) != tuple(stored.shape):
                    raise GpundaError(f"KVStore.pull: out {i} for key {k!r} has shape "
                                      f"{tuple(t.shape)} but the key holds {tuple(stored.shape)}")
                if ignore_sparse and t.stype != "default":
                    _log_sparse_pull_ignored()
                    continue
                stored.copyto(t)

    def pushpull(self, key, value, out=None, priority=0):
        """Push then pull (``out`` defaults to ``value``)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """Init ``key`` with ``value`` (rank 0's in distributed stores), then pull into ``out``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Pull only the rows ``row_ids`` of a stored value into row_sparse ``out``.

        ``row_ids`` pairs with ``out`` as MXNet's does: one NDArray (or a list per
        device) per key; a single row-id array for a list of outs pulls once and
        copies the result to the other outs.
        """
        if out is None or row_ids is None:
            raise GpundaError("KVStore.row_sparse_pull: out= and row_ids= are required")
        if isinstance(row_ids, _nd_type()):
            row_ids = [row_ids]
        if not isinstance(row_ids, (list, tuple)):
            raise GpundaError(f"KVStore.row_sparse_pull: row_ids must be an NDArray or a list "
                              f"of NDArrays, got {type(row_ids).__name__}")
        first_out, copies = out, []
        if isinstance(key, (list, tuple)):
            keys, outs = _pairs(key, out, "row_sparse_pull")
            _, ids = _pairs(key, row_ids, "row_sparse_pull")
        else:
            if isinstance(out, (list, tuple)) and len(row_ids) == 1:
                first_out, copies = [out[0]], list(out[1:])
            keys, outs = [_key(key)], [first_out]
            ids = [row_ids if isinstance(first_out, (list, tuple)) else row_ids[0]]
        self._check_key_type(keys, "row_sparse_pull")
        for k, o, rid in zip(keys, outs, ids):
            stored = self._get(k, "row_sparse_pull")
            targets, rids = _as_list(o), _as_list(rid)
            if len(rids) != len(targets):
                raise GpundaError(f"KVStore.row_sparse_pull: key {k!r} has {len(targets)} outs "
                                  f"but {len(rids)} row_ids")
            for i, (t, r) in enumerate(zip(targets, rids)):
                if t.stype != "row_sparse":
                    raise GpundaError(f"KVStore.row_sparse_pull: out {i} for key {k!r} has "
                                      f"stype {t.stype!r}; row_sparse_pull writes row_sparse "
                                      f"arrays only (use pull for dense ones)")
                if tuple(t.shape) != tuple(stored.shape):
                    raise GpundaError(f"KVStore.row_sparse_pull: out {i} for key {k!r} has shape "
                                      f"{tuple(t.shape)} but the key holds {tuple(stored.shape)}")
                if self._async is not None and i == 0:
                    stored = self._refresh_async(k)
                self._pull_rows(stored, t, r)
        for t in copies:
            out[0].copyto(t)

    @staticmethod
    def _pull_rows(stored, target, row_ids):
        from gpunda.ndarray import sparse
        rows = np.unique(row_ids.asnumpy().astype(np.int64))
        n = stored.shape[0]
        if rows.size and (rows[0] < 0 or rows[-1] >= n):
            raise GpundaError(f"KVStore.row_sparse_pull: row id {int(rows[0] if rows[0] < 0 else rows[-1])} "
                              f"is out of range for a value with {n} rows")
        vals = stored.tostype("default").asnumpy()[rows]
        sparse.row_sparse_array((vals, rows), shape=stored.shape, ctx=target.context,
                                dtype=stored.dtype).copyto(target)

    def _check_key_type(self, keys, what):
        """A store takes int keys or str keys, fixed by its first call (as MXNet's)."""
        for k in keys:
            kind = str if isinstance(k, str) else int
            if self._key_type is None:
                self._key_type = kind
            elif kind is not self._key_type:
                raise GpundaError(f"KVStore.{what}: key {k!r} is {'a str' if kind is str else 'an int'}"
                                  f" but this store uses {self._key_type.__name__} keys; mixed key "
                                  f"types are not allowed")

    # -- optimizer on the store ---------------------------------------------------
    def set_optimizer(self, optimizer):
        """Run ``optimizer`` on pushed gradients (every rank applies it to its replica)."""
        from gpunda import optimizer as opt
        self._optimizer = optimizer
        self._updater = opt.get_updater(optimizer)
        if self._async is not None:
            # as MXNet's workers send the optimizer to the servers and wait: rank 0's
            # optimizer runs on the server thread; the barrier keeps every rank's first
            # push behind it
            if self._async.server is not None:
                self._async.server.updater = self._updater
            self._async_updater = True
            self._comm.barrier()

    def set_updater(self, updater):
        """Use ``updater(key, merged_value, stored_value)`` on push (on a 'dist_async'
        store, rank 0's updater runs on the server)."""
        self._updater = updater
        if self._async is not None:
            if self._async.server is not None:
                self._async.server.updater = updater
            self._async_updater = True

    _set_updater = set_updater

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the optimizer state (rank 0 writes in distributed stores)."""
        if self._updater is None:
            raise GpundaError("KVStore.save_optimizer_states: no optimizer set")
        if self.rank == 0:
            with self._server_lock():      # dist_async: the server thread updates the states
                data = self._updater.get_states(dump_optimizer)
            tmp = f"{fname}.tmp{os.getpid()}"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, fname)

    def load_optimizer_states(self, fname):
        """Read optimizer state written by save_optimizer_states."""
        if self._updater is None:
            raise GpundaError("KVStore.load_optimizer_states: no optimizer set")
        with open(fname, "rb") as f:
            data = f.read()
        with self._server_lock():
            self._updater.set_states(data)

    def _server_lock(self):
        import contextlib
        server = self._async.server if self._async is not None else None
        return server.lock if server is not None else contextlib.nullcontext()

    def barrier(self):
        """Wait until every worker reaches this point."""
        if self._comm is not None:
            self._comm.barrier()

    _barrier = barrier      # MXNet's name (SVRGModule and MXNet's own tools call it)

    def _send_command_to_servers(self, head, body):
        """MXNet's command to the parameter servers. gpunda's stores have no server processes
        (the distributed store sums gradients among the workers), so there is nothing to
        send; as MXNet's local store, this does nothing."""
        if not isinstance(head, int) or isinstance(head, bool):
            raise GpundaError(f"KVStore._send_command_to_servers: head={head!r} must be an int")

    def set_gradient_compression(self, compression_params):
        """MXNet's 2-bit gradient compression of pushed gradients
        (``{'type': '2bit', 'threshold': t}``, threshold 0.5 by default).

        As in MXNet 1.9.1 it is offered on stores whose type names 'device' (each source
        array of a push is quantised with its own residual before the merge) or 'dist'
        (each worker's merged gradient is quantised with its residual and travels packed,
        16 values per float32 word); other stores raise. It may be set before or after
        ``init``; the residuals persist across pushes (and across a new setting).
        Only float32 dense values can be pushed while it is on.
        """
        if "device" in self.type or "dist" in self.type:
            self._gc.set_params(compression_params)
            return
        raise GpundaError("Gradient compression is not supported for this type of kvstore")

    # -- bulk all-reduce for Trainer -------------------------------------------------
    def allreduce_arrays(self, arrays, bucket_bytes=None):
        """Sum arrays across ranks, fusing small dense ones into buckets.

        Dense arrays are reduced in place; a row_sparse array is reduced on the
        rows present on any rank and returned as a new array. Returns the list
        of reduced arrays. ``bucket_bytes`` (default ``GPUNDA_KVSTORE_BUCKET_MB``
        MiB, 25) bounds one fused message.
        """
        arrays = list(arrays)
        if self._async is not None:
            raise GpundaError("KVStore.allreduce_arrays: a 'dist_async' store has no "
                              "all-reduce (workers push to its server and pull from it); use "
                              "push/pull, or update_on_kvstore=True in the Trainer")
        if self._comm is None or self._comm.size == 1:
            return arrays
        if bucket_bytes is None:
            bucket_bytes = int(float(os.environ.get("GPUNDA_KVSTORE_BUCKET_MB", "25")) * 2 ** 20)
        if self._gc.active:
            # each array keeps its residual by its place in the list (the Trainer passes
            # its gradients in the same order every step)
            for i, a in enumerate(arrays):
                self._gc.check_value(i, a)
                a[:] = self._gc.allreduce(("allreduce", i), a, self._comm)
            return arrays
        dense = [a for a in arrays if getattr(a, "stype", "default") == "default"]
        if self._nccl is not None and dense and dense[0].context.device_type == "gpu":
            for a in dense:
                self._nccl.allreduce_(a)
        else:
            for bucket in _buckets(dense, bucket_bytes):
                if len(bucket) == 1 and _host_contiguous(bucket[0]):
                    a = bucket[0]       # a big array travels as it is, no staging copy
                    self._comm.allreduce_inplace(a._data)
                    _ag.bump_version(a)
                    continue
                dt = np.result_type(*[np_dtype(a.dtype) for a in bucket])
                flat = np.concatenate([a.asnumpy().astype(dt, copy=False).reshape(-1)
                                       for a in bucket])
                red = self._comm.allreduce(flat)
                off = 0
                for a in bucket:
                    n = a.size
                    a[:] = red[off:off + n].reshape(a.shape).astype(np_dtype(a.dtype), copy=False)
                    off += n
        return [a if getattr(a, "stype", "default") == "default"
                else self._reduce_row_sparse([a], a) for a in arrays]


def _host_contiguous(a):
    d = a._data
    return isinstance(d, np.ndarray) and d.flags.c_contiguous and d.flags.writeable


def _buckets(arrays, limit):
    bucket, size = [], 0
    for a in arrays:
        nb = a.size * np_dtype(a.dtype).itemsize
        if bucket and size + nb > limit:
            yield bucket
            bucket, size = [], 0
        bucket.append(a)
        size += nb
    if bucket:
        yield bucket


class _NcclComm:
    """A NCCL communicator over all ranks, its unique id shared over MPI."""

    def __init__(self, mpi):
        try:
            from cupy.cuda import nccl
        except Exception as e:   # noqa: BLE001
            raise GpundaError(f"KVStore('nccl'): NCCL through CuPy is not available ({e}); "
                              f"pip install 'gpunda[gpu]' and use a GPU machine") from None
        if not getattr(nccl, "available", True):
            # CuPy imports a stub module when libnccl cannot be loaded (no GPU, no nvidia-nccl)
            raise GpundaError("KVStore('nccl'): CuPy could not load the NCCL library (libnccl); "
                              "pip install nvidia-nccl-cu12 on a GPU machine, or use "
                              "'dist_sync_device', which all-reduces over MPI")
        self.nccl = nccl
        uid = np.zeros(nccl.NCCL_UNIQUE_ID_BYTES if hasattr(nccl, "NCCL_UNIQUE_ID_BYTES") else 128,
                       np.int8)
        if mpi.rank == 0:
            raw = nccl.get_unique_id()
            uid = np.array(raw, dtype=np.int8) if not isinstance(raw, bytes) else \
                np.frombuffer(raw, np.int8).copy()
        mpi.bcast(uid)
        self.comm = nccl.NcclCommunicator(mpi.size, tuple(int(v) for v in uid), mpi.rank)

    def allreduce_(self, arr):
        import cupy
        data = arr._data
        dtype = {np.dtype("float32"): self.nccl.NCCL_FLOAT32,
                 np.dtype("float64"): self.nccl.NCCL_FLOAT64,
                 np.dtype("float16"): self.nccl.NCCL_FLOAT16,
                 np.dtype("int32"): self.nccl.NCCL_INT32,
                 np.dtype("int64"): self.nccl.NCCL_INT64}[data.dtype]
        stream = cupy.cuda.get_current_stream().ptr
        self.comm.allReduce(data.data.ptr, data.data.ptr, data.size, dtype, self.nccl.NCCL_SUM,
                            stream)


def create(name="local"):
    """A KVStore of type ``name`` (local, device, dist_sync, dist_sync_device, dist_async,
    nccl)."""
    if isinstance(name, KVStore):
        return name
    if not isinstance(name, str):
        raise TypeError(f"kvstore.create: name must be a string, got {type(name).__name__}")
    if name.lower() in KVStoreBase.kv_registry:     # a store registered by the user
        return KVStoreBase.kv_registry[name.lower()]()
    if name not in _TYPES:
        import difflib
        near = difflib.get_close_matches(str(name), _TYPES, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise GpundaError(f"kvstore.create: unknown type {name!r}{hint} Valid types: "
                          f"{', '.join(_TYPES)}")
    kv = KVStore(name)
    import weakref
    from gpunda import profiler     # as MXNet's create: profile_process='server' goes here
    profiler.set_kvstore_handle(weakref.ref(kv))
    return kv


def num_workers():
    """Number of MPI ranks when launched under mpiexec, else 1."""
    for var in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"):
        if var in os.environ:
            return int(os.environ[var])
    return 1


def rank():
    """This process's MPI rank when launched under mpiexec, else 0."""
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
        if var in os.environ:
            return int(os.environ[var])
    return 0


def allreduce_(arrays, kv):
    """Horovod-style helper: sum ``arrays`` in place across the ranks of store ``kv``."""
    kv.allreduce_arrays(_as_list(arrays))


# the server-command codes MXNet's KVStore sends to its parameter servers
_SERVER_COMMANDS = {"kController": 0, "kSetMultiPrecision": 1, "kStopServer": 2, "kSyncMode": 3,
                    "kSetGradientCompression": 4, "kSetProfilerParams": 5}


def _get_kvstore_server_command_type(command):
    """The integer code of the server command named ``command`` (MXNet's table)."""
    if command not in _SERVER_COMMANDS:
        raise GpundaError(f"kvstore: unknown server command {command!r}; known: "
                          f"{', '.join(_SERVER_COMMANDS)}")
    return _SERVER_COMMANDS[command]


def _updater_wrapper(updater):
    """MXNet wraps a Python ``updater(key, merged, stored)`` into the callback its C
    store calls with array handles; gpunda's store holds the NDArrays themselves, so the
    callback takes them as they are (the fourth argument, a C context, is ignored)."""
    def updater_handle(key, lhs, rhs, _=None):
        updater(key, lhs, rhs)
    return updater_handle
