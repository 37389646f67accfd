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


def __getattr__(name):
    # ops registered after import (custom ops) are looked up on demand
    try:
        return _symbol.lookup(name)
    except Exception:
        raise AttributeError(f"module 'gpunda.symbol' has no attribute {name!r}") from None
