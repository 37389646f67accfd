"""CachedOp CUDA-graph capture and replay.

The segmenting, fixed-buffer, fallback and stats logic is exercised on CPU
through a simulated graph backend (a "graph" replays the captured Python
callable, so results only stay right if every value crossing a segment lives
in the fixed arrays). The real CuPy path runs in the ``gpu``-marked tests.
"""
import contextlib

import numpy as np
import pytest

import gpunda as mx
from gpunda import sym, nd

STATIC = [("static_alloc", True), ("static_shape", True)]


class FakeGraph:
    def __init__(self, fn):
        self.fn = fn


class FakeGraphs:
    """Stand-in for the CuPy primitives: capture runs ``fn`` and keeps it for replay."""

    def __init__(self, fail_captures=(), fail_midway=False):
        self.n = 0
        self.fail = set(fail_captures)
        self.fail_midway = fail_midway
        self.launches = 0

    def new_pool(self):
        return None

    def alloc_scope(self, pool):
        return contextlib.nullcontext()

    def on_stream(self):
        return contextlib.nullcontext()

    def capture(self, fn):
        k = self.n
        self.n += 1
        if k in self.fail:
            if self.fail_midway:
                fn()        # part of the work was captured when it broke
            raise RuntimeError("simulated: cudaErrorStreamCaptureInvalidated")
        fn()
        return FakeGraph(fn)

    def launch(self, g):
        self.launches += 1
        g.fn()

    def ptr(self, a):
        return a.__array_interface__["data"][0]


def _net():
    x, w, b = sym.var("x"), sym.var("w"), sym.var("b")
    h = sym.tanh(x * 2.0 + 1.0)                 # segment 0
    h = sym.FullyConnected(h, w, b, num_hidden=4, name="fc")   # eager (cuBLAS)
    return sym.exp(sym.relu(h) - 0.5) * 3.0     # segment 1


def _ref(x, w, b):
    h = np.tanh(x * 2.0 + 1.0)
    h = h @ w.T + b
    return np.exp(np.maximum(h, 0) - 0.5) * 3.0


def _data(rng):
    return [rng.standard_normal(s).astype(np.float32) for s in ((3, 5), (4, 5), (4,))]


def test_simulated_capture_segments_and_replay(rng):
    cop = mx.CachedOp(_net(), STATIC)
    fake = FakeGraphs()
    cop._graph_backend = fake
    for i in range(5):
        vals = _data(rng)
        got = cop(*[nd.array(v) for v in vals]).asnumpy()
        np.testing.assert_allclose(got, _ref(*vals), rtol=1e-5, atol=1e-6)
    st = cop.stats()
    assert st["calls"] == 5 and st["captures"] == 2 and st["replays"] == 3
    assert st["segments"] == 2 and st["eager_ops"] == 1
    assert any("'fc'" in r and "cuBLAS" in r for r in st["fallbacks"])
    assert fake.launches == 2 * 4        # capture call + 3 replays, 2 segments each


def test_simulated_capture_failure_midway_stays_usable(rng):
    cop = mx.CachedOp(_net(), STATIC)
    cop._graph_backend = FakeGraphs(fail_captures={1}, fail_midway=True)
    for _ in range(4):
        vals = _data(rng)
        got = cop(*[nd.array(v) for v in vals]).asnumpy()
        np.testing.assert_allclose(got, _ref(*vals), rtol=1e-5, atol=1e-6)
    st = cop.stats()
    assert st["captures"] == 1 and st["segments"] == 1 and st["eager_ops"] == 1 + 4
    assert any("capture failed" in r and "Invalidated" in r for r in st["fallbacks"])


def test_simulated_param_pointer_key(rng):
    cop = mx.CachedOp(_net(), STATIC + [("param_indices", [1, 2])])
    cop._graph_backend = FakeGraphs()
    x, w, b = _data(rng)
    wn, bn = nd.array(w), nd.array(b)
    for _ in range(3):
        cop(nd.array(x), wn, bn)
    # params are read in place: updating them in place is seen by the replay
    wn[:] = 0.25
    got = cop(nd.array(x), wn, bn).asnumpy()
    np.testing.assert_allclose(got, _ref(x, np.full_like(w, 0.25), b), rtol=1e-5, atol=1e-6)
    assert cop.stats()["captures"] == 2
    # a different params array (new address) is a new graph entry
    cop(nd.array(x), nd.array(w), bn)
    cop(nd.array(x), nd.array(w), bn)
    assert len(cop._graphs) >= 2


def test_graphs_disabled_by_env(monkeypatch, rng):
    monkeypatch.setenv("GPUNDA_CUDA_GRAPHS", "0")
    cop = mx.CachedOp(_net(), STATIC)
    cop._graph_backend = FakeGraphs()
    for _ in range(3):
        vals = _data(rng)
        np.testing.assert_allclose(cop(*[nd.array(v) for v in vals]).asnumpy(), _ref(*vals),
                                   rtol=1e-5, atol=1e-6)
    st = cop.stats()
    assert st["captures"] == 0 and "GPUNDA_CUDA_GRAPHS=0" in st["graph_mode"]


def test_cpu_context_reports_no_graphs(rng):
    cop = mx.CachedOp(_net(), STATIC)
    cop(*[nd.array(v) for v in _data(rng)])
    assert cop.stats()["graph_mode"] == "off: not a GPU context"


# --------------------------------------------------------------------------- real GPU

def _gpu_arrays(vals):
    return [nd.array(v, ctx=mx.gpu(0)) for v in vals]


@pytest.mark.gpu
def test_gpu_elementwise_graph_replays_match_eager(rng):
    x, y = sym.var("x"), sym.var("y")
    h = x
    for i in range(20):
        h = sym.sin(h) * 1.1 + sym.broadcast_mul(h, y) * 0.01
    cop = mx.CachedOp(h, STATIC)
    eager = mx.CachedOp(h)
    for i in range(6):
        vals = [rng.standard_normal((64, 32)).astype(np.float32),
                rng.standard_normal((1, 32)).astype(np.float32)]
        a = _gpu_arrays(vals)
        np.testing.assert_allclose(cop(*a).asnumpy(), eager(*a).asnumpy(), rtol=1e-6, atol=1e-6)
    st = cop.stats()
    assert st["captures"] == 1 and st["replays"] == 4 and st["segments"] == 1, st
    assert st["eager_ops"] == 0
    cop.free()


@pytest.mark.gpu
def test_gpu_mlp_segments_around_cublas(rng):
    cop = mx.CachedOp(_net(), STATIC)
    for i in range(5):
        vals = _data(rng)
        got = cop(*_gpu_arrays(vals)).asnumpy()
        np.testing.assert_allclose(got, _ref(*vals), rtol=1e-4, atol=1e-5)
    st = cop.stats()
    assert st["captures"] == 2 and st["segments"] == 2 and st["eager_ops"] == 1, st
    assert st["replays"] == 3


@pytest.mark.gpu
def test_gpu_outputs_survive_later_replays(rng):
    a = sym.var("a")
    cop = mx.CachedOp(sym.exp(a) + 1.0, STATIC)
    outs, refs = [], []
    for i in range(5):
        v = rng.standard_normal((16,)).astype(np.float32)
        outs.append(cop(nd.array(v, ctx=mx.gpu(0))))
        refs.append(np.exp(v) + 1.0)
    for o, r in zip(outs, refs):
        np.testing.assert_allclose(o.asnumpy(), r, rtol=1e-6)
