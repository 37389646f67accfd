"""Random numbers (``mx.random``): per-context generators and samplers.

Each context has its own generator, so ``seed(n, ctx)`` makes that device's
draws reproducible without touching the others (``ctx='all'`` seeds every one).
"""
from __future__ import annotations

import numpy as np

from .base import GpundaError
from .context import Context, current_context

__all__ = ["seed", "uniform", "normal", "randint", "shuffle", "randn", "gamma"]

_gens = {}
_global_seed = None


def _generator(ctx):
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


def _call(opname, shape, dtype, ctx, out, **params):
    from .ndarray import _op
    if out is not None:
        shape = out.shape
        ctx = out.context
        dtype = out.dtype if dtype is None else dtype
    ctx = current_context() if ctx is None else Context(ctx)
    kw = dict(params, shape=shape, ctx=ctx)
    if dtype is not None:
        kw["dtype"] = dtype
    return getattr(_op, opname)(out=out, **kw)


def uniform(low=0, high=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high)."""
    return _call("_random_uniform", shape, dtype, ctx, out, low=low, high=high)


def normal(loc=0, scale=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale**2)."""
    return _call("_random_normal", shape, dtype, ctx, out, loc=loc, scale=scale)


def gamma(alpha=1, beta=1, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta``."""
    from .ndarray import NDArray
    if isinstance(alpha, NDArray) or isinstance(beta, NDArray):
        from .base import NotImplementedForGpunda
        raise NotImplementedForGpunda("random.gamma with NDArray alpha/beta (MXNet's "
                                      "_sample_gamma) is not supported yet")
    return _call("_random_gamma", shape, dtype, ctx, out, alpha=alpha, beta=beta)


def randn(*shape, **kwargs):
    """Standard normal samples of the given shape."""
    return normal(0, 1, shape=shape or (1,), **kwargs)


def randint(low, high, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    """Integers from [low, high)."""
    return _call("_random_randint", shape, dtype, ctx, out, low=low, high=high)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its first axis randomly permuted."""
    from .ndarray import _op
    return _op._shuffle(data, **kwargs)
