"""Modules of MXNet that gpunda does not build yet: they import, and every name raises.

MXNet code and its tests import these modules at the top of files that mostly use
other parts (``import mxnet.numpy as np`` in a Gluon test); the import must work, and a
use must say plainly that the feature is missing, naming it.
"""
from __future__ import annotations

from gpunda.base import NotImplementedForGpunda


class NotBuiltError(NotImplementedForGpunda, AttributeError):
    """A name of a module gpunda does not build yet. Also an AttributeError, so that
    ``hasattr(mx.np, 'ndarray')`` and ``getattr(mx.np, 'ndarray', None)`` probes (common in
    code that supports both MXNet front ends) see the name as absent."""


def absent_module_getattr(module_name, numpy_name=None):
    """A module ``__getattr__`` for a namespace gpunda builds whole (every name MXNet 1.9.1
    has): any other name is absent in MXNet too, so an AttributeError says so, and names
    NumPy's function of that name when there is one (``numpy_name``: its module)."""

    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        msg = f"module {module_name!r} has no attribute {name!r}"
        if numpy_name is not None:
            import importlib
            if hasattr(importlib.import_module(numpy_name), name):
                msg += (f": {numpy_name}.{name} exists, but MXNet 1.9.1's {module_name} does "
                        f"not have it either (call {numpy_name}.{name} on .asnumpy() data)")
        raise AttributeError(msg)
    return __getattr__


def missing_module_getattr(module_name, what):
    """A module ``__getattr__`` raising NotBuiltError for every public name."""

    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise NotBuiltError(
            f"{module_name}.{name} is not supported yet: gpunda does not build {what} yet")
    return __getattr__
