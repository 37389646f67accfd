"""DataLoader with workers (processes and threads), pin_memory, prefetch, errors;
FilterSampler, lazy Dataset.filter and RecordFileDataset."""
import glob
import multiprocessing
import os
import time

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError
from gpunda.gluon import data as gdata
from _worker_datasets import Failing as _Failing, Squares as _Squares


class _Slow(_Squares):
    def __getitem__(self, i):
        time.sleep(2)
        return super().__getitem__(i)


def _closed(pool):
    if isinstance(pool, multiprocessing.pool.ThreadPool):
        return pool._state != multiprocessing.pool.RUN
    return pool.closed


def _batches(loader):
    return [[b.asnumpy() for b in batch] for batch in loader]


@pytest.mark.parametrize("thread_pool", [False, True])
def test_workers_give_the_batches_of_num_workers_0_in_order(thread_pool):
    ds = _Squares()
    ref = _batches(gdata.DataLoader(ds, batch_size=4, last_batch="keep"))
    loader = gdata.DataLoader(ds, batch_size=4, num_workers=3, thread_pool=thread_pool,
                              prefetch=1)
    got = _batches(loader)
    assert len(got) == len(ref) == 6
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g[0], r[0])
        np.testing.assert_array_equal(g[1], r[1])
    assert _batches(loader)[5][1].tolist() == [20, 21, 22]     # a second epoch


def test_process_workers_return_cpu_shared_and_pin_memory_moves_to_pinned():
    x = np.arange(40.0).reshape(10, 4)
    b = next(iter(gdata.DataLoader(gdata.ArrayDataset(x), batch_size=5, num_workers=2)))
    assert b.context == mx.Context("cpu_shared", 0)
    np.testing.assert_array_equal(b.asnumpy(), x[:5])
    for workers in (0, 2):
        b = next(iter(gdata.DataLoader(x, batch_size=5, num_workers=workers, pin_memory=True)))
        assert b.context == mx.cpu_pinned(0)


@pytest.mark.parametrize("thread_pool", [False, True])
def test_worker_error_names_the_sample(thread_pool):
    loader = gdata.DataLoader(_Failing(), batch_size=4, num_workers=2, thread_pool=thread_pool)
    with pytest.raises(GpundaError, match=r"sample 13: ValueError: bad sample"):
        for _ in loader:
            pass


def test_timeout_and_bad_arguments():
    loader = gdata.DataLoader(_Slow(), batch_size=1, num_workers=1, thread_pool=True,
                              timeout=0.2)
    with pytest.raises(multiprocessing.TimeoutError, match="timed out after 0.2"):
        next(iter(loader))
    threads = loader._worker_pool._pool
    del loader
    for t in threads:       # a thread still in a slow sample would make later forks unsafe
        t.join(10)
    with pytest.raises(GpundaError, match="num_workers"):
        gdata.DataLoader(_Squares(), batch_size=1, num_workers=-1)
    with pytest.raises(GpundaError, match="timeout"):
        gdata.DataLoader(_Squares(), batch_size=1, timeout=0)
    with pytest.raises(ValueError, match="batch_size"):
        gdata.DataLoader(_Squares())


def test_pool_is_terminated_with_the_loader():
    loader = gdata.DataLoader(_Squares(), batch_size=2, num_workers=2)
    pool = loader._worker_pool
    it = iter(loader)
    next(it)
    del loader                      # the running iterator keeps the pool alive
    assert len(list(it)) == 11
    pids = pool.pids
    del it                          # nothing waits for the garbage collector
    assert pool.closed and not any(os.path.exists(f"/proc/{p}") for p in pids)


def test_filter_sampler_and_lazy_filter():
    ds = gdata.SimpleDataset(list(range(20)))
    s = gdata.FilterSampler(lambda v: v % 3 == 0, ds)
    assert list(s) == [0, 3, 6, 9, 12, 15, 18] and len(s) == 7
    f = ds.transform(lambda v: v * 2).filter(lambda v: v % 3 == 0)
    assert [f[i] for i in range(len(f))] == [0, 6, 12, 18, 24, 30, 36]
    with pytest.raises(GpundaError, match="callable"):
        gdata.FilterSampler(3, ds)


def test_record_file_dataset(tmp_path):
    rec, idx = str(tmp_path / "d.rec"), str(tmp_path / "d.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(5):
        w.write_idx(i, b"record %d" % i)
    w.close()
    ds = gdata.RecordFileDataset(rec)
    assert len(ds) == 5 and ds[3] == b"record 3"
    with pytest.raises(GpundaError, match="missing.rec"):
        gdata.RecordFileDataset(str(tmp_path / "missing.rec"))


def test_dropping_a_loader_mid_epoch_with_large_batches_does_not_hang():
    from gpunda.gluon.data import _process_pool
    # batches of ~128 KB in flight: their shared-memory files go with the loader, at once
    for _ in range(3):
        loader = gdata.DataLoader(np.random.rand(400, 2000), batch_size=8, num_workers=4)
        prefix = loader._worker_pool.prefix
        it = iter(loader)
        assert next(it).shape == (8, 2000)
        del it, loader
        assert not glob.glob(os.path.join(_process_pool._SHM_DIR, prefix + "*"))
    assert not glob.glob(_process_pool._SHM_DIR + "/gpunda-dl-%d-*" % os.getpid())


@pytest.mark.timeout(60)
# the open thread_pool loaders' threads make the later forks warn: threads asked for
@pytest.mark.filterwarnings("ignore:.*use of fork:DeprecationWarning")
def test_loaders_left_open_then_many_dropped_do_not_hang():
    # MXNet's test_multi_worker then test_multi_worker_dataloader_release_pool:
    # loaders of every kind are left open (an auto_reload loader holds its
    # prefetching iterator), then loaders with ~128 KB batches are dropped after
    # one batch while the others' pools still run
    pools = []
    for thread_pool in (True, False):
        for auto_reload in (True, False):
            loader = gdata.DataLoader(_Squares(), batch_size=1, num_workers=3,
                                      thread_pool=thread_pool, auto_reload=auto_reload)
            assert [int(b[1].asscalar()) for b in loader] == list(range(23))
            pools.append(loader._worker_pool)
    del loader
    # dropped loaders stop their pools at once, without waiting for the garbage collector
    assert all(_closed(p) for p in pools)
    # a deadlocked close happens in a finalizer, whose exceptions (the timeout's too)
    # are swallowed: the elapsed time is what shows it
    start = time.time()
    for _ in range(6):
        loader = gdata.DataLoader(np.random.rand(300, 2000), batch_size=8, num_workers=4)
        pool = loader._worker_pool
        it = iter(loader)
        assert next(it).shape == (8, 2000)
        del it, loader
        assert _closed(pool)
    assert time.time() - start < 30


def test_closing_a_stuck_pool_returns(monkeypatch):
    from gpunda.gluon.data import _workers
    # a terminate that never returns (CPython's pool blocked on a full result pipe)
    release = multiprocessing.Event()

    class _StuckPool:
        _pool = []

        def terminate(self):
            release.wait()

    monkeypatch.setattr(_workers, "_CLOSE_TIMEOUT", 0.2)
    start = time.time()
    _workers.close_pool(_StuckPool())
    assert time.time() - start < 5
    release.set()


def test_a_subclass_may_set_its_own_worker_pool():
    # GluonCV's loaders set _worker_pool on MXNet's DataLoader after super().__init__
    class _Own(gdata.DataLoader):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._worker_pool = multiprocessing.pool.ThreadPool(1)

    loader = _Own(_Squares(), batch_size=8)
    pool = loader._worker_pool
    try:
        assert isinstance(pool, multiprocessing.pool.ThreadPool)
        assert [b[1].asnumpy().tolist() for b in loader][2] == [16, 17, 18, 19, 20, 21, 22]
    finally:
        pool.terminate()
    loader._worker_pool = None
    assert loader._worker_pool is None
