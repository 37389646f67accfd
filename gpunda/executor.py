"""``mx.executor`` (MXNet's module path): the Executor of ``Symbol.bind``."""
from gpunda.symbol.executor import Executor  # noqa: F401

__all__ = ["Executor"]
