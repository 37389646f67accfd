"""Random samplers (MXNet's ``_random_*``), drawing from the per-context generator
in ``gpunda.random`` so ``mx.random.seed(n, ctx)`` makes them reproducible."""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda._core.deferred import DeferredOpError, undefined_like, resource_failure
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops._util import not_real, no_bool
from gpunda.backends.generators import generator as _generator

_SHAPE = [Param("shape", "shape", ()), Param("ctx", "any", None),
          Param("dtype", "dtype", np.dtype("float32"))]


def _rng(ctx):
    return _generator(ctx)


def _check_shape(name, shape):
    if any(d < 0 for d in shape):
        raise GpundaError(f"Operator {name}: shape={shape} has a negative dimension")


def _kernel_error(xp, p, message, ctx, dtype=None):
    """A sampler parameter MXNet checks inside its kernel: reported at the next wait, and
    the device's generator carries it until then (NOTE [Deferred op errors])."""
    raise DeferredOpError(message, undefined_like(xp, p.shape, p.dtype if dtype is None else dtype),
                          resource=ctx)


def _check_generator(xp, p, ctx, dtype=None):
    """A sampler on a device whose generator carries an unreported failure fails with it."""
    f = resource_failure(ctx)
    if f is not None:
        e = DeferredOpError(f.message, undefined_like(xp, p.shape, p.dtype if dtype is None else dtype))
        e.failure = f
        raise e


def _uniform(xp, p, ctx):
    _check_shape("_random_uniform", p.shape)
    _check_generator(xp, p, ctx)
    if p.low > p.high:
        _kernel_error(xp, p, f"Operator _random_uniform: low={p.low} must be <= high={p.high}", ctx)
    r = _rng(ctx).uniform(p.low, p.high, size=p.shape)
    return r.astype(p.dtype, copy=False)


def _normal(xp, p, ctx):
    _check_shape("_random_normal", p.shape)
    _check_generator(xp, p, ctx)
    if not p.scale > 0:
        _kernel_error(xp, p, f"Operator _random_normal: scale={p.scale} must be > 0", ctx)
    return _rng(ctx).normal(p.loc, p.scale, size=p.shape).astype(p.dtype, copy=False)


def _randint(xp, p, ctx):
    _check_shape("_random_randint", p.shape)
    dt = p.dtype if p.dtype is not None else np.dtype("int32")
    _check_generator(xp, p, ctx, dt)
    if p.low >= p.high:
        _kernel_error(xp, p, f"Operator _random_randint: low={p.low} must be < high={p.high}", ctx, dt)
    return _rng(ctx).randint(p.low, p.high, size=p.shape).astype(dt, copy=False)


register(OpDef("_random_uniform", _uniform, inputs=(), wants_ctx=True, random=True, nondiff=True,
               params=[Param("low", "float", 0.0), Param("high", "float", 1.0)] + _SHAPE,
               aliases=("random_uniform", "uniform", "_sample_uniform_scalar"),
               capture="random numbers (cuRAND)", doc="Samples from U[low, high)."))
register(OpDef("_random_normal", _normal, inputs=(), wants_ctx=True, random=True, nondiff=True,
               params=[Param("loc", "float", 0.0), Param("scale", "float", 1.0)] + _SHAPE,
               aliases=("random_normal", "normal"), capture="random numbers (cuRAND)",
               doc="Samples from N(loc, scale**2)."))
register(OpDef("_random_randint", _randint, inputs=(), wants_ctx=True, random=True, nondiff=True,
               params=[Param("low", "int"), Param("high", "int"), Param("shape", "shape", ()),
                       Param("ctx", "any", None), Param("dtype", "dtype", np.dtype("int32"))],
               aliases=("random_randint", "randint"), capture="random numbers (cuRAND)",
               doc="Samples integers from [low, high)."))


def _shuffle(xp, p, x, ctx):
    if x.ndim == 0:
        return x.copy()
    perm = _rng(ctx).permutation(x.shape[0])
    if xp is not np and not isinstance(perm, xp.ndarray):
        perm = xp.asarray(perm)
    return x[perm]


register(OpDef("_shuffle", _shuffle, wants_ctx=True, random=True, nondiff=True,
               aliases=("shuffle",), capture="random numbers (cuRAND)",
               doc="A random permutation of the first axis."))


def _bernoulli_mask(xp, p, x, ctx):
    return (_rng(ctx).uniform(0.0, 1.0, size=x.shape) >= p.p).astype(x.dtype)


register(OpDef("_bernoulli_keep", _bernoulli_mask, params=[Param("p", "float", 0.5)],
               wants_ctx=True, random=True, nondiff=True, hidden=True,
               capture="random numbers (cuRAND)",
               doc="1 where a uniform draw >= p, else 0, in the input's shape and dtype."))


# ---------------------------------------------------------------------------
# more distributions: scalar parameters (_random_*) and one distribution per element of
# parameter arrays (_sample_*: output shape = parameter shape + shape)

def _gnb(rng, mu, alpha, size):
    """Generalized negative binomial: Poisson with a Gamma(1/alpha, alpha*mu) rate
    (alpha = 0 is plain Poisson(mu)), as MXNet samples it."""
    mu = np.asarray(mu, dtype=np.float64) if not hasattr(mu, "shape") else mu
    alpha = np.asarray(alpha, dtype=np.float64) if not hasattr(alpha, "shape") else alpha
    safe = alpha + (alpha == 0)
    lam = rng.gamma(1.0 / safe, safe * mu, size=size)
    lam = lam * (alpha != 0) + mu * (alpha == 0)
    return rng.poisson(lam, size=size)


def _negbin(r, k, p, size):
    """Negative binomial draws; k == 0 (no success to wait for) gives 0, as MXNet's kernel
    does, where NumPy's sampler requires k > 0."""
    zero = k == 0
    return r.negative_binomial(k + zero, p, size=size) * (1 - zero)


# name: (MXNet's parameter names with defaults, sampler(rng, *params, size), kernel checks)
_DISTRIBUTIONS = {
    "exponential": ((("lam", 1.0),), lambda r, lam, size: r.exponential(1.0 / lam, size=size),
                    (("lam", lambda v: v > 0, "must be > 0"),)),
    "gamma": ((("alpha", 1.0), ("beta", 1.0)), lambda r, a, b, size: r.gamma(a, b, size=size),
              (("alpha", lambda v: v > 0, "must be > 0"), ("beta", lambda v: v > 0, "must be > 0"))),
    "poisson": ((("lam", 1.0),), lambda r, lam, size: r.poisson(lam, size=size),
                (("lam", lambda v: v >= 0, "must be >= 0"),)),
    "negative_binomial": ((("k", 1), ("p", 1.0)),
                          lambda r, k, p, size: _negbin(r, k, p, size),
                          (("k", lambda v: v >= 0, "must be >= 0"),)),
    "generalized_negative_binomial": ((("mu", 1.0), ("alpha", 1.0)), _gnb,
                                      (("mu", lambda v: v >= 0, "must be >= 0"),
                                       ("alpha", lambda v: v >= 0, "must be >= 0"))),
}
_SAMPLE_INPUTS = {"uniform": ("low", "high"), "normal": ("mu", "sigma"), "gamma": ("alpha", "beta"),
                  "exponential": ("lam",), "poisson": ("lam",), "negative_binomial": ("k", "p"),
                  "generalized_negative_binomial": ("mu", "alpha")}
_SAMPLERS = {"uniform": lambda r, lo, hi, size: r.uniform(lo, hi, size=size),
             "normal": lambda r, mu, sigma, size: r.normal(mu, sigma, size=size),
             **{n: d[1] for n, d in _DISTRIBUTIONS.items()}}


def _scalar_sampler(dist):
    names, draw, checks = _DISTRIBUTIONS[dist]
    opname = f"_random_{dist}"

    def compute(xp, p, ctx):
        _check_shape(opname, p.shape)
        _check_generator(xp, p, ctx)
        for pname, ok, rule in checks:
            if not ok(getattr(p, pname)):
                _kernel_error(xp, p, f"Operator {opname}: {pname}={getattr(p, pname)} {rule}", ctx)
        vals = [getattr(p, n) for n, _ in names]
        return xp.asarray(draw(_rng(ctx), *vals, size=p.shape)).astype(p.dtype, copy=False)
    return compute


for _dist, (_names, _draw, _checks) in _DISTRIBUTIONS.items():
    register(OpDef(f"_random_{_dist}", _scalar_sampler(_dist), inputs=(), wants_ctx=True,
                   random=True, nondiff=True,
                   params=[Param(n, "int" if isinstance(d, int) else "float", d) for n, d in _names]
                   + _SHAPE, aliases=(f"random_{_dist}", f"_sample_{_dist}_scalar"),
                   capture="random numbers (cuRAND)",
                   doc=f"Samples from the {_dist.replace('_', ' ')} distribution."))


def _array_sampler(dist):
    draw = _SAMPLERS[dist]

    def compute(xp, p, *params, ctx):
        base = params[0].shape
        for name, a in zip(_SAMPLE_INPUTS[dist], params):
            if a.dtype.kind == "b":     # NOTE [Dtypes a kernel is instantiated for]
                raise no_bool(f"_sample_{dist}", name)
            if a.shape != base:
                raise GpundaError(f"Operator _sample_{dist}: input {name} has shape {a.shape} "
                                  f"but {_SAMPLE_INPUTS[dist][0]} has shape {base}; all "
                                  f"parameter arrays must have the same shape")
        extra = tuple(p.shape)
        size = tuple(base) + extra
        vals = [a.astype(np.float64).reshape(tuple(base) + (1,) * len(extra)) for a in params]
        dt = p.dtype if p.dtype is not None else np.dtype("float32")
        return xp.asarray(draw(_rng(ctx), *vals, size=size)).astype(dt, copy=False)
    return compute


def _dtype_choices(opname, valid):
    """A check hook: MXNet's dtype parameter of ``opname`` is an enum of ``valid``."""
    def check(p):
        if p.dtype is not None and p.dtype.name not in valid:
            raise GpundaError(f"Operator {opname}: Invalid Input: dtype={p.dtype.name!r}, "
                              f"valid values are: {', '.join(valid)}")
    return check


_FLOAT_DTYPES = ("None", "float16", "float32", "float64")
for _dist, _ins in _SAMPLE_INPUTS.items():
    register(OpDef(f"_sample_{_dist}", _array_sampler(_dist), inputs=_ins, wants_ctx=True,
                   random=True, nondiff=True,
                   check=_dtype_choices(f"_sample_{_dist}", _FLOAT_DTYPES),
                   params=[Param("shape", "shape", ()), Param("dtype", "dtype", None)],
                   aliases=(f"sample_{_dist}",), capture="random numbers (cuRAND)",
                   doc=f"One {_dist.replace('_', ' ')} distribution per element of the parameter "
                       f"arrays; output shape = parameter shape + shape."))


def _multinomial(xp, p, data, ctx):
    if data.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
        raise not_real("_sample_multinomial", "data", data.dtype)
    if data.ndim < 1:
        raise GpundaError("Operator _sample_multinomial: data must have at least one axis")
    k = data.shape[-1]
    batch = data.shape[:-1]
    extra = tuple(p.shape) if p.shape else ()
    probs = data.reshape(-1, k).astype(np.float64)
    n = max(1, int(np.prod(extra))) if extra else 1
    u = xp.asarray(_rng(ctx).uniform(0.0, 1.0, size=(probs.shape[0], n)))
    cdf = xp.cumsum(probs, axis=1)
    idx = (u[:, :, None] >= cdf[:, None, :]).sum(axis=2)
    idx = xp.minimum(idx, k - 1)
    shape = tuple(batch) + extra
    if not shape:
        shape = (1,)    # MXNet gives one sample of shape (1,) for 1-D data without shape
    out = idx.reshape(shape).astype(p.dtype, copy=False)
    if not p.get_prob:
        return out, xp.zeros(shape, dtype=data.dtype)
    logp = xp.log(xp.take_along_axis(probs, idx.reshape(probs.shape[0], -1), axis=1))
    return out, logp.reshape(shape).astype(data.dtype, copy=False)


register(OpDef("_sample_multinomial", _multinomial, inputs=("data",), wants_ctx=True,
               random=True, nondiff=True, num_outputs=2,
               check=_dtype_choices("_sample_multinomial",
                                    ("float16", "float32", "float64", "int32", "uint8")),
               num_visible=lambda p: 2 if p.get_prob else 1,
               # MXNet has one output without get_prob, named "output"
               output_names=lambda p: () if p.get_prob else ("output",),
               params=[Param("shape", "shape", ()), Param("get_prob", "bool", False),
                       Param("dtype", "dtype", np.dtype("int32"))],
               aliases=("sample_multinomial",), capture="random numbers (cuRAND)",
               doc="Category indices drawn from the distributions in data's last axis "
                   "(and their log-probabilities when get_prob)."))


# ---------------------------------------------------------------------------
# _random_<dist>_like: the scalar samplers with the shape and dtype of an input array

def _like(scalar_compute, opname):
    def compute(xp, p, data, ctx):
        if data.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
            raise not_real(opname, "data", data.dtype)
        return scalar_compute(xp, p.replace(shape=tuple(data.shape), dtype=data.dtype), ctx)
    return compute


_LIKE = {"uniform": ((("low", 0.0), ("high", 1.0)), _uniform),
         "normal": ((("loc", 0.0), ("scale", 1.0)), _normal),
         **{d: (names, _scalar_sampler(d)) for d, (names, _, _) in _DISTRIBUTIONS.items()}}
for _dist, (_names, _compute) in _LIKE.items():
    register(OpDef(f"_random_{_dist}_like", _like(_compute, f"_random_{_dist}_like"),
                   inputs=("data",), wants_ctx=True,
                   random=True, nondiff=True,
                   params=[Param(n, "int" if isinstance(d, int) else "float", d) for n, d in _names],
                   aliases=(f"random_{_dist}_like",), capture="random numbers (cuRAND)",
                   doc=f"{_dist.replace('_', ' ').capitalize()} samples with data's shape and dtype."))
