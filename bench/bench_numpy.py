"""mx.np against mx.nd: the cost of the NumPy front end on the same registry.

Small calls (``a + b`` and ``exp(a)`` on (1,) and (1000,), a scalar multiply, ``sum`` of
(1000,)) and a LeNet training step (batch 64, 28x28, SGD, hybridized and not), each
written once with ``mx.nd`` and once with ``mx.np`` (NumPy mode). Blocks of repetitions
alternate between the two front ends so that machine noise hits both alike; the table
shows the median time per call of each and the ratio np/nd. Times are this process's
CPU time by default (``--clock wall``).
Run: ``python bench/bench_numpy.py`` (``--json PATH`` to choose where the figures go).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as onp

sys.path.insert(0, str(Path(__file__).absolute().parents[1]))

import gpunda as mx  # noqa: E402
from bench.common import time_block as _time_block  # noqa: E402


def small_cases(rng):
    """name -> (nd call, np call) on the same seeded values."""
    from gpunda import np
    cases = {}
    for n in (1, 1000):
        a = rng.uniform(0.5, 1.5, n).astype(onp.float32)
        b = rng.uniform(0.5, 1.5, n).astype(onp.float32)
        na, nb = mx.nd.array(a), mx.nd.array(b)
        pa, pb = np.array(a), np.array(b)
        cases[f"add_{n}"] = (lambda x=na, y=nb: x + y, lambda x=pa, y=pb: x + y)
        cases[f"exp_{n}"] = (lambda x=na: mx.nd.exp(x), lambda x=pa: np.exp(x))
        cases[f"mul_scalar_{n}"] = (lambda x=na: x * 2.0, lambda x=pa: x * 2.0)
        cases[f"sum_{n}"] = (lambda x=na: mx.nd.sum(x), lambda x=pa: np.sum(x))
    return cases


def _lenet():
    from gpunda.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 5, padding=2, activation="sigmoid"), nn.AvgPool2D(2, 2),
            nn.Conv2D(16, 5, activation="sigmoid"), nn.AvgPool2D(2, 2),
            nn.Dense(120, activation="sigmoid"), nn.Dense(84, activation="sigmoid"),
            nn.Dense(10))
    return net


def lenet_step(front, hybridize, X, y):
    """A step function of LeNet built and fed in front end ``front`` ('nd' or 'np')."""
    from gpunda import gluon, np
    mx.random.seed(0)
    net = _lenet()
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    conv = np.array if front == "np" else mx.nd.array
    data, label = conv(X), conv(y)
    net(data)       # deferred initialisation now, right after the seed: both start alike
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})

    def step():
        with mx.autograd.record():
            out = loss(net(data), label)
        out.backward()
        trainer.step(X.shape[0])
        return out
    return step


class _Mode:
    """NumPy mode around a whole block of np calls (not per call: the scope is not what
    is measured)."""

    def __init__(self, front):
        self.front = front

    def __enter__(self):
        if self.front == "np":
            self._scopes = [mx.util.np_shape(True), mx.util.np_array(True)]
            for s in self._scopes:
                s.__enter__()
        return self

    def __exit__(self, *exc):
        if self.front == "np":
            for s in reversed(self._scopes):
                s.__exit__(*exc)
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=15)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--lenet-reps", type=int, default=3)
    ap.add_argument("--clock", choices=["process", "wall"], default="process",
                    help="CPU time of this process (robust on a busy machine) or wall time")
    ap.add_argument("--json", default=str(Path(__file__).with_name("bench_numpy.json")))
    a = ap.parse_args(argv)
    clock = time.process_time if a.clock == "process" else time.perf_counter
    rng = onp.random.default_rng(0)

    with mx.util.np_shape(True), mx.util.np_array(True):
        cases = {k: (v[0], v[1], a.reps) for k, v in small_cases(rng).items()}
    X = rng.uniform(0, 1, (64, 1, 28, 28)).astype(onp.float32)
    y = rng.integers(0, 10, 64).astype(onp.float32)
    for hyb in (False, True):
        nd_step = lenet_step("nd", hyb, X, y)
        with mx.util.np_shape(True), mx.util.np_array(True):
            np_step = lenet_step("np", hyb, X, y)
        cases[f"lenet_step{'_hybrid' if hyb else ''}"] = (nd_step, np_step, a.lenet_reps)

    # the two front ends must agree before their times mean anything
    for name, (f_nd, f_np, _) in cases.items():
        want = f_nd().asnumpy()
        with _Mode("np"):
            got = f_np().asnumpy()
        onp.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)

    results = {}
    for name, (f_nd, f_np, reps) in cases.items():
        runs = {"nd": f_nd, "np": f_np}
        times = {k: [] for k in runs}
        for k, f in runs.items():     # warm-up
            with _Mode(k):
                _time_block(f, 2, clock)
        for b in range(a.blocks):
            for k in (list(runs) if b % 2 == 0 else list(reversed(runs))):
                with _Mode(k):
                    times[k].append(_time_block(runs[k], reps, clock))
        med = {k: statistics.median(v) for k, v in times.items()}
        results[name] = {"median_s": med, "ratio_np_nd": med["np"] / med["nd"],
                         "all_blocks_s": times, "reps": reps}

    print(f"mx.np vs mx.nd, median of {a.blocks} blocks, {a.clock} time")
    print(f"{'case':22s} {'nd (us)':>12s} {'np (us)':>12s} {'np/nd':>8s}")
    for name, r in results.items():
        m = r["median_s"]
        print(f"{name:22s} {m['nd'] * 1e6:12.2f} {m['np'] * 1e6:12.2f} "
              f"{r['ratio_np_nd']:7.2f}x")
    Path(a.json).write_text(json.dumps({"blocks": a.blocks, "clock": a.clock,
                                        "cases": results}, indent=2))
    print(f"wrote {a.json}")
    return results


if __name__ == "__main__":
    main()
