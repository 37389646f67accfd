"""Optimizers (MXNet's ``mx.optimizer`` package): the classes live in ``optimizer``,
MXNet's contrib ones (``GroupAdaGrad``) in ``contrib``; both are re-exported here."""
from gpunda.optimizer import optimizer, contrib  # noqa: F401
from gpunda.optimizer.optimizer import *  # noqa: F401,F403
from gpunda.optimizer.optimizer import __all__ as _all
from gpunda.optimizer.contrib import GroupAdaGrad  # noqa: F401

__all__ = list(_all) + ["GroupAdaGrad"]
