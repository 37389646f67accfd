"""MXNet's ``mx.error``: structured error classes, registered by name."""
from __future__ import annotations

from gpunda.base import MXNetError, register_error

__all__ = ["MXNetError", "register", "InternalError"]

register = register_error


@register_error
class InternalError(MXNetError):
    """An error inside the framework itself (not caused by the caller's input)."""

    def __init__(self, msg):
        if "MXNet hint:" not in msg:
            msg += ("\nMXNet hint: You hit an internal error. Please report it with the "
                    "code that triggers it.")
        super().__init__(msg)
