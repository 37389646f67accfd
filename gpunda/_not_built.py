"""Modules of MXNet that gpunda does not build yet: they import, and every name raises.

MXNet code and its tests import these modules at the top of files that mostly use
other parts (``import mxnet.numpy as np`` in a Gluon test); the import must work, and a
use must say plainly that the feature is missing, naming it.
"""
from __future__ import annotations

from .base import NotImplementedForGpunda


def missing_module_getattr(module_name, what):
    """A module ``__getattr__`` raising NotImplementedForGpunda for every public name."""

    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise NotImplementedForGpunda(
            f"{module_name}.{name} is not supported yet: gpunda does not build {what} yet")
    return __getattr__
