"""Gluon training step: MLP 784-512-512-10, batch 128, SGD — imperative, hybridized, NumPy.

One full step is forward, softmax cross-entropy, backward and the SGD update
(``gluon.Trainer.step``). The same step written by hand in NumPy
(``bench.common.numpy_mlp_step``) is the floor. The three variants first check
that they agree (one step from the same weights gives the same weights), then
run in alternating blocks so that machine noise hits all alike; the table
shows the median time per step and the ratios (target: hybridized <= 1.2x
NumPy). "numpy+dx" adds the one product autograd computes that the floor skips
(the gradient of the first layer's input). Times are this process's CPU time by default (``--clock wall``).

A second report (``--mem-steps``, default 1000; 0 skips it) trains the demo
CNN (``gpunda._tools.demo.build_model``, hybridized) for that many steps and compares
the resident set size at step 100 and at the end: growth under 5% means the
training loop does not leak. It is a benchmark report, not a test.

Run: ``python bench/bench_mlp.py`` (``--json PATH`` for where figures go).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).absolute().parents[1]))

import gpunda as mx  # noqa: E402
from bench.common import time_block as _time_block  # noqa: E402
from gpunda import autograd, gluon, nd  # noqa: E402
from bench.common import mlp_inputs, numpy_mlp_step  # noqa: E402

LR = 0.1


def make_gpunda(ws, bs, ctx, hybridize):
    """The MLP as Gluon code with the given weights, its loss and an SGD Trainer."""
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(512, activation="relu", in_units=784),
                gluon.nn.Dense(512, activation="relu", in_units=512),
                gluon.nn.Dense(10, in_units=512))
    net.initialize(ctx=ctx)
    for layer, w, b in zip(net, ws, bs):
        layer.weight.set_data(nd.array(w, ctx=ctx))
        layer.bias.set_data(nd.array(b, ctx=ctx))
    if hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
    return net, loss_fn, trainer


def gluon_step(net, loss_fn, trainer, x, y):
    """One training step exactly as a Gluon user writes it."""
    with autograd.record():
        loss = loss_fn(net(x), y)
    loss.backward()
    trainer.step(x.shape[0])


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_flatness(steps, batch=64, ctx=None):
    """RSS at step 100 and at ``steps`` of demo-CNN training (hybridized)."""
    from gpunda._tools.demo import build_model
    ctx = ctx or mx.current_context()
    r = np.random.default_rng(7)
    xs = [nd.array(r.standard_normal((batch, 1, 8, 8)).astype(np.float32), ctx=ctx)
          for _ in range(8)]
    ys = [nd.array(r.integers(0, 10, batch).astype(np.float32), ctx=ctx) for _ in range(8)]
    net = build_model()
    net.initialize(init="xavier", ctx=ctx)
    net.hybridize(static_alloc=True, static_shape=True)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.01, "momentum": 0.9})
    rss = {}
    t0 = time.perf_counter()
    for i in range(1, steps + 1):
        gluon_step(net, loss_fn, trainer, xs[i % 8], ys[i % 8])
        if i == 100 or i == steps:
            nd.waitall()
            rss[i] = _rss_bytes()
    return rss, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=9)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--clock", choices=["process", "wall"], default="process",
                    help="CPU time of this process (robust on a busy machine) or wall time")
    ap.add_argument("--mem-steps", type=int, default=1000,
                    help="steps of the demo CNN for the memory report (0: skip)")
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS threads for every variant (threadpoolctl; 0 leaves them alone)")
    ap.add_argument("--json", default=str(Path(__file__).with_name("bench_mlp.json")))
    a = ap.parse_args(argv)
    blas = "unpinned"
    if a.threads:
        try:
            from threadpoolctl import threadpool_info, threadpool_limits
            _limits = threadpool_limits(a.threads)   # noqa: F841 -- held for the whole run
            blas = ", ".join(f"{d.get('internal_api')} {d.get('num_threads')} thread(s)"
                             for d in threadpool_info()) or "none found"
        except ImportError:
            blas = "threadpoolctl missing: unpinned"
    ctx = mx.current_context()
    x, y, ws, bs = mlp_inputs()
    xd = nd.array(x, ctx=ctx)
    yd = nd.array(y.astype(np.float32), ctx=ctx)

    # the variants must agree before their times mean anything
    ref_w, ref_b = [w.copy() for w in ws], [b.copy() for b in bs]
    numpy_mlp_step(x, y, ref_w, ref_b, LR)
    models = {}
    for name, hyb in (("imperative", False), ("hybridized", True)):
        models[name] = make_gpunda(ws, bs, ctx, hyb)
        gluon_step(*models[name], xd, yd)
        for layer, w, b in zip(models[name][0], ref_w, ref_b):
            np.testing.assert_allclose(layer.weight.data().asnumpy(), w, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(layer.bias.data().asnumpy(), b, rtol=1e-4, atol=1e-5)

    nw, nb = [w.copy() for w in ws], [b.copy() for b in bs]
    gdx = np.ones((x.shape[0], ws[0].shape[0]), np.float32)

    def numpy_with_dx():
        # the floor plus the first layer's data gradient, which autograd computes too
        # (x needs no gradient, but FullyConnected's rule returns all of its inputs')
        numpy_mlp_step(x, y, nw, nb, LR)
        return gdx @ nw[0]

    runs = {"numpy": lambda: numpy_mlp_step(x, y, nw, nb, LR), "numpy+dx": numpy_with_dx}
    for name, m in models.items():
        runs[name] = (lambda m=m: gluon_step(*m, xd, yd))
    clock = time.process_time if a.clock == "process" else time.perf_counter
    times = {k: [] for k in runs}
    for f in runs.values():     # warm-up
        _time_block(f, 2, clock)
    for blk in range(a.blocks):
        order = list(runs) if blk % 2 == 0 else list(reversed(runs))
        for k in order:
            times[k].append(_time_block(runs[k], a.reps, clock))
    nd.waitall()
    med = {k: statistics.median(v) for k, v in times.items()}
    ratios = {k: med[k] / med["numpy"] for k in runs}
    print(f"MLP 784-512-512-10, batch 128, SGD training step on {ctx}; median of {a.blocks} "
          f"blocks x {a.reps} reps, {a.clock} time; BLAS: {blas}")
    print(f"{'':12s} {'ms/step':>10s} {'vs numpy':>9s}")
    for k in runs:
        print(f"{k:12s} {med[k] * 1e3:10.2f} {ratios[k]:8.2f}x")
    print(f"hybridized/(numpy+dx) {med['hybridized'] / med['numpy+dx']:.2f}x: gpunda's "
          f"overhead over the same arithmetic")
    target = ratios["hybridized"] <= 1.2
    print(f"hybridized/numpy {ratios['hybridized']:.2f}x (target <= 1.2x: "
          f"{'met' if target else 'NOT met'})")
    out = {"device": str(ctx), "clock": a.clock, "blas": blas, "blocks": a.blocks, "reps": a.reps,
           "median_step_s": med, "ratio_vs_numpy": ratios, "all_blocks_s": times}

    if a.mem_steps:
        steps = max(a.mem_steps, 101)
        rss, dt = memory_flatness(steps, ctx=ctx)
        growth = (rss[steps] - rss[100]) / rss[100]
        print(f"demo CNN, {steps} hybridized training steps (batch 64) in {dt:.1f} s: RSS at "
              f"step 100 {rss[100] / 2**20:.1f} MiB, at step {steps} {rss[steps] / 2**20:.1f} "
              f"MiB, growth {growth * 100:+.2f}% (target < 5%: "
              f"{'met' if growth < 0.05 else 'NOT met'})")
        out["memory"] = {"steps": steps, "rss_step100": rss[100], "rss_end": rss[steps],
                         "growth": growth, "seconds": dt}
    Path(a.json).write_text(json.dumps(out, indent=2))
    print(f"wrote {a.json}")
    return out


if __name__ == "__main__":
    main()
