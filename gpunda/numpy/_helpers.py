"""What every ``mx.np`` function module shares: telling arrays from scalars, turning
official-NumPy arrays and lists into ``mx.np.ndarray``, and the host round trip of the
functions MXNet itself computes with official NumPy."""
from __future__ import annotations

import numbers

import numpy as _onp

from gpunda.ndarray.ndarray import NDArray
from gpunda.util import np_ufunc_legal_option
from gpunda.numpy.multiarray import ndarray, invoke_np, as_np

__all__ = []


def is_tensor(x):
    """An ``NDArray``/``ndarray`` or a Symbol (inputs the registered ops take)."""
    if isinstance(x, NDArray):
        return True
    from gpunda.symbol.symbol import Symbol
    return isinstance(x, Symbol)


def is_scalar(x):
    return isinstance(x, (numbers.Number, _onp.generic)) and not isinstance(x, _onp.ndarray)


def context_of(*xs):
    for x in xs:
        if isinstance(x, NDArray):
            return x.context
    return None


def to_tensor(x, like=None, dtype=None):
    """``x`` as an array input: arrays pass, lists/official-NumPy arrays are copied
    (keeping their dtype; float64 lists become float32 as MXNet's np.array does)."""
    if is_tensor(x):
        return x
    from gpunda.ndarray.ndarray import array as _nd_array
    src = _onp.asarray(x)
    if dtype is None:
        dtype = src.dtype
        if not isinstance(x, _onp.ndarray) and dtype == _onp.float64:
            dtype = _onp.float32
    return as_np(_nd_array(src, ctx=context_of(like) if like is not None else None, dtype=dtype))


def tensors(xs, like=None):
    ref = next((x for x in xs if is_tensor(x)), like)
    return [to_tensor(x, ref) for x in xs]


def on_host(x):
    """An official NumPy copy of an array (scalars and lists pass through asarray)."""
    if isinstance(x, NDArray):
        return x.asnumpy()
    if isinstance(x, (list, tuple)):
        return type(x)(on_host(v) for v in x)
    return x


# DLDataType.TYPE_MAP of MXNet 1.9.1's from_numpy: the dtypes a NumPy fallback may return
_DLPACK_DTYPES = frozenset(("int32", "int64", "bool", "uint8", "uint32", "uint64", "float16",
                            "float32", "float64"))


def back_to(result, ctx):
    """Official-NumPy results of a host fallback as ``mx.np.ndarray`` on ``ctx``."""
    from gpunda.ndarray.ndarray import array as _nd_array
    if isinstance(result, _onp.ndarray):
        if result.dtype.name not in _DLPACK_DTYPES:
            # MXNet converts a fallback's result through DLPack (ndarray.from_numpy)
            raise ValueError(f"{result.dtype.name} is not supported.")
        return as_np(_nd_array(result, ctx=ctx, dtype=result.dtype))
    if isinstance(result, tuple):
        return tuple(back_to(r, ctx) for r in result)
    if isinstance(result, list):
        return [back_to(r, ctx) for r in result]
    return result


_UFUNC_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "dtype": None,
                   "subok": True}
_UFUNC_DTYPES = ("int8", "uint8", "int32", "int64", "float16", "float32", "float64")


def _legal_ufunc_option(key, value):
    # util.np_ufunc_legal_option (MXNet's), except that any spelling of a dtype counts
    if key == "dtype":
        try:
            return _onp.dtype(value).name in _UFUNC_DTYPES
        except TypeError:
            return False
    return np_ufunc_legal_option(key, value)


def check_ufunc_kwargs(name, kwargs):
    """MXNet's handling of NumPy's ufunc keywords: defaults pass; another legal value is
    NotImplementedError; an unknown keyword or value is TypeError."""
    for key, value in kwargs.items():
        if key not in _UFUNC_DEFAULTS:
            raise TypeError(f"{key} is an invalid keyword to function '{name}'")
        default = _UFUNC_DEFAULTS[key]
        same = value is default if default is None or isinstance(default, bool) else value == default
        if not same:
            if _legal_ufunc_option(key, value):
                raise NotImplementedError(f"{key}={value} is not implemented yet for operator "
                                          f"{name}")
            raise TypeError(f"{key}={value} not understood for operator {name}")


def axis_param(axis):
    """NumPy's axis argument as an op param (lists become tuples)."""
    if isinstance(axis, list):
        return tuple(axis)
    return axis


def invoke(opname, inputs, out=None, **params):
    """``invoke_np`` with ``out=`` passed only when given."""
    if out is not None:
        params["out"] = out
    return invoke_np(opname, inputs, **params)


def _array_args(args, kwargs):
    return [a for a in list(args) + list(kwargs.values())
            if a is not None and not isinstance(a, (int, float, str, bool, tuple, list))]


def call_op(opname, args, kwargs, hint=None):
    """Registered op ``opname`` called as MXNet's generated op functions are (arrays
    positionally or by input name, further positional values fill the params in order,
    ``out=``), with NumPy-flavoured results: ``ndarray`` outputs for arrays, an np Symbol
    (or a list of them) when building a graph, its node named after ``hint`` (MXNet names
    it after the function: ``npx.batch_flatten`` makes ``batch_flatten0``).
    ``npx.*`` and ``np._internal.*`` use it."""
    if "out" in kwargs and kwargs["out"] is None:
        del kwargs["out"]
    from gpunda.numpy.multiarray import is_symbolic
    if is_symbolic(_array_args(args, kwargs)):
        from gpunda.symbol import creation
        from gpunda.symbol.numpy import np_outputs, np_name_hint
        kwargs.pop("out", None)            # a graph node has no output buffer to write
        fn = creation.lookup(opname, hint=hint or np_name_hint(opname))
        return np_outputs(fn(*args, **kwargs))
    from gpunda.ndarray import _op
    out = getattr(_op, opname)(*args, **kwargs)
    return as_np(out) if isinstance(out, (NDArray, list, tuple)) else out
