"""Basic names shared by every part of gpunda, laid out as MXNet's ``mxnet.base``."""
from __future__ import annotations

import numbers

import numpy as np

from gpunda._core import bf16 as _bf16

__all__ = ["GpundaError", "MXNetError", "NotImplementedForGpunda", "mx_real_t",
           "integer_types", "numeric_types", "string_types", "py_str", "require"]


class GpundaError(RuntimeError):
    """The one error gpunda raises for anything it refuses (a RuntimeError, as MXNetError is).

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


def np_dtype(value):
    """``numpy.dtype(value)`` read as MXNet 1.9.1 read it on NumPy < 1.24, on any NumPy.

    An object that is not a type, dtype or name but carries a ``dtype`` (an NDArray or
    ``mx.np.ndarray``, whose ``.dtype`` is a NumPy scalar type) stands for that dtype:
    ``out.astype(label)`` casts to label's dtype. NumPy 2 refuses a ``.dtype`` that is not
    a dtype instance (1.25/1.26 warn), so it is unwrapped here first. A NumPy array is
    refused as NumPy always refused it (TypeError). bfloat16, by name, as MXNet's record
    dtype or as ml_dtypes' type, is ml_dtypes' dtype (gpunda/_core/bf16.py)."""
    if isinstance(value, (np.dtype, type, str)) or value is None:
        if value is not None and _bf16.is_name(value):
            return _bf16.dtype()
        return np.dtype(value)
    if not isinstance(value, (np.ndarray, np.generic)):
        inner = getattr(value, "dtype", None)
        if inner is not None and inner is not value:
            return np_dtype(inner)
    return np.dtype(value)


# -- the rest of MXNet's ``mxnet.base`` -------------------------------------------

__all__ += ["data_dir", "data_dir_default", "error_types", "register_error", "c2pyerror",
            "get_last_ffi_error", "check_call", "NotImplementedForSymbol",
            "NotSupportedForSparseNDArray", "MXCallbackList", "classproperty", "with_metaclass",
            "c_str", "c_str_array", "c_array", "c_array_buf", "c_handle_array", "ctypes2buffer",
            "ctypes2numpy_shared", "build_param_doc", "add_fileline_to_docstring", "mx_float_p",
            "libinfo", "NDArrayHandle"]


class _NullType:
    """Placeholder for "argument not given"."""

    def __repr__(self):
        return "_Null"


_Null = _NullType()

#: error class name (as a C message prefixes it, "ValueError: ...") -> Python class
error_types = {}


def register_error(func_name=None, cls=None):
    """Register an error class under its name, as a decorator or ``register_error(name, cls)``."""
    if callable(func_name):
        cls, func_name = func_name, func_name.__name__

    def register(mycls):
        error_types[func_name if isinstance(func_name, str) else mycls.__name__] = mycls
        return mycls
    return register if cls is None else register(cls)


def c2pyerror(err_msg):
    """Split a C-style error message into (message with the stack trace first, error type)."""
    lines = err_msg.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    head = lines[0] if lines else ""
    name = head[:head.find(":")] if ":" in head else ""
    err_type = name if name and all(c.isalnum() or c in "_." for c in name) else None
    trace, message, in_trace = [], [], False
    for line in lines:
        if in_trace and not line.startswith("  "):
            in_trace = False
        if in_trace:
            trace.append(line)
        elif line.startswith("Stack trace"):
            in_trace = True
        else:
            message.append(line)
    out = ""
    if trace:
        out = "Traceback (most recent call last):\n" + "\n".join(reversed(trace)) + "\n"
    return out + "\n".join(message), err_type


def get_last_ffi_error():
    """The error the last failing ``_LIB`` call left, as its registered class."""
    from gpunda._core.capi import _LIB
    msg, err_type = c2pyerror(py_str(_LIB.MXGetLastError()))
    if err_type is not None and err_type.startswith("mxnet.error."):
        err_type = err_type[len("mxnet.error."):]
    return error_types.get(err_type, MXNetError)(msg)


def check_call(ret):
    """Raise the last C-API error when a ``_LIB`` call returned non-zero."""
    if ret != 0:
        from gpunda._core.capi import _LIB
        if not _LIB.MXGetLastError():
            raise GpundaError(f"check_call: a C-API call returned {ret!r}")
        raise get_last_ffi_error()


class _NotForThisKind(GpundaError):
    """MXNet's "Function f (namely operator "+=") with arguments (...) is not ..." errors:
    ``function`` is the method refused, ``alias`` its operator spelling or None, ``args``
    the operands (only their types are kept for the message)."""

    _tail = ""

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
        return msg + self._tail


class NotSupportedForSparseNDArray(_NotForThisKind):
    """A function that exists for dense NDArrays only was called with a sparse one."""

    _tail = " is not supported for SparseNDArray and only available in NDArray."


class NotImplementedForSymbol(_NotForThisKind):
    """An NDArray-only operation tried on a Symbol (MXNet's class, same signature)."""

    _tail = " is not implemented for Symbol and only available in NDArray."


# Where MXNet raises a plain Python exception (a bad index, asscalar on a vector),
# gpunda raises one of these: the exception MXNet code catches, and still a GpundaError.
class GpundaValueError(GpundaError, ValueError):
    """A ``ValueError`` where MXNet raises one (``asscalar`` of a vector, a bad reshape)."""


class GpundaIndexError(GpundaError, IndexError):
    """An ``IndexError`` where MXNet raises one (an index out of bounds)."""


class GpundaTypeError(GpundaError, TypeError):
    """A ``TypeError`` where MXNet raises one (an operand type NDArray does not take)."""


class GpundaAssertionError(GpundaError, AssertionError):
    """A refusal where MXNet's Python code asserts: both a GpundaError and the
    AssertionError MXNet code and tests catch."""


class GpundaKeyError(GpundaError, KeyError):
    """A ``KeyError`` where MXNet raises one (a missing constant in a ParameterDict)."""


class GpundaNotImplementedError(GpundaError, NotImplementedError):
    """A ``NotImplementedError`` where MXNet raises one (stepping a BidirectionalCell)."""


class GpundaUserWarning(GpundaError, UserWarning):
    """MXNet raises ``UserWarning`` as an exception (Trainer.step with a stale gradient,
    the learning rate of a Trainer without an optimizer): code catches that class."""


class GpundaDeprecationWarning(GpundaError, DeprecationWarning):
    """MXNet raises ``DeprecationWarning`` as an exception (list_attr(recursive=True))."""


register_error(NotImplementedForSymbol)
for _cls in (ValueError, TypeError, AttributeError, IndexError, NotImplementedError):
    register_error(_cls.__name__, _cls)
register_error("MXNetError", MXNetError)


class _ClassProperty:
    """A property read (and optionally set) on the class itself."""

    def __init__(self, fget, fset=None):
        self.fget, self.fset = fget, fset

    def __get__(self, obj, cls=None):
        return self.fget.__get__(obj, type(obj) if cls is None else cls)()

    def __set__(self, obj, value):
        if not self.fset:
            raise GpundaError(f"classproperty: {obj!r} has no setter for this attribute")
        cls = obj if isinstance(obj, type) else type(obj)
        return self.fset.__get__(None, cls)(value)

    def setter(self, func):
        self.fset = func if isinstance(func, (classmethod, staticmethod)) else classmethod(func)
        return self


class _ClassPropertyMeta(type):
    def __setattr__(cls, key, value):
        obj = cls.__dict__.get(key)
        if isinstance(obj, _ClassProperty):
            return obj.__set__(cls, value)
        return super().__setattr__(key, value)


_MXClassPropertyDescriptor = _ClassProperty       # MXNet's names of the two classes
_MXClassPropertyMetaClass = _ClassPropertyMeta


def _notify_shutdown():
    """MXNet tells its engine at exit to stop its threads; gpunda has none: nothing to do."""
    return None


def _load_lib():
    """MXNet loads libmxnet.so here; gpunda has no C library to load."""
    raise NotImplementedForGpunda("mxnet.base._load_lib is not supported: gpunda has no C++ "
                                  "library (libmxnet.so) to load")


def _module_generator(name):
    def stub(*args, **kwargs):
        raise NotImplementedForGpunda(
            f"mxnet.base.{name} is not supported: it generates op modules from MXNet's C++ "
            f"op registry; gpunda's op modules (mx.nd, mx.sym, mx.np, their submodules) are "
            f"made from its own registry at import")
    stub.__name__ = stub.__qualname__ = name
    return stub


_init_op_module = _module_generator("_init_op_module")
_init_np_op_module = _module_generator("_init_np_op_module")
_generate_op_module_signature = _module_generator("_generate_op_module_signature")


def classproperty(func):
    """Decorator: a property of the class (settable through ``.setter`` with the metaclass)."""
    return _ClassProperty(func if isinstance(func, (classmethod, staticmethod)) else classmethod(func))


def with_metaclass(meta, *bases):
    """A base class that gives its subclasses the metaclass ``meta`` (six's recipe)."""
    class _Temporary(type):
        def __new__(cls, name, _bases, d):
            return meta(name, bases, d)

        @classmethod
        def __prepare__(cls, name, _bases):
            return meta.__prepare__(name, bases)
    return type.__new__(_Temporary, "temporary_class", (), {})


def build_param_doc(arg_names, arg_types, arg_descs, remove_dup=True):
    """A NumPy-style "Parameters" section from parallel lists of names, types, descriptions."""
    seen, lines = set(), []
    for name, typ, desc in zip(arg_names, arg_types, arg_descs):
        if name in seen and remove_dup:
            continue
        if name == "num_args":
            continue
        seen.add(name)
        lines.append(f"{name} : {typ}")
        if desc:
            lines.append("    " + desc)
    return "Parameters\n----------\n" + "\n".join(lines) + "\n"


def add_fileline_to_docstring(module, incursive=True):
    """MXNet appended "From:file:line" to docstrings; gpunda's docstrings stay as written."""
    return None


def _as_list(obj):
    """``obj`` if it is a list or tuple, else ``[obj]``."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


from gpunda._core.capi import (  # noqa: E402  (ctypes names, after the error classes they use)
    c_str, c_str_array, c_array, c_array_buf, c_handle_array, ctypes2buffer, ctypes2numpy_shared,
    mx_uint, mx_int, mx_float, mx_float_p, NDArrayHandle, FunctionHandle, OpHandle, CachedOpHandle,
    SymbolHandle, ExecutorHandle, DataIterCreatorHandle, DataIterHandle, KVStoreHandle,
    RecordIOHandle, RtcHandle, CudaModuleHandle, CudaKernelHandle, ProfileHandle, DLPackHandle,
    _LIB)
from gpunda._core.capi import MXCallbackList  # noqa: E402
from gpunda._core.op_prefixes import (  # noqa: E402,F401  (MXNet's private op-name helpers)
    _OP_NAME_PREFIX_LIST, _NP_OP_PREFIX, _NP_OP_SUBMODULE_LIST, _NP_EXT_OP_PREFIX,
    _NP_EXT_OP_SUBMODULE_LIST, _NP_INTERNAL_OP_PREFIX, _NP_OUTPUT_IS_LIST_OPERATORS,
    _get_op_name_prefix, _is_np_op, _output_is_list, _get_op_submodule_name, _valid_error_name,
    _find_error_type)
from gpunda import libinfo  # noqa: E402
__version__ = libinfo.__version__


class _GpundaLogger:
    """``logging.getLogger("gpunda")``, imported on first use: the logging package costs
    a few milliseconds of ``import gpunda`` and most programs never log through it."""

    def __getattr__(self, name):
        import logging
        return getattr(logging.getLogger("gpunda"), name)


gpunda_log = _GpundaLogger()
