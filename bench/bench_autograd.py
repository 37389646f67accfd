"""Autograd overhead: a chain of element-wise ops recorded then differentiated.

A chain of N ops (mul, add, tanh cycling) on a float32 vector runs under
``autograd.record()`` followed by ``backward()``; next to it the same forward
and backward written by hand in NumPy. Blocks of repetitions alternate between
the two so that machine noise hits both alike; the table shows the median time
per op of each and their ratio. Times are this process's CPU time by default,
so other work on a shared machine disturbs them less (``--clock wall``).
Run: ``python bench/bench_autograd.py``
(``--json PATH`` to choose where the figures go).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).absolute().parents[1]))

import gpunda as mx  # noqa: E402
from bench.common import time_block as _time_block  # noqa: E402


def gpunda_step(x, c, n_ops):
    """Forward and backward of the chain with gpunda autograd."""
    with mx.autograd.record():
        y = x
        for i in range(n_ops):
            k = i % 3
            if k == 0:
                y = y * c
            elif k == 1:
                y = y + c
            else:
                y = mx.nd.tanh(y)
    y.backward()


def numpy_step(x, c, n_ops, gx, gc):
    """The same chain by hand: keep what backward needs, then apply the chain rule."""
    saved = []
    y = x
    for i in range(n_ops):
        k = i % 3
        if k == 0:
            saved.append(y)
            y = y * c
        elif k == 1:
            y = y + c
        else:
            y = np.tanh(y)
            saved.append(y)
    g = np.ones_like(y)
    acc_c = np.zeros_like(c)
    for i in reversed(range(n_ops)):
        k = i % 3
        if k == 0:
            acc_c = acc_c + g * saved.pop()
            g = g * c
        elif k == 1:
            acc_c = acc_c + g
        else:
            t = saved.pop()
            g = g * (1 - t * t)
    gx[...] = g
    gc[...] = acc_c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=100)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--blocks", type=int, default=15)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--clock", choices=["process", "wall"], default="process",
                    help="CPU time of this process (robust on a busy machine) or wall time")
    ap.add_argument("--json", default=str(Path(__file__).with_name("bench_autograd.json")))
    a = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    xv = rng.uniform(-1, 1, a.size).astype(np.float32)
    cv = rng.uniform(0.5, 1.0, a.size).astype(np.float32)
    x, c = mx.nd.array(xv), mx.nd.array(cv)
    x.attach_grad()
    c.attach_grad()
    gx, gc = np.zeros_like(xv), np.zeros_like(cv)

    # the two must agree before their times mean anything
    gpunda_step(x, c, a.ops)
    numpy_step(xv, cv, a.ops, gx, gc)
    np.testing.assert_allclose(x.grad.asnumpy(), gx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c.grad.asnumpy(), gc, rtol=1e-4, atol=1e-5)

    clock = time.process_time if a.clock == "process" else time.perf_counter
    runs = {"gpunda": lambda: gpunda_step(x, c, a.ops),
            "numpy": lambda: numpy_step(xv, cv, a.ops, gx, gc)}
    times = {k: [] for k in runs}
    for k, f in runs.items():     # warm-up
        _time_block(f, 3, clock)
    for b in range(a.blocks):
        order = list(runs) if b % 2 == 0 else list(reversed(runs))
        for k in order:
            times[k].append(_time_block(runs[k], a.reps, clock))
    med = {k: statistics.median(v) for k, v in times.items()}
    per_op = {k: v / a.ops * 1e6 for k, v in med.items()}
    ratio = med["gpunda"] / med["numpy"]

    print(f"chain of {a.ops} ops (mul/add/tanh) on ({a.size},) float32, forward + backward; "
          f"median of {a.blocks} blocks x {a.reps} reps, {a.clock} time")
    print(f"{'':10s} {'per step (ms)':>14s} {'per op (us)':>12s}")
    for k in runs:
        print(f"{k:10s} {med[k] * 1e3:14.3f} {per_op[k]:12.2f}")
    print(f"ratio gpunda/numpy: {ratio:.2f}x (target <= 2.5x)")
    out = {"ops": a.ops, "size": a.size, "dtype": "float32", "blocks": a.blocks, "reps": a.reps,
           "clock": a.clock,
           "median_step_s": med, "per_op_us": per_op, "ratio": ratio,
           "all_blocks_s": times}
    Path(a.json).write_text(json.dumps(out, indent=2))
    print(f"wrote {a.json}")
    return out


if __name__ == "__main__":
    main()
