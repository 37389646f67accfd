"""Basic names shared by every part of gpunda, laid out as MXNet's ``mxnet.base``."""
from __future__ import annotations

import ctypes     # already loaded by NumPy; MXNet's C-API helpers below are ctypes
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


def data_dir_default():
    """MXNet's default data folder: ``%APPDATA%/mxnet`` on Windows, else ``~/.mxnet``."""
    import os
    import platform
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA", ""), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """Where downloaded data and model files live: ``$MXNET_HOME``, else ``data_dir_default()``."""
    import os
    return os.getenv("MXNET_HOME", data_dir_default())


def require(cond, where, what, value, rule):
    """Raise ``GpundaError`` unless ``cond``: "<where>: <what>=<value> <rule>"."""
    if not cond:
        raise GpundaError(f"{where}: {what}={value!r} {rule}")


# -- MXNet's ctypes plumbing ------------------------------------------------------
# ``mxnet.base`` and modules that import from it (``mxnet.autograd``) expose the helpers
# MXNet used to call its C library. gpunda has no C library: the pure ctypes helpers
# work as in MXNet, the ones that need a library handle raise NotImplementedForGpunda.

def check_call(ret):
    """Raise ``MXNetError`` when a C-API return code ``ret`` is not 0."""
    if ret != 0:
        raise GpundaError(f"check_call: a C-API call returned {ret!r}")


def c_array(ctype, values):
    """A ctypes array of ``ctype`` holding ``values``."""
    return (ctype * len(values))(*values)


def c_array_buf(ctype, buf):
    """A ctypes array of ``ctype`` sharing the memory of buffer ``buf`` (e.g. array.array)."""
    return (ctype * len(buf)).from_buffer(buf)


def c_str(string):
    """A C string (``ctypes.c_char_p``) holding ``string`` UTF-8 encoded."""
    return ctypes.c_char_p(string.encode("utf-8"))


def c_handle_array(objs):
    """MXNet: the C handles of ``objs``; gpunda's arrays have no C handles."""
    raise NotImplementedForGpunda(
        "c_handle_array is not supported yet: gpunda objects have no C-API handles")


class MXCallbackList(ctypes.Structure):
    """MXNet's C struct of callbacks (num_callbacks, callbacks, contexts)."""
    _fields_ = [("num_callbacks", ctypes.c_int),
                ("callbacks", ctypes.POINTER(ctypes.CFUNCTYPE(ctypes.c_int))),
                ("contexts", ctypes.POINTER(ctypes.c_void_p))]


class NotSupportedForSparseNDArray(GpundaError):
    """An NDArray method that sparse storage does not offer (MXNet's error of that name)."""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = function.__name__
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = f"Function {self.function}"
        if self.alias:
            msg += f" (namely operator \"{self.alias}\")"
        if self.args:
            msg += " with arguments (" + ", ".join(self.args) + ")"
        return msg + " is not supported for SparseNDArray and only available in NDArray."


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


# Where MXNet raises a plain Python exception (a bad index, asscalar on a vector),
# gpunda raises one of these: the exception MXNet code catches, and still a GpundaError.
class GpundaValueError(GpundaError, ValueError):
    """A ``ValueError`` where MXNet raises one (``asscalar`` of a vector, a bad reshape)."""


class GpundaIndexError(GpundaError, IndexError):
    """An ``IndexError`` where MXNet raises one (an index out of bounds)."""


class GpundaTypeError(GpundaError, TypeError):
    """A ``TypeError`` where MXNet raises one (an operand type NDArray does not take)."""


__all__.append("NotImplementedForSymbol")


class GpundaAssertionError(GpundaError, AssertionError):
    """A refusal where MXNet's Python code asserts: both a GpundaError and the
    AssertionError MXNet code and tests catch."""
