"""Symbolic graphs (MXNet's ``mx.sym``): ``var``, ``Group``, ``sym.<Op>``, JSON load/save.

``sym.<Op>`` functions are generated from the op registry, like ``nd.<Op>``;
hidden ops (``_plus_scalar``) live in ``sym.op`` / ``sym._internal``.
"""
from __future__ import annotations

from . import symbol as _symbol
from .symbol import (Symbol, var, Variable, Group, load, load_json, fromjson,  # noqa: F401
                     op, _internal)
from .executor import Executor  # noqa: F401

_symbol._populate(globals())
Symbol.reshape = _symbol._reshape_method


def _creation(opname, where, **kwargs):
    try:
        fn = _symbol.lookup(opname)
    except Exception:
        raise _symbol.GpundaError(f"sym.{where}: operator {opname} is not registered") from None
    return fn(**{k: v for k, v in kwargs.items() if v is not None})


def zeros(shape, dtype=None, name=None, **kwargs):
    """A symbol of zeros of ``shape`` (MXNet's ``sym.zeros``)."""
    return _creation("_zeros", "zeros", shape=shape, dtype=dtype, name=name, **kwargs)


def ones(shape, dtype=None, name=None, **kwargs):
    """A symbol of ones of ``shape`` (MXNet's ``sym.ones``)."""
    return _creation("_ones", "ones", shape=shape, dtype=dtype, name=name, **kwargs)


def full(shape, val, dtype=None, name=None, **kwargs):
    """A symbol filled with ``val`` (MXNet's ``sym.full``)."""
    return _creation("_full", "full", shape=shape, value=val, dtype=dtype, name=name, **kwargs)


def arange(start, stop=None, step=1.0, repeat=1, name=None, dtype=None, **kwargs):
    """Evenly spaced values (MXNet's ``sym.arange``)."""
    return _creation("_arange", "arange", start=start, stop=stop, step=step, repeat=repeat,
                     name=name, dtype=dtype, **kwargs)


def __getattr__(name):
    # ops registered after import (custom ops) are looked up on demand
    try:
        return _symbol.lookup(name)
    except Exception:
        raise AttributeError(f"module 'gpunda.symbol' has no attribute {name!r}") from None


def _prefixed_namespace(name, prefix):
    """A module of the ops registered as ``<prefix><name>``, under their short names
    (``sym.image.resize`` for ``_image_resize``), as ``nd`` makes its namespaces."""
    import types
    from ..ops.registry import all_names
    mod = types.ModuleType(f"{__name__}.{name}", f"MXNet's sym.{name} namespace.")
    for full, opdef in all_names().items():
        if full.startswith(prefix) and not opdef.hidden:
            setattr(mod, full[len(prefix):], _symbol.lookup(full))
    return mod


image = _prefixed_namespace("image", "_image_")

from . import random  # noqa: E402,F401  (mx.sym.random)
