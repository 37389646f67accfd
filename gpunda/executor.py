"""``mx.executor`` (MXNet's module path): the Executor of ``Symbol.bind``."""
from gpunda.symbol.executor import Executor, _monitor_callback_wrapper  # noqa: F401

__all__ = ["Executor"]
