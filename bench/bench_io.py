"""Checkpoint I/O: nd.save / nd.load of a ~100 MB .params file against raw NumPy I/O.

The file is a dict of float32 arrays shaped like a small network's weights
(``arg:layerK_weight``/``_bias``). The floors are NumPy writing the same array
bytes with ``ndarray.tofile`` into one file and reading the whole .params file
back with ``np.fromfile``: what any reader must at least pay. nd.save writes a
temporary file and renames it over the target (so a failed save never destroys
the old file); the same done with NumPy is shown too, as on some file systems
(ext4's replace-by-rename heuristic) the rename itself starts a flush. Blocks alternate
between gpunda and NumPy so machine noise hits both alike; the table shows
medians and the ratios (target <= 1.5x). Run: ``python bench/bench_io.py``
(``--mb``, ``--dir`` for the scratch folder -- ``--dir /dev/shm`` takes the disk
out and measures only the software path --, ``--json PATH`` for the figures).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpunda as mx  # noqa: E402


def make_params(total_mb, seed=0):
    """A dict name -> NDArray of about ``total_mb`` MB of float32, big and small arrays mixed."""
    rng = np.random.default_rng(seed)
    n_layers = 8
    per = int(total_mb * 2 ** 20 / 4 / n_layers)
    cols = 1024
    out = {}
    for k in range(n_layers):
        rows = max(1, per // cols)
        out[f"arg:layer{k}_weight"] = mx.nd.array(rng.standard_normal((rows, cols), np.float32))
        out[f"arg:layer{k}_bias"] = mx.nd.array(rng.standard_normal(rows, np.float32))
    return out


def numpy_save(path, hosts):
    with open(path, "wb") as f:
        for h in hosts:
            h.tofile(f)


def numpy_save_replace(path, hosts):
    """The floor for an atomic save: the same bytes to a new file, renamed over the old one."""
    numpy_save(path + ".tmp", hosts)
    os.replace(path + ".tmp", path)


def _time_block(fn, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--blocks", type=int, default=7)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--dir", default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--json", default=str(Path(__file__).parent / "results" / "bench_io.json"))
    a = ap.parse_args(argv)

    params = make_params(a.mb)
    hosts = [v.asnumpy() for v in params.values()]
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        path = os.path.join(tmp, "model-0000.params")
        raw_path = os.path.join(tmp, "raw.bin")

        # correctness first: what comes back is what went in, and the file holds every byte
        mx.nd.save(path, params)
        back = mx.nd.load(path)
        assert list(back) == list(params)
        for k, h in zip(params, hosts):
            assert back[k].asnumpy().tobytes() == h.tobytes(), k
        size = os.path.getsize(path)
        data_bytes = sum(h.nbytes for h in hosts)
        assert size - data_bytes < 4096, (size, data_bytes)
        del back

        runs = {
            "save": {"gpunda": lambda: mx.nd.save(path, params),
                     "numpy": lambda: numpy_save(raw_path, hosts),
                     "numpy_replace": lambda: numpy_save_replace(raw_path + "2", hosts)},
            "load": {"gpunda": lambda: mx.nd.load(path),
                     "numpy": lambda: np.fromfile(path, dtype=np.uint8)},
        }
        times = {op: {k: [] for k in fns} for op, fns in runs.items()}
        for op, fns in runs.items():
            for f in fns.values():      # warm-up, also brings the files into the page cache
                _time_block(f, 1)
            for b in range(a.blocks):
                order = list(fns) if b % 2 == 0 else list(reversed(list(fns)))
                for k in order:
                    times[op][k].append(_time_block(fns[k], a.reps))

    med = {op: {k: statistics.median(v) for k, v in t.items()} for op, t in times.items()}
    ratio = {op: m["gpunda"] / m["numpy"] for op, m in med.items()}
    mb = size / 2 ** 20
    print(f".params file of {mb:.1f} MB ({len(params)} float32 arrays); median of {a.blocks} "
          f"blocks x {a.reps} reps")
    print(f"{'':6s} {'gpunda (ms)':>12s} {'numpy (ms)':>11s} {'gpunda GB/s':>12s} {'ratio':>7s}")
    for op in runs:
        g, n = med[op]["gpunda"], med[op]["numpy"]
        print(f"{op:6s} {g * 1e3:12.1f} {n * 1e3:11.1f} {size / g / 1e9:12.2f} {ratio[op]:6.2f}x")
    rep = med["save"]["numpy_replace"]
    ratio["save_vs_replace"] = med["save"]["gpunda"] / rep
    print(f"numpy to a new file + os.replace (what an atomic save must do): {rep * 1e3:.1f} ms; "
          f"gpunda save / that = {ratio['save_vs_replace']:.2f}x")
    print("target: ratio <= 1.5x (numpy floor: ndarray.tofile of the same arrays into one file "
          "/ np.fromfile of the whole file)")
    out = {"file_bytes": size, "arrays": len(params), "blocks": a.blocks, "reps": a.reps,
           "median_s": med, "ratio": ratio, "all_blocks_s": times}
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(out, indent=2))
    print(f"wrote {a.json}")
    return out


if __name__ == "__main__":
    main()
