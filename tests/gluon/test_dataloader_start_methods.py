"""DataLoader and DataLoaderV1 worker processes under every start method (fork, forkserver,
spawn): batches in order, every shared-memory file unlinked on every path (normal end,
a pass or the loader dropped mid-epoch, a worker raising or dying, Ctrl-C, interpreter
exit), no hang, and no thread of gpunda's running when it forks. Datasets and batchify
functions are module-level, so that forkserver and spawn workers can unpickle them."""
import glob
import multiprocessing
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError
from gpunda.gluon import data as gdata
from gpunda.gluon.data import _process_pool
from gpunda.gluon.data import dataloader as D
from _worker_datasets import Failing as _Failing, Squares as _Squares

METHODS = [m for m in ("fork", "forkserver", "spawn")
           if m in multiprocessing.get_all_start_methods()]
pytestmark = pytest.mark.timeout(120)
if "forkserver" in METHODS:
    # the server imports gpunda once, instead of every worker it starts (test time only)
    multiprocessing.set_forkserver_preload(["gpunda.gluon.data"])


class _DiesOnce(_Squares):
    """Sample 5 kills its worker while the file ``marker`` exists (and removes it)."""

    def __init__(self, marker):
        self.marker = marker

    def __getitem__(self, i):
        if i == 5 and os.path.exists(self.marker):
            os.unlink(self.marker)
            os._exit(3)
        return super().__getitem__(i)


def _columns(samples):
    return [list(t) for t in zip(*samples)]


def _batches(loader):
    return [[b.asnumpy().tolist() for b in batch] for batch in loader]


def _our_files():
    # files of this process's pools only: other processes on the machine use /dev/shm too
    return glob.glob(os.path.join(_process_pool._SHM_DIR, "gpunda-dl-%d-*" % os.getpid()))


def _gone(pids):
    return not any(os.path.exists(f"/proc/{p}") for p in pids)


@pytest.fixture
def no_files_left():
    assert not _our_files()
    yield
    assert not _our_files()


@pytest.mark.parametrize("method", METHODS)
def test_batches_in_order_and_files_unlinked_on_every_path(method, no_files_left):
    ref = _batches(gdata.DataLoader(_Squares(), batch_size=4))
    loader = gdata.DataLoader(_Squares(), batch_size=4, num_workers=2,
                              multiprocessing_context=method)
    assert loader._worker_pool.start_method == method
    assert _batches(loader) == ref                          # a whole pass
    it = iter(loader)
    next(it)
    del it                                                  # a pass dropped mid-epoch
    assert _batches(loader) == ref                          # its late batches are not mixed in
    assert not _our_files()
    # the loader dropped mid-epoch with ~128 KB batches in flight: workers reaped and files
    # unlinked before `del` returns
    big = gdata.DataLoader(np.random.rand(120, 2000), batch_size=8, num_workers=2,
                           multiprocessing_context=multiprocessing.get_context(method))
    pool = big._worker_pool
    it = iter(big)
    assert next(it).shape == (8, 2000)
    del it, big
    assert pool.closed and _gone(pool.pids)


@pytest.mark.parametrize("method", METHODS)
def test_a_worker_raising_or_dying(method, tmp_path, no_files_left):
    loader = gdata.DataLoader(_Failing(), batch_size=4, num_workers=2,
                              multiprocessing_context=method)
    with pytest.raises(GpundaError, match=r"sample 13: ValueError: bad sample"):
        _batches(loader)
    marker = tmp_path / "die"
    marker.write_text("")
    loader = gdata.DataLoader(_DiesOnce(str(marker)), batch_size=4, num_workers=2,
                              multiprocessing_context=method)
    pool = loader._worker_pool
    # MXNet's Pool would wait for the lost batch until `timeout`; gpunda raises at once
    with pytest.raises(GpundaError, match=r"died \(exit code 3\)"):
        _batches(loader)
    assert pool.closed and _gone(pool.pids) and not _our_files()
    # the next pass runs on new workers
    assert [b[1] for b in _batches(loader)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11],
                                                [12, 13, 14, 15], [16, 17, 18, 19],
                                                [20, 21, 22]]


@pytest.fixture
def start_method():
    old = multiprocessing.get_start_method(allow_none=True)

    def use(method):
        multiprocessing.set_start_method(method, force=True)
    yield use
    multiprocessing.set_start_method(old, force=True)


@pytest.mark.parametrize("method", METHODS)
def test_set_start_method_selects_the_workers_of_both_loaders(method, start_method):
    start_method(method)
    loader = gdata.DataLoader(_Squares(), batch_size=8, num_workers=1)
    assert loader._worker_pool.start_method == method
    assert [b[1] for b in _batches(loader)] == [list(range(8)), list(range(8, 16)),
                                                list(range(16, 23))]
    # DataLoaderV1 (MXNet's multiprocessing.Process workers and queues, NDArrays through
    # shared memory); MXNet 1.9.1 gives these batches for this dataset
    dl = D.DataLoaderV1(gdata.SimpleDataset([(i, i * i) for i in range(7)]), batch_size=3,
                        num_workers=2, batchify_fn=_columns)
    for _ in range(2):
        assert list(dl) == [[[0, 1, 2], [0, 1, 4]], [[3, 4, 5], [9, 16, 25]], [[6], [36]]]
    dl = D.DataLoaderV1(gdata.ArrayDataset(np.arange(40.0).reshape(20, 2)), batch_size=4,
                        num_workers=2)
    it = iter(dl)
    np.testing.assert_array_equal(next(it).asnumpy(), [[0, 1], [2, 3], [4, 5], [6, 7]])
    workers = [w.pid for w in it._workers]
    it.shutdown()                                           # dropped mid-epoch
    assert _gone(workers)


_SCRIPT = textwrap.dedent("""
    import os, signal, sys, threading, time, warnings
    # CPython 3.12+ warns when forking a multi-threaded process: an error here
    warnings.filterwarnings("error", ".*fork", DeprecationWarning)
    import numpy as np
    import gpunda as mx
    from gpunda.gluon import data as gdata
    from gpunda.gluon.data import dataloader as D

    class Slow(gdata.Dataset):
        def __len__(self):
            return 64
        def __getitem__(self, i):
            time.sleep(0.05)
            return np.full((2000,), float(i))


    def main(method):
        a = gdata.DataLoader(np.random.rand(400, 2000), batch_size=8, num_workers=2,
                             multiprocessing_context=method)
        it_a = iter(a)
        next(it_a)
        assert threading.active_count() == 1, threading.enumerate()
        v1 = D.DataLoaderV1(gdata.ArrayDataset(np.arange(8.0)), batch_size=2, num_workers=2)
        assert [b.asnumpy().tolist() for b in v1] == [[0, 1], [2, 3], [4, 5], [6, 7]]
        assert threading.active_count() == 1, threading.enumerate()
        # forked while a's workers and the first v1 pass's queues exist
        b = gdata.DataLoader(Slow(), batch_size=8, num_workers=2,
                             multiprocessing_context=method)
        pools = [a._worker_pool, b._worker_pool]
        print(" ".join(p.prefix for p in pools), *[i for p in pools for i in p.pids], flush=True)
        # Ctrl-C while waiting for a batch; the KeyboardInterrupt ends the script
        signal.signal(signal.SIGALRM, signal.default_int_handler)
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        it_b = iter(b)
        while True:
            next(it_b)

    if __name__ == "__main__":
        main(sys.argv[1])
""")


@pytest.mark.parametrize("method", METHODS[:2])
def test_ctrl_c_and_interpreter_exit_unlink_everything_and_no_fork_warning(method, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT)
    # the gpunda under test, not an installed one
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(mx.__file__)))
    out = subprocess.run([sys.executable, str(script), method], capture_output=True,
                         text=True, timeout=100, env=env)
    assert "KeyboardInterrupt" in out.stderr, out.stderr[-3000:]
    assert "DeprecationWarning" not in out.stderr and "AssertionError" not in out.stderr
    prefixes, pids = out.stdout.split()[:2], out.stdout.split()[2:]
    assert len(pids) == 4 and prefixes[0].startswith("gpunda-dl-")
    for prefix in prefixes:
        assert not glob.glob(os.path.join(_process_pool._SHM_DIR, prefix + "*"))
    assert _gone(pids)


def test_bad_multiprocessing_context():
    with pytest.raises(GpundaError, match="multiprocessing_context='threads'"):
        gdata.DataLoader(_Squares(), batch_size=2, num_workers=1,
                         multiprocessing_context="threads")
    with pytest.raises(GpundaError, match="multiprocessing_context=3"):
        gdata.DataLoader(_Squares(), batch_size=2, num_workers=1, multiprocessing_context=3)


@pytest.mark.parametrize("method", [m for m in METHODS if m != "fork"])
def test_an_unpicklable_dataset_names_the_start_method(method):
    ds = gdata.SimpleDataset(list(range(6))).transform(lambda v: v * 2)
    with pytest.raises(GpundaError, match=f"pickled for '{method}'.*module level"):
        gdata.DataLoader(ds, batch_size=2, num_workers=2, multiprocessing_context=method)
    if "fork" in METHODS:               # inherited, not pickled: lambdas work
        loader = gdata.DataLoader(ds, batch_size=2, num_workers=2,
                                  multiprocessing_context="fork")
        assert [b.asnumpy().tolist() for b in loader] == [[0, 2], [4, 6], [8, 10]]
