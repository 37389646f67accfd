"""Run a batch of programs in one process of either framework (the recorder's worker).

``python -m difftest.runner FRAMEWORK PROGRAMS.json OUT.pkl [START]`` imports the framework
once and runs each program in a forked child, appending ``(index, packed result, files)``
pickles to OUT; results are packed so NumPy 1.23 and 2.x read the pickle alike.
"""
from __future__ import annotations

import base64
import json
import os
import pickle
import shutil
import sys
import tempfile

import numpy as np

from difftest.interp import load_framework, run_program


def _pack(res):
    """Arrays -> (dtype, shape, bytes) so NumPy 1.23 and 2.x read the pickle alike."""
    if isinstance(res, dict):
        return {k: _pack(v) for k, v in res.items()}
    if isinstance(res, list):
        return [_pack(v) for v in res]
    if isinstance(res, np.ndarray):
        return ("__nd__", res.dtype.str, list(res.shape), res.tobytes())
    return res


def unpack(res):
    """Inverse of ``_pack``."""
    if isinstance(res, dict):
        return {k: unpack(v) for k, v in res.items()}
    if isinstance(res, list):
        return [unpack(v) for v in res]
    if isinstance(res, tuple) and len(res) == 4 and res[0] == "__nd__":
        return np.frombuffer(res[3], dtype=np.dtype(res[1])).reshape(res[2]).copy()
    return res


def _run_range(mx, batch, start, dst, workdir):
    with open(dst, "ab") as out:
        for k in range(start, len(batch["programs"])):
            prog = batch["programs"][k]
            foreign = {t: base64.b64decode(b) for t, b in
                       batch.get("foreign", {}).get(prog["id"], {}).items()}
            res, files = run_program(mx, prog, foreign, workdir)
            pickle.dump((k, _pack(res), files), out, protocol=4)
            out.flush()
            shutil.rmtree(workdir, ignore_errors=True)
            os.makedirs(workdir, exist_ok=True)


def _done(dst):
    last = -1
    if os.path.exists(dst):
        with open(dst, "rb") as f:
            while True:
                try:
                    last = pickle.load(f)[0]
                except EOFError:
                    return last
                except Exception:         # a torn last record from a killed child
                    return last
    return last


def _forked(mx, batch, start, dst, workdir, stall=20.0):
    """Run the programs in forked children of this process (MXNet imported once): a
    child that dies (segfault) or stalls (an endless loop) costs one program, which is
    recorded as ``None``, and the next child resumes after it."""
    import time
    n = len(batch["programs"])
    while start < n:
        pid = os.fork()
        if pid == 0:
            try:
                _run_range(mx, batch, start, dst, workdir)
            finally:
                os._exit(0)
        size, since = -1, time.time()
        while True:
            got, _ = os.waitpid(pid, os.WNOHANG)
            if got:
                break
            time.sleep(0.05)
            now = os.path.getsize(dst) if os.path.exists(dst) else 0
            if now != size:
                size, since = now, time.time()
            elif time.time() - since > stall:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                break
        last = _done(dst)
        if last + 1 < n:
            with open(dst, "ab") as out:
                pickle.dump((last + 1, None, None), out, protocol=4)
        start = last + 2


def main(argv=None):
    """``interp.py FRAMEWORK PROGRAMS.json OUT.pkl [START]``: run programs from index START,
    appending one pickle per program to OUT (``None`` results for programs that killed
    or hung the framework)."""
    argv = sys.argv[1:] if argv is None else argv
    fw, src, dst = argv[0], argv[1], argv[2]
    start = int(argv[3]) if len(argv) > 3 else 0
    import warnings
    warnings.simplefilter("ignore")
    mx = load_framework(fw)
    with open(src) as f:
        batch = json.load(f)
    workdir = tempfile.mkdtemp(prefix="difftest")
    _forked(mx, batch, start, dst, workdir)


if __name__ == "__main__":
    main()
