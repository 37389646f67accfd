"""MXNet's ``mxnet._ffi.base``: the string and number helpers of its FFI layer."""
from gpunda.base import integer_types, numeric_types  # noqa: F401

string_types = (str,)


def c_str(string):
    """``string`` as the UTF-8 bytes a C function takes."""
    return string.encode("utf-8")


def py_str(data):
    """C bytes back as a Python string."""
    return data.decode("utf-8")


def c_array(ctype, values):
    """A ctypes array of ``ctype`` holding ``values``."""
    return (ctype * len(values))(*values)


def decorate(func, fwrapped):
    """``fwrapped`` made to look like ``func`` (name, docstring), as functools does."""
    import functools
    return functools.wraps(func)(fwrapped)
