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


@pytest.fixture(autouse=True)
def _op_by_op_plans(monkeypatch):
    # these tests count the steps, segments and eager ops of the op-by-op plan; under
    # --standin-gpu the fusion pass would merge steps (its graphs: tests/test_fusion.py)
    from gpunda._engine import fusion
    monkeypatch.setattr(fusion, "ENABLED", False)

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
        return a.data.ptr if hasattr(a, "__cuda_array_interface__") else \
            a.__array_interface__["data"][0]


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


class GemmFakeGraphs(FakeGraphs):
    """A fake backend that also offers a capture-safe GEMM, counting its products."""

    def __init__(self, fail_gemm=False, **kw):
        super().__init__(**kw)
        self.gemm_calls = 0
        self.prepared = set()
        self.fail_gemm = fail_gemm

    def gemm(self, a, b):
        if self.fail_gemm:
            raise NotImplementedError("simulated: no kernel")
        self.gemm_calls += 1
        return np.matmul(a, b)

    def prepare_gemm(self, dtypes):
        self.prepared.update(np.dtype(d).name for d in dtypes)


def test_simulated_gemm_joins_the_graph(rng):
    cop = mx.CachedOp(_net(), STATIC)
    fake = GemmFakeGraphs()
    cop._graph_backend = fake
    for i in range(5):
        vals = _data(rng)
        got = cop(*[nd.array(v) for v in vals]).asnumpy()
        np.testing.assert_allclose(got, _ref(*vals), rtol=1e-5, atol=1e-6)
    st = cop.stats()
    assert st["captures"] == 1 and st["segments"] == 1 and st["eager_ops"] == 0, st
    assert st["replays"] == 3 and not st["fallbacks"], st
    assert fake.prepared == {"float32"}
    # the one FullyConnected went through the capture-safe GEMM while capturing (a fake
    # replay reruns the Python outside the capture, where the plain matmul serves)
    assert fake.gemm_calls == 1 and fake.launches == 4


def test_simulated_gemm_failure_falls_back_to_eager(rng):
    cop = mx.CachedOp(_net(), STATIC)
    cop._graph_backend = GemmFakeGraphs(fail_gemm=True)
    for i in range(4):
        vals = _data(rng)
        got = cop(*[nd.array(v) for v in vals]).asnumpy()
        np.testing.assert_allclose(got, _ref(*vals), rtol=1e-5, atol=1e-6)
    st = cop.stats()
    assert st["captures"] == 0 and st["eager_ops"] == 8, st     # all 8 steps
    assert any("capture failed" in r and "no kernel" in r for r in st["fallbacks"])
    # the override is gone after the failed capture: plain calls use the array module
    from gpunda.ops._util import capture_gemm
    assert capture_gemm.fn is None


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
    w2 = nd.array(w)
    cop(nd.array(x), w2, bn)
    cop(nd.array(x), w2, bn)
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
    cop(*[nd.array(v, ctx=mx.cpu()) for v in _data(rng)])
    assert cop.stats()["graph_mode"] == "off: not a GPU context"


class _FakeCupy:
    """Just enough of CuPy for backends/_cuda_gemm.py's host side, on NumPy: its
    "kernel" reads A and B through the element strides and batch offset it is given,
    with the index arithmetic of the CUDA source."""

    def __init__(self):
        import types
        self.launches = []
        self.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0))
        self.empty, self.matmul = np.empty, np.matmul
        fake = self

        class RawModule:
            def __init__(self, code):
                assert "gpunda_gemm" in code

            def get_function(self, name):
                return fake._kernel
        self.RawModule = RawModule

    def _kernel(self, grid, block, args):
        a, b, c, M, N, K, sab, sam, sak, sbb, sbk, sbn, z0 = args
        self.launches.append((grid, block))
        assert block == (16, 16, 1) and grid[0] * 16 >= N and grid[1] * 16 >= M
        it = a.itemsize
        for z in range(int(z0), int(z0) + grid[2]):
            az = np.lib.stride_tricks.as_strided(a[z:], (int(M), int(K)),
                                                 (int(sam) * it, int(sak) * it))
            bz = np.lib.stride_tricks.as_strided(b[z:], (int(K), int(N)),
                                                 (int(sbk) * it, int(sbn) * it))
            c.reshape(-1, int(M), int(N))[z] = az.astype(np.float64) @ bz.astype(np.float64)


@pytest.mark.parametrize("sa,sb,ta,tb", [
    ((17, 33), (33, 5), False, False), ((6, 4), (4, 3), False, True),
    ((4, 6), (6, 3), True, False), ((7, 3, 5), (7, 5, 2), False, False),
    ((2, 3, 4, 5), (2, 3, 5, 6), True, False), ((5, 0), (0, 4), False, False)])
def test_capture_gemm_host_side_passes_the_right_strides(monkeypatch, sa, sb, ta, tb, rng):
    import sys
    from gpunda.backends import _cuda_gemm
    fake = _FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(_cuda_gemm, "_kernels", {})
    monkeypatch.setattr(_cuda_gemm, "_MAX_GRID_Z", 2)   # exercise the batch chunks
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    if ta:
        a = np.ascontiguousarray(a.swapaxes(-1, -2)).swapaxes(-1, -2)   # a strided view
    if tb:
        b = np.ascontiguousarray(b.swapaxes(-1, -2)).swapaxes(-1, -2)
    got = _cuda_gemm.matmul(a, b)
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-5)
    assert got.dtype == np.float32
    with pytest.raises(NotImplementedError, match="equally batched"):
        _cuda_gemm.matmul(np.ones((2, 3, 4), np.float32), np.ones((4, 5), np.float32))
    ints = _cuda_gemm.matmul(np.ones((2, 3), np.int32), np.ones((3, 2), np.int32))
    np.testing.assert_array_equal(ints, np.full((2, 2), 3))


_HALF_STUB = """
struct __half { unsigned short bits; };
static float __half2float(__half) { return 0.f; }
static __half __float2half(float) { return __half(); }
"""


def test_cuda_gemm_kernel_source_runs_right_when_emulated_on_cpu(tmp_path):
    """The kernel's CUDA source, compiled by the host C++ compiler with every block's
    threads as std::threads and __syncthreads() as a barrier, against a triple loop."""
    import pathlib
    import shutil
    import subprocess
    from gpunda.backends import _cuda_gemm
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler to emulate the CUDA kernel with")
    tmpl = (pathlib.Path(__file__).parent / "data" / "cuda_gemm_emulation.cpp").read_text()
    # one translation unit: the float32 and float16 kernels under other names (so every
    # variant compiles), then the float64 one that the harness runs (it works in double)
    srcs = _cuda_gemm._SOURCES
    kernels = "".join(f"#define gpunda_gemm gemm_{dt}\n" + srcs[dt] + "#undef gpunda_gemm\n"
                      for dt in ("float32", "float16")) + srcs["float64"]
    f, exe = tmp_path / "emu.cpp", tmp_path / "emu"
    f.write_text(tmpl.replace("// @@KERNEL@@",
                              kernels.replace("#include <cuda_fp16.h>", _HALF_STUB)))
    r = subprocess.run([cxx, "-std=c++20", "-pthread", "-D__restrict__=__restrict", str(f),
                        "-o", str(exe)], capture_output=True, text=True)
    if r.returncode and "barrier" in r.stderr:
        pytest.skip(f"{cxx} lacks C++20 <barrier>")
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("maxerr=0") == 7, r.stdout


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
def test_gpu_mlp_is_one_graph_with_the_capture_safe_gemm(rng):
    cop = mx.CachedOp(_net(), STATIC)
    for i in range(5):
        vals = _data(rng)
        got = cop(*_gpu_arrays(vals)).asnumpy()
        np.testing.assert_allclose(got, _ref(*vals), rtol=1e-4, atol=1e-5)
    st = cop.stats()
    assert st["captures"] == 1 and st["segments"] == 1 and st["eager_ops"] == 0, st
    assert st["replays"] == 3 and not st["fallbacks"], st


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("float64", 1e-12), ("float16", 2e-2)])
@pytest.mark.parametrize("sa,sb,ta,tb", [
    ((1, 1), (1, 1), False, False), ((17, 33), (33, 5), False, False),
    ((64, 40), (31, 40), False, True), ((40, 64), (40, 31), True, False),
    ((3, 20, 7), (3, 7, 18), False, False), ((2, 2, 16, 16), (2, 2, 16, 16), True, True),
    ((5, 0), (0, 4), False, False)])
def test_gpu_capture_safe_gemm_matches_cupy(dtype, rtol, sa, sb, ta, tb, rng):
    cupy = mx.gpu(0).backend.xp     # CuPy (or the test stand-in's module)
    from gpunda.backends import _cuda_gemm
    a = cupy.asarray(rng.standard_normal(sa).astype(dtype))
    b = cupy.asarray(rng.standard_normal(sb).astype(dtype))
    a = a.swapaxes(-1, -2) if ta else a      # strided views, as dot/FC pass them
    b = b.swapaxes(-1, -2) if tb else b
    got = _cuda_gemm.matmul(a, b)
    ref = cupy.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.dtype == np.dtype(dtype) and got.shape == ref.shape
    np.testing.assert_allclose(cupy.asnumpy(got).astype(np.float64), cupy.asnumpy(ref),
                               rtol=rtol, atol=rtol * max(1, sa[-1]))


@pytest.mark.gpu
def test_gpu_captured_forward_gradients_match_imperative(rng):
    from gpunda import autograd
    cop = mx.CachedOp(_net(), STATIC)
    for i in range(4):
        vals = _data(rng)
        got = [nd.array(v, ctx=mx.gpu(0)) for v in vals]
        ref = [nd.array(v, ctx=mx.gpu(0)) for v in vals]
        for a in got + ref:
            a.attach_grad()
        with autograd.record():
            y = cop(*got)
        y.backward()
        with autograd.record():
            h = nd.tanh(ref[0] * 2.0 + 1.0)
            h = nd.FullyConnected(h, ref[1], ref[2], num_hidden=4)
            z = nd.exp(nd.relu(h) - 0.5) * 3.0
        z.backward()
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a.grad.asnumpy(), b.grad.asnumpy(), rtol=1e-4, atol=1e-5)


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
