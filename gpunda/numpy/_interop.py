"""NumPy's dispatch protocols for ``mx.np.ndarray``, as MXNet 1.9.1 registers them
(``mxnet.numpy_dispatch_protocol`` re-exports these tables).

``__array_function__``: the NumPy functions named in ``_NUMPY_ARRAY_FUNCTION_LIST`` run
``mx.np``'s function of that name (``onp.sum(x)`` is ``mx.np.sum(x)``); every other NumPy
function runs on host copies of the arrays, and the result comes back as ``mx.np.ndarray``
on the inputs' context (scalars stay NumPy/Python scalars, as in MXNet).

``__array_ufunc__``: a ufunc called on an ``mx.np.ndarray`` runs ``mx.np``'s function when
its ``__name__`` is in ``_NUMPY_ARRAY_UFUNC_LIST`` (``onp.add``, ``onp.abs`` whose name is
``absolute``, ...); any other ufunc (``onp.log1p``, ``onp.divide`` whose name is ``divide``)
runs on host copies the same way. Ufunc methods (``reduce``, ``accumulate``, ...) are not
supported (NumPy then raises TypeError).

A host fallback is refused while autograd records (it would cut the graph).

Names that NumPy 2 removed (``sometrue``, ``round_``, ``product``) are kept in the list
(it is MXNet's) and skipped when the table is built.
"""
from __future__ import annotations

import numpy as _onp

from gpunda._engine import autograd as _ag
from gpunda.base import GpundaTypeError, GpundaValueError
from gpunda.ndarray.ndarray import NDArray

__all__ = ["array_function", "array_ufunc"]

_NUMPY_ARRAY_FUNCTION_LIST = [
    "all", "any", "sometrue", "argmin", "argmax", "around", "round", "round_", "argsort",
    "sort", "append", "broadcast_arrays", "broadcast_to", "clip", "concatenate", "copy",
    "cumsum", "diag", "diagonal", "diagflat", "dot", "expand_dims", "fix", "flip", "flipud",
    "fliplr", "inner", "insert", "max", "amax", "mean", "min", "amin", "nonzero",
    "ones_like", "atleast_1d", "atleast_2d", "atleast_3d", "prod", "product", "ravel",
    "repeat", "reshape", "roll", "split", "array_split", "hsplit", "vsplit", "dsplit",
    "squeeze", "stack", "std", "sum", "swapaxes", "take", "tensordot", "tile", "transpose",
    "unique", "unravel_index", "diag_indices_from", "delete", "var", "vdot", "vstack",
    "column_stack", "hstack", "dstack", "zeros_like", "linalg.norm", "linalg.cholesky",
    "linalg.inv", "linalg.solve", "linalg.tensorinv", "linalg.tensorsolve", "linalg.pinv",
    "linalg.eigvals", "linalg.eig", "linalg.eigvalsh", "linalg.eigh", "shape", "trace",
    "tril", "meshgrid", "outer", "einsum", "polyval", "shares_memory", "may_share_memory",
    "quantile", "percentile", "diff", "ediff1d", "resize", "where", "full_like", "bincount",
    "empty_like", "nan_to_num", "isnan", "isfinite", "isposinf", "isneginf", "isinf", "pad",
]

_NUMPY_ARRAY_UFUNC_LIST = [
    "abs", "fabs", "add", "arctan2", "copysign", "degrees", "hypot", "lcm", "subtract",
    "multiply", "true_divide", "negative", "power", "mod", "matmul", "absolute", "rint",
    "sign", "exp", "log", "log2", "log10", "expm1", "sqrt", "square", "cbrt", "reciprocal",
    "invert", "bitwise_not", "remainder", "sin", "cos", "tan", "sinh", "cosh", "tanh",
    "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "maximum", "minimum",
    "ceil", "trunc", "floor", "bitwise_and", "bitwise_xor", "bitwise_or", "logical_not",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
]

# NumPy function object -> mx.np function; ufunc name -> mx.np function
_NUMPY_ARRAY_FUNCTION_DICT = {}
_NUMPY_ARRAY_UFUNC_DICT = {}
_registered = [False]


def _find_duplicate(strs):
    """The first string seen twice in ``strs``, or None."""
    seen = set()
    for s in strs:
        if s in seen:
            return s
        seen.add(s)
    return None


def _implements(numpy_function):
    """Decorator: make ``func`` what ``numpy_function`` dispatches to for mx.np arrays."""
    def decorator(func):
        _NUMPY_ARRAY_FUNCTION_DICT[numpy_function] = func
        return func
    return decorator


def _lookup(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _register_array_function():
    """Fill ``_NUMPY_ARRAY_FUNCTION_DICT`` from ``_NUMPY_ARRAY_FUNCTION_LIST``."""
    from gpunda import numpy as mx_np
    dup = _find_duplicate(_NUMPY_ARRAY_FUNCTION_LIST)
    if dup is not None:
        raise GpundaValueError(f"numpy_dispatch_protocol: {dup!r} is twice in "
                               f"_NUMPY_ARRAY_FUNCTION_LIST")
    for name in _NUMPY_ARRAY_FUNCTION_LIST:
        if name.count(".") > 1:
            raise GpundaValueError(f"numpy_dispatch_protocol: cannot register {name!r} (one "
                                   f"submodule level at most)")
        onp_op = _lookup(_onp, name)
        if onp_op is None:          # removed from NumPy (2.x): nothing dispatches there
            continue
        mx_op = _lookup(mx_np, name)
        if mx_op is None:
            raise GpundaValueError(f"numpy_dispatch_protocol: mxnet.numpy has no {name!r}")
        _implements(onp_op)(mx_op)


def _register_array_ufunc():
    """Fill ``_NUMPY_ARRAY_UFUNC_DICT`` (name -> mx.np function) from
    ``_NUMPY_ARRAY_UFUNC_LIST``."""
    from gpunda import numpy as mx_np
    dup = _find_duplicate(_NUMPY_ARRAY_UFUNC_LIST)
    if dup is not None:
        raise GpundaValueError(f"numpy_dispatch_protocol: {dup!r} is twice in "
                               f"_NUMPY_ARRAY_UFUNC_LIST")
    for name in _NUMPY_ARRAY_UFUNC_LIST:
        op = getattr(mx_np, name, None)
        if op is None:
            raise GpundaValueError(f"numpy_dispatch_protocol: mxnet.numpy has no operator "
                                   f"named {name!r}")
        _NUMPY_ARRAY_UFUNC_DICT[name] = op


def _ensure_registered():
    if not _registered[0]:
        _registered[0] = True
        _register_array_function()
        _register_array_ufunc()


def _to_host(obj, ctxs):
    """``obj`` with every mx array (also inside lists/tuples) copied to the host; their
    contexts are appended to ``ctxs``."""
    if isinstance(obj, NDArray):
        ctxs.append(obj.context)
        return obj.asnumpy()
    if isinstance(obj, (list, tuple)):
        items = [_to_host(o, ctxs) for o in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    return obj


def _to_mx(obj, ctx, name):
    """A fallback's result as MXNet returns it: NumPy arrays as mx.np arrays on ``ctx``,
    scalars as they are, lists/tuples element by element."""
    from gpunda.numpy.creation import array
    if isinstance(obj, _onp.ndarray):
        return array(_onp.ascontiguousarray(obj), dtype=obj.dtype, ctx=ctx)
    if isinstance(obj, (int, float, complex, _onp.generic)):
        return obj
    if isinstance(obj, (list, tuple)):
        items = [_to_mx(o, ctx, name) for o in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    raise GpundaTypeError(f"NumPy's {name} on mx.np.ndarray: its result, a "
                          f"{type(obj).__name__}, cannot be converted to mx.np.ndarray")


def _fallback(name, func, args, kwargs):
    if _ag.is_recording():
        raise GpundaValueError(f"Falling back to NumPy operator {name} with autograd active "
                               f"is not supported. Please consider moving the operator to the "
                               f"outside of the autograd scope.")
    ctxs = []
    host_args = _to_host(tuple(args), ctxs)
    host_kwargs = {k: _to_host(v, ctxs) for k, v in kwargs.items()}
    if not ctxs:
        raise GpundaValueError(f"NumPy's {name}: no mx.np.ndarray among the inputs, so no "
                               f"context for the result")
    if any(c != ctxs[0] for c in ctxs):
        raise GpundaValueError(f"NumPy's {name}: the inputs are on different devices "
                               f"({ctxs[0]} and {next(c for c in ctxs if c != ctxs[0])}); "
                               f"the result's device is ambiguous")
    return _to_mx(func(*host_args, **host_kwargs), ctxs[0], name)


def array_function(func, types, args, kwargs):
    """``mx.np.ndarray.__array_function__``."""
    from gpunda.numpy.multiarray import ndarray
    _ensure_registered()
    fn = _NUMPY_ARRAY_FUNCTION_DICT.get(func)
    if fn is None:
        return _fallback(getattr(func, "__name__", repr(func)), func, args, kwargs)
    # legacy NDArrays (and subclasses that override the protocol) are not ours to handle;
    # NumPy arrays mixed in are accepted (MXNet returns NotImplemented for them)
    if not all(issubclass(t, ndarray) or not issubclass(t, NDArray) for t in types):
        return NotImplemented
    return fn(*args, **kwargs)


def array_ufunc(ufunc, method, inputs, kwargs):
    """``mx.np.ndarray.__array_ufunc__`` (method '__call__' only, as MXNet's)."""
    out = kwargs.get("out")
    if out is not None:
        if len(out) != 1:
            raise GpundaValueError("The `out` parameter must have exactly one ndarray")
        kwargs = dict(kwargs, out=out[0])
    if method != "__call__":
        return NotImplemented
    _ensure_registered()
    fn = _NUMPY_ARRAY_UFUNC_DICT.get(ufunc.__name__)
    if fn is not None:
        return fn(*inputs, **kwargs)
    if out is not None:
        raise GpundaValueError(f"NumPy's {ufunc.__name__} on mx.np.ndarray runs on host copies "
                               f"(mxnet.numpy_dispatch_protocol does not dispatch it), where "
                               f"out= cannot be an mx.np.ndarray")
    return _fallback(ufunc.__name__, ufunc, inputs, kwargs)
