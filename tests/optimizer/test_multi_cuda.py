"""MXNet's multi-tensor SGD ops on a GPU in one launch per dtype group (NOTE [Multi CUDA],
ops/optimizer/multi_cuda.py), run on the test stand-in GPU through the kernels' NumPy
emulations (multi_cuda_emu.py, which dereference the pointer table as the kernel does).

The reference is the same op on the CPU (ops/optimizer/multi.py's NumPy path, itself checked
against MXNet in tests/optimizer): every output and every state written in place must be
equal bit for bit, with per-tensor lrs/wds, rescale_grad, clip_gradient and momentum.
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda.ops.optimizer import multi_cuda as MC

SHAPES = [(4, 5), (5,), (3, 2, 2), (0,), (1,), (300, 30)]

# (op, slots per tensor, preloaded, multi-precision)
OPS = []
for _pre in (False, True):
    _p = "preloaded_multi_" if _pre else "multi_"
    OPS += [(_p + "sgd_update", ("weight", "grad"), _pre, False),
            (_p + "sgd_mom_update", ("weight", "grad", "mom"), _pre, False),
            (_p + "mp_sgd_update", ("weight", "grad", "weight32"), _pre, True),
            (_p + "mp_sgd_mom_update", ("weight", "grad", "mom", "weight32"), _pre, True)]

KW = [{"rescale_grad": 1.0}, {"rescale_grad": 0.7, "clip_gradient": 0.5},
      {"rescale_grad": 2.0, "clip_gradient": 0.0}]


def _inputs(ctx, slots, dtype, mp, seed=0):
    r = np.random.default_rng(seed)
    arrays = []
    for i, shp in enumerate(SHAPES):
        for s in slots:
            dt = "float32" if (mp and s in ("mom", "mean", "var", "weight32")) else dtype
            x = r.standard_normal(shp) * (i + 1)
            if s == "var":
                x = np.abs(x)
            arrays.append(mx.nd.array(x, dtype=dt, ctx=ctx))
    if mp:      # the master copy holds the float16 weight's value, as the optimizer keeps it
        k = len(slots)
        for i in range(len(SHAPES)):
            arrays[i * k + k - 1][:] = arrays[i * k].astype("float32")
    return arrays


def _run(ctx, op, slots, pre, mp, dtype, kw, steps=2, scale=None):
    n = len(SHAPES)
    arrays = _inputs(ctx, slots, dtype, mp)
    lrs = [0.1, 0.5, 0.02, 0.3, 1.0, 0.05]
    wds = [0.01, 0.0, 0.1, 0.2, 0.003, 0.05]
    kw = dict(kw, num_weights=n)
    if "mom" in slots:
        kw["momentum"] = 0.9
    outs = []
    for _ in range(steps):
        extra = []
        if pre:
            extra = [mx.nd.array(lrs, dtype="float32", ctx=ctx),
                     mx.nd.array(wds, dtype="float32", ctx=ctx)]
        else:
            kw.update(lrs=lrs, wds=wds)
        if scale is not None:   # the AdamW ops: etas, and rescale_grad as an array
            kw.update(etas=[1.0, 0.5, 2.0, 1.0, 0.7, 0.9])
            extra = [mx.nd.array([scale], dtype="float32", ctx=ctx)]
            res = getattr(mx.nd._internal, op)(*arrays, *extra, **kw)
        else:
            res = getattr(mx.nd, op)(*arrays, *extra, **kw)
        res = res if isinstance(res, (list, tuple)) else [res]
        outs += [o.asnumpy() for o in res]
        # feed the new weights back, as an optimizer does
        for i, o in enumerate(res):
            arrays[i * len(slots)][:] = o
    return outs + [a.asnumpy() for a in arrays]


@pytest.mark.parametrize("kw", KW)
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("op,slots,pre,mp", OPS, ids=[o[0] for o in OPS])
def test_multi_sgd_gpu_equals_cpu_in_one_launch(standin_gpu, monkeypatch, op, slots, pre, mp,
                                               dtype, kw):
    if mp and dtype != "float16":
        pytest.skip("the mp ops take float16 weights")
    launches = []
    real = MC.launch

    def counting(xp, dt, name, *a, **k):
        launches.append((name, dt))
        return real(xp, dt, name, *a, **k)

    monkeypatch.setattr(MC, "launch", counting)
    ref = _run(mx.cpu(), op, slots, pre, mp, dtype, kw)
    assert launches == []                       # the CPU keeps its NumPy loop
    got = _run(mx.gpu(0), op, slots, pre, mp, dtype, kw)
    # one launch per call (two calls), all tensors of the call's one dtype in it
    assert launches == [("gpunda_multi_sgd", "float32" if mp else dtype)] * 2, launches
    assert len(ref) == len(got)
    for j, (a, b) in enumerate(zip(ref, got)):
        assert a.dtype == b.dtype, j
        np.testing.assert_array_equal(b, a, err_msg=f"array {j}")
    # the update really moved the weights (the comparison is not of untouched inputs)
    assert not np.array_equal(ref[0], _inputs(mx.cpu(), slots, dtype, mp)[0].asnumpy())


ADAMW = [("_multi_adamw_update", ("weight", "grad", "mean", "var"), False),
         ("_multi_mp_adamw_update", ("weight", "grad", "mean", "var", "weight32"), True)]


@pytest.mark.parametrize("scale,clip", [(1.0, -1.0), (0.7, 0.5), (2.0, 0.0), (0.0, -1.0),
                                        (float("nan"), 0.5)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("op,slots,mp", ADAMW, ids=[o[0] for o in ADAMW])
def test_multi_adamw_gpu_equals_cpu_in_one_launch(standin_gpu, monkeypatch, op, slots, mp,
                                                 dtype, scale, clip):
    if mp and dtype != "float16":
        pytest.skip("the mp ops take float16 weights")
    launches = []
    real = MC.launch

    def counting(xp, dt, name, *a, **k):
        launches.append((name, dt))
        return real(xp, dt, name, *a, **k)

    monkeypatch.setattr(MC, "launch", counting)
    kw = {"beta1": 0.8, "beta2": 0.95, "epsilon": 1e-3, "clip_gradient": clip}
    ref = _run(mx.cpu(), op, slots, False, mp, dtype, kw, scale=scale)
    assert launches == []
    got = _run(mx.gpu(0), op, slots, False, mp, dtype, kw, scale=scale)
    skipped = not (scale == scale and scale != 0)     # a NaN or zero scale skips the step
    want = [] if skipped else [("gpunda_multi_adamw", "float32" if mp else dtype)] * 2
    assert launches == want, launches
    for j, (a, b) in enumerate(zip(ref, got)):
        assert a.dtype == b.dtype, j
        np.testing.assert_array_equal(b, a, err_msg=f"array {j}")
    moved = not np.array_equal(ref[0], _inputs(mx.cpu(), slots, dtype, mp)[0].asnumpy())
    assert moved != skipped


def test_multi_sgd_gpu_mixed_dtypes_one_launch_per_dtype(standin_gpu, monkeypatch):
    launches = []
    real = MC.launch
    monkeypatch.setattr(MC, "launch", lambda xp, dt, name, *a, **k: (
        launches.append(dt), real(xp, dt, name, *a, **k)))
    r = np.random.default_rng(3)
    dts = ["float32", "float64", "float32", "float16", "float64"]

    def run(ctx):
        arrays = []
        for i, dt in enumerate(dts):
            arrays += [mx.nd.array(r2.standard_normal((3, i + 1)), dtype=dt, ctx=ctx)
                       for _ in range(3)]
        res = mx.nd.multi_sgd_mom_update(*arrays, lrs=[0.1] * 5, wds=[0.01, 0, 0.2, 0.1, 0],
                                         momentum=0.8, num_weights=5, rescale_grad=0.5)
        return [o.asnumpy() for o in res] + [a.asnumpy() for a in arrays]
    r2 = np.random.default_rng(3)
    ref = run(mx.cpu())
    r2 = np.random.default_rng(3)
    got = run(mx.gpu(0))
    assert sorted(launches) == ["float16", "float32", "float64"]
    for a, b in zip(ref, got):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(b, a)
    del r


def test_multi_cuda_sources_registered():
    from gpunda._core import cuda_sources
    names = [s.name for p, s in cuda_sources.collect_sources(["multi_optimizer"])]
    assert names == ["multi_optimizer[float16]", "multi_optimizer[float32]",
                     "multi_optimizer[float64]", "multi_optimizer[mp]"]


LAMB = [("_multi_lamb_update", ("weight", "grad", "mean", "var"), False),
        ("_multi_mp_lamb_update", ("weight", "grad", "mean", "var", "weight32"), True)]
LAMB_KW = [{}, {"rescale_grad": 0.7, "clip_gradient": 0.5, "lower_bound": 0.5,
                "upper_bound": 3.0},
           {"bias_correction": False, "beta1": 0.8, "beta2": 0.95, "epsilon": 1e-3,
            "upper_bound": 0.0}]


def _run_lamb(ctx, op, slots, mp, dtype, kw, steps=2):
    n = len(SHAPES)
    arrays = _inputs(ctx, slots, dtype, mp)
    kw = dict(kw, num_tensors=n, learning_rates=[0.1, 0.5, 0.02, 0.3, 1.0, 0.05],
              wds=[0.01, 0.0, 0.1, 0.2, 0.003, 0.05])
    outs = []
    for s in range(steps):
        kw["step_count"] = [s + 1, s + 3, s + 1, s + 2, s + 1, s + 5]
        res = getattr(mx.nd._internal, op)(*arrays, **kw)
        outs += [o.asnumpy() for o in res]
        for i, o in enumerate(res):
            arrays[i * len(slots)][:] = o
    return outs, [a.asnumpy() for a in arrays]


@pytest.mark.parametrize("kw", LAMB_KW)
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("op,slots,mp", LAMB, ids=[o[0] for o in LAMB])
def test_multi_lamb_gpu_equals_cpu_in_two_launches(standin_gpu, monkeypatch, op, slots, mp,
                                                  dtype, kw):
    if mp and dtype != "float16":
        pytest.skip("the mp ops take float16 weights")
    launches = []
    real = MC.launch

    def counting(xp, dt, name, *a, **k):
        launches.append((name, dt))
        return real(xp, dt, name, *a, **k)

    monkeypatch.setattr(MC, "launch", counting)
    ref, ref_st = _run_lamb(mx.cpu(), op, slots, mp, dtype, kw, steps=1)
    assert launches == []
    got, got_st = _run_lamb(mx.gpu(0), op, slots, mp, dtype, kw, steps=1)
    dt = "float32" if mp else dtype
    assert launches == [("gpunda_multi_lamb1", dt), ("gpunda_multi_lamb2", dt)], launches
    k = len(slots)
    # the moments do not read the norms: equal bit for bit
    for j, (a, b) in enumerate(zip(ref_st, got_st)):
        assert a.dtype == b.dtype
        if j % k in (2, 3):
            np.testing.assert_array_equal(b, a, err_msg=f"state {j}")
    # the weights read the norms, float64 sums on the GPU against NumPy's float32 pairwise
    # sums on the CPU: a trust ratio a few float32 ulps apart
    tol = {"float64": 1e-6, "float32": 1e-5, "float16": 2e-3}[dtype]
    for j, (a, b) in enumerate(zip(ref, got)):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(b.astype(np.float64), a.astype(np.float64), rtol=tol,
                                   atol=tol, err_msg=f"weight {j}")
    w0 = _inputs(mx.cpu(), slots, dtype, mp)[0].asnumpy()
    assert not np.allclose(ref[0].astype(np.float64), w0.astype(np.float64), rtol=tol * 10)


def _real_gpu():
    from gpunda.backends import discovery
    return discovery.probe()[0] > 0 and not discovery.standin_active()


@pytest.mark.gpu
@pytest.mark.skipif(not _real_gpu(), reason="needs a real GPU (the kernels compiled by NVRTC)")
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_real_gpu_multi_kernels_equal_cpu(monkeypatch, dtype):
    # the same comparisons with the CUDA kernels themselves (written without a GPU at hand:
    # this is the test that must pass before they are trusted)
    for op, slots, pre, mp in OPS:
        if not mp or dtype == "float16":
            for kw in KW[:2]:
                test_multi_sgd_gpu_equals_cpu_in_one_launch(None, monkeypatch, op, slots, pre,
                                                            mp, dtype, kw)
                monkeypatch.undo()
    for op, slots, mp in ADAMW:
        if not mp or dtype == "float16":
            test_multi_adamw_gpu_equals_cpu_in_one_launch(None, monkeypatch, op, slots, mp,
                                                         dtype, 0.7, 0.5)
            monkeypatch.undo()
    for op, slots, mp in LAMB:
        if not mp or dtype == "float16":
            for kw in LAMB_KW:
                test_multi_lamb_gpu_equals_cpu_in_two_launches(None, monkeypatch, op, slots,
                                                               mp, dtype, kw)
                monkeypatch.undo()
