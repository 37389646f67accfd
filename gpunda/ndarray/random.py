"""``nd.random``: the samplers of ``gpunda.random`` under MXNet's ``mx.nd.random`` name."""
from gpunda.base import numeric_types  # noqa: F401  (MXNet's module has these names)
from gpunda.context import current_context  # noqa: F401
from gpunda.ndarray.ndarray import NDArray  # noqa: F401
from gpunda.random import (seed, uniform, normal, randn, randint, shuffle, exponential,  # noqa: F401
                      gamma, poisson, negative_binomial, generalized_negative_binomial,
                      multinomial, uniform_like, normal_like, exponential_like, gamma_like,
                      poisson_like, negative_binomial_like, generalized_negative_binomial_like)

__all__ = ["seed", "uniform", "normal", "randn", "randint", "shuffle", "exponential", "gamma",
           "poisson", "negative_binomial", "generalized_negative_binomial", "multinomial",
           "uniform_like", "normal_like", "exponential_like", "gamma_like", "poisson_like",
           "negative_binomial_like", "generalized_negative_binomial_like"]


def _random_helper(random, sampler, params, shape, dtype, ctx, out, kwargs):
    """MXNet's dispatch of a sampler call: with NDArray parameters (all of them) the
    per-element ``sampler(*params, shape=, dtype=, out=, **kwargs)``; with numbers (all
    of them) ``random(*params, shape=, dtype=, ctx=, out=, **kwargs)`` on ``ctx`` (the
    current context by default), one sample when neither ``shape`` nor ``out`` is given."""
    from gpunda.base import _Null
    from gpunda._frontend.sampler_args import sampler_param_kind
    if sampler_param_kind(params, NDArray) is NDArray:
        return sampler(*params, shape=shape, dtype=dtype, out=out, **kwargs)
    if ctx is None:
        ctx = current_context()
    if shape is _Null and out is None:
        shape = 1
    return random(*params, shape=shape, dtype=dtype, ctx=ctx, out=out, **kwargs)
