"""Optimizers (MXNet's ``mx.optimizer`` package): the classes live in ``optimizer``,
MXNet's contrib ones (``GroupAdaGrad``) in ``contrib``; both are re-exported here."""
from . import optimizer, contrib  # noqa: F401
from .optimizer import *  # noqa: F401,F403
from .optimizer import __all__ as _all
from .contrib import GroupAdaGrad  # noqa: F401

__all__ = list(_all) + ["GroupAdaGrad"]
