"""Make tests/data/lars_lbsgd_mxnet191.npz with real MXNet 1.9.1 (CPU): the weights after
each update of mx.optimizer.LARS and LBSGD, for the cases of tests/test_optimizer_lars_lbsgd.py.

Run with /work/mxvenv/bin/python (mxnet 1.9.1). Each case ``key`` stores ``key/t<k>/w<i>``:
weight ``i`` after update ``k``; the inputs are rebuilt by the test from the same seed.
"""
import os

import numpy as np
import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.RandomState(19)
SHAPES = [(2, 3), (3,), (4,)]
NAMES = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma"}
W = [rng.uniform(-1, 1, s).astype(np.float32) for s in SHAPES]
G = [rng.uniform(-1, 1, s).astype(np.float32) for s in SHAPES]
STEPS = 3
out = {"inputs/w%d" % i: w for i, w in enumerate(W)}
out.update({"inputs/g%d" % i: g for i, g in enumerate(G)})


def record(key, k, ws):
    for i, w in enumerate(ws):
        out["%s/t%d/w%d" % (key, k, i)] = w.asnumpy().astype(np.float32)


def lars_case(key, dtype="float32", per_index=False, rsp=False, zero_grad=False,
              sched=False, **kw):
    if sched:
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
            for i in range(len(ws)):
                opt.update_multi_precision(i, ws[i], gs[i], states[i])
        else:
            opt.update_multi_precision(list(range(len(ws))), ws, gs, states)
        record(key, k, ws)


base = dict(learning_rate=0.1, wd=0.01, eta=0.5, eps=1e-3)
lars_case("lars_mom", momentum=0.9, rescale_grad=0.8, clip_gradient=0.5,
          param_idx2name=NAMES, **base)
lars_case("lars_nomom_single", per_index=True, **base)
lars_case("lars_sched", momentum=0.9, sched=True, **base)
lars_case("lars_sched_nocorr", momentum=0.9, sched=True, momentum_correction=False, **base)
lars_case("lars_rsp", rsp=True, momentum=0.9, param_idx2name=NAMES, **base)
lars_case("lars_rsp_std", rsp=True, momentum=0.9, lazy_update=False, **base)
lars_case("lars_zero_grad", zero_grad=True, momentum=0.9, **base)
lars_case("lars_fp16_mp", dtype="float16", momentum=0.9, multi_precision=True, **base)
lars_case("lars_fp16_mp_nomom", dtype="float16", multi_precision=True, **base)
lars_case("lars_fp16_mp_single", dtype="float16", per_index=True, momentum=0.9,
          multi_precision=True, **base)

LB_STEPS = 6


def lbsgd_case(key, dtype="float32", alias=False, sched=False, **kw):
    if sched:
        kw["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)
    opt = mx.optimizer.LBSGD(**kw)
    w = mx.nd.array(W[0], dtype=dtype)
    state = opt.create_state_multi_precision(0, w)
    g = mx.nd.zeros(SHAPES[0], dtype=dtype)
    for k in range(LB_STEPS):
        if alias:   # a Gluon-style gradient buffer, overwritten in place every step
            g[:] = G[0] * (k + 1)
        else:
            g = mx.nd.array(G[0] * (k + 1), dtype=dtype)
        opt.update_multi_precision(0, w, g, state)
        record(key, k, [w])


lb = dict(learning_rate=0.1, wd=0.01, momentum=0.9, batch_scale=2, warmup_epochs=1,
          updates_per_epoch=3)
for strategy in ("linear", "power2", "sqrt", "lars"):
    lbsgd_case("lbsgd_" + strategy, warmup_strategy=strategy, **lb)
lbsgd_case("lbsgd_begin", **dict(lb, batch_scale=3, begin_epoch=1, warmup_epochs=2))
lbsgd_case("lbsgd_alias", alias=True, **dict(lb, momentum=0.0))
lbsgd_case("lbsgd_bs1_sched", sched=True, **dict(lb, batch_scale=1, rescale_grad=0.5,
                                                  clip_gradient=0.3))
lbsgd_case("lbsgd_fp16_mp", dtype="float16", multi_precision=True, **lb)
lbsgd_case("lbsgd_unknown_strategy", warmup_strategy="cosine", **dict(lb, batch_scale=1))

np.savez_compressed(os.path.join(HERE, "lars_lbsgd_mxnet191.npz"), **out)
print("wrote", len(out), "arrays")
