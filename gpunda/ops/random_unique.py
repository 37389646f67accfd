"""``_sample_unique_zipfian``: ``num_sampled`` distinct classes per row from the
approximately log-uniform distribution on [0, range_max), drawn with rejection of
repeats, and the number of draws each row took (sampled softmax's candidate sampler).

A draw is ``round(exp(u * log(range_max))) - 1`` for u ~ U[0, 1), as in MXNet's CPU
kernel. Draws come in vectorised chunks; a row's classes are the first ``num_sampled``
distinct values in draw order and its trial count is the position of the last of them.
"""
from __future__ import annotations

import math

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.random.samplers import _rng
from gpunda.ops.registry import OpDef, Param, register


def _unique_row(rng, range_max, n, log_range):
    draws = np.empty(0, dtype=np.int64)
    chunk = max(2 * n, 64)
    while True:
        u = rng.uniform(0.0, 1.0, size=chunk)
        u = u.get() if hasattr(u, "get") else np.asarray(u)    # a device generator's draws
        more = np.rint(np.exp(u * log_range)).astype(np.int64) - 1
        draws = np.concatenate([draws, more])
        _, first = np.unique(draws, return_index=True)
        if first.size >= n:
            first.sort()
            keep = first[:n]
            return draws[keep], int(keep[-1]) + 1
        chunk *= 2


def _sample_unique_zipfian(xp, p, ctx):
    if len(p.shape) != 2:
        raise GpundaError(f"Operator _sample_unique_zipfian: shape={p.shape} must be "
                          f"(batch_size, num_sampled)")
    batch, n = p.shape
    if n > p.range_max:
        raise GpundaError(f"Operator _sample_unique_zipfian: num_sampled={n} exceeds "
                          f"range_max={p.range_max}")
    rng = _rng(ctx)
    log_range = math.log(p.range_max)
    classes = np.empty((batch, n), dtype=np.int64)
    trials = np.empty((batch,), dtype=np.int64)
    for b in range(batch):
        classes[b], trials[b] = _unique_row(rng, p.range_max, n, log_range) if n else ([], 0)
    if xp is not np:
        return xp.asarray(classes), xp.asarray(trials)
    return classes, trials


register(OpDef(
    "_sample_unique_zipfian", _sample_unique_zipfian, inputs=(), wants_ctx=True, random=True,
    nondiff=True, num_outputs=2,
    params=[Param("range_max", "int"), Param("shape", "shape", ()), Param("ctx", "any", None)],
    capture="host-side rejection sampling", family="random",
    doc="num_sampled distinct classes per row from the log-uniform distribution on "
        "[0, range_max), and the number of draws each row took."))
