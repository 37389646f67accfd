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


# Where MXNet raises a plain Python exception (a bad index, asscalar on a vector),
# gpunda raises one of these: the exception MXNet code catches, and still a GpundaError.
class GpundaValueError(GpundaError, ValueError):
    """A ``ValueError`` where MXNet raises one (``asscalar`` of a vector, a bad reshape)."""


class GpundaIndexError(GpundaError, IndexError):
    """An ``IndexError`` where MXNet raises one (an index out of bounds)."""


class GpundaTypeError(GpundaError, TypeError):
    """A ``TypeError`` where MXNet raises one (an operand type NDArray does not take)."""
