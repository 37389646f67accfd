"""MXNet 1.x's module-level NDArray functions built over the registry ops:
``nd.add``/``subtract``/... (arrays or scalars on either side), ``linspace``,
``eye``, ``moveaxis``, ``split_v2``, ``from_numpy`` and the DLPack pair.
"""
from __future__ import annotations

import numbers
import operator

import numpy as np

from gpunda.base import GpundaError, GpundaTypeError, GpundaValueError, numeric_types

__all__ = ["add", "subtract", "multiply", "divide", "true_divide", "modulo", "power",
           "maximum", "minimum", "equal", "not_equal", "greater", "greater_equal",
           "lesser", "lesser_equal", "logical_and", "logical_or", "logical_xor",
           "linspace", "eye", "moveaxis", "split_v2", "from_numpy", "histogram",
           "to_dlpack_for_read", "to_dlpack_for_write", "reset_arrays"]


def _ops():
    from gpunda.ndarray import _op
    return _op


def _ufunc(name, array_op, scalar_op, rscalar_op, py_fn):
    """An MXNet two-operand function: NDArray (x) NDArray broadcasts with ``array_op``,
    NDArray (x) scalar uses ``scalar_op`` (``rscalar_op`` for scalar (x) NDArray),
    two scalars give ``py_fn``'s Python value; anything else is a TypeError."""
    from gpunda.ndarray.ndarray import NDArray

    def fn(lhs, rhs):
        op = _ops()
        if isinstance(lhs, numeric_types) and isinstance(rhs, numeric_types):
            return py_fn(lhs, rhs)
        if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
            return getattr(op, array_op)(lhs, rhs)
        if isinstance(lhs, NDArray) and isinstance(rhs, numeric_types):
            return getattr(op, scalar_op)(lhs, scalar=rhs)
        if isinstance(rhs, NDArray) and isinstance(lhs, numeric_types):
            return getattr(op, rscalar_op)(rhs, scalar=lhs)
        bad = rhs if isinstance(lhs, (NDArray,) + numeric_types) else lhs
        raise GpundaTypeError(f"{name}: type {type(bad)} not supported")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``{name}(lhs, rhs)`` element-wise with broadcasting; either side may be "
                  f"a scalar (MXNet's nd.{name}).")
    return fn


def _cmp(f):
    return lambda a, b: 1 if f(a, b) else 0


add = _ufunc("add", "broadcast_add", "_plus_scalar", "_plus_scalar", operator.add)
subtract = _ufunc("subtract", "broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub)
multiply = _ufunc("multiply", "broadcast_mul", "_mul_scalar", "_mul_scalar", operator.mul)
divide = _ufunc("divide", "broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv)
true_divide = divide
modulo = _ufunc("modulo", "broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod)
power = _ufunc("power", "broadcast_power", "_power_scalar", "_rpower_scalar", operator.pow)
maximum = _ufunc("maximum", "broadcast_maximum", "_maximum_scalar", "_maximum_scalar", max)
minimum = _ufunc("minimum", "broadcast_minimum", "_minimum_scalar", "_minimum_scalar", min)
equal = _ufunc("equal", "broadcast_equal", "_equal_scalar", "_equal_scalar", _cmp(operator.eq))
not_equal = _ufunc("not_equal", "broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar",
                   _cmp(operator.ne))
greater = _ufunc("greater", "broadcast_greater", "_greater_scalar", "_lesser_scalar",
                 _cmp(operator.gt))
greater_equal = _ufunc("greater_equal", "broadcast_greater_equal", "_greater_equal_scalar",
                       "_lesser_equal_scalar", _cmp(operator.ge))
lesser = _ufunc("lesser", "broadcast_lesser", "_lesser_scalar", "_greater_scalar",
                _cmp(operator.lt))
lesser_equal = _ufunc("lesser_equal", "broadcast_lesser_equal", "_lesser_equal_scalar",
                      "_greater_equal_scalar", _cmp(operator.le))
logical_and = _ufunc("logical_and", "broadcast_logical_and", "_logical_and_scalar",
                     "_logical_and_scalar", _cmp(lambda a, b: a and b))
logical_or = _ufunc("logical_or", "broadcast_logical_or", "_logical_or_scalar",
                    "_logical_or_scalar", _cmp(lambda a, b: a or b))
logical_xor = _ufunc("logical_xor", "broadcast_logical_xor", "_logical_xor_scalar",
                     "_logical_xor_scalar", _cmp(lambda a, b: bool(a) != bool(b)))


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=np.float32):
    """``num`` evenly spaced values from ``start`` to ``stop`` (inclusive when ``endpoint``).

    Values are computed in float64 and then converted (truncated for integer dtypes),
    as MXNet's kernel does.

    Example:
        >>> nd.linspace(0, 1, 5).asnumpy()
        array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    from gpunda.ndarray.ndarray import array, _dtype_of
    if isinstance(num, bool) or not isinstance(num, numbers.Integral) or num < 0:
        raise GpundaError(f"linspace: num={num!r} must be a non-negative integer")
    dt = _dtype_of(dtype)
    host = np.linspace(float(start), float(stop), int(num), endpoint=bool(endpoint),
                       dtype=np.float64)
    return array(host.astype(dt), ctx=ctx, dtype=dt)


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """An N x M (M=0: N x N) array with ones on diagonal ``k``, zeros elsewhere."""
    from gpunda.ndarray.ndarray import _ctx_of, _dtype_of
    return _ops()._eye(N=N, M=M, k=k, ctx=_ctx_of(ctx), dtype=_dtype_of(dtype), **kwargs)


def _axis_list(axes, ndim, what):
    items = [axes] if isinstance(axes, numbers.Integral) else list(axes)
    out = []
    for a in items:
        if not isinstance(a, numbers.Integral) or not -ndim <= a < ndim:
            raise GpundaValueError(f"moveaxis: {what} axis {a!r} is out of bounds for an array "
                                   f"of dimension {ndim}")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise GpundaValueError(f"moveaxis: repeated axis in `{what}` argument {axes!r}")
    return out


def moveaxis(tensor, source, destination):
    """Move axes ``source`` (int or sequence) to positions ``destination``; the other
    axes keep their order. Out-of-range or repeated axes raise ValueError."""
    nd_ = tensor.ndim
    src = _axis_list(source, nd_, "source")
    dst = _axis_list(destination, nd_, "destination")
    if len(src) != len(dst):
        raise GpundaValueError("moveaxis: `source` and `destination` arguments must have the "
                               "same number of elements")
    order = [a for a in range(nd_) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _ops().transpose(tensor, axes=tuple(order))


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split ``ary`` along ``axis`` into ``indices_or_sections`` equal parts (an int) or
    at the given indices (a sequence), as ``numpy.split``. With ``squeeze_axis`` each
    part (which must then have length 1 there) loses that axis. A single part is
    returned as an NDArray, several as a list."""
    op = _ops()
    n = ary.shape[axis]
    if isinstance(indices_or_sections, numbers.Integral):
        sec = int(indices_or_sections)
        if sec <= 0 or n % sec:
            # ValueError, as MXNet's "array split does not result in an equal division"
            raise GpundaValueError(f"split_v2: indices_or_sections={sec} must divide the axis "
                                   f"length {n} of shape {ary.shape}")
        bounds = [i * (n // sec) for i in range(sec)] + [n]
    elif isinstance(indices_or_sections, (tuple, list)):
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    else:
        raise GpundaValueError(f"split_v2: indices_or_sections must be an int or a tuple, "
                               f"got {type(indices_or_sections).__name__}")
    parts = []
    for b, e in zip(bounds[:-1], bounds[1:]):
        b, e = min(max(b, 0), n), min(max(e, 0), n)
        part = op.slice_axis(ary, axis=axis, begin=b, end=max(b, e))
        if squeeze_axis:
            if part.shape[axis] != 1:
                raise GpundaError(f"split_v2: squeeze_axis=True needs parts of length 1 along "
                                  f"axis {axis}, got {part.shape[axis]}")
            part = op.squeeze(part, axis=axis)
        parts.append(part)
    return parts[0] if len(parts) == 1 else parts


def from_numpy(ndarray, zero_copy=True):
    """An NDArray from a C-contiguous NumPy array, keeping its dtype.

    With ``zero_copy`` the NDArray shares the memory, and the NumPy array becomes
    read-only (as in MXNet: writes go through the NDArray); otherwise a copy.
    """
    from gpunda.ndarray.ndarray import _new, _writable_view
    from gpunda.context import cpu
    if not isinstance(ndarray, np.ndarray):
        raise GpundaTypeError(f"from_numpy: expects a numpy.ndarray, got {type(ndarray).__name__}")
    if not ndarray.flags["C_CONTIGUOUS"]:
        raise GpundaValueError("from_numpy: only C-contiguous arrays are supported; use "
                               "numpy.ascontiguousarray first")
    if not zero_copy:
        return _new(ndarray.copy(), cpu())
    data = ndarray.view() if ndarray.flags.writeable else _writable_view(ndarray)
    ndarray.flags.writeable = False
    return _new(data, cpu())


def to_dlpack_for_read(data):
    """A DLPack capsule sharing ``data``'s memory (MXNet's ``nd.to_dlpack_for_read``)."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data):
    """A DLPack capsule sharing ``data``'s memory, for writing."""
    return data.to_dlpack_for_write()


def histogram(a, bins=10, range=None):   # noqa: A002 (MXNet's parameter name)
    """``(counts, bin_edges)`` of the flattened ``a``: ``bins`` equal bins over ``range``
    (an int), or the edges given as an NDArray. With an int and no range MXNet uses
    NumPy's result (range = (min, max)), and so does this."""
    from gpunda.ndarray.ndarray import NDArray, array
    op = _ops()
    if isinstance(bins, NDArray):
        return op._histogram(a, bins)
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        if range is None:
            counts, edges = np.histogram(a.asnumpy(), bins=int(bins))
            return array(counts, ctx=a.context, dtype=counts.dtype), \
                array(edges, ctx=a.context, dtype=edges.dtype)
        return op._histogram(a, bin_cnt=int(bins), range=tuple(range))
    raise GpundaValueError("histogram: bins argument should be either an integer or an NDArray")


def reset_arrays(*data, num_arrays=None, **kwargs):
    """Set every array of ``data`` to zero in place (MXNet's ``reset_arrays``, which
    Gluon uses to zero gradients); ``num_arrays`` must equal ``len(data)``. Returns []
    (the op has no outputs)."""
    from gpunda.ndarray.ndarray import NDArray
    if kwargs:
        raise GpundaError(f"reset_arrays: unknown parameters {sorted(kwargs)}")
    if num_arrays is None:
        raise GpundaError("reset_arrays: num_arrays is required")
    if int(num_arrays) != len(data):
        raise GpundaError(f"reset_arrays: num_arrays={num_arrays} but {len(data)} arrays "
                          f"were given")
    for i, a in enumerate(data):
        if not isinstance(a, NDArray):
            raise GpundaTypeError(f"reset_arrays: data[{i}] is a {type(a).__name__}, not an "
                                  f"NDArray")
    for a in data:
        a[:] = 0
    return []
