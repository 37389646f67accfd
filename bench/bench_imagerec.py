"""ImageRecordIter throughput, gpunda against MXNet 1.9.1's own (target: 0.8x its rate).

One .rec of 2,000 JPEGs (500x375, quality 90, made once in the temp folder); each
framework's ImageRecordIter reads whole epochs of it with the same arguments: resize 256,
random 224x224 crop, random mirror, mean/std, batch 64, 2 decoding threads. Each
framework runs in its own process (MXNet from bench/.venvs/mxnet), and the two alternate
epoch by epoch so that machine noise hits both alike. Figures are images per second of
wall time (the decoding threads are the work), median over the epochs; the target is
gpunda at least 0.8x MXNet's rate.
Run: ``python bench/bench_imagerec.py`` (``--epochs``, ``--threads``, ``--json PATH``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import common as C  # noqa: E402

IMAGES = 2000

CHILD = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
mod, path, threads = sys.argv[2], sys.argv[3], int(sys.argv[4])
mx = __import__(mod)
p = json.loads(sys.argv[5])
it = mx.io.ImageRecordIter(
    path_imgrec=path, data_shape=(3, 224, 224), batch_size=64, resize=256,
    rand_crop=True, rand_mirror=True, shuffle=False,
    mean_r=p["mean"][0], mean_g=p["mean"][1], mean_b=p["mean"][2],
    std_r=p["std"][0], std_g=p["std"][1], std_b=p["std"][2], preprocess_threads=threads)
print("ready", flush=True)
for line in sys.stdin:
    it.reset()
    t0 = time.perf_counter()
    n = 0
    for batch in it:
        batch.data[0].asnumpy()
        n += batch.data[0].shape[0] - batch.pad
    print(json.dumps({"images": n, "seconds": time.perf_counter() - t0}), flush=True)
'''


def _start(python, module, path, threads):
    proc = subprocess.Popen([python, "-c", CHILD, str(HERE.parent), module, path, str(threads),
                             json.dumps({"mean": C.IMAGEREC["mean"], "std": C.IMAGEREC["std"]})],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1"))
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit(f"bench_imagerec: the {module} worker did not start")
    return proc


def _epoch(proc):
    proc.stdin.write("go\n")
    proc.stdin.flush()
    r = json.loads(proc.stdout.readline())
    return r["images"] / r["seconds"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="decoding threads (default 2)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    path = C.imagerec_file(IMAGES)
    peers = {"gpunda": (sys.executable, "gpunda"),
             "mxnet": (str(HERE / ".venvs" / "mxnet" / "bin" / "python"), "mxnet")}
    procs = {k: _start(py, mod, path, args.threads) for k, (py, mod) in peers.items()
             if Path(py).exists()}
    rates = {k: [] for k in procs}
    for k in procs:
        _epoch(procs[k])                       # warm-up epoch
    for _ in range(args.epochs):
        for k in procs:
            rates[k].append(_epoch(procs[k]))
    for p in procs.values():
        p.stdin.close()
        p.wait()
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"ImageRecordIter, {IMAGES} JPEGs 500x375 -> random crop 224 + mirror, batch 64, "
          f"{args.threads} decoding threads; images/s (wall), median of {args.epochs} epochs")
    for k, v in med.items():
        print(f"  {k:7s} {v:8.1f} img/s  [{min(rates[k]):.1f}-{max(rates[k]):.1f}]")
    if "mxnet" in med:
        print(f"  gpunda / mxnet rate: {med['gpunda'] / med['mxnet']:.2f}x (target >= 0.8x)")
    if args.json:
        Path(args.json).write_text(json.dumps({"rates": rates, "median": med}, indent=1))


if __name__ == "__main__":
    main()
