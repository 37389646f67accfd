"""``mx.sym.contrib``, ``linalg``, ``image``, ``sparse``: sub-namespaces of registry ops,
named as MXNet names them (``mx.sym.random`` is its own module, symbol/random.py).

MXNet files an op registered as ``_contrib_<name>``, ``_linalg_<name>`` or
``_image_<name>`` under that namespace as ``<name>``; the ``sparse`` namespace
holds the ops MXNet also registers as ``_sparse_<name>`` (those with sparse
kernels there), which are the same ops as their dense names here.
"""
from __future__ import annotations

import sys
import types

from gpunda.ops.registry import all_names

__all__ = ["build"]

_PREFIXES = {"contrib": "_contrib_", "linalg": "_linalg_", "image": "_image_",
             "gen_random": "_random_"}   # MXNet's generated mx.sym.gen_random module

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
    "stop_gradient", "sum", "tan", "tanh", "trunc", "where", "zeros_like",
    "_contrib_round_ste", "_contrib_sign_ste")


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
                # MXNet names these nodes by the short name: box_nms0, gemm20, to_tensor0
                short = full[len(pre):]
                setattr(mod, short, lookup(full, short.lower()))
    sp = mods["sparse"] = _module("sparse", "MXNet's mx.sym.sparse operators.")
    for short in _MXNET_SPARSE:
        for full in (f"_sparse_{short}", short):
            if full in names:
                # nodes named by the short name, as MXNet's (sym.sparse.abs makes abs0)
                setattr(sp, short, lookup(full, short.lower()) if full != short else lookup(full))
                break
    return mods
