"""Replay fixtures on gpunda and compare with MXNet's recorded answers.

``replay_file(path)`` runs every program of one fixture in-process on gpunda (with
MXNet's saved files as the "foreign" files to load) and returns, per program with a
difference, ``(program, unexplained diffs, explained diffs)``; the classification is
``known.classify``. ``python -m difftest replay`` prints a summary grouped by class.
"""
from __future__ import annotations

import collections
import glob
import json
import os
import warnings

from difftest import fixture, known
from difftest.compare import compare
from difftest.interp import run_program

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def fixture_files():
    """Every fixture file, sorted."""
    return sorted(glob.glob(os.path.join(FIXTURES, "*.npz")))


def check(mx, prog, ref, foreign=None):
    """(unexplained, explained) differences of one program against MXNet's ``ref``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, _ = run_program(mx, prog, foreign)
    diffs = compare(ref, got, loose=known.is_loose(prog))
    return known.classify(prog, diffs, ref, got)


def replay_file(path):
    """Differences of every program in fixture ``path`` (see module doc)."""
    import gpunda as mx
    programs, results = fixture.load(path)
    out = []
    for prog, ref in zip(programs, results):
        bad, ok = check(mx, prog, ref, fixture.saved_files(prog, ref))
        if bad or ok:
            out.append((prog, bad, ok))
    return out


def main(args):
    """The ``replay`` command: counts per kind and unexplained differences by class."""
    old_open = set(known.OPEN)
    if args.write_open:
        known.OPEN.clear()
    counts = collections.Counter()
    explained = collections.Counter()
    classes = collections.defaultdict(list)
    for path in fixture_files():
        name = os.path.basename(path)[:-4]
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        programs, _ = fixture.load(path)
        for p in programs:
            counts[p["kind"] if p["kind"] != "op" else "op:" + p["family"]] += 1
        for prog, bad, ok in replay_file(path):
            for tag in set(ok):
                explained[tag] += 1
            for d in bad:
                classes[known.class_key(prog, d)].append((prog, d))
    if args.write_open:
        keys = sorted(set(classes) | (old_open if args.only else set()))
        with open(known.OPEN_FILE, "w") as f:
            json.dump(keys, f, indent=0)
        print("wrote %d open classes to %s" % (len(keys), known.OPEN_FILE))
    print("programs:", sum(counts.values()))
    for k, n in sorted(counts.items()):
        print("  %-28s %6d" % (k, n))
    print("programs with explained differences, by tag:")
    for k, n in explained.most_common():
        print("  %-50s %6d" % (k, n))
    print("unexplained classes: %d" % len(classes))
    for k, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
        prog, d = min(items, key=lambda pd: len(str(pd[0]["steps"])))
        print("  %5d  %s" % (len(items), k))
        if args.verbose:
            print("         e.g. %s %s\n         %s" % (prog["id"], d, prog["steps"]))
