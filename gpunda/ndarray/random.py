"""``nd.random``: the samplers of ``gpunda.random`` under MXNet's ``mx.nd.random`` name."""
from ..random import seed, uniform, normal, randn, randint, shuffle, gamma  # noqa: F401

__all__ = ["seed", "uniform", "normal", "randn", "randint", "shuffle", "gamma"]
