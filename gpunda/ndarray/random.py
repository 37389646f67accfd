"""``nd.random``: the samplers of ``gpunda.random`` under MXNet's ``mx.nd.random`` name."""
from ..random import (seed, uniform, normal, randn, randint, shuffle, exponential,  # noqa: F401
                      gamma, poisson, negative_binomial, generalized_negative_binomial,
                      multinomial)

__all__ = ["seed", "uniform", "normal", "randn", "randint", "shuffle", "exponential", "gamma",
           "poisson", "negative_binomial", "generalized_negative_binomial", "multinomial"]
