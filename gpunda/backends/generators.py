"""Per-context random generators: the state behind ``mx.random.seed`` that every sampler op
draws from.

Each context has its own generator, so ``seed(n, ctx)`` makes that device's draws
reproducible without touching the others (``ctx='all'`` seeds every one). It lives with the
devices because a generator belongs to a device (a CuPy RandomState on a GPU); the ops and
``gpunda.random`` above read it.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.context import Context

_gens = {}
_global_seed = None


def generator(ctx):
    """The random generator of ``ctx`` (made on first use, from the global seed)."""
    g = _gens.get(ctx)
    if g is None:
        g = _gens[ctx] = _make(ctx, _global_seed)
    return g


def _make(ctx, s):
    if ctx.device_type == "gpu":
        xp = ctx.backend.xp
        with ctx.backend.device_scope():
            return xp.random.RandomState(s)
    return np.random.RandomState(s)


def seed(seed_state, ctx="all"):
    """Seed the generator of ``ctx`` (or of every context with ``ctx='all'``)."""
    global _global_seed
    if isinstance(seed_state, bool) or not isinstance(seed_state, (int, np.integer)):
        raise GpundaError(f"random.seed: seed_state={seed_state!r} must be an integer")
    s = int(seed_state) % (2 ** 32)
    if ctx == "all":
        _global_seed = s
        for c in list(_gens):
            _gens[c] = _make(c, s)
        return
    c = Context(ctx)
    # mix in the device so gpu(0) and cpu(0) do not draw the same numbers
    _gens[c] = _make(c, (s + 1000003 * c.device_typeid + 7919 * c.device_id) % (2 ** 32))
