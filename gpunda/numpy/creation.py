"""``mx.np`` array creation: ``array``, ``zeros``, ``ones``, ``empty``, ``full``, the
``*_like`` functions, ``arange``, ``linspace``, ``logspace``, ``eye``, ``identity``,
``indices``, ``meshgrid``, ``copy``.

Each builds through a registered op (``invoke_np``), so inside ``F.np`` of a hybridized
block the same call makes a graph node. Defaults follow MXNet: float32 when no dtype is
given (Python lists and scalars included); NumPy arrays keep their dtype.
"""
from __future__ import annotations

import numbers

import numpy as _onp

from gpunda.base import GpundaError
from gpunda.context import Context, current_context
from gpunda.ndarray import ndarray as _nd_mod
from gpunda.ndarray.ndarray import NDArray
from gpunda.numpy._dtypes import resolve_dtype
from gpunda.ops._util import wrapped_array
from gpunda.numpy.multiarray import ndarray, invoke_np, is_symbolic, _wrap, _symbol_cls

__all__ = ["array", "empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
           "full_like", "arange", "linspace", "logspace", "eye", "identity", "indices",
           "meshgrid", "copy"]


def _ctx(ctx):
    return current_context() if ctx is None else Context(ctx)


def _shape(shape, where):
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{where}: shape {shape!r} must be an int or a tuple of ints") from None
    if any(d < 0 for d in shape):
        if where == "empty":    # MXNet passes the shape to ctypes unsigned ints
            raise OverflowError(f"empty: can't convert negative value to unsigned int, "
                                f"shape={shape}")
        # MXNet: "inferring shapes failed", an MXNetError (not a ValueError)
        raise GpundaError(f"{where}: negative dimensions are not allowed, got {shape}")
    return shape


def _order(order, where):
    if order != "C":
        raise NotImplementedError(f"{where}: order={order!r} is not supported, only 'C'")


def _create(opname, ctx, **params):
    if is_symbolic(()):
        return invoke_np(opname, (), **params)
    return invoke_np(opname, (), ctx=_ctx(ctx), **params)


def array(object, dtype=None, ctx=None):  # noqa: A002 (NumPy's parameter name)
    """An ``ndarray`` holding a copy of ``object`` (a list, scalar, NumPy or MXNet array).

    ``dtype=None`` keeps the dtype of an array and gives float32 for anything else."""
    ctx = _ctx(ctx)
    if isinstance(object, NDArray):
        dt = resolve_dtype(dtype, "array", default=_onp.dtype(object.dtype))
        src = object.as_np_ndarray()
        r = invoke_np("_copy", (src,)) if src.ctx == ctx else src.as_in_context(ctx)
        return r if r.dtype == dt else r.astype(dt)
    if isinstance(object, (_onp.ndarray, _onp.generic)):
        dt = resolve_dtype(dtype, "array", default=object.dtype)
    else:
        dt = resolve_dtype(dtype, "array")
    try:
        host = wrapped_array(object, dt)
    except (ValueError, TypeError) as e:
        raise TypeError(f"array: cannot make an mx.np.ndarray of {type(object).__name__}: "
                        f"{e}") from None
    return _from_host(host, ctx)


def _from_host(host, ctx):
    data = host.copy() if ctx._xp is _onp else ctx.backend.from_host(host)
    return _wrap(data, ctx)


def empty(shape, dtype=_onp.float32, order="C", ctx=None):
    """An uninitialised array (gpunda fills it with zeros)."""
    _order(order, "empty")
    return _create("_npi_zeros", ctx, shape=_shape(shape, "empty"),
                   dtype=resolve_dtype(dtype, "empty"))


def zeros(shape, dtype=None, order="C", ctx=None):
    """Zeros of ``shape`` (float32 by default)."""
    _order(order, "zeros")
    return _create("_npi_zeros", ctx, shape=_shape(shape, "zeros"),
                   dtype=resolve_dtype(dtype, "zeros"))


def ones(shape, dtype=None, order="C", ctx=None):
    """Ones of ``shape`` (float32 by default)."""
    _order(order, "ones")
    return _create("_npi_ones", ctx, shape=_shape(shape, "ones"),
                   dtype=resolve_dtype(dtype, "ones"))


def full(shape, fill_value, dtype=None, order="C", ctx=None, out=None):
    """``shape`` filled with ``fill_value`` (bool for a bool value, else float32 by
    default); an array ``fill_value`` is broadcast."""
    _order(order, "full")
    shape = _shape(shape, "full")
    if isinstance(fill_value, NDArray):
        r = _broadcast(fill_value.as_np_ndarray(), shape)
        r = r.astype(dtype) if dtype is not None else r.copy()
    elif isinstance(fill_value, _symbol_cls()):     # a graph's array: broadcast, as MXNet
        r = _broadcast(fill_value, shape)
        r = r.astype(dtype) if dtype is not None else r
    else:
        default = _onp.dtype(_onp.bool_) if isinstance(fill_value, (bool, _onp.bool_)) \
            else _onp.dtype(_onp.float32)
        r = _create("_npi_full", ctx, shape=shape, value=float(fill_value),
                    dtype=resolve_dtype(dtype, "full", default))
    if out is not None:
        out[...] = r
        return out
    return r


def _like(a, dtype, where):
    return resolve_dtype(dtype, where, default=_onp.dtype(a.dtype))


def zeros_like(a, dtype=None, order="C", ctx=None, out=None):
    """Zeros with the shape (and, by default, dtype) of ``a``."""
    _order(order, "zeros_like")
    if is_symbolic((a,)):
        r = invoke_np("zeros_like", (a,))
        return r if dtype is None else r.astype(dtype)
    r = zeros(a.shape, _like(a, dtype, "zeros_like"), ctx=ctx or a.ctx)
    return _to_out(r, out)


def ones_like(a, dtype=None, order="C", ctx=None, out=None):
    """Ones with the shape (and, by default, dtype) of ``a``."""
    _order(order, "ones_like")
    if is_symbolic((a,)):
        r = invoke_np("ones_like", (a,))
        return r if dtype is None else r.astype(dtype)
    r = ones(a.shape, _like(a, dtype, "ones_like"), ctx=ctx or a.ctx)
    return _to_out(r, out)


def empty_like(prototype, dtype=None, order="C", subok=False, shape=None):
    """An array like ``prototype`` (gpunda fills it with zeros)."""
    _order(order, "empty_like")
    return zeros(prototype.shape if shape is None else shape,
                 _like(prototype, dtype, "empty_like"), ctx=prototype.ctx)


def full_like(a, fill_value, dtype=None, order="C", ctx=None, out=None):
    """``fill_value`` with the shape (and, by default, dtype) of ``a``."""
    _order(order, "full_like")
    if is_symbolic((a,)):
        r = invoke_np("ones_like", (a,)) * fill_value
        return r if dtype is None else r.astype(dtype)
    r = full(a.shape, fill_value, _like(a, dtype, "full_like"), ctx=ctx or a.ctx)
    return _to_out(r, out)


def _to_out(r, out):
    if out is None:
        return r
    out[...] = r
    return out


def arange(start, stop=None, step=1, dtype=None, ctx=None):
    """Evenly spaced values in [start, stop) (float32 by default, as MXNet's)."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if step == 0:
        raise ZeroDivisionError("arange: step must not be zero")
    return _create("_npi_arange", ctx, start=float(start), stop=float(stop), step=float(step),
                   dtype=resolve_dtype(dtype, "arange"))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, ctx=None):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    if axis != 0:
        raise NotImplementedError(f"linspace: axis={axis} is not supported, only 0")
    if int(num) < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    r = _create("_npi_linspace", ctx, start=float(start), stop=float(stop), num=int(num),
                endpoint=bool(endpoint), dtype=resolve_dtype(dtype, "linspace"))
    if retstep:
        div = (num - 1) if endpoint else num
        return r, (float(stop) - float(start)) / div if div > 0 else float("nan")
    return r


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, ctx=None):
    """``num`` values from ``base**start`` to ``base**stop``, evenly spaced on a log scale."""
    if axis != 0:
        raise NotImplementedError(f"logspace: axis={axis} is not supported, only 0")
    return _create("_npi_logspace", ctx, start=float(start), stop=float(stop), num=int(num),
                   endpoint=bool(endpoint), base=float(base),
                   dtype=resolve_dtype(dtype, "logspace"))


def eye(N, M=None, k=0, dtype=_onp.float32, ctx=None, **kwargs):  # noqa: N803
    """An N x M array with ones on diagonal ``k``."""
    if kwargs:
        raise TypeError(f"eye: unexpected keyword arguments {sorted(kwargs)}")
    return _create("_npi_eye", ctx, N=int(N), M=None if M is None else int(M), k=int(k),
                   dtype=resolve_dtype(dtype, "eye"))


def identity(n, dtype=None, ctx=None):
    """The ``n`` x ``n`` identity (float32 by default)."""
    n = int(n)
    if n < 0:
        raise ValueError(f"identity: n={n} must be non-negative")
    return _create("_npi_identity", ctx, shape=(n, n), dtype=resolve_dtype(dtype, "identity"))


def indices(dimensions, dtype=_onp.int32, ctx=None):
    """A grid of indices of shape ``(len(dimensions),) + dimensions``."""
    return _create("_npi_indices", ctx, dimensions=_shape(dimensions, "indices"),
                   dtype=resolve_dtype(dtype, "indices"))


def meshgrid(*xi, **kwargs):
    """Coordinate matrices from 1-D coordinate vectors (``indexing`` 'xy' or 'ij')."""
    indexing = kwargs.pop("indexing", "xy")
    sparse = kwargs.pop("sparse", False)
    kwargs.pop("copy", True)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword arguments {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: valid values for `indexing` are 'xy' and 'ij'")
    ndim = len(xi)
    shapes = [int(x.size) for x in xi]
    if indexing == "xy" and ndim > 1:
        shapes[0], shapes[1] = shapes[1], shapes[0]
    out = []
    for i, x in enumerate(xi):
        axis = i
        if indexing == "xy" and ndim > 1 and i < 2:
            axis = 1 - i
        shape = [1] * ndim
        shape[axis] = int(x.size)
        r = x.reshape(tuple(shape))
        out.append(r if sparse else _broadcast(r, tuple(shapes)))
    return out


def _broadcast(x, shape):
    return invoke_np("_npi_broadcast_to", (x,), shape=shape)


def copy(a, out=None):
    """A copy of array ``a`` (written into ``out`` when given, as MXNet's ``np.copy``)."""
    if is_symbolic((a,)) or out is not None:
        return invoke_np("_np_copy", (a,), out=out)     # a graph node named copy0
    return array(a, dtype=a.dtype, ctx=a.ctx)


_ = ndarray
