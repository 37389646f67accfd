"""Random samplers (MXNet's ``_random_*``), drawing from the per-context generator
in ``gpunda.random`` so ``mx.random.seed(n, ctx)`` makes them reproducible."""
from __future__ import annotations

import numpy as np

from ..base import GpundaError
from .._deferred import DeferredOpError, undefined_like, fail_resource, resource_failure
from .registry import OpDef, Param, register

_SHAPE = [Param("shape", "shape", ()), Param("ctx", "any", None),
          Param("dtype", "dtype", np.dtype("float32"))]


def _rng(ctx):
    from .. import random as _r
    return _r._generator(ctx)


def _check_shape(name, shape):
    if any(d < 0 for d in shape):
        raise GpundaError(f"Operator {name}: shape={shape} has a negative dimension")


def _kernel_error(xp, p, message, ctx, dtype=None):
    """A sampler parameter MXNet checks inside its kernel: reported at the next wait, and
    the device's generator carries it until then (NOTE [Deferred op errors])."""
    raise fail_resource(ctx, DeferredOpError(
        message, undefined_like(xp, p.shape, p.dtype if dtype is None else dtype)))


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
