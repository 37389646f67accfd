"""The MXNet-suite ratchet: MXNet 1.9.1's own tests that gpunda passed once must keep passing.

``ci/mxnet-suite-expected.txt`` lists ``file::test`` ids, one a line (``#`` starts a comment).
This script runs the files those ids name through ``../shared/mxnet-suite/run.py`` and fails
when a listed test does not pass. ``--update`` adds the tests that pass now and are not listed
yet; the list only grows (a test leaves it only by hand, with the reason in the commit).

    python ci/mxnet_suite.py                # check (what .ci/run does)
    python ci/mxnet_suite.py --update       # check, then add the new passes
    python ci/mxnet_suite.py --files test_attr test_base --update   # start ratcheting new files
    GPUNDA_TEST_STANDIN_GPU=1 python ci/mxnet_suite.py --context gpu  # the same list on gpu(0)

``--context gpu`` runs the tests with gpu(0) as their default context (the test stand-in GPU
in CPU CI) and checks the same expected list, less the tests that
``ci/mxnet-suite-gpu-exceptions.txt`` names (``file.py::test reason``, the reason required).
The list itself grows on the CPU only.

Without the suite beside the checkout (no ``../shared/mxnet-suite``, no ``$MXNET_SUITE``) it says
so and exits 0 unless ``--require`` is given: CI passes ``--require``, a clone without the suite
can still run the rest.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = ROOT / "ci" / "mxnet-suite-expected.txt"
GPU_EXCEPTIONS = ROOT / "ci" / "mxnet-suite-gpu-exceptions.txt"


def find_suite():
    """The suite's folder: $MXNET_SUITE, else shared/mxnet-suite beside the checkout, or None."""
    for cand in (os.environ.get("MXNET_SUITE"), ROOT.parent / "shared" / "mxnet-suite"):
        if cand and (Path(cand) / "run.py").is_file():
            return Path(cand)
    return None


def read_expected(path=EXPECTED):
    """{file: set(test names)} from the expected-pass list."""
    expected = defaultdict(set)
    if not path.exists():
        return expected
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fname, sep, test = line.partition("::")
        if not sep or not test:
            raise SystemExit(f"{path}: malformed line {line!r} (want file.py::test_name)")
        expected[fname].add(test)
    return expected


def read_exceptions(expected, path=GPU_EXCEPTIONS):
    """{(file, test): reason} of expected tests not required to pass on a GPU context."""
    out = {}
    if not path.exists():
        return out
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        tid, _, reason = line.partition(" ")
        fname, sep, test = tid.partition("::")
        if not sep or not test or not reason.strip():
            raise SystemExit(f"{path}:{n}: want 'file.py::test_name reason', got {line!r}")
        if test not in expected.get(fname, ()):
            raise SystemExit(f"{path}:{n}: {tid} is not in {EXPECTED.name}; remove the line")
        out[(fname, test)] = reason.strip()
    return out


def write_expected(expected, path=EXPECTED):
    header = ("# MXNet 1.9.1 suite tests that pass on gpunda (CPU); ci/mxnet_suite.py fails CI when one\n"
              "# stops passing. Grown with `python ci/mxnet_suite.py --update`; never shrunk silently.\n")
    lines = [f"{f}::{t}" for f in sorted(expected) for t in sorted(expected[f])]
    path.write_text(header + "\n".join(lines) + "\n")


def baseline_passes(suite):
    """{file: set(tests)} that pass on real MXNet 1.9.1, from the suite's baseline."""
    data = json.loads((suite / "baseline" / "mxnet-1.9.1-cpu.json").read_text())
    return {entry["file"]: {t for t, r in entry.get("tests", {}).items() if r.get("status") == "passed"}
            for entry in data["files"]}


def baseline_tests(suite):
    """{file: every test name the baseline run collected}."""
    data = json.loads((suite / "baseline" / "mxnet-1.9.1-cpu.json").read_text())
    return {entry["file"]: set(entry.get("tests", {})) for entry in data["files"]}


def exact_k(tests, collected):
    """A pytest ``-k`` expression that selects just ``tests`` among ``collected``: ``-k``
    matches substrings (``test_slice`` would also run ``test_slice_pooling2d``), so every
    other collected test whose name contains a listed one is excluded by name, unless a
    listed test's name contains it in turn (then it runs too, as it must)."""
    wanted = [t.lower() for t in tests]
    strays = sorted(n for n in collected - set(tests)
                    if any(w in n.lower() for w in wanted)
                    and not any(n.lower() in w for w in wanted))
    expr = " or ".join(sorted(tests))
    return f"({expr}) and not ({' or '.join(strays)})" if strays else expr


def blas_threads_env(jobs, environ=None):
    """The harness's environment with BLAS/OpenMP threads shared out among the ``jobs``
    files that run at once (unless set already): two files each spinning two OpenBLAS
    threads on two cores make a small GEMM 30x slower, and CI's suite time with it."""
    env = dict(os.environ if environ is None else environ)
    per_job = str(max(1, (os.cpu_count() or 1) // max(1, jobs)))
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, per_job)
    return env


# Seconds each file took in CI's CPU ratchet (2026-12-07, 2 cores, -j 2); the rest take 4-10.
# The harness hands files to its workers in the order given, so the longest go first and the
# two workers finish together (alphabetical order started test_operator.py last but a dozen
# files, and one worker ran it alone for about three minutes at the end).
_SECONDS = {"test_operator.py": 521, "test_gluon.py": 168, "test_numpy_op.py": 84,
            "test_random.py": 83, "test_module.py": 28, "test_ndarray.py": 26,
            "test_metric_perf.py": 21, "test_io.py": 18, "test_loss.py": 16,
            "test_sparse_ndarray.py": 16, "test_recordio.py": 16, "test_numpy_gluon.py": 14}


def longest_first(files):
    """``files`` in the order the harness should start them: longest first, then by name."""
    return sorted(files, key=lambda f: (-_SECONDS.get(f, 0), f))


def run_suite(suite, files, out_dir, jobs, context, only=None):
    """Run the harness on ``files``; returns {file: {test: status}}.

    ``only`` ({file: tests}) restricts each file to those tests (pytest ``-k``): a check
    runs what the list holds and not the slow tests gpunda does not pass yet."""
    cmd = [sys.executable, str(suite / "run.py"), *[f[:-3] if f.endswith(".py") else f for f in files],
           "--gpunda-path", str(ROOT), "--out", str(out_dir), "-j", str(jobs), "--context", context]
    collected = baseline_tests(suite) if only else {}
    for fname, tests in sorted((only or {}).items()):
        if tests:
            cmd += ["-k", f"{fname}=" + exact_k(tests, collected.get(fname, set()))]
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=blas_threads_env(jobs))
    tail = proc.stdout.splitlines()
    summary_path = Path(out_dir) / "summary.json"
    if not summary_path.exists():
        print("\n".join(tail[-40:]))
        raise SystemExit(f"mxnet suite: the harness wrote no {summary_path} (exit {proc.returncode})")
    # the harness's own table, for the log
    start = next((i for i, l in enumerate(tail) if l.startswith("file ")), 0)
    print("\n".join(l for l in tail[start:] if not l.startswith("      ")))
    summary = json.loads(summary_path.read_text())
    return {entry["file"]: {name: res.get("status") for name, res in entry.get("tests", {}).items()}
            for entry in summary["files"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="add tests that pass now to the list")
    ap.add_argument("--files", nargs="*", default=None,
                    help="suite files to run (default: the files the list names)")
    ap.add_argument("--subset", nargs="*", default=None,
                    help="check only the expected tests of these files (CI's time budget)")
    ap.add_argument("--require", action="store_true", help="fail when the suite is not found")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="files run in parallel (default 2)")
    ap.add_argument("--context", choices=["cpu", "gpu"], default="cpu",
                    help="default context of the tests (default cpu)")
    ap.add_argument("--out", default=None, help="harness output folder (default: a temp folder)")
    args = ap.parse_args(argv)

    suite = find_suite()
    if suite is None:
        msg = "mxnet suite: ../shared/mxnet-suite not found (set MXNET_SUITE); ratchet not run"
        if args.require:
            raise SystemExit(msg)
        print(msg)
        return 0
    expected = read_expected()
    if args.context == "gpu" and args.update:
        raise SystemExit("mxnet suite: --update grows the list on the cpu context only")
    excused = read_exceptions(expected) if args.context == "gpu" else {}
    if args.subset:
        keep = {f if f.endswith(".py") else f + ".py" for f in args.subset}
        expected = defaultdict(set, {f: t for f, t in expected.items() if f in keep})
        excused = {k: v for k, v in excused.items() if k[0] in keep}
    given = {f if f.endswith(".py") else f + ".py" for f in args.files or []}
    files = longest_first(given | set(expected))
    if not files:
        raise SystemExit("mxnet suite: no files to run (the expected list is empty; use --files)")
    out_dir = args.out or tempfile.mkdtemp(prefix="mxsuite-ci-")
    # a check runs the listed tests only; --update and new --files run whole files
    only = None if args.update or args.files else {f: expected.get(f, set()) for f in files}
    results = run_suite(suite, files, out_dir, args.jobs, args.context, only)

    lost, now_pass = [], []
    for fname, tests in sorted(expected.items()):
        got = results.get(fname, {})
        for test in sorted(tests):
            if (fname, test) in excused:
                if got.get(test) == "passed":
                    now_pass.append(f"{fname}::{test}")
                continue
            if got.get(test) != "passed":
                lost.append(f"{fname}::{test} ({got.get(test, 'not run')})")
    # only tests that pass on real MXNet count, as in the harness's score
    reference = baseline_passes(suite)
    gained = {(f, t) for f, tests in results.items() for t, s in tests.items()
              if s == "passed" and t in reference.get(f, ()) and t not in expected.get(f, ())}
    n_expected = sum(len(t) for t in expected.values()) - len(excused)
    print(f"\nmxnet suite ratchet ({args.context}): {n_expected - len(lost)} of {n_expected} "
          f"expected passes held, {len(gained)} new passes not yet listed"
          + (f", {len(excused)} excused on gpu ({GPU_EXCEPTIONS.name})" if excused else ""))
    if now_pass:
        print(f"excused on gpu but passing now (remove from {GPU_EXCEPTIONS.name}):\n  "
              + "\n  ".join(now_pass))
    if args.update and gained and not args.subset:
        for f, t in gained:
            expected[f].add(t)
        write_expected(expected)
        print(f"added {len(gained)} tests to {EXPECTED.relative_to(ROOT)}")
    if lost:
        print("tests that passed before and fail now:\n  " + "\n  ".join(lost))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
