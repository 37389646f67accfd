"""MXNet 1.9.1's own DataLoader worker machinery in gluon.data.dataloader: NDArrays through
shared memory (reduce/rebuild with ForkingPickler, Queue, SimpleQueue, ConnectionWrapper),
DataLoaderV1 and its loops, _MultiWorkerIter over pools made with MXNet's worker functions.
Expected batches were recorded from MXNet 1.9.1 running the same calls."""
import multiprocessing
import pickle
import queue
import subprocess
import sys
import threading
from multiprocessing.pool import ThreadPool

import numpy as np
import pytest

import gpunda as mx
from gpunda.gluon.data import ArrayDataset, SimpleDataset
from gpunda.gluon.data import dataloader as D
from gpunda.gluon.data.sampler import BatchSampler, SequentialSampler

_FORK = "fork" in multiprocessing.get_all_start_methods()
needs_fork = pytest.mark.skipif(not _FORK, reason="worker processes are forked here")


@pytest.fixture(autouse=True)
def _stop_resource_sharer():
    yield
    # NDArrays reduced in this process outside a process start had their descriptors served
    # by multiprocessing's listener thread: stopped, so that later tests' forks are not forks
    # of a multi-threaded process
    import multiprocessing.resource_sharer
    multiprocessing.resource_sharer.stop()


def _ds():
    return ArrayDataset(np.arange(10, dtype="float32").reshape(5, 2) * 1.5,
                        np.arange(5, dtype="int32"))


_X = [[0.0, 1.5], [3.0, 4.5], [6.0, 7.5], [9.0, 10.5], [12.0, 13.5]]


def _rows(batches):
    return [[v.asnumpy().tolist() for v in b] for b in batches]


def test_forking_pickler_sends_ndarrays_through_shared_memory():
    fp = D.ForkingPickler           # loads the machinery, which registers the reductions
    x = mx.nd.array([[1, 2], [3, 4]], dtype="int32", ctx=mx.cpu())
    func, (pid, fd, shape, dtype) = D.reduce_ndarray(x)
    assert func is D.rebuild_ndarray
    assert (shape, dtype) == ((2, 2), np.int32)        # MXNet: (pid, DupFd, shape, type)
    y = D.rebuild_ndarray(pid, fd, shape, dtype)
    assert y.asnumpy().tolist() == [[1, 2], [3, 4]] and y.dtype == np.int32
    assert y.context == mx.Context("cpu_shared", 0)
    for a in (mx.nd.array(np.random.RandomState(0).rand(3, 4, 5)), mx.nd.ones((2,), dtype="uint8"),
              mx.np.zeros((0, 3))):
        b = pickle.loads(fp.dumps(a))
        assert type(b) is type(a) and b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
        assert b.context == mx.Context("cpu_shared", 0)
    func, args = D.reduce_np_ndarray(mx.np.array([1, 2]))
    v = func(*args)
    assert func is D.rebuild_np_ndarray and type(v) is mx.np.ndarray and v.tolist() == [1.0, 2.0]
    # plain pickle still sends the values themselves
    assert pickle.loads(pickle.dumps(x)).context == mx.cpu()


def _send_two(q, done):
    q.put((7, mx.nd.array([[1.5, 2], [3, 4]]), mx.nd.array([1, 2, 3], dtype="int64")))
    done.wait(60)       # the receiver fetches the shared memory from this process


def _send_on_pipe(conn, done):
    D.ConnectionWrapper(conn).send({"a": mx.nd.array([5, 6], dtype="float64")})
    done.wait(60)


@needs_fork
@pytest.mark.parametrize("kind", ["Queue", "SimpleQueue"])
def test_queues_carry_ndarrays_between_processes(kind):
    ctx = multiprocessing.get_context("fork")
    q = getattr(D, kind)()
    done = ctx.Event()
    p = ctx.Process(target=_send_two, args=(q, done))
    p.start()
    try:
        k, a, b = q.get(timeout=60) if kind == "Queue" else q.get()
    finally:
        done.set()
        p.join(60)
    # MXNet 1.9.1: 7 [[1.5, 2.0], [3.0, 4.0]] float32 cpu_shared(0) [1, 2, 3] int64
    assert k == 7 and a.asnumpy().tolist() == [[1.5, 2.0], [3.0, 4.0]] and a.dtype == np.float32
    assert a.context == mx.Context("cpu_shared", 0)
    assert b.asnumpy().tolist() == [1, 2, 3] and b.dtype == np.int64


@needs_fork
def test_connection_wrapper_sends_with_forking_pickler():
    ctx = multiprocessing.get_context("fork")
    reader, writer = ctx.Pipe(duplex=False)
    done = ctx.Event()
    p = ctx.Process(target=_send_on_pipe, args=(writer, done))
    p.start()
    try:
        wrapped = D.ConnectionWrapper(reader)
        assert wrapped.poll(60)                     # other attributes are the connection's
        got = wrapped.recv()
    finally:
        done.set()
        p.join(60)
    assert got["a"].asnumpy().tolist() == [5.0, 6.0] and got["a"].dtype == np.float64


@needs_fork
@pytest.mark.parametrize("kw,expected", [
    (dict(num_workers=2), [[_X[0:2], [0, 1]], [_X[2:4], [2, 3]], [_X[4:5], [4]]] * 2),
    (dict(num_workers=0), [[_X[0:2], [0, 1]], [_X[2:4], [2, 3]], [_X[4:5], [4]]] * 2),
    (dict(num_workers=2, last_batch="discard"), [[_X[0:2], [0, 1]], [_X[2:4], [2, 3]]] * 2),
    (dict(num_workers=2, last_batch="rollover"),
     [[_X[0:2], [0, 1]], [_X[2:4], [2, 3]], [[_X[4], _X[0]], [4, 0]], [_X[1:3], [1, 2]],
      [_X[3:5], [3, 4]]]),
])
def test_dataloader_v1_batches_match_mxnet(kw, expected):
    dl = D.DataLoaderV1(_ds(), batch_size=2, **kw)
    assert len(dl) == (3 if "last_batch" not in kw else 2)
    got = []
    for _ in range(2):
        for x, y in dl:
            assert x.dtype == np.float32 and y.dtype == np.int32
            # batchified in the process itself, the batch is on the default context
            # (gpu(0) under --standin-gpu); workers hand over cpu_shared(0), a host context
            want = mx.current_context() if kw["num_workers"] == 0 else mx.cpu()
            assert x.context == want and y.context == want
            got.append([x.asnumpy().tolist(), y.asnumpy().tolist()])
    assert got == expected


@needs_fork
def test_dataloader_v1_with_a_batchify_fn():
    dl = D.DataLoaderV1(SimpleDataset([(i, i * i) for i in range(7)]), batch_size=3,
                        num_workers=2, batchify_fn=_columns)
    assert list(dl) == [[[0, 1, 2], [0, 1, 4]], [[3, 4, 5], [9, 16, 25]], [[6], [36]]]


def _columns(samples):
    return [list(t) for t in zip(*samples)]


def test_v1_loops_with_thread_queues():
    key_q, data_q = queue.Queue(), queue.Queue()
    for idx, samples in enumerate([[1, 3], [0]]):
        key_q.put((idx, samples))
    key_q.put((None, None))
    D.worker_loop_v1(_ds(), key_q, data_q, D.default_mp_batchify_fn)
    data_q.put((None, None))
    buf, lock = {}, threading.Lock()
    D.fetcher_loop_v1(data_q, buf, data_buffer_lock=lock)
    assert sorted(buf) == [0, 1]
    assert _rows([buf[0], buf[1]]) == [[[_X[1], _X[3]], [1, 3]], [[_X[0]], [0]]]
    assert buf[0][0].context == mx.cpu()            # the fetcher moves batches to cpu()


@needs_fork
def test_multi_worker_iter_over_mxnet_style_pools():
    ds = _ds()
    sampler = BatchSampler(SequentialSampler(5), 2, "keep")
    pool = multiprocessing.get_context("fork").Pool(2, initializer=D._worker_initializer,
                                                    initargs=[ds, False, False])
    try:
        it = D._MultiWorkerIter(pool, D.default_mp_batchify_fn, sampler, worker_fn=D._worker_fn,
                                prefetch=2, dataset=None)
        assert len(it) == 3
        batches = list(it)
    finally:
        pool.terminate()
    assert _rows(batches) == [[_X[0:2], [0, 1]], [_X[2:4], [2, 3]], [_X[4:5], [4]]]
    assert batches[0][0].context == mx.Context("cpu_shared", 0)       # as MXNet's
    tp = ThreadPool(2, initializer=D._thread_worker_initializer, initargs=(False, False))
    try:
        it = D._MultiWorkerIter(tp, D.default_batchify_fn,
                                BatchSampler(SequentialSampler(5), 3, "keep"),
                                worker_fn=D._thread_worker_fn, prefetch=1, dataset=ds)
        assert _rows(it) == [[_X[0:3], [0, 1, 2]], [_X[3:5], [3, 4]]]
    finally:
        tp.terminate()


def test_worker_functions_match_mxnet():
    ds = _ds()
    old = D._worker_dataset
    try:
        D._worker_initializer(ds, False, False)
        assert D._worker_dataset is ds
        batch = pickle.loads(D._worker_fn([4, 0], D.default_mp_batchify_fn))
    finally:
        D._worker_dataset = old
    assert _rows([batch]) == [[[_X[4], _X[0]], [4, 0]]]
    assert batch[0].context == mx.Context("cpu_shared", 0)
    assert _rows([D._thread_worker_fn([1, 3], D.default_batchify_fn, ds)]) == \
        [[[_X[1], _X[3]], [1, 3]]]


def test_import_gpunda_does_not_load_the_multiprocessing_machinery():
    code = ("import sys, gpunda, gpunda.gluon.data.dataloader as d; "
            "print('multiprocessing.queues' in sys.modules, "
            "'gpunda.gluon.data._mxnet_workers' in sys.modules, d._worker_dataset)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.split() == ["False", "False", "None"]
