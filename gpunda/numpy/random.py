"""``mx.np.random``: NumPy's sampling functions on gpunda's per-context generators
(``mx.random.seed`` makes them reproducible). Distribution parameters may be numbers or
arrays (broadcast with ``size``); normal, uniform, lognormal, exponential, rayleigh,
weibull, pareto, gumbel and logistic are differentiable in their array parameters, as
in MXNet (ops in ops/numpy/random.py)."""
from __future__ import annotations

import numbers as _numbers

import numpy as _onp

from gpunda.context import current_context as _current_context
from gpunda.numpy._helpers import (is_tensor as _is_tensor, to_tensor as _to_tensor,
                                   invoke as _invoke, context_of as _context_of)

__all__ = ["uniform", "normal", "lognormal", "exponential", "rayleigh", "weibull", "pareto",
           "gumbel", "logistic", "power", "gamma", "beta", "chisquare", "randint", "rand",
           "randn", "choice", "shuffle", "multinomial", "multivariate_normal"]


def _size(size):
    if size is None:
        return None
    if isinstance(size, _numbers.Integral):
        return (int(size),)
    return tuple(int(s) for s in size)


def _sample(dist, names, values, size, dtype, ctx, out):
    tensors, params = [], {}
    ref = next((v for v in values if _is_tensor(v)), None)
    for n, v in zip(names, values):
        if _is_tensor(v) or isinstance(v, (_onp.ndarray, list, tuple)):
            tensors.append(_to_tensor(v, ref))
            params[n] = None
        else:
            params[n] = float(v)
    if ctx is None:
        ctx = _context_of(*tensors) or _current_context()
    dt = dtype if dtype is not None else None if tensors else "float32"
    opname = "_npi_powerd" if dist == "power" else f"_npi_{dist}"
    if tensors:
        return _invoke(opname, tensors, out=out, size=_size(size), dtype=dt, **params)
    return _invoke(opname, [], out=out, size=_size(size), dtype=dt, ctx=ctx, **params)


def _check_positive(dist, names, values, positive, nonneg=()):
    """MXNet's samplers refuse out-of-range parameters with ValueError: ``positive`` ones
    must be > 0, ``nonneg`` ones >= 0 (arrays are checked when they are concrete, not
    while a graph is built)."""
    from gpunda.ndarray.ndarray import NDArray
    for n, v in zip(names, values):
        if n not in positive and n not in nonneg:
            continue
        lo = (lambda a: a <= 0) if n in positive else (lambda a: a < 0)
        if isinstance(v, NDArray):
            bad = bool(lo(v.asnumpy()).any())
        elif _is_tensor(v):
            continue
        else:
            bad = bool(lo(_onp.asarray(v)).any())
        if bad:
            raise ValueError(f"{dist}: {n} {'<=' if n in positive else '<'} 0")


def _sampler(dist, names, defaults, doc, positive=(), nonneg=()):
    def f(*args, size=None, dtype=None, ctx=None, out=None, **kwargs):
        vals = list(defaults)
        for k, a in enumerate(args):
            if k < len(names):
                vals[k] = a
            elif k == len(names):
                size = a
        for k, n in enumerate(names):
            if n in kwargs:
                vals[k] = kwargs.pop(n)
        if kwargs:
            raise TypeError(f"{dist}() got unexpected keyword arguments {sorted(kwargs)}")
        if positive or nonneg:
            _check_positive(dist, names, vals, positive, nonneg)
        return _sample(dist, names, vals, size, dtype, ctx, out)
    f.__name__ = f.__qualname__ = dist
    f.__doc__ = doc
    return f


uniform = _sampler("uniform", ("low", "high"), (0.0, 1.0), "Samples from U[low, high).")
normal = _sampler("normal", ("loc", "scale"), (0.0, 1.0), "Samples from N(loc, scale**2).",
                  nonneg=("scale",))
lognormal = _sampler("lognormal", ("mean", "sigma"), (0.0, 1.0),
                     "Samples whose logarithm is N(mean, sigma**2).", nonneg=("sigma",))
exponential = _sampler("exponential", ("scale",), (1.0,), "Samples from Exp(1/scale).",
                       nonneg=("scale",))
rayleigh = _sampler("rayleigh", ("scale",), (1.0,), "Samples from Rayleigh(scale).",
                    nonneg=("scale",))
weibull = _sampler("weibull", ("a",), (1.0,), "Samples from Weibull(a).", positive=("a",))
pareto = _sampler("pareto", ("a",), (1.0,), "Samples from Pareto II / Lomax(a).", positive=("a",))
gumbel = _sampler("gumbel", ("loc", "scale"), (0.0, 1.0), "Samples from Gumbel(loc, scale).")
logistic = _sampler("logistic", ("loc", "scale"), (0.0, 1.0), "Samples from Logistic(loc, scale).")
power = _sampler("power", ("a",), (1.0,), "Samples from the power distribution P(x) = a x**(a-1).",
                 positive=("a",))
gamma = _sampler("gamma", ("shape", "scale"), (1.0, 1.0), "Samples from Gamma(shape, scale).",
                 positive=("shape", "scale"))
beta = _sampler("beta", ("a", "b"), (1.0, 1.0), "Samples from Beta(a, b).", positive=("a", "b"))
chisquare = _sampler("chisquare", ("df",), (1.0,), "Samples from the chi-square distribution.",
                     positive=("df",))


def randint(low, high=None, size=None, dtype=None, ctx=None, out=None):
    """Random integers from [low, high) (from [0, low) when ``high`` is None)."""
    if high is None:
        low, high = 0, low
    ctx = _current_context() if ctx is None else ctx
    return _invoke("_random_randint", [], out=out, low=int(low), high=int(high),
                  shape=_size(size) or (), dtype=dtype or "int64", ctx=ctx)


def rand(*size, **kwargs):
    """Samples from U[0, 1) of shape ``size``."""
    return uniform(0.0, 1.0, size=size, **kwargs)


def randn(*size, **kwargs):
    """Samples from N(0, 1) of shape ``size``."""
    return normal(0.0, 1.0, size=size, **kwargs)


def choice(a, size=None, replace=True, p=None, ctx=None, out=None):
    """Random samples from ``range(a)`` or from the 1-D array ``a``."""
    ins, kw = [], {}
    if isinstance(a, _numbers.Integral):
        kw["a"] = int(a)
    else:
        ins.append(_to_tensor(a))
    if p is not None:
        ins.append(_to_tensor(p, ins[0] if ins else None))
    if not ins:
        kw["ctx"] = ctx or _current_context()
    return _invoke("_npi_choice", ins, out=out, size=_size(size), replace=replace,
                  weighted=p is not None, **kw)


def shuffle(x):
    """Shuffle ``x`` along its first axis, in place."""
    _invoke("_shuffle", [x], out=x)


def multinomial(n, pvals, size=None):
    """Counts of ``n`` draws over categories of probabilities ``pvals``."""
    if _is_tensor(pvals):
        return _invoke("_npi_multinomial", [pvals], n=int(n), size=_size(size))
    if isinstance(pvals, _onp.ndarray):
        raise ValueError("multinomial: pvals as a numpy.ndarray is not supported, pass a "
                         "list or an mx.np.ndarray")
    if any(isinstance(v, (list, tuple)) for v in pvals):
        raise ValueError("multinomial: pvals is too deep for a 1-D array of probabilities")
    pv = tuple(float(v) for v in pvals)
    return _invoke("_npi_multinomial", [], n=int(n), pvals=pv, size=_size(size),
                  ctx=_current_context())


def multivariate_normal(mean, cov, size=None, check_valid=None, tol=None):
    """Samples from N(mean, cov) (cov symmetric positive definite)."""
    mean = _to_tensor(mean)
    cov = _to_tensor(cov, mean)
    return _invoke("_npi_mvn_fallback", [mean, cov], size=_size(size))

# the __future__ import binds `annotations`; MXNet's namespace has no such name (dir())
del annotations
