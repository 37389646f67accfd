"""MXNet 1.9.1's Python tutorials, cell by cell, on real MXNet and on gpunda.

Each tutorial (``docs/python_docs/python/tutorials/**.md`` at tag 1.9.1 of apache/mxnet) is cut
into its code cells (```` ```{.python .input} ```` and ```` ```python ````) and run as a notebook
runs them: one namespace, a cell's last expression printed. Lines starting with ``%`` or ``!``
(IPython magics, shell) are dropped; ``matplotlib`` and ``IPython`` are replaced by a module that
accepts every call, on both sides alike (neither venv has them). Nothing else is changed: a cell
that downloads data fails on both sides without a network and is reported so.

A tutorial *runs on gpunda* when every cell that runs on real MXNet runs on gpunda too.

    python ci/mxnet_tutorials.py --mxnet-src /path/to/mxnet-checkout-or-git-dir \\
        --mxnet-python /work/mxref/bin/python [--gpunda-python PY] [TUTORIAL_SUBSTRING ...]

``--mxnet-src`` is a checkout of apache/mxnet or a bare git directory (the tag 1.9.1 is read
with ``git show``). The gpunda side runs ``import mxnet`` through the alias (``GPUNDA_AS_MXNET=1``)
with this checkout first on ``PYTHONPATH``. Prints one line per tutorial and writes
``--out`` (JSON, default ``/tmp/mxnet_tutorials.json``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = "docs/python_docs/python/tutorials"
TAG = "1.9.1"

# The program each side runs: reads the cells (JSON) from argv[1], prints one JSON line per cell.
CELL_RUNNER = r'''
import ast, json, sys, traceback, types, io, contextlib, os

class _Anything(types.ModuleType):
    """matplotlib stand-in: every attribute is callable, returns another stand-in."""
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything(self.__name__ + "." + name)
    def __call__(self, *a, **k):
        return _Anything(self.__name__ + "()")
    def __iter__(self):
        return iter((_Anything("a"), _Anything("b")))
    def __getitem__(self, k):
        return _Anything(self.__name__ + "[]")

for _name in ("matplotlib", "matplotlib.pyplot", "matplotlib.image", "matplotlib.patches",
              "matplotlib.cm", "matplotlib.colors", "IPython", "IPython.display"):
    sys.modules[_name] = _Anything(_name)

cells = json.load(open(sys.argv[1]))
ns = {"__name__": "__main__"}
for i, src in enumerate(cells):
    out = io.StringIO()
    rec = {"cell": i, "ok": True, "pid": os.getpid()}
    try:
        tree = ast.parse(src)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        with contextlib.redirect_stdout(out):
            exec(compile(tree, "<cell %d>" % i, "exec"), ns)
            if last is not None:
                v = eval(compile(last, "<cell %d>" % i, "eval"), ns)
                if v is not None:
                    print(repr(v))
    except BaseException as e:   # a cell's failure is data, SystemExit included
        rec["ok"] = False
        rec["error"] = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300] if str(e) else type(e).__name__
        rec["trace"] = traceback.format_exc()[-1500:]
    rec["stdout"] = out.getvalue()[-2000:]
    sys.__stdout__.write("@@cell@@ " + json.dumps(rec) + "\n")
    sys.__stdout__.flush()
'''


def git_show(src, path):
    src = Path(src)
    gitdir = src / ".git" if (src / ".git").exists() else src
    return subprocess.run(["git", "--git-dir", str(gitdir), "show", "%s:%s" % (TAG, path)],
                          check=True, capture_output=True, text=True).stdout


def list_tutorials(src):
    src = Path(src)
    gitdir = src / ".git" if (src / ".git").exists() else src
    out = subprocess.run(["git", "--git-dir", str(gitdir), "ls-tree", "-r", "--name-only", TAG,
                          TUTORIALS + "/"], check=True, capture_output=True, text=True).stdout
    return [p for p in out.split() if p.endswith(".md")]


_FENCE = re.compile(r"^```\s*(\{\.python[^}]*\}|python)\s*$")


def cells_of(markdown):
    """The code cells of one tutorial, magics and shell lines dropped."""
    cells, cur = [], None
    for line in markdown.splitlines():
        if cur is None:
            if _FENCE.match(line.strip()):
                cur = []
        elif line.strip().startswith("```"):
            code = "\n".join(cur).strip("\n")
            if code.strip():
                cells.append(code)
            cur = None
        else:
            if line.lstrip().startswith(("%", "!")):
                continue
            cur.append(line)
    return cells


def run_side(python, cells, env, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        cf = os.path.join(tmp, "cells.json")
        rf = os.path.join(tmp, "runner.py")
        with open(cf, "w") as f:
            json.dump(cells, f)
        with open(rf, "w") as f:
            f.write(CELL_RUNNER)
        try:
            p = subprocess.run([python, rf, cf], capture_output=True, text=True, env=env,
                               timeout=timeout, cwd=tmp)
            lines = p.stdout.splitlines()
            tail = p.stderr[-600:]
        except subprocess.TimeoutExpired as e:
            lines = (e.stdout or b"").decode(errors="replace").splitlines() if isinstance(e.stdout, bytes) \
                else (e.stdout or "").splitlines()
            tail = "TIMEOUT after %ds" % timeout
    recs = []
    pid = None
    for ln in lines:
        if ln.startswith("@@cell@@ "):
            rec = json.loads(ln[9:])
            pid = rec["pid"] if pid is None else pid
            # a forked worker that ran on through the cells is ignored, and so is a repeat
            if rec["pid"] == pid and rec["cell"] == len(recs):
                recs.append(rec)
    done = len(recs)
    for i in range(done, len(cells)):      # cells never reached (crash or timeout)
        recs.append({"cell": i, "ok": False, "error": "not reached: " + tail.strip().splitlines()[-1]
                     if tail.strip() else "not reached"})
    return recs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mxnet-src", required=True)
    ap.add_argument("--mxnet-python", required=True)
    ap.add_argument("--gpunda-python", default=sys.executable)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--out", default="/tmp/mxnet_tutorials.json")
    ap.add_argument("only", nargs="*", help="run the tutorials whose path contains one of these")
    a = ap.parse_args(argv)

    base = {k: v for k, v in os.environ.items() if k not in ("GPUNDA_AS_MXNET", "PYTHONPATH")}
    base.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MXNET_ENGINE_TYPE="NaiveEngine")
    env_g = dict(base, GPUNDA_AS_MXNET="1", PYTHONPATH=str(ROOT), GPUNDA_DEFAULT_DEVICE="cpu")
    results = {}
    for path in list_tutorials(a.mxnet_src):
        if a.only and not any(s in path for s in a.only):
            continue
        cells = cells_of(git_show(a.mxnet_src, path))
        if not cells:
            continue
        mx = run_side(a.mxnet_python, cells, base, a.timeout)
        gp = run_side(a.gpunda_python, cells, env_g, a.timeout)
        regress = [g for m, g in zip(mx, gp) if m["ok"] and not g["ok"]]
        mx_fail = [m for m in mx if not m["ok"]]
        # printed output equal (random draws differ between the two, so this is information only)
        same = sum(m["ok"] and g["ok"] and m.get("stdout") == g.get("stdout") for m, g in zip(mx, gp))
        name = path[len(TUTORIALS) + 1:]
        results[name] = {"cells": len(cells), "mxnet_ok": sum(m["ok"] for m in mx),
                         "gpunda_ok": sum(g["ok"] for g in gp), "same_output": same,
                         "runs": not regress, "mxnet": mx, "gpunda": gp}
        why = ""
        if regress:
            why = "gpunda cell %d: %s" % (regress[0]["cell"], regress[0].get("error"))
        elif mx_fail:
            why = "(MXNet too fails cell %d: %s)" % (mx_fail[0]["cell"], mx_fail[0].get("error"))
        print("%-4s %-68s mxnet %2d/%-2d gpunda %2d/%-2d same output %2d %s" % (
            "RUNS" if not regress else "FAIL", name, results[name]["mxnet_ok"], len(cells),
            results[name]["gpunda_ok"], len(cells), same, why[:200]), flush=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    n = len(results)
    print("%d/%d tutorials run on gpunda wherever they run on MXNet" % (sum(r["runs"] for r in results.values()), n))


if __name__ == "__main__":
    main()
