"""``mx.np.random`` samplers. Each distribution is one op ``_npi_<dist>`` whose
parameters are numbers (op params) or arrays (op inputs, broadcast against each other
and ``size``): a parameter given as an array has its op param left None, and
``inputs`` lists those. Draws come from the per-context generator (``gpunda.random``).

Samplers MXNet differentiates are reparameterised: the sample is a function of its
parameters and of noise that does not depend on them, so the gradient with respect to a
parameter array is read off the sample itself (``normal``: d/dscale = (out - loc) /
scale, ...), summed over the broadcast axes.
"""
from __future__ import annotations

import math

import numpy as np

from gpunda.base import GpundaError, GpundaValueError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops._util import sum_to_shape
from gpunda.ops.random.samplers import _rng


def _shape_of(size, arrays):
    if size is not None:
        return tuple(size)
    shape = ()
    for a in arrays:
        shape = np.broadcast_shapes(shape, a.shape)
    return shape


def _values(p, names, arrays):
    it = iter(arrays)
    return [next(it) if getattr(p, n) is None else getattr(p, n) for n in names]


def _batch_shape_of(size, arrays):
    """``npx.random.*_n``: ``size`` is a batch shape put before the parameters' shape."""
    shape = ()
    for a in arrays:
        shape = np.broadcast_shapes(shape, a.shape)
    return (tuple(size) if size is not None else ()) + shape


def _dist(name, pnames, defaults, draw, grads=None, check=None, doc="", opname=None,
          shape_of=_shape_of, dtypes=None):
    """Register ``_npi_<name>``: ``draw(rng, xp, values, shape)`` samples; ``grads[k]``
    is ``f(F, out, values) -> d out / d param k``; ``shape_of(size, arrays)`` the output
    shape; ``dtypes`` the output dtypes allowed (None: any)."""
    grads = grads or {}

    def compute(xp, p, *arrays, ctx):
        if dtypes is not None and p.dtype is not None and p.dtype.name not in dtypes:
            raise GpundaError(f"Operator {opname or '_npi_' + name}: dtype={p.dtype.name!r} "
                              f"is not one of {list(dtypes)}")
        vals = _values(p, pnames, arrays)
        shape = shape_of(p.size, arrays)
        if check is not None:
            check(xp, vals)
        r = draw(_rng(ctx), xp, vals, shape)
        dt = p.dtype
        if dt is None:      # the parameter arrays' float dtype, else float32
            dt = next((a.dtype for a in arrays if a.dtype.kind == "f"), np.dtype("float32"))
        return xp.asarray(r).astype(dt, copy=False)

    def rule(F, p, i, o, g):
        vals = _values(p, pnames, i)
        out = []
        k = 0
        for n in pnames:
            if getattr(p, n) is not None:
                continue
            d = grads.get(n)
            x = i[k]
            k += 1
            if d is None:
                out.append(None)
                continue
            gx = sum_to_shape(F, g[0] * d(F, o[0], vals), x.shape)
            out.append(gx if gx.dtype == x.dtype else F.Cast(gx, dtype=x.dtype))
        return out

    # None = given as an input array (the Python layer always passes numbers explicitly)
    params = [Param(n, "float", None, optional=True) for n in pnames] + [
        Param("size", "shape", None, optional=True), Param("ctx", "any", None),
        Param("dtype", "dtype", None)]
    register(OpDef(opname or f"_npi_{name}", compute, params=params, wants_ctx=True, random=True,
                   inputs=lambda p: tuple(n for n in pnames if getattr(p, n) is None),
                   gradient=rule if grads else None, nondiff=not grads,
                   save=("inputs", "outputs"), family="np_random", hidden=True,
                   capture="random numbers (cuRAND)", doc=doc or f"Samples from {name}."))


def _positive(what, k):
    def check(xp, vals):
        v = vals[k]
        bad = (v <= 0) if not hasattr(v, "shape") else bool((v <= 0).any())
        if bad:
            raise ValueError(f"{what} <= 0")
    return check


def _eps_normal(out, vals):
    loc, scale = vals
    return (out - loc) / scale


_dist("uniform", ("low", "high"), (0.0, 1.0),
      lambda r, xp, v, s: r.uniform(v[0], v[1], size=s),
      {"low": lambda F, o, v: 1 - (o - v[0]) / (v[1] - v[0]),
       "high": lambda F, o, v: (o - v[0]) / (v[1] - v[0])}, doc="Samples from U[low, high).")
_dist("normal", ("loc", "scale"), (0.0, 1.0), lambda r, xp, v, s: r.normal(v[0], v[1], size=s),
      {"loc": lambda F, o, v: F.ones_like(o), "scale": lambda F, o, v: _eps_normal(o, v)},
      doc="Samples from N(loc, scale**2).")
_dist("lognormal", ("mean", "sigma"), (0.0, 1.0),
      lambda r, xp, v, s: r.lognormal(v[0], v[1], size=s),
      {"mean": lambda F, o, v: o * 1.0,
       "sigma": lambda F, o, v: o * ((F.log(o) - v[0]) / v[1])},
      doc="Samples whose log is N(mean, sigma**2).")
_dist("exponential", ("scale",), (1.0,), lambda r, xp, v, s: r.exponential(v[0], size=s),
      {"scale": lambda F, o, v: o / v[0]}, doc="Samples from Exp(1/scale).")
_dist("rayleigh", ("scale",), (1.0,), lambda r, xp, v, s: r.rayleigh(v[0], size=s),
      {"scale": lambda F, o, v: o / v[0]}, check=_positive("scale", 0),
      doc="Samples from the Rayleigh distribution.")
_dist("weibull", ("a",), (1.0,), lambda r, xp, v, s: r.weibull(v[0], size=s),
      {"a": lambda F, o, v: -o * F.log(o) / v[0]}, doc="Samples from Weibull(a).")
_dist("pareto", ("a",), (1.0,), lambda r, xp, v, s: r.pareto(v[0], size=s),
      {"a": lambda F, o, v: -(o + 1) * F.log(o + 1) / v[0]}, doc="Samples from Pareto II (Lomax).")
_dist("gumbel", ("loc", "scale"), (0.0, 1.0), lambda r, xp, v, s: r.gumbel(v[0], v[1], size=s),
      {"loc": lambda F, o, v: F.ones_like(o), "scale": lambda F, o, v: _eps_normal(o, v)},
      doc="Samples from Gumbel(loc, scale).")
_dist("logistic", ("loc", "scale"), (0.0, 1.0),
      lambda r, xp, v, s: r.logistic(v[0], v[1], size=s),
      {"loc": lambda F, o, v: F.ones_like(o), "scale": lambda F, o, v: _eps_normal(o, v)},
      doc="Samples from Logistic(loc, scale).")
_dist("power", ("a",), (1.0,), lambda r, xp, v, s: r.power(v[0], size=s),
      doc="Samples from the power distribution.", opname="_npi_powerd")
_dist("gamma", ("shape", "scale"), (1.0, 1.0), lambda r, xp, v, s: r.gamma(v[0], v[1], size=s),
      check=_positive("shape", 0), doc="Samples from Gamma(shape, scale).")
_dist("beta", ("a", "b"), (1.0, 1.0), lambda r, xp, v, s: r.beta(v[0], v[1], size=s),
      doc="Samples from Beta(a, b).")
_dist("chisquare", ("df",), (1.0,), lambda r, xp, v, s: r.chisquare(v[0], size=s),
      check=_positive("df", 0), doc="Samples from the chi-square distribution.")


# npx.random's batch samplers: a batch of draws per parameter cell, output float only
_FLOATS = ("float16", "float32", "float64")
_dist("uniform_n", ("low", "high"), (0.0, 1.0),
      lambda r, xp, v, s: r.uniform(v[0], v[1], size=s),
      {"low": lambda F, o, v: 1 - (o - v[0]) / (v[1] - v[0]),
       "high": lambda F, o, v: (o - v[0]) / (v[1] - v[0])}, shape_of=_batch_shape_of,
      dtypes=_FLOATS, doc="Samples from U[low, high), shape size + broadcast(low, high).")
_dist("normal_n", ("loc", "scale"), (0.0, 1.0), lambda r, xp, v, s: r.normal(v[0], v[1], size=s),
      {"loc": lambda F, o, v: F.ones_like(o), "scale": lambda F, o, v: _eps_normal(o, v)},
      shape_of=_batch_shape_of, dtypes=_FLOATS,
      doc="Samples from N(loc, scale**2), shape size + broadcast(loc, scale).")


def _bernoulli(xp, p, *arrays, ctx):
    """1 with probability ``prob`` (or ``sigmoid(logit)``), else 0: a uniform draw u gives
    1 where prob > u, or equivalently where logit > logit(u) (MXNet's kernel)."""
    if arrays:
        v = arrays[0]
        shape = tuple(p.size) if p.size is not None else tuple(v.shape)
        if p.size is not None:
            try:
                ok = np.broadcast_shapes(v.shape, shape) == shape
            except ValueError:
                ok = False
            if not ok:
                raise GpundaError(f"Operator _npi_bernoulli: input of shape {tuple(v.shape)} "
                                  f"cannot be broadcast to size={shape}")
        logit = p.is_logit
    else:
        v = p.logit if p.prob is None else p.prob
        shape = tuple(p.size) if p.size is not None else ()
        logit = p.prob is None
    if not logit and (bool(((v < 0) | (v > 1)).any()) if hasattr(v, "shape")
                      else not 0.0 <= v <= 1.0):
        raise GpundaValueError("Operator _npi_bernoulli: expect probs >= 0 && probs <= 1")
    u = xp.asarray(_rng(ctx).uniform(0.0, 1.0, size=shape), dtype=np.float32)
    if logit:
        with np.errstate(divide="ignore"):
            u = xp.log(u) - xp.log1p(-u)
    return (v > u).astype(p.dtype)


register(OpDef("_npi_bernoulli", _bernoulli, wants_ctx=True, random=True, nondiff=True,
               params=[Param("prob", "float", None, optional=True),
                       Param("logit", "float", None, optional=True),
                       Param("is_logit", "bool", False), Param("size", "shape", None),
                       Param("ctx", "any", None),
                       Param("dtype", "enum", "float32",
                             choices=("uint8", "int32", "float32", "float64", "float16", "bool"))],
               inputs=lambda p: ("input1",) if p.prob is None and p.logit is None else (),
               family="np_random", hidden=True, capture="random numbers (cuRAND)",
               doc="Bernoulli samples (0 or 1) of probability prob or log-odds logit."))


def _choice(xp, p, *arrays, ctx):
    host = [a.get() if hasattr(a, "get") else a for a in arrays]
    it = iter(host)
    pool = next(it) if p.a is None else None
    prob = next(it) if p.weighted else None
    if prob is not None:
        prob = np.asarray(prob, dtype=np.float64)
        prob = prob / prob.sum()
    size = None if p.size is None else tuple(p.size)
    seed = int(_rng(ctx).randint(0, 2 ** 31 - 1, size=()))
    n = p.a if pool is None else pool.shape[0]
    r = np.random.RandomState(seed).choice(n, size=size, replace=p.replace, p=prob)
    if pool is not None:
        return xp.asarray(np.asarray(pool)[r])
    return xp.asarray(np.asarray(r, dtype=np.int64))


register(OpDef("_npi_choice", _choice, wants_ctx=True, random=True, nondiff=True,
               params=[Param("a", "int", None, optional=True), Param("size", "shape", None),
                       Param("replace", "bool", True), Param("weighted", "bool", False),
                       Param("ctx", "any", None)],
               inputs=lambda p: (("a",) if p.a is None else ()) + (("p",) if p.weighted else ()),
               family="np_random", hidden=True, capture="draws on the host",
               doc="Random samples of range(a) or of the 1-D array a (uniform or weights p)."))


def _multinomial(xp, p, *arrays, ctx):
    """MXNet's kernel: each of the ``n`` draws of an output row is a uniform number ``u``
    that lands in the first category whose running sum of ``pvals`` (in pvals' dtype)
    exceeds ``u``, or in the last one. The running sum may not pass 1 (+1e-12): checked
    as MXNet does, so float32 probabilities whose rounded sum is just above 1 in float64
    still pass."""
    pv = arrays[0] if arrays else xp.asarray(p.pvals, dtype=np.float64)
    size = () if p.size is None else tuple(p.size)
    k = int(pv.shape[0])
    shape = size + (k,)
    if k == 0 or 0 in shape:
        return xp.zeros(shape, np.int64)
    acc = xp.cumsum(pv, dtype=pv.dtype)
    if bool((acc.astype(np.float64) > 1.0 + 1e-12).any()):
        raise ValueError("sum(pvals[:-1]) > 1.0")
    rows = int(np.prod(size, dtype=np.int64))
    u = xp.asarray(_rng(ctx).uniform(0.0, 1.0, size=(rows, p.n))).astype(pv.dtype)
    cat = xp.minimum(xp.searchsorted(acc, u, side="right"), k - 1)
    cat += (xp.arange(rows, dtype=cat.dtype) * k)[:, None]
    counts = xp.bincount(cat.ravel(), minlength=rows * k)
    return counts.astype(np.int64).reshape(shape)


register(OpDef("_npi_multinomial", _multinomial, wants_ctx=True, random=True, nondiff=True,
               params=[Param("n", "int"), Param("pvals", "float_or_tuple", None),
                       Param("size", "shape", None), Param("ctx", "any", None)],
               inputs=lambda p: ("pvals_arr",) if p.pvals is None else (),
               family="np_random", hidden=True, capture="data-dependent check on the host",
               doc="Counts of n draws over categories with probabilities pvals."))


def _mvn(xp, p, mean, cov, ctx):
    batch = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    shape = (tuple(p.size) if p.size is not None else ()) + batch + mean.shape[-1:]
    eps = _rng(ctx).normal(0.0, 1.0, size=shape).astype(mean.dtype)
    chol = xp.linalg.cholesky(cov.astype(np.float64)).astype(mean.dtype)
    return mean + xp.einsum("...ij,...j->...i", chol, eps)


register(OpDef("_npi_mvn_fallback", _mvn, wants_ctx=True, random=True, nondiff=True,
               inputs=("mean", "cov"), params=[Param("size", "shape", None), Param("ctx", "any", None)],
               family="np_random", hidden=True, capture="random numbers (cuRAND)",
               doc="Samples from N(mean, cov) through the Cholesky factor of cov."))


def _check_finite(x, what):
    if not math.isfinite(x):
        raise GpundaError(f"np.random: {what}={x} must be finite")
