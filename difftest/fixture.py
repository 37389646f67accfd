"""Fixture files: programs and MXNet's normalised results in one compressed .npz.

``programs`` and ``results`` are JSON strings; every array of a result is an npz entry
``a<n>`` and appears in the JSON as ``{"$a": n}``; saved files (nd.save bytes) are
entries ``f<n>``, referenced from ``files``. NumPy 1.23 and 2.x read it alike.
"""
from __future__ import annotations

import json

import numpy as np


def _strip(res, arrays):
    if isinstance(res, dict):
        return {k: _strip(v, arrays) for k, v in res.items()}
    if isinstance(res, list):
        return [_strip(v, arrays) for v in res]
    if isinstance(res, np.ndarray):
        arrays.append(res)
        return {"$a": len(arrays) - 1}
    return res


def _fill(res, z):
    if isinstance(res, dict):
        if set(res) == {"$a"}:
            return z["a%d" % res["$a"]]
        return {k: _fill(v, z) for k, v in res.items()}
    if isinstance(res, list):
        return [_fill(v, z) for v in res]
    return res


def save(path, programs, results, files):
    """Write ``programs`` (list of dicts), ``results`` (normalised, one per program) and
    ``files`` ({program id: {tag: bytes}}) to ``path``."""
    arrays = []
    meta = [_strip(r, arrays) for r in results]
    entries = {"a%d" % i: a for i, a in enumerate(arrays)}
    fmeta = {}
    for pid, tags in files.items():
        for tag, blob in tags.items():
            key = "f%d" % len(fmeta)
            fmeta.setdefault(pid, {})[tag] = key
            entries[key] = np.frombuffer(blob, dtype=np.uint8)
    entries["programs"] = np.array(json.dumps(programs, separators=(",", ":")))
    entries["results"] = np.array(json.dumps(meta, separators=(",", ":")))
    entries["files"] = np.array(json.dumps(fmeta))
    np.savez_compressed(path, **entries)


def load(path):
    """(programs, results, files) as written by ``save``."""
    with np.load(path, allow_pickle=False) as z:
        programs = json.loads(str(z["programs"]))
        results = [_fill(r, z) for r in json.loads(str(z["results"]))]
        files = {pid: {tag: z[key].tobytes() for tag, key in tags.items()}
                 for pid, tags in json.loads(str(z["files"])).items()}
    return programs, results, files
