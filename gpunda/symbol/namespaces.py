"""``mx.sym.contrib``, ``linalg``, ``image``, ``sparse``, ``random``: sub-namespaces of
registry ops, named as MXNet names them.

MXNet files an op registered as ``_contrib_<name>``, ``_linalg_<name>`` or
``_image_<name>`` under that namespace as ``<name>``; the ``sparse`` namespace
holds the ops MXNet also registers as ``_sparse_<name>`` (those with sparse
kernels there), which are the same ops as their dense names here; ``random``
wraps the samplers with MXNet's ``mx.sym.random`` signatures.
"""
from __future__ import annotations

import sys
import types

from ..base import NotImplementedForGpunda, numeric_types
from ..ops.registry import all_names

__all__ = ["build"]

_PREFIXES = {"contrib": "_contrib_", "linalg": "_linalg_", "image": "_image_"}

#: ops MXNet 1.9.1 also registers as ``_sparse_<name>`` (its ``mx.sym.sparse``)
_MXNET_SPARSE = (
    "ElementWiseSum", "Embedding", "FullyConnected", "LinearRegressionOutput",
    "LogisticRegressionOutput", "MAERegressionOutput", "abs", "adagrad_update", "adam_update",
    "add_n", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "broadcast_add",
    "broadcast_div", "broadcast_minus", "broadcast_mul", "broadcast_plus", "broadcast_sub",
    "cast_storage", "cbrt", "ceil", "clip", "concat", "cos", "cosh", "degrees", "dot",
    "elemwise_add", "elemwise_div", "elemwise_mul", "elemwise_sub", "exp", "expm1", "fix",
    "floor", "ftrl_update", "gamma", "gammaln", "log", "log10", "log1p", "log2", "make_loss",
    "mean", "negative", "norm", "radians", "relu", "retain", "rint", "round", "rsqrt",
    "sgd_mom_update", "sgd_update", "sigmoid", "sign", "sin", "sinh", "slice", "sqrt", "square",
    "stop_gradient", "sum", "tan", "tanh", "trunc", "where", "zeros_like")


def _module(name, doc):
    full = f"gpunda.symbol.{name}"
    mod = types.ModuleType(full, doc)
    sys.modules[full] = mod
    return mod


def build(lookup, Symbol):
    """The sub-namespace modules, filled with ``lookup(op name)`` Symbol functions."""
    names = all_names()
    mods = {}
    for ns, pre in _PREFIXES.items():
        mod = mods[ns] = _module(ns, f"MXNet's mx.sym.{ns}: the {pre}* operators.")
        for full in names:
            if full.startswith(pre):
                setattr(mod, full[len(pre):], lookup(full))
    sp = mods["sparse"] = _module("sparse", "MXNet's mx.sym.sparse operators.")
    for short in _MXNET_SPARSE:
        for full in (f"_sparse_{short}", short):
            if full in names:
                setattr(sp, short, lookup(full))
                break
    mods["random"] = _random_module(lookup, Symbol, names)
    return mods


def _random_module(lookup, Symbol, names):
    mod = _module("random", "MXNet's mx.sym.random: samplers as Symbols.")

    def sampler(fname, opname, pnames):
        def fn(*args, shape=None, dtype=None, **kwargs):
            params = dict(zip(pnames, args))
            params.update({k: kwargs.pop(k) for k in pnames if k in kwargs})
            if any(isinstance(v, Symbol) for v in params.values()):
                raise NotImplementedForGpunda(
                    f"sym.random.{fname} with Symbol parameters (MXNet's _sample_{fname}) "
                    f"is not supported yet")
            for k, v in params.items():
                if not isinstance(v, numeric_types):
                    raise TypeError(f"sym.random.{fname}: {k} must be a number or a Symbol, "
                                    f"got {type(v).__name__}")
            if shape is not None:
                params["shape"] = shape
            if dtype is not None:
                params["dtype"] = dtype
            return lookup(opname)(**params, **kwargs)
        fn.__name__ = fn.__qualname__ = fname
        fn.__doc__ = f"Samples from the {fname} distribution (operator {opname})."
        return fn

    if "_random_uniform" in names:
        mod.uniform = sampler("uniform", "_random_uniform", ("low", "high"))
    if "_random_normal" in names:
        mod.normal = sampler("normal", "_random_normal", ("loc", "scale"))

        def randn(*shape, loc=0, scale=1, dtype=None, **kwargs):
            """Standard normal samples of ``shape`` (MXNet's sym.random.randn)."""
            return mod.normal(loc, scale, shape=shape or None, dtype=dtype, **kwargs)
        mod.randn = randn
    if "_random_randint" in names:
        mod.randint = sampler("randint", "_random_randint", ("low", "high"))
    if "_shuffle" in names:
        mod.shuffle = lookup("_shuffle")
    for full in names:
        if full.startswith("_random_") and full.endswith("_like"):
            setattr(mod, full[len("_random_"):], lookup(full))
    return mod
