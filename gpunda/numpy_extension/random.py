"""``npx.random``: MXNet's samplers beyond NumPy's (``bernoulli`` and the batch samplers
``uniform_n``/``normal_n``, ops in ops/numpy/random.py) and ``seed`` (shared with
``mx.random``)."""
from __future__ import annotations

import numbers

from gpunda import random as _mx_random
from gpunda._core.not_built import absent_module_getattr

__all__ = ["seed", "bernoulli", "uniform_n", "normal_n"]


def seed(seed, ctx="all"):  # noqa: A002 (MXNet's parameter name)
    """Seed the generator of ``ctx`` (every context's with ``ctx='all'``)."""
    _mx_random.seed(seed, ctx=ctx)


def _is_concrete(x):
    from gpunda.ndarray.ndarray import NDArray
    return isinstance(x, NDArray)


def bernoulli(prob=None, logit=None, size=None, dtype=None, ctx=None, out=None):
    """Samples that are 1 with probability ``prob`` (or ``sigmoid(logit)``) and 0 otherwise;
    exactly one of ``prob``/``logit`` is given, a number or an array (broadcast to ``size``)."""
    from gpunda.context import current_context
    from gpunda.numpy._helpers import is_tensor, to_tensor, invoke, context_of
    from gpunda.numpy.random import _size
    if (prob is None) == (logit is None):
        raise ValueError("Either `prob` or `logit` must be specified, but not both. "
                         f"Received prob={prob}, logit={logit}")
    dtype = "float32" if dtype is None else dtype
    size = None if size == () else _size(size)
    value, is_logit = (logit, True) if prob is None else (prob, False)
    params = dict(size=size, dtype=dtype, is_logit=is_logit)
    if is_tensor(value) or not isinstance(value, numbers.Real):
        value = to_tensor(value)
        if not is_logit and _is_concrete(value):
            # MXNet's kernel checks the probabilities on the device and reports a ValueError
            host = value.asnumpy()
            if ((host < 0) | (host > 1)).any():
                raise ValueError("bernoulli: expect probs >= 0 && probs <= 1")
        return invoke("_npi_bernoulli", [value], out=out, **params)
    if not is_logit and not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"bernoulli: expect probs >= 0 && probs <= 1, got prob={value}")
    key = "logit" if is_logit else "prob"
    ctx = current_context() if ctx is None else ctx
    return invoke("_npi_bernoulli", [], out=out, ctx=ctx, **{key: float(value)}, **params)


def _batch_sampler(dist, names, defaults, doc):
    def f(*args, batch_shape=None, dtype=None, ctx=None, **kwargs):
        from gpunda.numpy.random import _sample
        vals = list(defaults)
        for k, a in enumerate(args):
            if k >= len(names):
                raise TypeError(f"{dist}() takes at most {len(names)} positional parameters")
            vals[k] = a
        for k, n in enumerate(names):
            if n in kwargs:
                vals[k] = kwargs.pop(n)
        if kwargs:
            raise TypeError(f"{dist}() got unexpected keyword arguments {sorted(kwargs)}")
        size = None if batch_shape == () else batch_shape
        return _sample(dist, names, vals, size, "float32" if dtype is None else dtype, ctx, None)
    f.__name__ = f.__qualname__ = dist
    f.__doc__ = doc
    return f


uniform_n = _batch_sampler(
    "uniform_n", ("low", "high"), (0.0, 1.0),
    "Samples from U[low, high) of shape ``batch_shape + broadcast(low, high).shape``.")
normal_n = _batch_sampler(
    "normal_n", ("loc", "scale"), (0.0, 1.0),
    "Samples from N(loc, scale**2) of shape ``batch_shape + broadcast(loc, scale).shape``.")

__getattr__ = absent_module_getattr("mxnet.numpy_extension.random")  # every MXNet name is built
