"""MXNet's ``mxnet.numpy_dispatch_protocol``: which NumPy functions and ufuncs, called on
``mx.np.ndarray``, run ``mx.np``'s own (NumPy's ``__array_function__`` and
``__array_ufunc__`` protocols); every other one runs on host copies and returns
``mx.np.ndarray``. The tables live with ``mx.np`` (``gpunda/numpy/_interop.py``), filled on
the first dispatch; importing this module fills them at once, as ``import mxnet`` does.
"""
from __future__ import annotations

import functools

from gpunda.base import GpundaError
from gpunda.numpy._interop import (  # noqa: F401
    _NUMPY_ARRAY_FUNCTION_DICT, _NUMPY_ARRAY_FUNCTION_LIST, _NUMPY_ARRAY_UFUNC_DICT,
    _NUMPY_ARRAY_UFUNC_LIST, _ensure_registered, _find_duplicate, _implements,
    _register_array_function as _fill_functions, _register_array_ufunc as _fill_ufuncs)


def _protocol_runner(func, protocol):
    @functools.wraps(func)
    def run(*args, **kwargs):
        # NumPy >= 1.17 has both protocols; gpunda needs a newer one, so always run.
        # Like MXNet's, the wrapper returns nothing.
        try:
            func(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - MXNet wraps every failure the same way
            raise GpundaError(f"Running function {func.__name__} with NumPy {protocol} "
                              f"protocol failed with exception {err}") from err
    return run


def with_array_function_protocol(func):
    """Decorator: run ``func`` (needing NumPy's array function protocol); a failure
    becomes a GpundaError (a RuntimeError, as MXNet's) naming it."""
    return _protocol_runner(func, "array function")


def with_array_ufunc_protocol(func):
    """Decorator: run ``func`` (needing NumPy's array ufunc protocol); a failure becomes a
    GpundaError (a RuntimeError, as MXNet's) naming it."""
    return _protocol_runner(func, "array ufunc")


@with_array_function_protocol
def _register_array_function():
    """Register mx.np's functions for the NumPy functions of _NUMPY_ARRAY_FUNCTION_LIST."""
    _fill_functions()


@with_array_ufunc_protocol
def _register_array_ufunc():
    """Register mx.np's functions for the NumPy ufuncs of _NUMPY_ARRAY_UFUNC_LIST."""
    _fill_ufuncs()


_ensure_registered()
