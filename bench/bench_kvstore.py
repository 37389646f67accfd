"""KVStore benchmarks under MPI, run as ``python bench/bench_kvstore.py``.

1. All-reduce of 1, 16 and 64 MB float32 through ``KVStore.allreduce_arrays`` vs raw
   mpi4py ``Allreduce`` on the same buffers, 2 ranks, interleaved, median of blocks.
2. The demo's training throughput with 1 and 2 ranks (scaling efficiency).
The script starts mpiexec itself; it reports 'missing' when MPI is not installed.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _worker():
    import numpy as np
    from mpi4py import MPI
    import gpunda as mx
    kv = mx.kv.create("dist_sync")
    comm = MPI.COMM_WORLD
    res = {}
    for mb in (1, 16, 64):
        n = mb * 2 ** 20 // 4
        a = mx.nd.ones((n,), ctx=mx.cpu())
        raw = np.ones(n, np.float32)
        out = np.empty_like(raw)
        reps = max(3, 64 // mb)
        times = {"gpunda": [], "mpi4py": []}
        for _ in range(2):                       # warm-up
            kv.allreduce_arrays([a])
            comm.Allreduce(raw, out)
        for block in range(7):
            for who in (("gpunda", "mpi4py") if block % 2 == 0 else ("mpi4py", "gpunda")):
                comm.Barrier()
                t0 = time.perf_counter()
                for _ in range(reps):
                    if who == "gpunda":
                        kv.allreduce_arrays([a])
                    else:
                        comm.Allreduce(raw, out)
                times[who].append((time.perf_counter() - t0) / reps)
        res[mb] = {k: statistics.median(v) for k, v in times.items()}
    if kv.rank == 0:
        print("RESULT " + json.dumps(res))


def _demo_rate(cmd):
    env = dict(os.environ, GPUNDA_DEFAULT_DEVICE="cpu", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", PYTHONPATH=ROOT)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900).stdout
    rates = [float(m) for m in re.findall(r"test acc [0-9.]+\s+([0-9.]+) samples/s", out)]
    return rates[-1] if rates else None


def main():
    exe = shutil.which("mpiexec")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        exe = None
    if exe is None:
        print("kvstore benchmark: missing (pip install mpich mpi4py)")
        return 0
    env = dict(os.environ, PYTHONPATH=ROOT, GPUNDA_DEFAULT_DEVICE="cpu")
    r = subprocess.run([exe, "-n", "2", sys.executable, __file__, "--worker"], capture_output=True,
                       text=True, env=env, timeout=900)
    line = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    if not line:
        print(r.stdout[-2000:], r.stderr[-2000:])
        return 1
    res = json.loads(line[0][7:])
    print("| message | gpunda KVStore | raw mpi4py Allreduce | throughput ratio |")
    print("|---|---|---|---|")
    for mb, t in res.items():
        print(f"| {mb} MB | {t['gpunda'] * 1e3:.2f} ms | {t['mpi4py'] * 1e3:.2f} ms | "
              f"{t['mpi4py'] / t['gpunda']:.2f}x |")
    demo = [sys.executable, "-m", "gpunda", "demo", "--epochs", "2", "--bench-steps", "0",
            "--device", "cpu"]
    one = _demo_rate(demo)
    two = _demo_rate([exe, "-n", "2"] + demo + ["--kvstore", "dist_sync"])
    if one and two:
        print(f"\ndemo training throughput: 1 rank {one:.0f} samples/s, 2 ranks {two:.0f} "
              f"samples/s: scaling efficiency {two / (2 * one):.0%} (2 cores)")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "kvstore.json"), "w") as f:
        json.dump({"allreduce": res, "demo_1rank": one, "demo_2ranks": two}, f, indent=1)
    return 0


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker()
    else:
        sys.exit(main())
