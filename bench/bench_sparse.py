"""Sparse dot and sparse-gradient embedding training against their floors.

Cases:

* ``csr_dot``: ``nd.dot(csr, dense)`` with a 10000x10000 csr of density 0.1%
  and a 10000x64 dense operand, against ``scipy_csr @ dense`` on the same data.
* ``csr_dot_t``: ``nd.dot(csr, dense, transpose_a=True)`` (row_sparse result)
  against ``scipy_csr.T @ dense``.
* ``emb_step``: one training step of an Embedding (100000 x 64, batch 256 x 8
  ids) with ``sparse_grad=True`` (row_sparse gradient + lazy SGD) against the same
  step with a dense gradient and a dense SGD update.

Results are checked against each other before timing. Blocks of repetitions
alternate between the two sides so machine noise hits both alike; the table
shows medians and ratios (target for the dots: <= 1.2x raw SciPy). Times are
this process's CPU time by default (``--clock wall``); ``--ctx gpu`` runs the
gpunda side on GPU 0 (the floor is then cupyx). Run: ``python bench/bench_sparse.py``.
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
from gpunda import nd  # noqa: E402


def _time_block(fn, reps, clock, sync):
    t0 = clock()
    for _ in range(reps):
        fn()
    sync()
    return (clock() - t0) / reps


def _compare(runs, blocks, reps, clock, sync):
    times = {k: [] for k in runs}
    for f in runs.values():
        _time_block(f, 2, clock, sync)      # warm-up
    for b in range(blocks):
        for k in (list(runs) if b % 2 == 0 else list(reversed(runs))):
            times[k].append(_time_block(runs[k], reps, clock, sync))
    return {k: statistics.median(v) for k, v in times.items()}, times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--density", type=float, default=0.001)
    ap.add_argument("--cols", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=100000)
    ap.add_argument("--blocks", type=int, default=9)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--ctx", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--clock", choices=["process", "wall"], default="process")
    ap.add_argument("--json", default=str(Path(__file__).with_name("bench_sparse.json")))
    a = ap.parse_args(argv)
    import scipy.sparse as sps

    ctx = mx.gpu(0) if a.ctx == "gpu" else mx.cpu()
    if a.ctx == "gpu":
        import cupy
        import cupyx.scipy.sparse as csps

        def sync():
            cupy.cuda.get_current_stream().synchronize()
        clock = time.perf_counter     # GPU work is not this process's CPU time
    else:
        def sync():
            pass
        clock = time.process_time if a.clock == "process" else time.perf_counter

    rng = np.random.default_rng(0)
    m = sps.random(a.n, a.n, density=a.density, format="csr", dtype=np.float32, random_state=rng)
    dense = rng.standard_normal((a.n, a.cols)).astype(np.float32)
    csr = nd.sparse.csr_matrix(m, ctx=ctx)
    x = nd.array(dense, ctx=ctx)
    if a.ctx == "gpu":
        fm, fd = csps.csr_matrix(m), cupy.asarray(dense)
    else:
        fm, fd = m, dense

    # agree first
    np.testing.assert_allclose(nd.dot(csr, x).asnumpy(), m @ dense, rtol=1e-4, atol=1e-4)
    t = nd.dot(csr, x, transpose_a=True)
    assert t.stype == "row_sparse"
    np.testing.assert_allclose(t.asnumpy(), m.T @ dense, rtol=1e-4, atol=1e-4)

    results = {}
    print(f"csr {a.n}x{a.n} density {a.density} (nnz {m.nnz}) x dense {a.n}x{a.cols} float32, "
          f"ctx {ctx}; median of {a.blocks} blocks x {a.reps} reps")
    print(f"{'case':12s} {'gpunda (ms)':>12s} {'floor (ms)':>11s} {'ratio':>7s}")
    for case, g, f in (("csr_dot", lambda: nd.dot(csr, x), lambda: fm @ fd),
                       ("csr_dot_t", lambda: nd.dot(csr, x, transpose_a=True), lambda: fm.T @ fd)):
        med, blocks = _compare({"gpunda": g, "floor": f}, a.blocks, a.reps, clock, sync)
        ratio = med["gpunda"] / med["floor"]
        results[case] = {"median_s": med, "ratio": ratio, "blocks_s": blocks}
        print(f"{case:12s} {med['gpunda'] * 1e3:12.3f} {med['floor'] * 1e3:11.3f} {ratio:6.2f}x")

    # embedding training step: sparse gradient + lazy SGD vs dense gradient + dense SGD
    batch = nd.array(rng.integers(0, a.vocab, (256, 8)).astype(np.float32), ctx=ctx)
    w0 = (rng.standard_normal((a.vocab, a.cols)) * 0.01).astype(np.float32)

    def make(sparse):
        w = nd.array(w0, ctx=ctx)
        w.attach_grad(stype="row_sparse" if sparse else "default")

        def step():
            with mx.autograd.record():
                y = nd.Embedding(batch, w, input_dim=a.vocab, output_dim=a.cols,
                                 sparse_grad=sparse)
                loss = nd.sum(y * y)
            loss.backward()
            nd.sgd_update(w, w.grad, lr=0.01, out=w)
        return w, step

    ws, sparse_step = make(True)
    wd, dense_step = make(False)
    sparse_step()
    dense_step()
    np.testing.assert_allclose(ws.asnumpy(), wd.asnumpy(), rtol=1e-5, atol=1e-6)
    med, blocks = _compare({"gpunda": sparse_step, "floor": dense_step}, a.blocks,
                           max(1, a.reps // 2), clock, sync)
    ratio = med["gpunda"] / med["floor"]
    results["emb_step"] = {"median_s": med, "ratio": ratio, "blocks_s": blocks}
    print(f"{'emb_step':12s} {med['gpunda'] * 1e3:12.3f} {med['floor'] * 1e3:11.3f} {ratio:6.2f}x"
          f"  (Embedding {a.vocab}x{a.cols}, sparse_grad vs dense grad)")
    out = {"n": a.n, "density": a.density, "cols": a.cols, "nnz": int(m.nnz), "vocab": a.vocab,
           "ctx": str(ctx), "clock": a.clock, "cases": results}
    Path(a.json).write_text(json.dumps(out, indent=2))
    print(f"wrote {a.json}")
    return out


if __name__ == "__main__":
    main()
