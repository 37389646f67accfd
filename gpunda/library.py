"""MXNet's ``mx.library``: loading compiled operator libraries (``.so`` built against
MXNet's C++ extension API). gpunda has no C++ operator interface, so ``load`` is not
supported; write operators with ``mx.operator.CustomOp`` instead."""
from __future__ import annotations

import os

from gpunda.base import GpundaError, NotImplementedForGpunda

__all__ = ["load"]


def load(path, verbose=True):
    """Not supported: gpunda cannot load MXNet C++ operator libraries."""
    if not os.path.exists(path):
        raise GpundaError(f"library.load: load path {path} does NOT exist")
    raise NotImplementedForGpunda(f"library.load({path!r}) is not supported: gpunda is pure "
                                  f"Python and has no C++ operator interface to load a compiled "
                                  f"library into; write the operators with mx.operator.CustomOp")
