"""The test stand-in GPU (gpunda/backends/_standin*.py): CuPy's rules on NumPy.

References are CuPy itself (its installed namespaces, what it raises on a
GPU-less machine) and CuPy's documented behaviour where it differs from NumPy.
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpunda as mx
from gpunda import nd, sym

cupy = pytest.importorskip("cupy", reason="the stand-in reads CuPy's namespaces")
ROOT = Path(__file__).resolve().parent.parent


def _run(code, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPUNDA_")}
    e.update(env)
    e["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


# ---------------------------------------------------------------- switching it on/off

def test_unset_env_changes_nothing_and_never_loads_the_standin():
    out = _run("import sys, gpunda as mx\n"
               "from gpunda.context import default_device_choice\n"
               "mx.nd.ones(2) + 1\n"
               "print(mx.context.num_gpus(), default_device_choice()[0])\n"
               "print('gpunda.backends._standin' in sys.modules)", GPUNDA_DEFAULT_DEVICE="gpu")
    assert out.split() == ["0", "cpu(0)", "False"]


def test_env_var_makes_gpu0_the_standin_and_info_says_so():
    out = _run("import gpunda as mx\n"
               "from gpunda.context import default_device_choice\n"
               "print(mx.context.num_gpus(), default_device_choice()[0])\n"
               "import gpunda.__main__ as m; m.info()",
               GPUNDA_TEST_STANDIN_GPU="1", GPUNDA_DEFAULT_DEVICE="gpu")
    first, rest = out.split("\n", 1)
    assert first.split() == ["1", "gpu(0)"]
    assert "gpu(0): gpunda test stand-in" in rest and "default device: gpu(0)" in rest


def test_fixture_scopes_the_standin(standin_gpu):
    a = nd.array([1.0, 2.0], ctx=mx.gpu(0))
    assert type(a._data) is standin_gpu.ndarray
    assert mx.context.num_gpus() == 1
    assert mx.gpu(0).backend.name == "standin"


# ---------------------------------------------------------------------- host memory

def test_host_conversion_refused_or_allowed_as_cupy(standin_gpu):
    xp = standin_gpu
    x = xp.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    with pytest.raises(TypeError, match="Unsupported type"):
        x + np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        xp.maximum(x, [0, 1, 2])
    # allowed, with a synchronisation, as in CuPy
    s = x.sum()
    assert type(s) is xp.ndarray and s.ndim == 0        # 0-d array, not a NumPy scalar
    assert float(s) == 15.0 and int(x[1, 2]) == 5 and bool(x[0, 1])
    with pytest.raises(TypeError):
        float(x)                                        # more than one element
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    rows = list(x)
    assert len(rows) == 2 and type(rows[0]) is xp.ndarray
    np.testing.assert_array_equal(x.get(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(xp.asnumpy(x[:, 1]), [1, 4])
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        iter(s)
    with pytest.raises(TypeError):
        range(s)                                        # CuPy has no __index__


def test_numpy_functions_dispatch_to_cupy_or_refuse(standin_gpu):
    xp = standin_gpu
    x = xp.arange(4.0)
    r = np.sum(x)
    assert type(r) is xp.ndarray and float(r) == 6.0
    assert type(np.exp(x)) is xp.ndarray
    assert not hasattr(cupy, "nanpercentile")
    with pytest.raises(TypeError):
        np.nanpercentile(x, 50)


def test_dlpack_is_cuda_device_memory_as_in_cupy(standin_gpu):
    xp = standin_gpu
    x = xp.arange(6, dtype=np.float32).reshape(2, 3)
    assert x.__dlpack_device__() == (2, 0)              # kDLCUDA, device 0
    with pytest.raises(RuntimeError, match="Unsupported device"):   # as for CuPy memory
        np.from_dlpack(x)
    with pytest.raises(TypeError):
        x.__dlpack__(None)                              # CuPy's arguments are keyword-only
    y = xp.from_dlpack(x)
    assert type(y) is xp.ndarray
    y[0, 0] = 9                                         # shared and writable
    assert float(x[0, 0]) == 9.0
    with pytest.raises(ValueError, match="device type 1"):
        xp.from_dlpack(np.ones(3))                      # host memory is not device memory
    # through gpunda: the round trip stays on gpu(0)
    a = nd.array([[1.0, 2.0]], ctx=mx.gpu(0))
    b = nd.from_dlpack(a.to_dlpack_for_write())
    assert b.context == mx.gpu(0) and type(b._data) is xp.ndarray
    b[0, 1] = -1
    assert a.asnumpy().tolist() == [[1.0, -1.0]]


# ---------------------------------------------------------------------- namespace

def test_namespace_is_cupys(standin_gpu):
    xp = standin_gpu
    from gpunda.backends import _standin_names as names
    for name in names.namespace("cupy"):
        getattr(xp, name)                               # every CuPy name resolves
    assert not hasattr(cupy, "nanpercentile")
    with pytest.raises(AttributeError, match="CuPy .* lacks it"):
        xp.nanpercentile
    with pytest.raises(TypeError, match="unexpected keyword argument 'where'"):
        xp.sum(xp.ones(3), where=True)
    with pytest.raises(TypeError, match="Wrong arguments"):
        xp.add(xp.ones(3), 1, order="C")
    with pytest.raises(NotImplementedError, match="multiply.at"):
        xp.multiply.at(xp.ones(3), [0], 2.0)
    z = xp.zeros(3)
    xp.add.at(z, xp.asarray([0, 0, 2]), 1.0)          # CuPy has add.at
    np.testing.assert_array_equal(z.get(), [2, 0, 1])
    with pytest.raises(ValueError, match="Unsupported dtype object"):
        xp.zeros(3, dtype=object)
    with pytest.raises(ValueError, match="Unsupported dtype"):
        xp.asarray(np.array(["a"]))
    with pytest.raises(AttributeError):
        xp.ones(3).resize                               # numpy-only ndarray method
    sps = mx.gpu(0).backend.special
    sps.erf(xp.ones(2))
    with pytest.raises(AttributeError):
        sps.lambertw_but_not_real


def test_ufunc_kwargs_match_cupy_itself():
    # the claim behind UFUNC_KWARGS: cupy's ufunc rejects every other keyword before
    # touching a device ("Wrong arguments"); the accepted ones get as far as the device
    from gpunda.backends import _standin_names as names
    for k in ("where", "order", "subok", "signature"):
        with pytest.raises(TypeError, match="Wrong arguments"):
            cupy.add(1, 2, **{k: None})
    for k in names.UFUNC_KWARGS:
        try:
            cupy.add(1, 2, **{k: None})
        except TypeError as e:
            assert "Wrong arguments" not in str(e)
        except Exception:   # noqa: BLE001 -- no device here: CUDA errors are expected
            pass


def test_scatter_add_method_and_cupyx(standin_gpu):
    xp = standin_gpu
    z = xp.zeros(4)
    z.scatter_add(xp.asarray([1, 1, 3]), xp.asarray([1.0, 2.0, 5.0]))
    np.testing.assert_array_equal(z.get(), [0, 3, 0, 5])


# ------------------------------------------------------------------------- sparse

def test_sparse_follows_cupyx(standin_gpu):
    xp = standin_gpu
    sp = mx.gpu(0).backend.sp
    d = np.array([[0, 1.5, 0], [2, 0, 3]], np.float32)
    m = sp.csr_matrix(xp.asarray(d))
    assert type(m.data) is xp.ndarray and m.format == "csr"
    np.testing.assert_allclose((m @ xp.ones(3, np.float32)).get(), d @ np.ones(3))
    np.testing.assert_allclose(m.T.toarray().get(), d.T)
    assert m.T.format == "csc"
    with pytest.raises(NotImplementedError):
        m.tolil()
    assert not hasattr(sp, "lil_matrix") and not hasattr(sp, "bsr_matrix")
    with pytest.raises(ValueError, match="float32, float64"):
        sp.csr_matrix(xp.asarray(d.astype(np.int32)))
    with pytest.raises(TypeError, match="Unsupported type"):
        sp.csr_matrix(d)                                # a NumPy array


# ------------------------------------------------------------------- stream capture

def test_capture_rules_and_replay(standin_gpu):
    xp = standin_gpu
    cuda = xp.cuda
    a = xp.arange(4.0)
    s = cuda.Stream(non_blocking=True)
    pool = cuda.MemoryPool()
    with s:
        s.begin_capture()
        with pytest.raises(RuntimeError, match="default memory pool"):
            a * 2
        with cuda.using_allocator(pool.malloc):
            b = a * 2 + 1
            a += 10                                     # in place on pre-capture memory
            with pytest.raises(RuntimeError, match="synchronous"):
                a.item()
            with pytest.raises(RuntimeError, match="synchronous"):
                xp.nonzero(a)
            with pytest.raises(RuntimeError, match="H2D"):
                xp.asarray(np.ones(2))
            with pytest.raises(NotImplementedError, match="cuBLAS"):
                xp.matmul(a[None], a[:, None])
            with pytest.raises(NotImplementedError, match="cuRAND"):
                xp.random.RandomState(0).uniform(size=3)
            with pytest.raises(NotImplementedError, match="cuSPARSE"):
                mx.gpu(0).backend.sp.csr_matrix(a[None])
            xp.matmul(a[None].astype(np.int64), a[:, None].astype(np.int64))  # CuPy's kernels
        g = s.end_capture()
    # nothing ran yet: pre-capture memory as it was, captured outputs garbage
    np.testing.assert_array_equal(a.get(), [0, 1, 2, 3])
    assert np.isnan(b.get()).all()
    g.launch(s)
    np.testing.assert_array_equal(a.get(), [10, 11, 12, 13])
    np.testing.assert_array_equal(b.get(), [1, 3, 5, 7])
    a[...] = 0
    g.launch(s)                                         # replays read the current inputs
    np.testing.assert_array_equal(b.get(), [1, 1, 1, 1])
    np.testing.assert_array_equal(a.get(), [10, 10, 10, 10])
    with pytest.raises(RuntimeError):
        cuda.Stream.null.begin_capture()
    s.begin_capture()
    with pytest.raises(Exception, match="StreamCapture"):
        s.synchronize()                                 # invalidates the capture
    with pytest.raises(Exception, match="Invalidated"):
        s.end_capture()


def _mlp():
    x, w, b = sym.var("x"), sym.var("w"), sym.var("b")
    h = sym.FullyConnected(sym.tanh(x * 2.0 + 1.0), w, b, num_hidden=4, name="fc")
    return sym.exp(sym.relu(h) - 0.5) * 3.0


def test_cached_op_cuda_graph_path_runs_on_the_standin(standin_gpu, rng):
    cop = mx.CachedOp(_mlp(), [("static_alloc", True), ("static_shape", True)])
    for _ in range(5):
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((3, 5), (4, 5), (4,)))
        got = cop(*[nd.array(v, ctx=mx.gpu(0)) for v in (x, w, b)]).asnumpy()
        ref = np.exp(np.maximum(np.tanh(x * 2 + 1) @ w.T + b, 0) - 0.5) * 3
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    st = cop.stats()
    # the FullyConnected ran through the capture-safe GEMM kernel (emulated by name)
    assert st["captures"] == 1 and st["replays"] == 3 and st["segments"] == 1, st
    assert st["eager_ops"] == 0 and not st["fallbacks"], st
    cop.free()


@pytest.mark.parametrize("sa,sb,ta", [((17, 33), (33, 5), False), ((3, 6, 4), (3, 6, 5), True)])
def test_capture_safe_gemm_on_strided_standin_arrays(standin_gpu, sa, sb, ta, rng):
    from gpunda.backends import _cuda_gemm
    xp = standin_gpu
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    da = xp.asarray(a).swapaxes(-1, -2) if ta else xp.asarray(a)
    ref = (np.swapaxes(a, -1, -2) if ta else a) @ b
    np.testing.assert_allclose(_cuda_gemm.matmul(da, xp.asarray(b)).get(), ref, rtol=1e-5,
                               atol=1e-5)
