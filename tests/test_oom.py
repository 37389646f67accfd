"""Out of device memory (gpunda/_oom.py), on the test stand-in GPU with a memory cap."""
import gc

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, gluon, nd
from gpunda._engine import oom as _oom


@pytest.fixture
def net_on_gpu(standin_gpu):
    ctx = mx.gpu(0)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(128, activation="relu"), gluon.nn.Dense(10))
    net.initialize(ctx=ctx)
    net.hybridize(static_alloc=True, static_shape=True)
    rng = np.random.default_rng(0)
    x = nd.array(rng.random((32, 50)), ctx=ctx)
    y = nd.array(rng.integers(0, 10, 32), ctx=ctx)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            l_ = loss(net(x), y)
        l_.backward()
        trainer.step(32)
        return float(l_.mean().asscalar())
    return net, x, step


def _used():
    from gpunda.backends import _standin_cuda
    gc.collect()
    return _standin_cuda.used_bytes()


def _cached_ops_of(net):
    return [c for c in _oom._cached_ops if c._graphs or c._plans]


def test_retry_after_freeing_cached_graphs_succeeds(net_on_gpu, monkeypatch):
    net, x, step = net_on_gpu
    _oom.free_caches()               # CachedOps other tests left alive hold nothing now
    for _ in range(3):
        net(x)                       # warm-up, capture, replay: a graph entry is held
    held = _cached_ops_of(net)
    assert held
    u1 = _used()
    for c in held:
        c._release_device_caches()
    u0 = _used()
    cached = u1 - u0
    assert cached > 4096
    net(x), net(x)                   # rebuilt
    assert _used() == u1
    one = nd.ones((1, 1), ctx=mx.gpu(0))
    n = cached // 4 // 512 * 512     # float32 elements: fits only once the caches are gone
    a = n * 4
    monkeypatch.setenv("GPUNDA_TEST_STANDIN_GPU_MEMORY", str(_used() + a // 2))
    before = _oom.stats()
    r = nd.tile(one, reps=(1, n))
    after = _oom.stats()
    assert r.shape == (1, n) and float(r.sum().asscalar()) == n
    assert after["ooms"] == before["ooms"] + 1 and after["recovered"] == before["recovered"] + 1
    assert not any(c._graphs for c in held)
    del r
    monkeypatch.delenv("GPUNDA_TEST_STANDIN_GPU_MEMORY")
    for _ in range(3):
        net(x)                       # caches come back: captured again
    assert any(c._graphs for c in held)
    assert np.isfinite(step())


def test_oom_names_op_inputs_and_bytes_then_next_step_works(net_on_gpu, monkeypatch):
    net, x, step = net_on_gpu
    first = step()
    one = nd.ones((2, 3), dtype="float32", ctx=mx.gpu(0))
    monkeypatch.setenv("GPUNDA_TEST_STANDIN_GPU_MEMORY", str(_used() + 4096))
    with pytest.raises(mx.MXNetError) as ei:
        nd.tile(one, reps=(1000, 100))
    msg = str(ei.value)
    assert "Operator tile" in msg and "data(2, 3):float32" in msg
    assert "asking for 2,400,256 bytes" in msg          # 2.4 MB rounded to 512 as CuPy does
    assert "retried once" in msg
    monkeypatch.delenv("GPUNDA_TEST_STANDIN_GPU_MEMORY")
    later = [step() for _ in range(3)]
    assert all(np.isfinite(later)) and later[-1] < first


def test_oom_inside_a_cached_op_call_and_in_backward(net_on_gpu, monkeypatch):
    net, x, step = net_on_gpu
    step()
    monkeypatch.setenv("GPUNDA_TEST_STANDIN_GPU_MEMORY", str(_used() + 512))
    with pytest.raises(mx.MXNetError, match=r"CachedOp node .*out of memory on gpu\(0\)"):
        net(x)
    with pytest.raises(mx.MXNetError, match=r"out of memory on gpu\(0\)"):
        step()
    monkeypatch.delenv("GPUNDA_TEST_STANDIN_GPU_MEMORY")
    assert np.isfinite(step())
    net(x), net(x), net(x)


def test_is_oom_follows_causes():
    try:
        try:
            raise MemoryError("host")
        except MemoryError as e:
            raise mx.MXNetError("wrapped") from e
    except mx.MXNetError as e:
        assert _oom.is_oom(e)
    assert not _oom.is_oom(ValueError("x"))


def test_creation_out_of_memory_names_shape_dtype_and_bytes(standin_gpu, monkeypatch):
    monkeypatch.setenv("GPUNDA_TEST_STANDIN_GPU_MEMORY", str(_used() + 4096))
    with pytest.raises(mx.MXNetError, match=r"zeros: creating shape \(1000, 100\) dtype "
                                            r"float64 -- out of memory on gpu\(0\) asking for "
                                            r"800,256 bytes"):
        nd.zeros((1000, 100), ctx=mx.gpu(0), dtype="float64")
    with pytest.raises(mx.MXNetError, match=r"array: creating shape \(300, 10\) dtype float32"):
        nd.array(np.ones((300, 10), np.float32), ctx=mx.gpu(0))
    monkeypatch.delenv("GPUNDA_TEST_STANDIN_GPU_MEMORY")
    assert nd.zeros((1000, 100), ctx=mx.gpu(0)).shape == (1000, 100)
