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
    from gpunda.base import GpundaAssertionError, GpundaValueError, _Null
    kind = NDArray if isinstance(params[0], NDArray) else \
        numeric_types if isinstance(params[0], numeric_types) else None
    if kind is None:
        raise GpundaValueError(f"Distribution parameters must be either NDArray or numbers, "
                               f"but got {type(params[0])}.")
    for p in params[1:]:
        if not isinstance(p, kind):
            raise GpundaAssertionError(f"Distribution parameters must all have the same type, "
                                       f"but got both {type(params[0])} and {type(p)}.")
    if kind is NDArray:
        return sampler(*params, shape=shape, dtype=dtype, out=out, **kwargs)
    if ctx is None:
        ctx = current_context()
    if shape is _Null and out is None:
        shape = 1
    return random(*params, shape=shape, dtype=dtype, ctx=ctx, out=out, **kwargs)
