"""The flat optimizer step on a GPU in one launch per buffer (NOTE [Flat CUDA step],
ops/optimizer/flat_cuda.py), run on the test stand-in GPU through the kernels' NumPy
emulations (flat_cuda_emu.py, written from the CUDA code).

The reference is the CPU flat step (ops/optimizer/flat.py), which
tests/optimizer/test_flat_buffers.py checks bit for bit against the per-parameter path:
the GPU step must give the same weights and states, bit for bit for SGD and Adam (the
kernels round every intermediate as NumPy does) and for LAMB's moments; LAMB's weights agree
to a few ulps (its norms are float64 sums, not BLAS dots). Multi-precision float16 weights
(the kernels' _mp forms) are checked against update_multi_precision, parameter by
parameter, on the CPU. The kernels' compilation is checked by tests/test_nvrtc_check.py.
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda import gluon
from gpunda.ops.optimizer import flat_cuda as KC
from gpunda.ops.optimizer import lamb_adamw

SHAPES = [(4, 5), (5,), (3, 2, 2), (7,), (1,), (6, 3), (300, 30)]


def _params(ctx, dtype, seed=0):
    r = np.random.default_rng(seed)
    ps = []
    for i, shp in enumerate(SHAPES):
        p = gluon.Parameter(f"p{i}_weight", shape=shp, dtype=dtype)
        p.initialize(ctx=ctx)
        p.set_data(mx.nd.array(r.standard_normal(shp), dtype=dtype, ctx=ctx))
        ps.append(p)
    # multipliers in no sorted order: per-segment lr and wd in one launch
    ps[1].lr_mult, ps[2].wd_mult, ps[4].lr_mult, ps[4].wd_mult = 0.5, 0.0, 2.0, 3.0
    return ps


def _run(ctx, dtype, opt, kw, steps=3, scenario=None):
    ps = _params(ctx, dtype)
    kw = dict(kw)
    if kw.pop("sched", False):
        kw["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.1)
    tr = gluon.Trainer(ps, opt, kw, kvstore=None)
    for s in range(steps):
        if scenario is not None:
            scenario(s, ps, tr, ctx)
        r = np.random.default_rng(100 + s)
        skip = (3,) if s == 1 else ()    # a stale gradient: that parameter is not updated
        for i, p in enumerate(ps):
            g = r.standard_normal(p.shape) * (i + 1)
            if i not in skip:
                p.grad()[:] = mx.nd.array(g, dtype=dtype, ctx=ctx)
        tr.step(4 if s else 1, ignore_stale_grad=bool(skip))
    out = [p.data().asnumpy() for p in ps]

    def flat(st):       # (multi_precision states nest: (master, (mean, var)))
        if isinstance(st, (tuple, list)):
            for x in st:
                flat(x)
        elif st is not None:
            out.append(st.asnumpy())
    for _, st in sorted(tr._updaters[0].states.items()):
        flat(st)
    return out, tr


CASES = [
    ("sgd", {"learning_rate": 0.1}),
    ("sgd", {"learning_rate": 0.1, "wd": 0.01, "sched": True}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "clip_gradient": 0.5,
             "rescale_grad": 0.7}),
    ("sgd", {"learning_rate": 0.1, "wd": 0.01, "clip_gradient": 0.5}),
    ("adam", {"learning_rate": 0.01, "wd": 0.01}),
    ("adam", {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.3, "rescale_grad": 0.5,
              "sched": True}),
    ("nag", {"learning_rate": 0.1, "wd": 0.01, "clip_gradient": 0.5}),
    ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 0.7}),
    ("rmsprop", {"learning_rate": 0.01, "wd": 0.01, "clip_weights": 1.5}),
    ("rmsprop", {"learning_rate": 0.01, "wd": 0.01, "centered": True, "clip_gradient": 0.4,
                 "clip_weights": -2.0}),
    ("adagrad", {"learning_rate": 0.1, "wd": 0.01, "clip_gradient": 0.5}),
    ("lamb", {"learning_rate": 0.01, "wd": 0.01}),
    ("lamb", {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.3, "bias_correction": False,
              "lower_bound": 0.5, "upper_bound": 3.0}),
]


def _real_gpu():
    from gpunda.backends import discovery
    return discovery.probe()[0] > 0 and not discovery.standin_active()


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("opt,kw", CASES)
def test_gpu_flat_step_equals_cpu_flat_step(standin_gpu, monkeypatch, opt, kw, dtype):
    _check_gpu_step(monkeypatch, opt, kw, dtype)


@pytest.mark.gpu
@pytest.mark.skipif(not _real_gpu(), reason="needs a real GPU (the kernels compiled by NVRTC)")
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("opt,kw", CASES)
def test_real_gpu_flat_step_equals_cpu_flat_step(monkeypatch, opt, kw, dtype):
    # the same comparison with the CUDA kernels themselves (written without a GPU at hand:
    # this is the test that must pass before they are trusted)
    _check_gpu_step(monkeypatch, opt, kw, dtype)


def _check_gpu_step(monkeypatch, opt, kw, dtype):
    launches = []
    real = KC.launch

    def counting(xp, dt, name, btab, args, w16=None):
        launches.append(name)
        return real(xp, dt, name, btab, args, w16)

    monkeypatch.setattr(KC, "launch", counting)
    ref, _ = _run(mx.cpu(), dtype, opt, kw)
    assert launches == []                       # the CPU keeps its NumPy kernels
    got, tr = _run(mx.gpu(0), dtype, opt, kw)
    per_step = 2 if opt == "lamb" else 1        # LAMB: direction + norms, then the step
    assert launches and len(launches) == 3 * per_step, launches
    assert len(tr._flat_groups) == 1
    assert len(ref) == len(got)
    for j, (a, b) in enumerate(zip(ref, got)):
        assert a.dtype == b.dtype
        if opt != "lamb" or j >= len(SHAPES):   # LAMB's moments do not read the norms
            np.testing.assert_array_equal(b, a)
        elif dtype != "float16":
            tol = {"float32": 2e-6, "float64": 1e-12}[dtype]
            np.testing.assert_allclose(b, a, rtol=tol, atol=tol)
        else:
            # the CPU's float16 norms are float16 dots (np.dot accumulates in float16, a few
            # per cent off on 9000 elements); the kernel sums in float64: a slightly
            # different trust ratio, visible where the direction is large
            close = np.isclose(b, a, rtol=2e-3, atol=2e-3)
            assert close.mean() > 0.995, (j, close.mean())


MP_CASES = [c for c in CASES if c[0] != "lamb"]


@pytest.mark.parametrize("opt,kw", MP_CASES)
def test_gpu_flat_multi_precision_equals_per_parameter_step(standin_gpu, monkeypatch, opt, kw):
    # float16 weights with float32 master copies: the GPU flat step (float32 kernels on the
    # masters, the float16 gradients copied in, the float16 weights copied out) against
    # update_multi_precision, parameter by parameter, on the CPU
    kw = dict(kw, multi_precision=True)
    monkeypatch.setenv("GPUNDA_FLAT_OPTIMIZER", "0")
    ref, _ = _run(mx.cpu(), "float16", opt, kw)
    monkeypatch.setenv("GPUNDA_FLAT_OPTIMIZER", "1")
    launches = []
    real = KC.launch
    monkeypatch.setattr(KC, "launch", lambda *a: (launches.append(a[2]), real(*a)))
    mp_launches = []
    real_kernel = KC.kernel
    monkeypatch.setattr(KC, "kernel", lambda xp, dt, name, mp=False: (
        mp_launches.append((name, mp)), real_kernel(xp, dt, name, mp))[1])
    got, tr = _run(mx.gpu(0), "float16", opt, kw)
    assert launches == [launches[0]] * 3 and len(tr._flat_groups) == 1, launches
    grp, = tr._flat_groups.values()
    assert grp.mp and grp.dtype == np.float32
    assert all(mp for _, mp in mp_launches)     # the _mp kernels: one launch a step
    assert len(ref) == len(got)
    for a, b in zip(ref, got):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("opt,kw", [("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
                                    ("adam", {"learning_rate": 0.01, "wd": 0.01})])
def test_gpu_flat_multi_precision_after_set_data_and_load_states(standin_gpu, monkeypatch,
                                                                tmp_path, opt, kw):
    # payloads replaced once the buffers exist: set_data writes the float16 weight (the
    # master copy stays, as in update_multi_precision), load_states replaces the states
    def scenario(s, ps, tr, ctx):
        if s == 1:
            ps[0].set_data(mx.nd.ones(ps[0].shape, dtype="float16", ctx=ctx) * 0.25)
        if s == 2:
            f = str(tmp_path / f"{ctx.device_type}.states")
            tr.save_states(f)
            tr.load_states(f)
    kw = dict(kw, multi_precision=True)
    monkeypatch.setenv("GPUNDA_FLAT_OPTIMIZER", "0")
    ref, _ = _run(mx.cpu(), "float16", opt, kw, steps=4, scenario=scenario)
    monkeypatch.setenv("GPUNDA_FLAT_OPTIMIZER", "1")
    got, tr = _run(mx.gpu(0), "float16", opt, kw, steps=4, scenario=scenario)
    grp, = tr._flat_groups.values()
    assert grp.mp and len(ref) == len(got) == 2 * len(SHAPES) + {"sgd": 1, "adam": 2}[opt] \
        * len(SHAPES)
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(b, a)


def test_multi_precision_lamb_and_cpu_keep_the_per_parameter_path(standin_gpu):
    _, tr = _run(mx.gpu(0), "float16", "lamb", {"learning_rate": 0.01,
                                                 "multi_precision": True})
    assert not tr._flat_groups
    _, tr = _run(mx.cpu(), "float16", "sgd", {"learning_rate": 0.1, "multi_precision": True})
    assert not tr._flat_groups


def test_gpu_flat_step_off_switch(standin_gpu, monkeypatch):
    launches = []
    monkeypatch.setattr(KC, "launch", lambda *a: launches.append(a))
    monkeypatch.setenv("GPUNDA_FLAT_CUDA", "0")
    got, _ = _run(mx.gpu(0), "float32", "adam", {"learning_rate": 0.01})
    ref, _ = _run(mx.cpu(), "float32", "adam", {"learning_rate": 0.01})
    assert launches == []       # the chunked array-module kernels instead
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(b, a)


def test_block_table_covers_each_segment_once():
    offs = [0, 5, 5, 5 + 3 * KC.SPAN + 1, 5 + 3 * KC.SPAN + 2]
    bt = KC.block_table(offs)
    assert bt.dtype == np.int64 and bt.shape == (1 + 4 + 1, 3)
    seen = np.zeros(offs[-1], int)
    for s, e, k in bt:
        assert offs[k] <= s < e <= offs[k + 1] and e - s <= KC.SPAN
        seen[s:e] += 1
    assert (seen == 1).all()
    assert KC.block_table([0]).shape == (0, 3)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_adamw_kernel_equals_the_adamw_update_formula(standin_gpu, dtype):
    # per-segment lr/wd/eta against _adamw_step (MXNet's AdamW kernel's formula), one segment
    # inactive (left as it was)
    xp = standin_gpu
    r = np.random.default_rng(3)
    sizes = [10, 1, 4097, 33]
    offs = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offs[-1])
    W, G = r.standard_normal(n).astype(dtype), r.standard_normal(n).astype(dtype)
    M, V = (r.standard_normal(n) * 0.1).astype(dtype), (r.random(n) * 0.1).astype(dtype)
    b1, b2, eps, rs, clip = 0.9, 0.99, 1e-6, 0.8, 0.6
    hyper = [(0.01, 0.1, 1.0), (0.02, 0.0, 0.5), (0.005, 0.3, 2.0), (0.01, 0.1, 1.0)]
    active = [1, 1, 1, 0]
    tab = np.array([(a, lr, wd, eta, rs, 1.0, clip, b1, b2, eps)
                    for a, (lr, wd, eta) in zip(active, hyper)])
    dev = [xp.asarray(x) for x in (W, G, M, V)]
    bt = xp.asarray(KC.block_table(offs))
    KC.launch(xp, dtype, "gpunda_flat_adamw", bt, (*dev, bt, xp.asarray(tab)))

    class P:
        beta1, beta2, epsilon, clip_gradient = b1, b2, eps, clip
    for k, (lr, wd, eta) in enumerate(hyper):
        s = slice(offs[k], offs[k + 1])
        w, m, v = W[s].copy(), M[s].copy(), V[s].copy()
        if active[k]:
            w = lamb_adamw._adamw_step(np, P, lr, wd, eta, w, G[s], m, v, rs, False)
        for got, want in zip(dev[:1] + dev[2:], (w, m, v)):
            np.testing.assert_allclose(got[s].get().astype(np.float64), want,
                                       rtol=2e-3 if dtype == "float16" else 1e-6, atol=1e-7)
