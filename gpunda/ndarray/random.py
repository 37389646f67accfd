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
