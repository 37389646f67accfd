"""Trainer.step through flat parameter buffers (NOTE [Flat buffers], optimizer/_flat.py).

The reference is gpunda's per-parameter update (GPUNDA_FLAT_OPTIMIZER=0), whose
formulas tests/test_optimizer_mxnet_ref.py checks against MXNet 1.9.1's numbers:
the flat step must give the same weights and states bit for bit, also after the
Parameters' arrays were replaced (set_data, load_parameters, cast, reset_ctx,
load_states) once the buffers exist.
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda import gluon
from gpunda.optimizer import _flat


@pytest.fixture(autouse=True)
def _on_the_cpu():
    # the flat buffers' NumPy kernels, checked bit for bit against the per-parameter path
    with mx.cpu():
        yield

SHAPES = [(4, 5), (5,), (3, 2, 2), (7,), (1,), (6, 3)]


def _params(seed=0, dtypes=None):
    r = np.random.default_rng(seed)
    ps = []
    for i, shp in enumerate(SHAPES):
        dt = np.float32 if dtypes is None else dtypes[i]
        p = gluon.Parameter(f"p{i}_weight", shape=shp, dtype=dt)
        p.initialize(ctx=mx.cpu())
        p.set_data(mx.nd.array(r.standard_normal(shp), dtype=dt))
        ps.append(p)
    # multipliers in no sorted order, so the buffer reorders segments into runs
    ps[1].lr_mult, ps[2].wd_mult, ps[4].lr_mult, ps[4].wd_mult = 0.5, 0.0, 2.0, 3.0
    return ps


def _set_grads(ps, step, skip=()):
    r = np.random.default_rng(100 + step)
    for i, p in enumerate(ps):
        g = r.standard_normal(p.shape) * (i + 1)
        if i not in skip and p.grad_req != "null":
            g = mx.nd.array(g, dtype=p.dtype)
            # 'add' accumulates, as backward does into such a gradient
            p.grad()[:] = p.grad() + g if p.grad_req == "add" else g


def _values(ps, trainer):
    out = [p.data().asnumpy() for p in ps]
    states = trainer._updaters[0].states
    for _, st in sorted(states.items()):
        for s in (st if isinstance(st, (tuple, list)) else [st]):
            if s is not None:
                out.append(s.asnumpy())
    return out


def _run(monkeypatch, flat, opt, kw, steps=3, scenario=None, dtypes=None):
    monkeypatch.setenv("GPUNDA_FLAT_OPTIMIZER", "1" if flat else "0")
    ps = _params(dtypes=dtypes)
    kw = dict(kw)
    if kw.pop("sched", False):
        kw["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.1)
    tr = gluon.Trainer(ps, opt, kw, kvstore=None)
    for s in range(steps):
        if scenario is not None:
            scenario(s, ps, tr)
        skip = (3,) if s == 1 else ()
        _set_grads(ps, s, skip)
        tr.step(4 if s else 1, ignore_stale_grad=bool(skip))
    return _values(ps, tr), tr, ps


def _assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def _flat_in_use(tr, ps):
    """Every weight of ``ps`` is a view of its group's buffer."""
    groups = tr.__dict__.get("_flat_groups", {})
    bases = {id(g.bufs[0]) for g in groups.values()}
    return bool(groups) and all(id(p.data()._data.base) in bases for p in ps)


OPTS = [
    ("sgd", dict(learning_rate=0.1)),
    ("sgd", dict(learning_rate=0.1, wd=0.01)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=0.01)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=0.01, clip_gradient=0.3)),
    ("sgd", dict(learning_rate=0.1, wd=0.01, clip_gradient=0.3)),
    ("sgd", dict(momentum=0.9, wd=0.01, sched=True)),
    ("ccsgd", dict(learning_rate=0.1, momentum=0.5)),
    ("adam", dict(learning_rate=0.1, wd=0.01)),
    ("adam", dict(learning_rate=0.1, wd=0.01, clip_gradient=0.5, rescale_grad=0.7)),
    ("adam", dict(wd=0.01, sched=True)),
    ("lamb", dict(learning_rate=0.1, wd=0.01)),
    ("lamb", dict(learning_rate=0.1, wd=0.01, bias_correction=False, lower_bound=0.1,
                  upper_bound=1.0, clip_gradient=0.4)),
    ("lamb", dict(wd=0.01, sched=True)),
    ("nag", dict(learning_rate=0.1, wd=0.01)),
    ("nag", dict(learning_rate=0.1, momentum=0.9, wd=0.01, clip_gradient=0.3)),
    ("nag", dict(momentum=0.9, wd=0.01, sched=True, rescale_grad=0.5)),
    ("rmsprop", dict(learning_rate=0.01, wd=0.01)),
    ("rmsprop", dict(learning_rate=0.01, wd=0.01, clip_gradient=0.5, clip_weights=0.8)),
    ("rmsprop", dict(learning_rate=0.01, wd=0.01, centered=True, clip_weights=0.8)),
    ("rmsprop", dict(wd=0.01, centered=True, sched=True, clip_gradient=0.4)),
    ("adagrad", dict(learning_rate=0.1, wd=0.01)),
    ("adagrad", dict(wd=0.01, sched=True, clip_gradient=0.4, rescale_grad=0.3)),
]


@pytest.mark.parametrize("opt,kw", OPTS, ids=[f"{o}-{i}" for i, (o, _) in enumerate(OPTS)])
def test_flat_step_equals_per_parameter_step(monkeypatch, opt, kw):
    ref, _, _ = _run(monkeypatch, False, opt, kw)
    got, tr, ps = _run(monkeypatch, True, opt, kw)
    assert _flat_in_use(tr, ps)
    _assert_same(ref, got)


def test_flat_step_float16_and_float64_groups(monkeypatch):
    dts = [np.float32, np.float16, np.float64, np.float32, np.float16, np.float64]
    kw = dict(learning_rate=0.1, wd=0.01)
    with pytest.warns(UserWarning):       # float16 without multi_precision, as MXNet
        ref, _, _ = _run(monkeypatch, False, "adam", kw, dtypes=dts)
    with pytest.warns(UserWarning):
        got, tr, ps = _run(monkeypatch, True, "adam", kw, dtypes=dts)
    assert len(tr._flat_groups) == 3 and _flat_in_use(tr, ps)
    _assert_same(ref, got)


def test_multi_precision_float16_keeps_per_parameter_path(monkeypatch):
    dts = [np.float16] * len(SHAPES)
    kw = dict(learning_rate=0.1, momentum=0.9, multi_precision=True)
    ref, _, _ = _run(monkeypatch, False, "sgd", kw, dtypes=dts)
    got, tr, ps = _run(monkeypatch, True, "sgd", kw, dtypes=dts)
    assert not _flat_in_use(tr, ps)
    _assert_same(ref, got)


def _scenario_set_data(s, ps, tr):
    if s == 1:
        ps[0].set_data(mx.nd.ones(SHAPES[0]) * 0.25)
        ps[2].set_data(np.full(SHAPES[2], -1.5, np.float32))


def _scenario_cast(s, ps, tr):
    if s == 1:
        ps[1].cast("float64")
        ps[5].cast("float64")


def _scenario_reset_ctx(s, ps, tr):
    if s == 2:
        ps[3].reset_ctx(mx.cpu())        # new NDArrays on the same context


def _scenario_grad_req(s, ps, tr):
    if s == 1:
        ps[4].grad_req = "null"
    if s == 2:
        ps[4].grad_req = "write"


def _scenario_grad_add(s, ps, tr):
    if s == 1:
        ps[0].grad_req = "add"       # gradients accumulate: each step adds the new one
        ps[5].grad_req = "add"


def _scenario_zero_grad(s, ps, tr):
    if s == 2:
        for p in ps:
            p.zero_grad()


def _scenario_states(s, ps, tr, path=[None]):   # noqa: B006 -- one file per test run
    import os
    import tempfile
    if s == 1:
        path[0] = os.path.join(tempfile.mkdtemp(), "t.states")
        tr.save_states(path[0])
    if s == 2:
        # overwrite then restore: the loaded states must reach the buffers
        for st in tr._updaters[0].states.values():
            for a in st:
                a[:] = 7.0
        tr.load_states(path[0])


SCENARIOS = [_scenario_set_data, _scenario_cast, _scenario_reset_ctx, _scenario_grad_req,
             _scenario_grad_add, _scenario_zero_grad, _scenario_states]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[f.__name__[10:] for f in SCENARIOS])
@pytest.mark.parametrize("opt,kw", [("adam", dict(learning_rate=0.1, wd=0.01)),
                                    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=0.01))])
def test_buffer_views_after_replacing_arrays(monkeypatch, scenario, opt, kw):
    ref, _, _ = _run(monkeypatch, False, opt, kw, steps=4, scenario=scenario)
    got, tr, ps = _run(monkeypatch, True, opt, kw, steps=4, scenario=scenario)
    _assert_same(ref, got)
    # a weight cast after its state was made keeps that state's dtype, and the
    # per-parameter path (as gpunda did before the buffers)
    assert _flat_in_use(tr, [p for p in ps if p.grad_req != "null" and p.dtype == np.float32])


def test_set_data_writes_into_the_buffer(monkeypatch):
    monkeypatch.setenv("GPUNDA_FLAT_OPTIMIZER", "1")
    ps = _params()
    tr = gluon.Trainer(ps, "sgd", {"learning_rate": 1.0}, kvstore=None)
    _set_grads(ps, 0)
    tr.step(1)
    grp = next(iter(tr._flat_groups.values()))
    ps[0].set_data(mx.nd.full(SHAPES[0], 3.0))
    k = grp.pos[0]
    seg = grp.bufs[0][grp.offsets[k]:grp.offsets[k + 1]]
    np.testing.assert_array_equal(seg, np.full(20, 3.0, np.float32))
    # the gradient backward writes lands in the gradient buffer too
    with mx.autograd.record():
        y = (ps[0].data() * 2).sum()
    y.backward()
    np.testing.assert_array_equal(grp.bufs[1][grp.offsets[k]:grp.offsets[k + 1]],
                                  np.full(20, 2.0, np.float32))


def _net():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, in_units=3), gluon.nn.Dense(2, in_units=4))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    return net


def _train(net, trainer, steps, seed):
    r = np.random.default_rng(seed)
    for _ in range(steps):
        x = mx.nd.array(r.standard_normal((5, 3)))
        with mx.autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        trainer.step(5)


@pytest.mark.parametrize("flat", ["0", "1"])
def test_load_parameters_and_shared_block_after_build(monkeypatch, tmp_path, flat):
    """load_parameters after the buffers exist, and a Dense sharing another's
    parameters: the results match the per-parameter path's, value by value."""
    results = {}
    for mode in ("0", flat):
        monkeypatch.setenv("GPUNDA_FLAT_OPTIMIZER", mode)
        mx.random.seed(3)
        net = _net()
        shared = gluon.nn.Dense(4, in_units=3, params=net[0].collect_params())
        params = net.collect_params()
        params.update(shared.collect_params())     # the same Parameters twice
        tr = gluon.Trainer(params, "adam", {"learning_rate": 0.05})
        _train(net, tr, 2, 0)
        net.save_parameters(str(tmp_path / f"a{mode}.params"))
        _train(net, tr, 2, 1)
        net.load_parameters(str(tmp_path / f"a{mode}.params"))
        np.testing.assert_array_equal(shared.weight.data().asnumpy(),
                                      net[0].weight.data().asnumpy())
        _train(net, tr, 2, 2)
        results[mode] = [p.data().asnumpy() for p in net.collect_params().values()]
    _assert_same(results["0"], results[flat])


def test_kvstore_device_two_contexts(monkeypatch):
    """kvstore 'device' with update_on_kvstore=False over two CPU contexts: each
    context's copy is updated through its own buffers, identically."""
    out = {}
    for mode in ("0", "1"):
        monkeypatch.setenv("GPUNDA_FLAT_OPTIMIZER", mode)
        r = np.random.default_rng(5)
        ctxs = [mx.cpu(0), mx.cpu(1)]
        ps = []
        for i, shp in enumerate(SHAPES[:3]):
            p = gluon.Parameter(f"k{i}_weight", shape=shp)
            p.initialize(ctx=ctxs)
            p.set_data(mx.nd.array(r.standard_normal(shp)))
            ps.append(p)
        tr = gluon.Trainer(ps, "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                           kvstore="device", update_on_kvstore=False)
        for s in range(3):
            for p in ps:
                for j, g in enumerate(p.list_grad()):
                    g[:] = mx.nd.array(r.standard_normal(p.shape) * (j + 1), ctx=g.context)
            tr.step(2)
        out[mode] = [d.asnumpy() for p in ps for d in p.list_data()]
        if mode == "1":
            assert len(tr._flat_groups) == 2
    _assert_same(out["0"], out["1"])


def test_subclass_overriding_update_keeps_per_parameter_path():
    class MySGD(mx.optimizer.SGD):
        def update(self, index, weight, grad, state):
            super().update(index, weight, grad, state)

    assert _flat.spec_of(MySGD()) is None
    assert _flat.spec_of(mx.optimizer.ccSGD()) is not None
    assert _flat.spec_of(mx.optimizer.RMSProp()) is not None
    assert _flat.spec_of(mx.optimizer.AdaDelta()) is None


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("clip", [-1.0, 0.05])
@pytest.mark.parametrize("mp", [False, True])
def test_multi_sgd_ops_on_the_chunked_kernel_equal_the_tensor_formula(momentum, clip, mp):
    """multi_(mp_)sgd(_mom)_update run on ops/optimizer/flat.py's chunked kernel; the
    result is _sgd_step's (the MultiSGDKernel transcription that
    tests/ops/test_optim_multi.py checks against MXNet 1.9.1's literals) bit for bit,
    also for a tensor longer than one chunk and for a non-contiguous one."""
    from gpunda.ops.optimizer import flat, multi
    from gpunda.ops.registry import get_op
    r = np.random.default_rng(9)
    shapes = [(flat.CHUNK + 1000,), (7, 3), (4,)]
    wdt = np.float16 if mp else np.float32
    ws = [r.standard_normal(s).astype(wdt) for s in shapes]
    ws[1] = np.asfortranarray(ws[1])          # not C-contiguous: the per-tensor formula
    gs = [(r.standard_normal(s) * 0.1).astype(wdt) for s in shapes]
    moms = [r.standard_normal(s).astype(np.float32) for s in shapes]
    w32s = [w.astype(np.float32) for w in ws]
    lrs, wds = [0.1, 0.05, 0.2], [0.01, 0.0, 0.03]
    name = "multi_" + ("mp_" if mp else "") + ("sgd_mom_update" if momentum else "sgd_update")
    arrays = []
    for i in range(3):
        arrays += [ws[i].copy(), gs[i]] + ([moms[i].copy()] if momentum else []) + \
            ([w32s[i].copy()] if mp else [])
    from types import SimpleNamespace
    p = SimpleNamespace(num_weights=3, lrs=lrs, wds=wds, rescale_grad=0.7, clip_gradient=clip,
                        momentum=momentum)
    outs = get_op(name).compute(np, p, *arrays)
    stride = 2 + bool(momentum) + mp
    for i in range(3):
        mom = moms[i].copy() if momentum else None
        if mp:
            w32 = w32s[i].copy()
            w32[...] = multi._sgd_step(np, p, lrs[i], wds[i], w32, gs[i], mom)
            want = w32.astype(wdt)
            np.testing.assert_array_equal(arrays[i * stride + stride - 1], w32)
        else:
            want = multi._sgd_step(np, p, lrs[i], wds[i], ws[i], gs[i], mom)
        np.testing.assert_array_equal(outs[i], want)
        if momentum:
            np.testing.assert_array_equal(arrays[i * stride + 2], mom)
