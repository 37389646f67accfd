"""Gluon (MXNet 1.x): Parameters, Blocks, layers, losses, Trainer and data loading."""
from gpunda.gluon.parameter import Parameter, Constant, ParameterDict, DeferredInitializationError  # noqa: F401
from gpunda.gluon.block import Block, HybridBlock, SymbolBlock  # noqa: F401
from gpunda.gluon import nn  # noqa: F401
from gpunda.gluon import loss  # noqa: F401
from gpunda.gluon.trainer import Trainer  # noqa: F401
from gpunda.gluon import data  # noqa: F401
from gpunda.gluon import utils  # noqa: F401
from gpunda import metric  # noqa: F401

_LAZY = ("rnn", "contrib", "model_zoo")


def __getattr__(name):
    if name == "tensor_types":
        from gpunda.gluon import parameter
        return parameter.tensor_types
    # rarely used subpackages load on first use, keeping `import gpunda` fast
    if name in _LAZY:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
