"""CachedOp(static_alloc, static_shape) vs imperative gpunda vs hand-written NumPy.

Two workloads: a chain of 50 small element-wise ops on a (64,) vector, and an
MLP forward 784-512-512-10 at batch 128. Variants are timed interleaved
(round-robin batches) and the median per call is reported. A third section
measures the decision behind NOTE [Static memory plan]: for a non-element-wise
op (a GEMM), is "compute then copy into a planned buffer" faster than keeping
the fresh result?

    python bench/bench_cachedop.py [--rounds 15]
(OPENBLAS_NUM_THREADS=1 steadies the MLP figures on a busy machine.)
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpunda as mx  # noqa: E402
from gpunda import nd, sym  # noqa: E402

_PATTERN = 5   # op kinds in the chain: sin, *1.01, +x, tanh, -0.1


def chain(x, n, sin, tanh):
    """The 50-op chain on ``x`` (Symbol, NDArray or NumPy array) with that library's
    sin and tanh; the arithmetic is the same for all three."""
    h = x
    for i in range(n):
        k = i % _PATTERN
        h = (sin(h) if k == 0 else h * 1.01 if k == 1 else h + x if k == 2
             else tanh(h) if k == 3 else h - 0.1)
    return h


def mlp_sym():
    x = sym.var("x")
    h = sym.relu(sym.FullyConnected(x, num_hidden=512, name="fc1"))
    h = sym.relu(sym.FullyConnected(h, num_hidden=512, name="fc2"))
    return sym.FullyConnected(h, num_hidden=10, name="fc3")


def mlp_nd(x, w1, b1, w2, b2, w3, b3):
    h = nd.relu(nd.FullyConnected(x, w1, b1, num_hidden=512))
    h = nd.relu(nd.FullyConnected(h, w2, b2, num_hidden=512))
    return nd.FullyConnected(h, w3, b3, num_hidden=10)


def mlp_np(x, w1, b1, w2, b2, w3, b3):
    h = np.maximum(x @ w1.T + b1, 0)
    h = np.maximum(h @ w2.T + b2, 0)
    return h @ w3.T + b3


def interleaved(fns, rounds, per_batch):
    """Median seconds per call of each fn, timing batches round-robin."""
    times = {k: [] for k in fns}
    for f in fns.values():          # warm-up (plans, caches)
        for _ in range(3):
            f()
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(per_batch):
                f()
            times[k].append((time.perf_counter() - t0) / per_batch)
    return {k: statistics.median(v) for k, v in times.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    flags = [("static_alloc", True), ("static_shape", True)]

    n = 50
    xv = rng.standard_normal(64).astype(np.float32)
    x = nd.array(xv)
    cop = mx.CachedOp(chain(sym.var("x"), n, sym.sin, sym.tanh), flags)
    np.testing.assert_allclose(cop(x).asnumpy(), chain(xv, n, np.sin, np.tanh), rtol=1e-4,
                               atol=1e-5)
    r = interleaved({"cachedop": lambda: cop(x), "imperative": lambda: chain(x, n, nd.sin, nd.tanh),
                     "numpy": lambda: chain(xv, n, np.sin, np.tanh)}, args.rounds, 200)
    print(f"50-op element-wise chain on (64,), median per call:")
    for k, v in r.items():
        print(f"  {k:11s} {v * 1e6:9.1f} us   ({v / r['numpy']:.2f}x numpy)")
    print(f"  memory plan: {cop.memory_plan()}")

    shapes = [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
    pv = [(rng.standard_normal(s) * 0.05).astype(np.float32) for s in shapes]
    ps = [nd.array(p) for p in pv]
    xv = rng.standard_normal((128, 784)).astype(np.float32)
    x = nd.array(xv)
    cop = mx.CachedOp(mlp_sym(), flags)
    np.testing.assert_allclose(cop(x, *ps).asnumpy(), mlp_np(xv, *pv), rtol=1e-4, atol=1e-4)
    r = interleaved({"cachedop": lambda: cop(x, *ps), "imperative": lambda: mlp_nd(x, *ps),
                     "numpy": lambda: mlp_np(xv, *pv)}, args.rounds, 20)
    print("MLP 784-512-512-10 forward, batch 128, median per call:")
    for k, v in r.items():
        print(f"  {k:11s} {v * 1e6:9.1f} us   ({v / r['imperative']:.2f}x imperative)")
    print(f"  memory plan: {cop.memory_plan()}")

    # decision: compute-then-copy into a planned buffer vs keeping the fresh result
    h = np.maximum(xv @ pv[0].T + pv[1], 0)
    w, b = pv[2], pv[3]
    buf = np.empty((128, 512), np.float32)

    def fresh():
        return h @ w.T + b

    def copy_in():
        buf[...] = h @ w.T + b
        return buf

    r = interleaved({"fresh": fresh, "copy": copy_in}, args.rounds, 50)
    print("GEMM 128x512x512 + bias, result kept vs copied into a planned buffer:")
    for k, v in r.items():
        print(f"  {k:6s} {v * 1e6:9.1f} us")


if __name__ == "__main__":
    main()
