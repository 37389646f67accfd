"""gpunda's CPU threads (NOTE [CPU threads], gpunda/_core/threads.py).

The thread count follows MXNet's variables; ``import gpunda`` starts no pool; and every
kernel that splits its work over the threads gives the one-thread result bit for bit
(the split threshold is forced low here, so the small arrays of a test are split, and
each test checks that the split really happened).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import gpunda as mx
from gpunda._core import threads as T


@pytest.fixture(autouse=True)
def _on_the_cpu():
    # CPU kernels (MXNet's CPU build) checked on cpu(0), also under --standin-gpu
    with mx.cpu():
        yield

nd = mx.nd
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(code, **env):
    e = {k: v for k, v in os.environ.items()
         if k not in ("OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS", "OPENBLAS_NUM_THREADS")}
    e.update(env)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_starts_no_pool_and_decides_nothing():
    out = _python("import sys, json, gpunda\nfrom gpunda._core import threads as T\n"
                  "print(json.dumps([T.pool_started(), T._count, T.blas_sized,"
                  " 'threadpoolctl' in sys.modules, 'concurrent.futures' in sys.modules]))",
                  OMP_NUM_THREADS="4")
    assert out == [False, None, False, False, False]


@pytest.mark.parametrize("env, want", [
    ({"OMP_NUM_THREADS": "3"}, 3),
    ({"OMP_NUM_THREADS": "3,2"}, 3),                     # a list per nesting level
    ({"OMP_NUM_THREADS": "3", "MXNET_OMP_MAX_THREADS": "2"}, 2),
    ({"MXNET_OMP_MAX_THREADS": "5"}, 5),
])
def test_count_follows_mxnet_variables(monkeypatch, env, want):
    for k in ("OMP_NUM_THREADS", "MXNET_OMP_MAX_THREADS"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert T.default_count() == want


def test_count_without_variables_is_half_the_cpus_on_x86(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MXNET_OMP_MAX_THREADS", raising=False)
    procs = len(os.sched_getaffinity(0))
    x86 = os.uname().machine.lower() in ("x86_64", "amd64", "i386", "i686", "x86")
    assert T.default_count() == max(1, procs // 2 if x86 else procs)


def test_blas_pool_sized_at_first_gemm():
    pytest.importorskip("threadpoolctl")
    code = ("import json, numpy as np, gpunda as mx\nfrom threadpoolctl import threadpool_info\n"
            "from gpunda._core import threads as T\n"
            "a = mx.nd.ones((4, 4)); mx.nd.dot(a, a).asnumpy()\n"
            "mx.nd.FullyConnected(a, a, num_hidden=4, no_bias=True).asnumpy()\n"
            "print(json.dumps([T.num_threads()] + sorted({d['num_threads'] for d in"
            " threadpool_info() if d['user_api'] == 'blas'})))")
    assert _python(code, OMP_NUM_THREADS="3") == [3, 3]
    assert _python(code, OMP_NUM_THREADS="3", MXNET_OMP_MAX_THREADS="2") == [2, 2]
    # a BLAS pool the user sized by its own variable is left as it is
    assert _python(code, OMP_NUM_THREADS="3", OPENBLAS_NUM_THREADS="1") == [3, 1]


def test_set_num_threads_checks_its_argument():
    with pytest.raises(mx.base.MXNetError, match="thread_num"):
        T.set_num_threads(0)
    with pytest.raises(mx.base.MXNetError, match="thread_num"):
        T.set_num_threads(True)


def test_bounds_cover_the_range_on_aligned_cuts():
    assert T.bounds(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert T.bounds(10, 3, align=4) == [(0, 4), (4, 8), (8, 10)]
    assert T.bounds(3, 8) == [(0, 1), (1, 2), (2, 3)]
    assert T.bounds(5, 2, align=8) == [(0, 5)]


@pytest.fixture
def split_calls(monkeypatch):
    """Threads forced on (3, so pieces are uneven) and the split threshold low; yields
    a list that records the piece count of every split run."""
    class Calls(list):
        def threads(self, n):
            T._count = n
    calls = Calls()
    run = T.run

    def recording(fn, ranges, blas_serial=False):
        calls.append(len(ranges))
        return run(fn, ranges, blas_serial)
    monkeypatch.setattr(T, "run", recording)
    monkeypatch.setattr(T, "MIN_ELEMENTS", 16)
    monkeypatch.setattr(T, "SPLIT_MIN", 32)
    monkeypatch.setattr(T, "STREAM_MIN_ELEMENTS", 16)
    monkeypatch.setattr(T, "_count", 1)
    monkeypatch.setattr(T, "blas_sized", True)
    # one BLAS thread throughout, as gpunda's one-thread path has it (the pieces' GEMMs
    # run on one BLAS thread each; a threaded GEMM may round differently)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield calls
        return
    with threadpool_limits(1, user_api="blas"):
        yield calls


def _both(calls, fn):
    """fn() on one thread, then on three; the second must have split its work."""
    calls.threads(1)
    one = fn()
    calls.clear()
    calls.threads(3)
    three = fn()
    assert any(n > 1 for n in calls), "the threaded path did not run"
    return one, three


def _same(a, b):
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(x, y), "threaded result differs from the one-thread result"


def test_run_raises_a_piece_error_after_all_pieces(split_calls):
    split_calls.threads(3)
    done = []

    def piece(lo, hi):
        done.append(lo)
        if lo == 4:
            raise ValueError("piece 4")
    with pytest.raises(ValueError, match="piece 4"):
        T.run(piece, [(0, 4), (4, 8), (8, 12)])
    assert sorted(done) == [0, 4, 8]


def test_nested_split_stays_on_its_thread(split_calls):
    split_calls.threads(3)
    inner = T.run(lambda lo, hi: T.pieces(100, 10 ** 6), [(0, 1), (1, 2)])
    assert inner == [1, 1]


@pytest.mark.parametrize("shape, kernel, pad", [
    ((8, 32, 16, 16), (3, 3), (1, 1)),      # shifted rows (large maps)
    ((9, 8, 6, 6), (3, 3), (1, 1)),         # flat rows (small maps), 9 samples in 3 pieces
    ((8, 4, 7, 6), (5, 3), (2, 1)),         # flat rows, wider kernel
])
def test_convolution_threaded_is_bitwise_single(split_calls, monkeypatch, shape, kernel, pad):
    from gpunda.ops.kernels import conv as K, conv_grid
    monkeypatch.setattr(K, "_CHUNK_BYTES", 4096)     # several chunks per piece
    monkeypatch.setattr(conv_grid, "WHOLE_BATCH_BYTES", 0)
    monkeypatch.setattr(conv_grid, "MIN_GEMM_COLUMNS", 1)
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(shape, dtype=np.float32)
    w0 = rng.standard_normal((shape[1], shape[1]) + kernel, dtype=np.float32)

    def step():
        x, w = nd.array(x0), nd.array(w0)
        x.attach_grad()
        w.attach_grad()
        with mx.autograd.record():
            y = nd.Convolution(x, w, kernel=kernel, pad=pad, num_filter=shape[1], no_bias=True)
        y.backward(nd.array(np.cos(y.asnumpy())))
        return y.asnumpy(), x.grad.asnumpy(), w.grad.asnumpy()
    one, three = _both(split_calls, step)
    _same(one, three)
    # and the values are a convolution's (NumPy's correlation of one output cell)
    n, f, i, j = 1, 2, 3, 2
    xp_ = np.pad(x0, [(0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2])
    cell = (xp_[n, :, i:i + kernel[0], j:j + kernel[1]] * w0[f]).sum()
    assert np.isclose(three[0][n, f, i, j], cell, rtol=1e-4, atol=1e-4)


def test_elementwise_ops_threaded_are_bitwise_single(split_calls):
    x0 = np.random.default_rng(1).standard_normal((37, 5, 3), dtype=np.float32)

    def ops():
        x = nd.array(x0)
        return [nd.exp(x).asnumpy(), nd.tanh(x).asnumpy(), nd.sigmoid(x).asnumpy(),
                nd.Activation(x, act_type="tanh").asnumpy(),
                nd.Activation(x, act_type="softrelu").asnumpy()]
    one, three = _both(split_calls, ops)
    _same(one, three)
    assert np.allclose(three[0], np.exp(x0), rtol=1e-6)
    assert np.array_equal(three[3], three[1])


def test_batchnorm_and_pooling_threaded_are_bitwise_single(split_calls):
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((10, 6, 8, 8), dtype=np.float32)
    g0 = rng.standard_normal((10, 6, 8, 8), dtype=np.float32)

    def step():
        x = nd.array(x0)
        gamma, beta = nd.array(np.linspace(0.5, 2, 6, dtype=np.float32)), nd.zeros(6) + 0.1
        for a in (x, gamma, beta):
            a.attach_grad()
        with mx.autograd.record():
            y = nd.BatchNorm(x, gamma, beta, nd.zeros(6), nd.ones(6), fix_gamma=False)
        y.backward(nd.array(g0))
        mp = nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
        ap = nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="avg")
        return [y.asnumpy(), x.grad.asnumpy(), gamma.grad.asnumpy(), beta.grad.asnumpy(),
                mp.asnumpy(), ap.asnumpy()]
    one, three = _both(split_calls, step)
    _same(one, three)
    mean = x0.mean(axis=(0, 2, 3), keepdims=True)
    var = x0.var(axis=(0, 2, 3), keepdims=True)
    want = (x0 - mean) / np.sqrt(var + 1e-3) * np.linspace(0.5, 2, 6).reshape(1, 6, 1, 1) + 0.1
    assert np.allclose(three[0], want, rtol=1e-4, atol=1e-4)
    assert np.array_equal(three[4], x0.reshape(10, 6, 4, 2, 4, 2).max(axis=(3, 5)))


@pytest.mark.parametrize("name, hp", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
    ("adam", {"learning_rate": 0.01, "wd": 1e-3}),
    ("rmsprop", {"learning_rate": 0.01}),
])
def test_flat_optimizer_threaded_is_bitwise_single(split_calls, monkeypatch, name, hp):
    from gpunda.ops.optimizer import flat as K
    monkeypatch.setattr(K, "CHUNK", 64)         # many chunks, split in whole chunks
    rng = np.random.default_rng(3)
    shapes = [(40, 30), (30,), (17, 9)]
    w0 = [rng.standard_normal(s, dtype=np.float32) for s in shapes]
    g0 = [rng.standard_normal(s, dtype=np.float32) for s in shapes]

    def steps():
        params = []
        for i, (w, g) in enumerate(zip(w0, g0)):
            p = mx.gluon.Parameter(f"p{i}", shape=w.shape)
            p.initialize()
            p.set_data(nd.array(w))
            params.append(p)
        tr = mx.gluon.Trainer(params, name, dict(hp), kvstore=None)
        for k in range(3):
            for p, g in zip(params, g0):
                p.grad()[:] = nd.array(g * (k + 1))
            tr.step(1)
        return [p.data().asnumpy() for p in params]
    one, three = _both(split_calls, steps)
    _same(one, three)
    assert not np.array_equal(three[0], w0[0])


def test_mxsetnumompthreads_sets_the_count(monkeypatch):
    monkeypatch.setattr(T, "_count", None)
    monkeypatch.setattr(T, "blas_sized", False)
    monkeypatch.setattr(T, "_set_blas", lambda force=False: None)   # leave the BLAS pool
    from gpunda.base import _LIB, check_call
    check_call(_LIB.MXSetNumOMPThreads(3))
    assert T.num_threads() == 3
