"""``mx.sym.random``: sampler symbols (``_random_<dist>`` for number parameters,
``_sample_<dist>`` for Symbol parameters), as MXNet's ``mx.sym.random``."""
from __future__ import annotations

from gpunda.base import numeric_types
from gpunda.symbol import symbol as _symbol

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "negative_binomial",
           "generalized_negative_binomial", "multinomial", "shuffle", "randint", "uniform_like",
           "normal_like", "exponential_like", "gamma_like", "poisson_like",
           "negative_binomial_like", "generalized_negative_binomial_like"]

Symbol = _symbol.Symbol


def _helper(dist, params, shape, dtype, kwargs):
    vals = list(params.values())
    if isinstance(vals[0], _symbol.Symbol):
        if not all(isinstance(v, _symbol.Symbol) for v in vals):
            raise ValueError(f"sym.random.{dist}: distribution parameters must all be Symbols "
                             f"or all numbers")
        kw = dict(kwargs)
        if shape is not None:
            kw["shape"] = shape
        if dtype is not None:
            kw["dtype"] = dtype
        return _symbol.lookup(f"_sample_{dist}")(*vals, **kw)
    if not all(isinstance(v, numeric_types) for v in vals):
        raise ValueError(f"Distribution parameters must be either Symbol or numbers, but got "
                         f"{', '.join(type(v).__name__ for v in vals)}")
    kw = dict(params, **kwargs)
    kw["shape"] = () if shape is None else shape
    if dtype is not None:
        kw["dtype"] = dtype
    return _symbol.lookup(f"_random_{dist}")(**kw)


def _random_helper(random, sampler, params, shape, dtype, kwargs):
    """MXNet's dispatch of a sampler Symbol: with Symbol parameters (all of them)
    ``sampler(*params, shape=, dtype=, **kwargs)``, with numbers (all of them)
    ``random(*params, shape=, dtype=, **kwargs)``."""
    from gpunda._frontend.sampler_args import sampler_param_kind
    call = sampler if sampler_param_kind(params, Symbol) is Symbol else random
    return call(*params, shape=shape, dtype=dtype, **kwargs)


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs):
    """Samples from U[low, high)."""
    return _helper("uniform", {"low": low, "high": high}, shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs):
    """Samples from N(loc, scale**2)."""
    if isinstance(loc, _symbol.Symbol):
        return _helper("normal", {"mu": loc, "sigma": scale}, shape, dtype, kwargs)
    return _helper("normal", {"loc": loc, "scale": scale}, shape, dtype, kwargs)


def randn(*shape, **kwargs):
    """Standard normal samples; ``loc``/``scale`` keywords as in ``normal``."""
    loc, scale = kwargs.pop("loc", 0), kwargs.pop("scale", 1)
    return normal(loc, scale, shape=shape or None, **kwargs)


def poisson(lam=1, shape=None, dtype=None, **kwargs):
    """Samples from Poisson(lam)."""
    return _helper("poisson", {"lam": lam}, shape, dtype, kwargs)


def exponential(scale=1, shape=None, dtype=None, **kwargs):
    """Samples from the exponential distribution with mean ``scale``."""
    return _helper("exponential", {"lam": 1.0 / scale}, shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs):
    """Samples from Gamma(shape=alpha, scale=beta)."""
    return _helper("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs):
    """Failures before the k-th success with success probability p."""
    return _helper("negative_binomial", {"k": k, "p": p}, shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs):
    """Negative binomial with mean ``mu`` and dispersion ``alpha``."""
    return _helper("generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape, dtype,
                   kwargs)


def multinomial(data, shape=None, get_prob=True, dtype="int32", **kwargs):
    """Category indices drawn from the distributions in ``data``'s last axis."""
    kw = dict(kwargs, get_prob=get_prob, dtype=dtype)
    if shape is not None:
        kw["shape"] = shape
    return _symbol.lookup("_sample_multinomial")(data, **kw)


def shuffle(data, **kwargs):
    """``data`` with its first axis randomly permuted."""
    return _symbol.lookup("_shuffle")(data, **kwargs)


def randint(low, high, shape=None, dtype=None, **kwargs):
    """Integers from [low, high)."""
    kw = dict(kwargs, low=low, high=high, shape=(1,) if shape is None else shape)
    if dtype is not None:
        kw["dtype"] = dtype
    return _symbol.lookup("_random_randint")(**kw)


def _like(dist, data, **params):
    return _symbol.lookup(f"_random_{dist}_like")(data, **params)


def uniform_like(data=None, low=0, high=1, **kwargs):
    """U[low, high) samples shaped like ``data``."""
    return _like("uniform", data, low=low, high=high, **kwargs)


def normal_like(data=None, loc=0, scale=1, **kwargs):
    """N(loc, scale**2) samples shaped like ``data``."""
    return _like("normal", data, loc=loc, scale=scale, **kwargs)


def exponential_like(data=None, lam=1, **kwargs):
    """Exponential (rate ``lam``) samples shaped like ``data``."""
    return _like("exponential", data, lam=lam, **kwargs)


def gamma_like(data=None, alpha=1, beta=1, **kwargs):
    """Gamma(alpha, scale=beta) samples shaped like ``data``."""
    return _like("gamma", data, alpha=alpha, beta=beta, **kwargs)


def poisson_like(data=None, lam=1, **kwargs):
    """Poisson(lam) samples shaped like ``data``."""
    return _like("poisson", data, lam=lam, **kwargs)


def negative_binomial_like(data=None, k=1, p=1, **kwargs):
    """Negative binomial (k, p) samples shaped like ``data``."""
    return _like("negative_binomial", data, k=k, p=p, **kwargs)


def generalized_negative_binomial_like(data=None, mu=1, alpha=1, **kwargs):
    """Generalized negative binomial (mu, alpha) samples shaped like ``data``."""
    return _like("generalized_negative_binomial", data, mu=mu, alpha=alpha, **kwargs)
