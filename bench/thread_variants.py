"""Where gpunda's speed-up over threads comes from: the same cases with the BLAS pool and
gpunda's own kernel pool (NOTE [CPU threads]) switched on one at a time.

Variants are environment settings of one gpunda worker each: ``OMP_NUM_THREADS`` is
gpunda's thread count (its kernel pool), ``OPENBLAS_NUM_THREADS`` the BLAS pool's. Blocks
of all variants interleave in every round; each figure is the median of the rounds' wall
times. Usage: ``python -m bench.thread_variants [--cases w7,w11] [--threads 2] [--rounds 5]``.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys

from bench.common import CASES, PER_UNIT
from bench.run import ROOT, Worker, _fmt, _matches


def variants(t):
    """(label, gpunda threads, BLAS threads)."""
    return [("1 thread", 1, 1), (f"BLAS {t}", 1, t), (f"pool {t}", t, 1),
            (f"pool {t} + BLAS {t}", t, t)]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.thread_variants", description=__doc__)
    ap.add_argument("--cases", default="w3,w7,w11")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    cases = [c for c in CASES if any(_matches(c, p) for p in args.cases.split(","))]
    base = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    workers = {}
    for label, pool, blas in variants(args.threads):
        env = dict(base, OMP_NUM_THREADS=str(pool), OPENBLAS_NUM_THREADS=str(blas),
                   MKL_NUM_THREADS=str(blas))
        workers[label] = Worker("gpunda", "cpu", pool, env)
    times = {(c, v): [] for c in cases for v in workers}
    try:
        for c in cases:
            for w in workers.values():
                r = w.ask(cmd="setup", case=c)
                if "error" in r:
                    raise SystemExit(f"{c}: {r['error']}")
        for rnd in range(args.rounds):
            for c in cases:
                order = list(workers)
                random.Random(rnd * 31 + len(c)).shuffle(order)
                for v in order:
                    r = workers[v].ask(cmd="time", case=c, number=1)
                    times[(c, v)].append(r["sec_per_call"] / PER_UNIT.get(c, 1))
            print(f"  round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for w in workers.values():
            w.close()
    labels = list(workers)
    print("| case | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for c in cases:
        one = statistics.median(times[(c, labels[0])])
        cells = []
        for v in labels:
            m = statistics.median(times[(c, v)])
            cells.append(f"{_fmt(m)} ({one / m:.2f}x)")
        print(f"| {c} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
