"""Basic names shared by every part of gpunda, laid out as MXNet's ``mxnet.base``."""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["GpundaError", "MXNetError", "NotImplementedForGpunda", "mx_real_t",
           "integer_types", "numeric_types", "string_types", "py_str", "require"]


class GpundaError(Exception):
    """The one error gpunda raises for anything it refuses.

    Messages name the op (or function), the parameter or input, and the value.
    """


#: MXNet code catches ``mx.base.MXNetError``; it is the same class here.
MXNetError = GpundaError


class NotImplementedForGpunda(GpundaError):
    """A part of the MXNet API that imports fine but is not built yet."""


mx_real_t = np.float32
integer_types = (int, np.integer)
numeric_types = (float, int, np.generic, numbers.Number)
string_types = (str,)


def py_str(x):
    """Decode bytes from a C API as MXNet did; a str passes through."""
    return x.decode("utf-8") if isinstance(x, bytes) else x


def require(cond, where, what, value, rule):
    """Raise ``GpundaError`` unless ``cond``: "<where>: <what>=<value> <rule>"."""
    if not cond:
        raise GpundaError(f"{where}: {what}={value!r} {rule}")


class NotImplementedForSymbol(GpundaError):
    """An NDArray-only operation tried on a Symbol (MXNet's class, same signature).

    ``function`` is the method refused, ``alias`` the operator spelling (``'+='``)
    or None, ``args`` the operands (only their types are kept for the message).
    """

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = f"Function {self.function}"
        if self.alias:
            msg += f' (namely operator "{self.alias}")'
        if self.args:
            msg += f" with arguments ({', '.join(self.args)})"
        return msg + " is not implemented for Symbol and only available in NDArray."


__all__.append("NotImplementedForSymbol")
