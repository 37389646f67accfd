"""Densities of MXNet's samplers: ``random_pdf_<distribution>(sample, *params, is_log)``.

The parameter arrays (all of one shape) match the leftmost dims of ``sample``; every
trailing dim of ``sample`` holds more draws of the same distribution. For the Dirichlet
the last dim of both is the vector of a draw, so the output drops it (a single 1-D draw
gives shape (1,)). As in MXNet, uniform ignores the support, gamma's ``beta`` is a rate,
negative binomial's ``p`` is the failure probability, and the discrete densities have no
gradient wrt the sample (zero).
"""
from __future__ import annotations

import math

from gpunda.base import GpundaError
from gpunda.ops._util import special, sum_to_shape, not_real
from gpunda.ops.registry import OpDef, Param, register

_PARAMS = [Param("is_log", "bool", False)]
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _check(name, sample, params, vector=False):
    if sample.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
        raise not_real(name, "sample", sample.dtype)
    pshape = params[0].shape
    for q in params[1:]:
        if q.shape != pshape:
            raise GpundaError(f"Operator {name}: the parameter arrays must have one shape, "
                              f"got {pshape} and {q.shape}")
    if len(pshape) > sample.ndim or (
            tuple(sample.shape[:len(pshape) - vector]) != tuple(pshape[:len(pshape) - vector])
            or (vector and pshape and pshape[-1] != sample.shape[-1])):
        raise GpundaError(f"Operator {name}: parameters of shape {pshape} must match the "
                          f"leftmost dims of sample {sample.shape}")
    if any(q.dtype != sample.dtype for q in params):
        raise GpundaError(f"Operator {name}: sample and parameters must have one dtype, got "
                          f"{[str(x.dtype) for x in (sample,) + tuple(params)]}")


def _expand(q, ndim):
    """``q`` with trailing length-1 axes, so it broadcasts against a sample of ``ndim``."""
    return q.reshape(tuple(q.shape) + (1,) * (ndim - q.ndim))


# -- log densities, in xp (forward) ---------------------------------------------------

def _lpdf_uniform(xp, x, low, high):
    return xp.broadcast_to(-xp.log(high - low), x.shape)


def _lpdf_normal(xp, x, mu, sigma):
    return -0.5 * ((x - mu) / sigma) ** 2 - xp.log(sigma) - _LOG_SQRT_2PI


def _lpdf_gamma(xp, x, alpha, beta):
    lg = special(xp).gammaln
    return alpha * xp.log(beta) + (alpha - 1) * xp.log(x) - beta * x - lg(alpha)


def _lpdf_exponential(xp, x, lam):
    return xp.log(lam) - lam * x


def _lpdf_poisson(xp, x, lam):
    return x * xp.log(lam) - special(xp).gammaln(x + 1) - lam


def _lpdf_negbin(xp, x, k, p):
    lg = special(xp).gammaln
    return lg(x + k) - lg(x + 1) - lg(k) + k * xp.log(p) + x * xp.log1p(-p)


def _lpdf_gen_negbin(xp, x, mu, alpha):
    return _lpdf_negbin(xp, x, 1 / alpha, 1 / (mu * alpha + 1))


_LPDF = {"uniform": _lpdf_uniform, "normal": _lpdf_normal, "gamma": _lpdf_gamma,
         "exponential": _lpdf_exponential, "poisson": _lpdf_poisson,
         "negative_binomial": _lpdf_negbin, "generalized_negative_binomial": _lpdf_gen_negbin}


def _pdf_compute(distr):
    name = f"_random_pdf_{distr}"
    lpdf = _LPDF[distr]

    def compute(xp, p, sample, *params):
        _check(name, sample, params)
        qs = [_expand(q, sample.ndim) for q in params]
        if distr == "uniform" and not p.is_log:
            # MXNet's PDF_Uniform is 1 / (high - low), unchecked: negative for high < low,
            # where exp(-log(high - low)) would be NaN
            r = xp.broadcast_to(1 / (qs[1] - qs[0]), sample.shape)
        else:
            r = lpdf(xp, sample, *qs)
            r = r if p.is_log else xp.exp(r)
        return xp.ascontiguousarray(r).astype(sample.dtype, copy=False)
    return compute


def _dirichlet(xp, p, sample, alpha):
    _check("_random_pdf_dirichlet", sample, (alpha,), vector=True)
    lg = special(xp).gammaln
    a = _alpha_like(alpha, sample.ndim)
    r = ((a - 1) * xp.log(sample)).sum(-1) + lg(a.sum(-1)) - lg(a).sum(-1)
    r = r if p.is_log else xp.exp(r)
    if sample.ndim == 1:
        r = r.reshape(1)
    return xp.ascontiguousarray(r).astype(sample.dtype, copy=False)


def _alpha_like(alpha, ndim):
    """Dirichlet ``alpha`` (lead dims + (k,)) with length-1 axes before its last dim, so it
    broadcasts against a sample of ``ndim`` dims (lead dims, draws, k)."""
    lead = tuple(alpha.shape[:-1])
    return alpha.reshape(lead + (1,) * (ndim - alpha.ndim) + (alpha.shape[-1],))


# -- gradients, in F ops (differentiable again where the F ops are) --------------------

def _scaling(F, p, o, g):
    """d(output)/d(log density) times the output gradient."""
    return g if p.is_log else g * o


def _reduce(F, grad, q):
    """Sum a per-draw gradient over the draw dims down to parameter ``q``'s shape."""
    eshape = tuple(q.shape) + (1,) * (grad.ndim - q.ndim)
    return F.reshape(sum_to_shape(F, grad, eshape), shape=tuple(q.shape))


def _g_uniform(F, p, i, o, g):
    x, low, high = i
    s = _scaling(F, p, o[0], g[0])
    w = F.reshape(high - low, shape=_eshape(low, x))
    return [F.zeros_like(x), _reduce(F, s / w, low), _reduce(F, -s / w, high)]


def _eshape(q, x):
    return tuple(q.shape) + (1,) * (x.ndim - q.ndim)


def _g_normal(F, p, i, o, g):
    x, mu, sigma = i
    s = _scaling(F, p, o[0], g[0])
    m, sd = F.reshape(mu, shape=_eshape(mu, x)), F.reshape(sigma, shape=_eshape(sigma, x))
    d = x - m
    var = sd * sd
    return [-s * d / var, _reduce(F, s * d / var, mu),
            _reduce(F, s * (d * d - var) / (var * sd), sigma)]


def _g_gamma(F, p, i, o, g):
    x, alpha, beta = i
    s = _scaling(F, p, o[0], g[0])
    a, b = F.reshape(alpha, shape=_eshape(alpha, x)), F.reshape(beta, shape=_eshape(beta, x))
    ga = s * (F.log(b) + F.log(x) - F._digamma(a))
    return [s * ((a - 1) / x - b), _reduce(F, ga, alpha), _reduce(F, s * (a / b - x), beta)]


def _g_exponential(F, p, i, o, g):
    x, lam = i
    s = _scaling(F, p, o[0], g[0])
    lm = F.reshape(lam, shape=_eshape(lam, x))
    return [-s * lm, _reduce(F, s * (1 / lm - x), lam)]


def _g_poisson(F, p, i, o, g):
    x, lam = i
    s = _scaling(F, p, o[0], g[0])
    lm = F.reshape(lam, shape=_eshape(lam, x))
    return [F.zeros_like(x), _reduce(F, s * (x / lm - 1), lam)]


def _negbin_grads(F, s, x, k, q):
    """d/dk and d/dp of the negative binomial log density (times ``s``), per draw."""
    gk = s * (F._digamma(x + k) - F._digamma(k) + F.log(q))
    gq = s * (k / q - x / (1 - q))
    return gk, gq


def _g_negbin(F, p, i, o, g):
    x, k, q = i
    s = _scaling(F, p, o[0], g[0])
    gk, gq = _negbin_grads(F, s, x, F.reshape(k, shape=_eshape(k, x)),
                           F.reshape(q, shape=_eshape(q, x)))
    return [F.zeros_like(x), _reduce(F, gk, k), _reduce(F, gq, q)]


def _g_gen_negbin(F, p, i, o, g):
    x, mu, alpha = i
    s = _scaling(F, p, o[0], g[0])
    m, a = F.reshape(mu, shape=_eshape(mu, x)), F.reshape(alpha, shape=_eshape(alpha, x))
    den = m * a + 1
    gk, gq = _negbin_grads(F, s, x, 1 / a, 1 / den)
    # chain rule through k = 1/alpha, p = 1/(mu*alpha + 1)
    gm = -gq * a / (den * den)
    ga = -gk / (a * a) - gq * m / (den * den)
    return [F.zeros_like(x), _reduce(F, gm, mu), _reduce(F, ga, alpha)]


def _g_dirichlet(F, p, i, o, g):
    x, alpha = i
    s = _scaling(F, p, o[0], g[0])
    # a single 1-D draw has output shape (1,), which broadcasts against it as it is
    s1 = s if x.ndim == 1 else F.expand_dims(s, axis=-1)
    lead = tuple(alpha.shape[:-1])
    eshape = lead + (1,) * (x.ndim - alpha.ndim) + (alpha.shape[-1],)
    a = F.reshape(alpha, shape=eshape)
    asum = F.sum(a, axis=-1, keepdims=True)
    gx = s1 * (a - 1) / x
    ga = s1 * (F.log(x) + F._digamma(asum) - F._digamma(a))
    ga = F.reshape(sum_to_shape(F, ga, eshape), shape=tuple(alpha.shape))
    return [gx, ga]


_GRADS = {"uniform": _g_uniform, "normal": _g_normal, "gamma": _g_gamma,
          "exponential": _g_exponential, "poisson": _g_poisson,
          "negative_binomial": _g_negbin, "generalized_negative_binomial": _g_gen_negbin}
_PARAM_NAMES = {"uniform": ("low", "high"), "normal": ("mu", "sigma"),
                "gamma": ("alpha", "beta"), "exponential": ("lam",), "poisson": ("lam",),
                "negative_binomial": ("k", "p"), "generalized_negative_binomial": ("mu", "alpha")}


for _d, _names in _PARAM_NAMES.items():
    register(OpDef(
        f"_random_pdf_{_d}", _pdf_compute(_d), inputs=("sample",) + _names, params=_PARAMS,
        aliases=(f"random_pdf_{_d}",), gradient=_GRADS[_d], save=("inputs", "outputs"),
        family="random",
        doc=f"Density (or log density with is_log) of `sample` under {_d} distributions "
            f"with parameters {', '.join(_names)} matching sample's leftmost dims."))
register(OpDef(
    "_random_pdf_dirichlet", _dirichlet, inputs=("sample", "alpha"), params=_PARAMS,
    aliases=("random_pdf_dirichlet",), gradient=_g_dirichlet, save=("inputs", "outputs"),
    family="random",
    doc="Density (or log density with is_log) of vector draws `sample` (last dim k) under "
        "Dirichlet distributions with concentration `alpha` (lead dims + (k,))."))
