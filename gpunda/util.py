"""MXNet's ``mx.util``: NumPy-shape and NumPy-array switches, environment access, GPU facts.

NumPy shape semantics has a process-wide and a per-thread switch, as MXNet's
engine keeps them: ``set_np_shape(2)`` turns it on for every thread,
``set_np_shape(True)`` (1) for the calling thread only, and ``set_np_shape(0)``
turns both off. NumPy-array semantics is a per-thread scope stack
(``_NumpyArrayScope``).
"""
from __future__ import annotations

import functools
import os
import threading

from gpunda.base import GpundaError, c_str, check_call, py_str

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array",
           "np_array", "use_np_array", "set_np", "reset_np", "use_np", "getenv", "setenv",
           "set_module", "np_ufunc_legal_option", "wrap_np_unary_func", "wrap_np_binary_func",
           "get_gpu_count", "get_gpu_memory", "get_cuda_compute_capability",
           "c_str", "check_call", "py_str"]

_NP_SHAPE_GLOBAL = 2


class _NpShapeState(threading.local):
    thread_on = False


_np_shape_local = _NpShapeState()
_np_shape_global = False


# whether the one-time notes that NumPy shape / array semantics were turned on were logged
_set_np_shape_logged = False
_set_np_array_logged = False

_CUDA_SUCCESS = 0   # CUDA driver API's success code (CUresult)


def _sanity_check_params(func_name, unsupported_params, param_dict):
    """NotImplementedError naming ``func_name`` and the first of ``unsupported_params``
    that ``param_dict`` holds."""
    for param_name in unsupported_params:
        if param_name in param_dict:
            raise NotImplementedError(f"function {func_name} does not support parameter "
                                      f"{param_name}")


def _log_once(flag, message):
    """``logging.info(message)`` the first time flag (a module global's name) is False."""
    if not globals()[flag]:
        import logging
        logging.info(message)
        globals()[flag] = True


def set_np_shape(active):
    """Turn NumPy shape semantics on or off; returns whether it was on before.

    ``active`` is 0/False (off, for every thread), 1/True (on in this thread) or
    2 (on in every thread).
    """
    global _np_shape_global
    if not active and is_np_array():
        raise ValueError("Deactivating NumPy shape semantics while NumPy array semantics is "
                         "still active is not allowed; call reset_np() to turn both off")
    if active:
        _log_once("_set_np_shape_logged",
                  "NumPy-shape semantics is now on: scalar () and zero-size shapes mean what "
                  "they mean in NumPy. Keep it on while using mxnet.numpy and "
                  "mxnet.numpy_extension.")
    prev = is_np_shape()
    if not active:
        _np_shape_global = False
        _np_shape_local.thread_on = False
    else:
        if int(active) == _NP_SHAPE_GLOBAL:
            _np_shape_global = True
        _np_shape_local.thread_on = True
    return prev


def is_np_shape():
    """Whether 0-d and zero-size shapes follow NumPy (True) or MXNet's legacy rules."""
    return _np_shape_global or _np_shape_local.thread_on


class _NumpyShapeScope:
    """``with`` scope setting NumPy shape semantics, restored on exit (``np_shape``)."""

    def __init__(self, is_np_shape):  # noqa: A002 (MXNet's parameter name)
        self._enter_is_np_shape = is_np_shape
        self._prev_is_np_shape = None

    def __enter__(self):
        if self._enter_is_np_shape is not None:
            self._prev_is_np_shape = set_np_shape(self._enter_is_np_shape)
        return self

    def __exit__(self, *exc):
        if self._enter_is_np_shape is not None and self._prev_is_np_shape != self._enter_is_np_shape:
            set_np_shape(self._prev_is_np_shape)
        return False


def np_shape(active=True):
    """Scope with NumPy shape semantics on (or off): ``with mx.util.np_shape(True):``."""
    return _NumpyShapeScope(active)


def _wrap_in_scope(func, scope, what):
    """``func`` (a function, or a class whose methods are all wrapped) run inside ``scope()``."""
    import inspect
    if inspect.isclass(func):
        for name, method in inspect.getmembers(
                func, predicate=lambda f: inspect.isfunction(f) or inspect.ismethod(f)
                or isinstance(f, property)):
            if isinstance(method, property):
                if method.fget is None:
                    continue
                setattr(func, name, property(_wrap_in_scope(method.fget, scope, what),
                                             method.fset, method.fdel, method.__doc__))
            else:
                setattr(func, name, _wrap_in_scope(method, scope, what))
        return func
    if callable(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with scope():
                return func(*args, **kwargs)
        return wrapper
    raise TypeError(f"{what} can only decorate classes and callable objects, while received "
                    f"a {type(func)}")


def use_np_shape(func):
    """Decorator running ``func`` (or every method of a class) with NumPy shape semantics."""
    return _wrap_in_scope(func, lambda: np_shape(True), "use_np_shape")


def set_module(module):
    """Decorator setting ``__module__`` of a function or class to ``module``."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator


class _NumpyArrayScope:
    """Per-thread NumPy-array semantics (``mx.np.ndarray`` instead of ``mx.nd.NDArray``)."""

    _current = threading.local()

    def __init__(self, is_np_array):  # noqa: A002 (MXNet's parameter name)
        self._old_scope = None
        self._is_np_array = is_np_array

    def __enter__(self):
        if not hasattr(_NumpyArrayScope._current, "value"):
            _NumpyArrayScope._current.value = _NumpyArrayScope(False)
        self._old_scope = _NumpyArrayScope._current.value
        _NumpyArrayScope._current.value = self
        return self

    def __exit__(self, *exc):
        _NumpyArrayScope._current.value = self._old_scope
        return False


def np_array(active=True):
    """Scope with NumPy-array semantics on (or off)."""
    return _NumpyArrayScope(active)


def is_np_array():
    """Whether NumPy-array semantics is on in this thread."""
    cur = _NumpyArrayScope._current
    return cur.value._is_np_array if hasattr(cur, "value") else False


def use_np_array(func):
    """Decorator running ``func`` (or every method of a class) with NumPy-array semantics."""
    return _wrap_in_scope(func, lambda: np_array(True), "use_np_array")


def use_np(func):
    """``use_np_shape(use_np_array(func))``: both NumPy semantics."""
    return use_np_shape(use_np_array(func))


def _set_np_array(active):
    if active:
        _log_once("_set_np_array_logged",
                  "NumPy-array semantics is now on: mxnet.numpy and mxnet.numpy_extension "
                  "operators and mx.np.ndarray arrays can be used.")
    prev = is_np_array()
    _NumpyArrayScope._current.value = _NumpyArrayScope(active)
    return prev


def set_np(shape=True, array=True):
    """Set NumPy shape and NumPy-array semantics together (array needs shape)."""
    if not shape and array:
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics.")
    _set_np_array(array)
    set_np_shape(shape)


def reset_np():
    """Turn both NumPy semantics off."""
    set_np(shape=False, array=False)


_np_ufunc_default_kwargs = {"where": True, "casting": "same_kind", "order": "K",
                            "dtype": None, "subok": True}


def np_ufunc_legal_option(key, value):
    """Whether ``key=value`` is a value NumPy's ufuncs accept for that keyword."""
    import numpy as np
    if key == "where":
        return True
    if key == "casting":
        return value in ("no", "equiv", "safe", "same_kind", "unsafe")
    if key == "order":
        return isinstance(value, str)
    if key == "dtype":
        return value in (np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32,
                         np.float64, "int8", "uint8", "int32", "int64", "float16", "float32",
                         "float64")
    if key == "subok":
        return isinstance(value, bool)
    return False


def _check_ufunc_kwargs(fname, kwargs):
    for key, value in kwargs.items():
        if key not in _np_ufunc_default_kwargs:
            raise TypeError(f"{key} is an invalid keyword to function '{fname}'")
        if value != _np_ufunc_default_kwargs[key]:
            if np_ufunc_legal_option(key, value):
                raise NotImplementedError(f"{key}={value} is not implemented yet for operator "
                                          f"{fname}")
            raise TypeError(f"{key}={value} not understood for operator {fname}")


def wrap_np_unary_func(func):
    """``func(x, out=None)`` that rejects ufunc keywords it does not implement, as NumPy would."""
    @functools.wraps(func)
    def wrapper(x, out=None, **kwargs):
        _check_ufunc_kwargs(func.__name__, kwargs)
        return func(x, out=out)
    return wrapper


def wrap_np_binary_func(func):
    """``func(x1, x2, out=None)`` that rejects ufunc keywords it does not implement."""
    @functools.wraps(func)
    def wrapper(x1, x2, out=None, **kwargs):
        _check_ufunc_kwargs(func.__name__, kwargs)
        return func(x1, x2, out=out)
    return wrapper


def get_gpu_count():
    """Number of usable GPUs (honours ``CUDA_VISIBLE_DEVICES``)."""
    from gpunda.context import num_gpus
    return num_gpus()


def get_gpu_memory(gpu_dev_id):
    """(free, total) bytes of GPU ``gpu_dev_id``."""
    from gpunda.context import gpu_memory_info
    return gpu_memory_info(gpu_dev_id)


def get_cuda_compute_capability(ctx):
    """The compute capability of GPU context ``ctx`` as an int (70 for sm_70)."""
    if ctx.device_type != "gpu":
        raise ValueError(f"Expecting a gpu context to get cuda compute capability, while "
                         f"received ctx {ctx}")
    from gpunda.backends import discovery
    n, _ = discovery.probe()
    if ctx.device_id >= n:
        raise GpundaError(f"get_cuda_compute_capability: {ctx} does not exist "
                          f"({n} GPU(s) visible); GPU is not available")
    with ctx.backend.device_scope():
        return int(ctx.backend.xp.cuda.Device(ctx.device_id).compute_capability)


def getenv(name):
    """The value of environment variable ``name``, or None when it is not set."""
    return os.environ.get(name)


def setenv(name, value):
    """Set environment variable ``name`` to ``value``; ``None`` unsets it."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
