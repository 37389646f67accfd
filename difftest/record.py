"""Record MXNet 1.9.1's answers to generated programs as fixtures.

``python -m difftest record --mxnet-python /work/mxref/bin/python`` regenerates every
fixture under ``difftest/fixtures/``: programs are generated here (the generator reads
gpunda's op registry), run in batches by MXNet in a subprocess (``runner.py``), and
stored with MXNet's normalised results (``fixture.py``). A program that kills the
MXNet process is dropped and named; the batch resumes after it.
"""
from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time

from difftest import fixture, gen_more, gen_ops
from difftest.compare import compact
from difftest.runner import unpack

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "difftest", "fixtures")

# programs per kind at the default scale; ops get N_PER_OP each
COUNTS = {"indexing": 3000, "autograd": 1500, "autograd-bn": 300, "gluon": 500, "saveload": 800}
N_PER_OP = 30


def _run_watched(cmd, env, dst, stall=20.0):
    """Run ``cmd``; kill it when ``dst`` has not grown for ``stall`` seconds (a program
    that never returns: MXNet's samplers loop forever on invalid parameters)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    size, since = os.path.getsize(dst) if os.path.exists(dst) else 0, time.time()
    limit = 10 * stall                  # importing MXNet on a busy machine is slow
    while proc.poll() is None:
        time.sleep(0.5)
        now = os.path.getsize(dst) if os.path.exists(dst) else 0
        if now != size:
            size, since, limit = now, time.time(), stall
        elif time.time() - since > limit:
            proc.kill()
            proc.wait()


def run_mxnet(python, programs, foreign=None):
    """MXNet's normalised results and saved files per program (None where it crashed)."""
    n = len(programs)
    results, files = [None] * n, [None] * n
    with tempfile.TemporaryDirectory(prefix="difftest-rec") as tmp:
        src, dst = os.path.join(tmp, "in.json"), os.path.join(tmp, "out.pkl")
        blobs = {pid: {t: base64.b64encode(b).decode() for t, b in tags.items()}
                 for pid, tags in (foreign or {}).items()}
        with open(src, "w") as f:
            json.dump({"programs": programs, "foreign": blobs}, f)
        start = 0
        env = dict(os.environ, PYTHONPATH=ROOT, MXNET_ENGINE_TYPE="NaiveEngine",
                   OMP_NUM_THREADS="1", MXNET_STORAGE_FALLBACK_LOG_VERBOSE="0")
        while start < n:
            _run_watched([python, "-m", "difftest.runner", "mxnet", src, dst, str(start)],
                         env, dst)
            last = start - 1
            if os.path.exists(dst):
                with open(dst, "rb") as f:
                    while True:
                        try:
                            k, res, fl = pickle.load(f)
                        except EOFError:
                            break
                        if res is None:
                            print("  MXNet crashed or hung on %s; skipped" % programs[k]["id"],
                                  file=sys.stderr)
                        else:
                            results[k], files[k] = unpack(res), fl
                        last = max(last, k)
            if last + 1 < n:
                print("  MXNet died on %s; skipped" % programs[last + 1]["id"], file=sys.stderr)
            start = last + 2
    return results, files


def run_gpunda(programs):
    """gpunda's saved files per program id (so MXNet can load them)."""
    import gpunda
    from difftest.interp import run_program
    out = {}
    for p in programs:
        _, files = run_program(gpunda, p)
        if files:
            out[p["id"]] = files
    return out


def record_all(named, python):
    """Run every program of ``named`` ((fixture name, programs) pairs) on MXNet in one
    batch and write one fixture per name; returns {name: programs kept}."""
    programs = [p for _, progs in named for p in progs]
    saving = [p for p in programs if p["kind"] == "saveload"]
    foreign = run_gpunda(saving) if saving else None
    results, files = run_mxnet(python, programs, foreign)
    results = [None if r is None else compact(r) for r in results]
    os.makedirs(FIXTURES, exist_ok=True)
    kept, k = {}, 0
    for name, progs in named:
        res, fl = results[k:k + len(progs)], files[k:k + len(progs)]
        k += len(progs)
        keep = [i for i, r in enumerate(res) if r is not None]
        fixture.save(os.path.join(FIXTURES, name + ".npz"), [progs[i] for i in keep],
                     [res[i] for i in keep])
        kept[name] = len(keep)
    return kept


def chunks(scale=1.0, seed=0, only=None):
    """(fixture name, programs) for every kind; op programs are grouped by op family."""
    out = []
    by_family = {}
    for p in gen_ops.generate(max(1, int(N_PER_OP * scale)), seed):
        by_family.setdefault(p["family"], []).append(p)
    for fam, progs in sorted(by_family.items()):
        out.append(("op-" + fam, progs))
    for kind, n in COUNTS.items():
        out.append((kind, gen_more.generate(kind, max(1, int(n * scale)), seed)))
    if only:
        out = [(n, p) for n, p in out if any(n.startswith(o) for o in only)]
    return out


def main(args):
    """The ``record`` command."""
    kept = record_all(chunks(args.scale, args.seed, args.only), args.mxnet_python)
    for name, n in kept.items():
        print("%-28s %6d programs" % (name, n))
    print("total %d" % sum(kept.values()))
