"""Gluon contrib (MXNet 1.x ``gluon.contrib``): extra layers, recurrent cells and the Estimator.

Subpackages load on first use.
"""
import importlib

_SUBPACKAGES = ("nn", "rnn", "estimator", "cnn", "data")


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
