"""Minimise a program that differs between MXNet and gpunda.

Each round builds every one-smaller candidate (one step removed, one keyword argument
removed, one nested autograd step removed), runs them all on MXNet in one subprocess
and on gpunda in-process, and keeps the first candidate that still shows a difference
of the same class (``known.class_key``). Stops when no candidate does.
"""
from __future__ import annotations

import copy
import json

from difftest import known, record, replay
from difftest.compare import compare


def candidates(prog):
    """Programs one step or one keyword smaller than ``prog``."""
    steps = prog["steps"]
    out = []
    for i in range(len(steps)):
        out.append(steps[:i] + steps[i + 1:])
        st = steps[i]
        if st[0] == "call" and len(st) > 4 and st[4]:
            for k in st[4]:
                c = copy.deepcopy(steps)
                del c[i][4][k]
                out.append(c)
        if st[0] in ("record", "pause"):
            for j in range(len(st[3])):
                c = copy.deepcopy(steps)
                del c[i][3][j]
                out.append(c)
    return [dict(prog, steps=s, id="%s~%d" % (prog["id"], n)) for n, s in enumerate(out)]


def _keys(mx, prog, ref):
    from difftest.interp import run_program
    got, _ = run_program(mx, prog)
    bad, _ = known.classify(prog, compare(ref, got, loose=known.is_loose(prog)))
    return {known.class_key(prog, d) for d in bad}


def shrink(prog, ref, python):
    """The smallest program found that keeps one of ``prog``'s difference classes."""
    import gpunda as mx
    target = _keys(mx, prog, ref)
    if not target:
        return prog
    while True:
        cands = candidates(prog)
        refs, _ = record.run_mxnet(python, cands)
        for c, r in zip(cands, refs):
            if r is not None and _keys(mx, c, r) & target:
                prog = c
                break
        else:
            return prog


def main(args):
    """The ``shrink`` command."""
    from difftest import fixture
    known.OPEN.clear()          # an open class is still a difference worth shrinking
    for path in replay.fixture_files():
        programs, results = fixture.load(path)
        for p, r in zip(programs, results):
            if p["id"] == args.program_id:
                print(json.dumps(shrink(p, r, args.mxnet_python)))
                return
    raise SystemExit("no program %r in the fixtures" % args.program_id)
