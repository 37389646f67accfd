"""Fixture files: programs and MXNet's normalised results in one compressed .npz.

``programs`` and ``results`` are JSON strings; the arrays of all results are
concatenated into one byte string ``blob`` (compressed as a whole, which small arrays
need) and appear in the JSON as ``{"$a": [dtype, shape, offset]}``. Files MXNet saved
are the ``save`` steps' results (bytes as uint8). NumPy 1.23 and 2.x read it alike.
"""
from __future__ import annotations

import json

import numpy as np


def _strip(res, parts, pos):
    if isinstance(res, dict):
        return {k: _strip(v, parts, pos) for k, v in res.items()}
    if isinstance(res, list):
        return [_strip(v, parts, pos) for v in res]
    if isinstance(res, np.ndarray):
        b = np.ascontiguousarray(res).tobytes()
        ref = {"$a": [res.dtype.str, list(res.shape), pos[0]]}
        parts.append(b)
        pos[0] += len(b)
        return ref
    return res


def _fill(res, blob):
    if isinstance(res, dict):
        if set(res) == {"$a"}:
            dt, shape, off = res["$a"]
            dt = np.dtype(dt)
            n = int(np.prod(shape)) * dt.itemsize
            return np.frombuffer(blob[off:off + n], dtype=dt).reshape(shape).copy()
        return {k: _fill(v, blob) for k, v in res.items()}
    if isinstance(res, list):
        return [_fill(v, blob) for v in res]
    return res


def save(path, programs, results):
    """Write ``programs`` (list of dicts) and ``results`` (normalised, one per program)."""
    parts, pos = [], [0]
    meta = [_strip(r, parts, pos) for r in results]
    np.savez_compressed(path, blob=np.frombuffer(b"".join(parts) or b"\0", dtype=np.uint8),
                        programs=np.array(json.dumps(programs, separators=(",", ":"))),
                        results=np.array(json.dumps(meta, separators=(",", ":"))))


def load(path):
    """(programs, results) as written by ``save``."""
    with np.load(path, allow_pickle=False) as z:
        blob = z["blob"].tobytes()
        programs = json.loads(str(z["programs"]))
        results = [_fill(r, blob) for r in json.loads(str(z["results"]))]
    return programs, results


def saved_files(prog, ref):
    """{tag: bytes} of the files ``prog``'s save steps wrote on MXNet (from ``ref``)."""
    out = {}
    for st in prog["steps"]:
        if st[0] == "save" and ref.get(st[1], {}).get("t") == "a":
            out[st[2]] = ref[st[1]]["v"].tobytes()
    return out
