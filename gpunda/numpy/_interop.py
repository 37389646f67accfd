"""NumPy's dispatch protocols for ``mx.np.ndarray`` (as MXNet's
``numpy_dispatch_protocol.py``): ``onp.<func>(mx_array)`` runs ``mx.np.<func>`` when
gpunda has it, and otherwise NumPy's own function on host copies, the result coming
back as ``mx.np.ndarray`` on the inputs' context. The host fallback is refused while
autograd records (it would cut the graph), as MXNet refuses it."""
from __future__ import annotations

import numpy as _onp

from gpunda import autograd as _ag
from gpunda.ndarray.ndarray import NDArray

__all__ = ["array_function", "array_ufunc"]


def _mx_function(func):
    from gpunda import numpy as _np_mod
    mod = getattr(func, "__module__", "") or ""
    ns = _np_mod
    if mod.startswith("numpy.linalg"):
        ns = getattr(_np_mod, "linalg", None)
    elif mod.startswith("numpy.random"):
        ns = getattr(_np_mod, "random", None)
    return getattr(ns, func.__name__, None) if ns is not None else None


def _to_host(obj, found):
    if isinstance(obj, NDArray):
        found.append(obj._ctx)
        return obj.asnumpy()
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_host(o, found) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_host(v, found) for k, v in obj.items()}
    return obj


def _to_mx(obj, ctx):
    from gpunda.numpy.creation import array
    if isinstance(obj, _onp.ndarray):
        return array(obj, dtype=obj.dtype, ctx=ctx)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_mx(o, ctx) for o in obj)
    return obj


def _fallback(name, func, args, kwargs):
    if _ag.is_recording():
        raise ValueError(f"Falling back to NumPy operator {name} with autograd active is not "
                         f"supported. Please consider moving the operator to the outside of "
                         f"the autograd scope.")
    ctxs = []
    host_args = _to_host(list(args), ctxs)
    host_kwargs = _to_host(dict(kwargs), ctxs)
    if not ctxs:
        raise ValueError(f"{name}: no mx.np.ndarray among the inputs, so no context for the "
                         f"result")
    return _to_mx(func(*host_args, **host_kwargs), ctxs[0])


def array_function(func, types, args, kwargs):
    """``ndarray.__array_function__``."""
    from gpunda.numpy.multiarray import ndarray
    fn = _mx_function(func)
    if fn is not None:
        if not all(issubclass(t, ndarray) or not issubclass(t, NDArray) for t in types):
            return NotImplemented
        return fn(*args, **kwargs)
    return _fallback(func.__name__, func, args, kwargs)


def array_ufunc(ufunc, method, inputs, kwargs):
    """``ndarray.__array_ufunc__`` (method '__call__' only, as MXNet's)."""
    if method != "__call__":
        return NotImplemented
    out = kwargs.get("out")
    if out is not None:
        if len(out) != 1:
            raise ValueError("The `out` parameter must have exactly one ndarray")
        kwargs = dict(kwargs, out=out[0])
    fn = _mx_function(ufunc)
    if fn is not None:
        return fn(*inputs, **kwargs)
    if out is not None:
        raise ValueError(f"{ufunc.__name__}: out= with a NumPy fallback is not supported")
    return _fallback(ufunc.__name__, ufunc, inputs, kwargs)
