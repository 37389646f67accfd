"""``mx.contrib``: MXNet's experimental namespace.

Submodules load on first use (``mx.contrib.autograd`` or ``import
gpunda.contrib.autograd``), so importing this package costs nothing; add a
new submodule by putting its file here and its name in ``_SUBMODULES``.
``contrib.nd``/``contrib.ndarray`` is ``mx.nd.contrib`` and ``contrib.sym``/``contrib.symbol``
is ``mx.sym.contrib``, as in MXNet.
"""
from __future__ import annotations

import importlib

_SUBMODULES = ("autograd", "onnx", "amp", "quantization", "io", "svrg_optimization", "tensorboard",
               "text")
_ALIASES = {"quant": "quantization"}   # MXNet: from . import quantization as quant
_NAMESPACES = {"ndarray": "gpunda.ndarray", "nd": "gpunda.ndarray",
               "symbol": "gpunda.symbol", "sym": "gpunda.symbol"}

__all__ = list(_SUBMODULES) + list(_ALIASES) + list(_NAMESPACES)


def __getattr__(name):
    if name in _SUBMODULES or name in _ALIASES:
        return importlib.import_module(f"{__name__}.{_ALIASES.get(name, name)}")
    if name in _NAMESPACES:
        return importlib.import_module(_NAMESPACES[name]).contrib
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

# the __future__ import binds `annotations`; MXNet's namespace has no such name (dir())
del annotations
