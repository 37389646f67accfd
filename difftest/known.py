"""Differences from MXNet 1.9.1 that are explained: deliberate ones, and classes another
change is fixing (status "being fixed (issue 38)"; delete the rule when it lands).

A rule matches one difference ``(where, what, detail)`` of one program; every field
given must match: ``kind`` (program kind), ``ops`` (op names), ``what`` (difference
classes), ``where`` (entry names), ``detail`` (substring), ``steps`` (a substring of the
program's JSON). ``classify`` splits a program's differences into unexplained ones and
the tags of the rules that explained the rest. docs/compat.md lists the same table.
"""
from __future__ import annotations

import json

FIXING = "being fixed (issue 38)"

RULES = [
    # -- classes another helper is fixing now --------------------------------------------
    {"tag": "indexing-view-copy", "status": FIXING, "kind": {"indexing"},
     "reason": "view/copy rule of basic indexing (a[1][:] = 5 on 1-D; a[:, 1] copies)"},
    {"tag": "batchnorm-moving-stats", "status": FIXING, "kind": {"autograd-bn"},
     "where": {"mm_fwd", "mv_fwd", "mm", "mv"},
     "reason": "BatchNorm moving statistics are updated in backward, MXNet updates them "
               "in forward"},
]

# ops whose float results come from long reductions or factorizations: looser tolerance
LOOSE_OPS = {"_linalg_potrf", "_linalg_potri", "_linalg_inverse", "_linalg_det",
             "_linalg_slogdet", "_linalg_gemm2", "_linalg_gemm", "Convolution",
             "Deconvolution", "FullyConnected", "dot", "batch_dot", "norm", "RNN"}


def is_loose(prog):
    """Whether ``prog`` gets the looser float tolerance."""
    return prog.get("op") in LOOSE_OPS or prog["kind"] in ("gluon", "autograd", "autograd-bn")


def _matches(rule, prog, d, text):
    where, what, detail = d
    base = where.split("[")[0]
    return ((not rule.get("kind") or prog["kind"] in rule["kind"])
            and (not rule.get("ops") or prog.get("op") in rule["ops"])
            and (not rule.get("what") or what in rule["what"])
            and (not rule.get("where") or base in rule["where"])
            and (not rule.get("detail") or rule["detail"] in detail)
            and (not rule.get("steps") or rule["steps"] in text)
            and (not rule.get("test") or rule["test"](prog, d)))


def classify(prog, diffs, ref=None, got=None):
    """(unexplained diffs, tags of the rules that explained the others)."""
    if not diffs:
        return [], []
    text = json.dumps(prog["steps"])
    bad, tags = [], []
    for d in diffs:
        for rule in RULES:
            if _matches(rule, prog, d, text):
                tags.append(rule["tag"])
                break
        else:
            bad.append(d)
    return bad, tags


def class_key(prog, d):
    """A grouping key for an unexplained difference."""
    where, what, detail = d
    what_detail = detail if what in ("error", "kind", "dtype", "stype", "np-type") else ""
    return "%s %s %s %s %s" % (prog["kind"], prog.get("op", ""), where.split("[")[0], what,
                               what_detail)
