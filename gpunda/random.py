"""Random numbers (``mx.random``): per-context generators and samplers.

Each context has its own generator, so ``seed(n, ctx)`` makes that device's
draws reproducible without touching the others (``ctx='all'`` seeds every one).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError, numeric_types
from gpunda.context import Context, current_context
from gpunda.base import check_call, integer_types  # noqa: F401  (MXNet's module has them)

__all__ = ["seed", "uniform", "normal", "randint", "shuffle", "randn", "exponential", "gamma",
           "poisson", "negative_binomial", "generalized_negative_binomial", "multinomial",
           "uniform_like", "normal_like", "exponential_like", "gamma_like", "poisson_like",
           "negative_binomial_like", "generalized_negative_binomial_like"]

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
    """Scalar parameters: ``opname`` (``_random_<dist>``); NDArray parameters: one
    distribution per element through ``_sample_<dist>``, as MXNet dispatches."""
    from gpunda.ndarray import _op, NDArray
    vals = list(params.values())
    if vals and isinstance(vals[0], NDArray):
        if not all(isinstance(v, NDArray) for v in vals):
            raise GpundaError(f"random.{opname[len('_random_'):]}: distribution parameters must "
                              f"all be NDArrays or all numbers, got "
                              f"{', '.join(type(v).__name__ for v in vals)}")
        kw = {"shape": () if shape is None else shape}
        if dtype is not None:
            kw["dtype"] = dtype
        return getattr(_op, "_sample_" + opname[len("_random_"):])(*vals, out=out, **kw)
    for k, v in params.items():
        if not isinstance(v, numeric_types) or isinstance(v, bool):
            raise ValueError(f"Distribution parameters must be either NDArray or numbers, but "
                             f"got {k}={v!r} ({type(v).__name__})")
    if out is not None:
        shape = out.shape
        ctx = out.context
        dtype = out.dtype if dtype is None else dtype
    ctx = current_context() if ctx is None else Context(ctx)
    kw = dict(params, shape=(1,) if shape is None else shape, ctx=ctx)
    if dtype is not None:
        kw["dtype"] = dtype
    return getattr(_op, opname)(out=out, **kw)


def _is_nd(x):
    from gpunda.ndarray import NDArray
    return isinstance(x, NDArray)


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high) (numbers, or NDArrays: one distribution per element)."""
    return _call("_random_uniform", shape, dtype, ctx, out, low=low, high=high)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale**2) (numbers, or NDArrays: one distribution per element)."""
    if _is_nd(loc):
        return _call("_random_normal", shape, dtype, ctx, out, mu=loc, sigma=scale)
    return _call("_random_normal", shape, dtype, ctx, out, loc=loc, scale=scale)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the exponential distribution with mean ``scale`` (rate 1/scale)."""
    if _is_nd(scale):
        return _call("_random_exponential", shape, dtype, ctx, out, lam=1.0 / scale)
    lam = 1.0 / scale if scale != 0 else float("inf")
    return _call("_random_exponential", shape, dtype, ctx, out, lam=lam)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from Gamma(shape=alpha, scale=beta)."""
    return _call("_random_gamma", shape, dtype, ctx, out, alpha=alpha, beta=beta)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from Poisson(lam)."""
    return _call("_random_poisson", shape, dtype, ctx, out, lam=lam)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Number of failures before the k-th success, success probability p."""
    return _call("_random_negative_binomial", shape, dtype, ctx, out, k=k, p=p)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None,
                                  **kwargs):
    """Negative binomial with mean ``mu`` and dispersion ``alpha`` (alpha=0: Poisson(mu))."""
    return _call("_random_generalized_negative_binomial", shape, dtype, ctx, out, mu=mu,
                 alpha=alpha)


def multinomial(data, shape=None, get_prob=False, out=None, dtype="int32", **kwargs):
    """Category indices drawn from the distributions in ``data``'s last axis; with
    ``get_prob`` also their log-probabilities."""
    from gpunda.ndarray import _op
    return _op._sample_multinomial(data, shape=() if shape is None else shape,
                                   get_prob=get_prob, dtype=dtype, out=out)


def randn(*shape, **kwargs):
    """Normal samples of the given shape (``loc``/``scale`` keywords, default 0 and 1)."""
    loc, scale = kwargs.pop("loc", 0), kwargs.pop("scale", 1)
    return normal(loc, scale, shape=shape or (1,), **kwargs)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers from [low, high)."""
    return _call("_random_randint", shape, dtype, ctx, out, low=low, high=high)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its first axis randomly permuted."""
    from gpunda.ndarray import _op
    return _op._shuffle(data, **kwargs)


def _like(dist, data, out, **params):
    from gpunda.ndarray import _op
    return getattr(_op, f"_random_{dist}_like")(data, out=out, **params)


def uniform_like(data=None, low=0, high=1, out=None, **kwargs):
    """U[low, high) samples with ``data``'s shape, dtype and context."""
    return _like("uniform", data, out, low=low, high=high)


def normal_like(data=None, loc=0, scale=1, out=None, **kwargs):
    """N(loc, scale**2) samples with ``data``'s shape, dtype and context."""
    return _like("normal", data, out, loc=loc, scale=scale)


def exponential_like(data=None, lam=1, out=None, **kwargs):
    """Exponential samples (rate ``lam``) with ``data``'s shape, dtype and context."""
    return _like("exponential", data, out, lam=lam)


def gamma_like(data=None, alpha=1, beta=1, out=None, **kwargs):
    """Gamma(alpha, scale=beta) samples with ``data``'s shape, dtype and context."""
    return _like("gamma", data, out, alpha=alpha, beta=beta)


def poisson_like(data=None, lam=1, out=None, **kwargs):
    """Poisson(lam) samples with ``data``'s shape, dtype and context."""
    return _like("poisson", data, out, lam=lam)


def negative_binomial_like(data=None, k=1, p=1, out=None, **kwargs):
    """Negative binomial (k, p) samples with ``data``'s shape, dtype and context."""
    return _like("negative_binomial", data, out, k=k, p=p)


def generalized_negative_binomial_like(data=None, mu=1, alpha=1, out=None, **kwargs):
    """Generalized negative binomial (mu, alpha) samples shaped like ``data``."""
    return _like("generalized_negative_binomial", data, out, mu=mu, alpha=alpha)
