"""mx.optimizer.LARS and LBSGD against real MXNet 1.9.1 and against the formulas in NumPy.

``data/lars_lbsgd_mxnet191.npz`` holds MXNet 1.9.1's weights after every update of the
cases below (made by ``data/make_lars_lbsgd_fixture.py``, whose cases these mirror).
"""
import math
import os

import numpy as np
import pytest

import gpunda as mx

DATA = np.load(os.path.join(os.path.dirname(__file__), "data", "lars_lbsgd_mxnet191.npz"))
W = [DATA[f"inputs/w{i}"] for i in range(3)]
G = [DATA[f"inputs/g{i}"] for i in range(3)]
SHAPES = [w.shape for w in W]
NAMES = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma"}
STEPS, LB_STEPS = 3, 6


def _expected(key, k, n):
    return [DATA[f"{key}/t{k}/w{i}"] for i in range(n)]


def _close(got, want, dtype):
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == "float16" else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.asnumpy().astype(np.float32), want, **tol)


BASE = dict(learning_rate=0.1, wd=0.01, eta=0.5, eps=1e-3)
LARS_CASES = {
    "lars_mom": dict(momentum=0.9, rescale_grad=0.8, clip_gradient=0.5, param_idx2name=NAMES),
    "lars_nomom_single": dict(per_index=True),
    "lars_sched": dict(momentum=0.9, sched=True),
    "lars_sched_nocorr": dict(momentum=0.9, sched=True, momentum_correction=False),
    "lars_rsp": dict(rsp=True, momentum=0.9, param_idx2name=NAMES),
    "lars_rsp_std": dict(rsp=True, momentum=0.9, lazy_update=False),
    "lars_zero_grad": dict(momentum=0.9, zero_grad=True),
    "lars_fp16_mp": dict(dtype="float16", momentum=0.9, multi_precision=True),
    "lars_fp16_mp_nomom": dict(dtype="float16", multi_precision=True),
    "lars_fp16_mp_single": dict(dtype="float16", per_index=True, momentum=0.9,
                                multi_precision=True),
}


@pytest.mark.parametrize("key", sorted(LARS_CASES))
def test_lars_matches_mxnet(key):
    kw = dict(BASE, **LARS_CASES[key])
    dtype = kw.pop("dtype", "float32")
    per_index, rsp = kw.pop("per_index", False), kw.pop("rsp", False)
    zero_grad = kw.pop("zero_grad", False)
    if kw.pop("sched", False):
        kw["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5)
    opt = mx.optimizer.LARS(**kw)
    ws = [mx.nd.array(w, dtype=dtype) for w in W]
    states = [opt.create_state_multi_precision(i, w) for i, w in enumerate(ws)]
    for k in range(STEPS):
        gs = [mx.nd.array(g * (k + 1), dtype=dtype) for g in G]
        if zero_grad:
            gs[0] = mx.nd.zeros(SHAPES[0], dtype=dtype)
        if rsp:
            gs[0] = mx.nd.sparse.row_sparse_array((G[0][1:2] * (k + 1), [1]), shape=SHAPES[0])
        if per_index or rsp:
            for i in range(3):
                opt.update_multi_precision(i, ws[i], gs[i], states[i])
        else:
            opt.update_multi_precision(list(range(3)), ws, gs, states)
        for got, want in zip(ws, _expected(key, k, 3)):
            _close(got, want, dtype)


LB = dict(learning_rate=0.1, wd=0.01, momentum=0.9, batch_scale=2, warmup_epochs=1,
          updates_per_epoch=3)
LBSGD_CASES = {
    **{"lbsgd_" + s: dict(LB, warmup_strategy=s) for s in ("linear", "power2", "sqrt", "lars")},
    "lbsgd_begin": dict(LB, batch_scale=3, begin_epoch=1, warmup_epochs=2),
    "lbsgd_alias": dict(LB, momentum=0.0, alias=True),
    "lbsgd_bs1_sched": dict(LB, batch_scale=1, rescale_grad=0.5, clip_gradient=0.3, sched=True),
    "lbsgd_fp16_mp": dict(LB, dtype="float16", multi_precision=True),
    "lbsgd_unknown_strategy": dict(LB, batch_scale=1, warmup_strategy="cosine"),
}


@pytest.mark.parametrize("key", sorted(LBSGD_CASES))
def test_lbsgd_matches_mxnet(key):
    kw = dict(LBSGD_CASES[key])
    dtype, alias = kw.pop("dtype", "float32"), kw.pop("alias", False)
    if kw.pop("sched", False):
        kw["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)
    opt = mx.optimizer.create("lbsgd", **kw)
    w = mx.nd.array(W[0], dtype=dtype)
    state = opt.create_state_multi_precision(0, w)
    g = mx.nd.zeros(SHAPES[0], dtype=dtype)
    for k in range(LB_STEPS):
        if alias:
            g[:] = G[0] * (k + 1)
        else:
            g = mx.nd.array(G[0] * (k + 1), dtype=dtype)
        opt.update_multi_precision(0, w, g, state)
        _close(w, _expected(key, k, 1)[0], dtype)


# -- the formulas, written out in NumPy ---------------------------------------------------

def _numpy_lars(ws, gs_of_step, names, lr, wd, eta, eps, momentum, rescale, clip, steps):
    ws = [w.astype(np.float64) for w in ws]
    moms = [np.zeros_like(w) for w in ws]
    for k in range(steps):
        for i, (w, g) in enumerate(zip(ws, gs_of_step(k))):
            name = names.get(i, str(i))
            wd_i = wd if name.endswith("_weight") or i not in names else 0.0
            g = g.astype(np.float64)
            lr_i = lr
            wn, gn = np.linalg.norm(w), np.linalg.norm(g) * rescale
            if not name.endswith(("gamma", "beta", "bias")) and wn > 0 and gn > 0:
                lr_i = lr * eta * wn / (gn + wd_i * wn + eps)
            gr = np.clip(g * rescale, -clip, clip)
            moms[i] = momentum * moms[i] - lr_i * wd_i * w - lr_i * gr
            ws[i] = w + moms[i]
    return ws


def test_lars_formula_in_numpy():
    kw = dict(learning_rate=0.2, wd=0.05, eta=0.3, eps=1e-2, momentum=0.8, rescale_grad=1.5,
              clip_gradient=0.4)
    opt = mx.optimizer.LARS(param_idx2name=NAMES, **kw)
    ws = [mx.nd.array(w) for w in W]
    states = [opt.create_state(i, w) for i, w in enumerate(ws)]
    for k in range(4):
        opt.update([0, 1, 2], ws, [mx.nd.array(g * (k + 1)) for g in G], states)
    want = _numpy_lars(W, lambda k: [g * (k + 1) for g in G], NAMES, 0.2, 0.05, 0.3, 1e-2,
                       0.8, 1.5, 0.4, 4)
    for got, ref in zip(ws, want):
        np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_lars_aggregation_groups_and_exempt_names():
    # 6 tensors in groups of 4, the exempt ones reordered behind the others: the same
    # weights as one tensor at a time
    names = {i: n for i, n in enumerate(["a_weight", "a_bias", "b_weight", "c_gamma",
                                         "d_beta", "e_weight"])}
    rng = np.random.RandomState(3)
    w0 = [rng.uniform(-1, 1, (3, 2)).astype(np.float32) for _ in names]
    g0 = [rng.uniform(-1, 1, (3, 2)).astype(np.float32) for _ in names]
    results = []
    for grouped in (True, False):
        opt = mx.optimizer.LARS(learning_rate=0.1, momentum=0.9, eta=0.5, wd=0.1,
                                param_idx2name=names)
        assert opt.aggregate_num == 4
        ws = [mx.nd.array(w) for w in w0]
        st = [opt.create_state(i, w) for i, w in enumerate(ws)]
        for _ in range(2):
            gs = [mx.nd.array(g) for g in g0]
            if grouped:
                opt.update(list(range(6)), ws, gs, st)
            else:
                for i in range(6):
                    opt.update(i, ws[i], gs[i], st[i])
        results.append([w.asnumpy() for w in ws])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    ref = _numpy_lars(w0, lambda k: g0, names, 0.1, 0.1, 0.5, 0.0, 0.9, 1.0, np.inf, 2)
    for a, r in zip(results[0], ref):
        np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-6)


def test_lars_default_wd_mult_only_weights():
    opt = mx.optimizer.LARS(param_idx2name={0: "x_weight", 1: "x_gamma", 2: "x_bias"}, wd=0.3)
    assert opt._get_wds([0, 1, 2]) == [0.3, 0.0, 0.0]
    # the base Optimizer keeps weight decay on gamma
    assert mx.optimizer.SGD(param_idx2name={1: "x_gamma"}, wd=0.3)._get_wd(1) == 0.3


def test_lars_does_not_change_its_inputs():
    opt = mx.optimizer.LARS(learning_rate=0.1, momentum=0.9, rescale_grad=3.0)
    w = mx.nd.array(W[0])
    g = mx.nd.array(G[0])
    opt.update(0, w, g, opt.create_state(0, w))
    np.testing.assert_array_equal(g.asnumpy(), G[0])


def _numpy_lbsgd(strategy, steps, lr, wd, momentum, batch_scale, nwup, init_updates=0):
    w = W[0].astype(np.float64)
    mom = np.zeros_like(w)
    acc, count = None, init_updates
    for k in range(steps):
        g = G[0].astype(np.float64) * (k + 1)
        acc = g if acc is None else acc + g
        count += 1
        if count % batch_scale:
            continue
        g, acc = acc / batch_scale, 0.0
        if strategy == "lars":
            w2, g2 = (w * w).sum(), (g * g).sum()
            mult = min(max(math.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01), 100)
        elif count >= nwup:
            mult = batch_scale
        else:
            frac = count / nwup
            mult = 1 + (batch_scale - 1) * {"linear": frac, "power2": frac * frac,
                                            "sqrt": math.sqrt(frac)}[strategy]
        mom = momentum * mom - lr * mult * (g + wd * w)
        w = w + mom
    return w


@pytest.mark.parametrize("strategy", ["linear", "power2", "sqrt", "lars"])
def test_lbsgd_formula_in_numpy(strategy):
    opt = mx.optimizer.LBSGD(learning_rate=0.05, wd=0.02, momentum=0.7, batch_scale=3,
                             warmup_epochs=2, updates_per_epoch=5, warmup_strategy=strategy)
    w = mx.nd.array(W[0])
    state = opt.create_state(0, w)
    for k in range(12):
        opt.update(0, w, mx.nd.array(G[0] * (k + 1)), state)
    want = _numpy_lbsgd(strategy, 12, 0.05, 0.02, 0.7, 3, 10)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_lbsgd_nan_gradient_reaches_weight_between_steps():
    opt = mx.optimizer.LBSGD(batch_scale=2)
    w = mx.nd.array(W[0])
    opt.update(0, w, mx.nd.array(np.full(SHAPES[0], np.nan, np.float32)), None)
    assert np.isnan(w.asnumpy()).all()


def test_updater_aggregates_lars_in_groups():
    calls = []

    class Spy(mx.optimizer.LARS):
        def update_multi_precision(self, index, weight, grad, state):
            calls.append(tuple(index))
            super().update_multi_precision(index, weight, grad, state)

    opt = Spy(learning_rate=0.1, momentum=0.9)
    upd = mx.optimizer.get_updater(opt)
    ws = [mx.nd.array(np.ones((2, 2), np.float32) * (i + 1)) for i in range(6)]
    ws.append(mx.nd.ones((2,), dtype="float16"))
    gs = [mx.nd.ones(w.shape, dtype=w.dtype) for w in ws]
    with pytest.warns(UserWarning, match="Accumulating with float16"):   # as MXNet warns
        upd(list(range(7)), gs, ws)
    # float32 weights in groups of aggregate_num (4), the float16 one on its own
    assert calls == [(0, 1, 2, 3), (4, 5), (6,)]
    upd(3, gs[3], ws[3])
    assert calls[-1] == (3,)


@pytest.mark.parametrize("name,kw", [
    ("lars", dict(learning_rate=1.0, momentum=0.9, eta=0.1)),
    ("lbsgd", dict(learning_rate=0.05, momentum=0.9, batch_scale=2, warmup_epochs=1,
                   updates_per_epoch=4)),
])
def test_trainer_fits_a_line(name, kw):
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, (64, 3)).astype(np.float32)
    y = x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3
    net = mx.gluon.nn.Dense(1, in_units=3)
    net.initialize(mx.init.Normal(0.5))
    trainer = mx.gluon.Trainer(net.collect_params(), name, kw)
    losses = []
    for _ in range(60):
        with mx.autograd.record():
            loss = ((net(mx.nd.array(x)) - mx.nd.array(y)) ** 2).mean()
        loss.backward()
        trainer.step(1)
        losses.append(float(loss.asscalar()))
    assert losses[-1] < 0.2 * losses[0]
