"""The table of MXNet-op -> ONNX converters, keyed by MXNet op name.

A converter is ``fn(g, node)``: ``g`` is the graph being built (``_builder.GraphBuilder``)
and ``node`` one op node of the Symbol graph (its parsed params in ``node.p``). It adds
ONNX nodes with ``g.add(...)`` and binds every visible output of ``node`` with
``g.bind``/``g.add(..., outputs=g.outs(node))``. Families live in ``ops_*.py``; each
registers itself on import, and ``load_all`` imports them all once.
"""
from __future__ import annotations

import importlib

__all__ = ["CONVERTERS", "register", "converter_for", "load_all"]

CONVERTERS: dict = {}

_FAMILIES = ("ops_nn", "ops_conv", "ops_norm", "ops_math", "ops_tensor", "ops_rnn",
             "ops_contrib", "ops_vision")
_loaded = False


def register(*names):
    """Decorator: ``fn`` converts the MXNet ops ``names`` (an op's canonical name and aliases)."""
    def deco(fn):
        for n in names:
            CONVERTERS[n] = fn
        return fn
    return deco


def load_all():
    """Import every converter family (once)."""
    global _loaded
    if not _loaded:
        for fam in _FAMILIES:
            importlib.import_module(f"{__package__}.{fam}")
        _loaded = True
    return CONVERTERS


def converter_for(opdef):
    """The converter for registry op ``opdef`` (looked up by its name, then its aliases)."""
    load_all()
    for n in (opdef.name, *getattr(opdef, "aliases", ())):
        fn = CONVERTERS.get(n)
        if fn is not None:
            return fn
    return None
