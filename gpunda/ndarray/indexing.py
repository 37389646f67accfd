"""MXNet's indexing helpers of ``mxnet.ndarray.ndarray``: key validation, implicit axes,
dispatch codes and the contiguity rule of basic slicing.

``NDArray.__getitem__``/``__setitem__`` index the backend array directly (NumPy's
rules, which MXNet 1.x follows); these helpers give MXNet's errors for keys it
refuses and its public helper functions.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import (GpundaAssertionError, GpundaError, GpundaIndexError, GpundaValueError,
                         integer_types)

__all__ = ["indexing_key_expand_implicit_axes", "get_indexing_dispatch_code",
           "get_oshape_of_gather_nd_op", "slice_is_contiguous", "check_key_types"]

# MXNet's return codes of get_indexing_dispatch_code
_NDARRAY_UNSUPPORTED_INDEXING = -1
_NDARRAY_BASIC_INDEXING = 0
_NDARRAY_ADVANCED_INDEXING = 1
_NDARRAY_EMPTY_TUPLE_INDEXING = 2

# 0-d boolean index markers of indexing_key_expand_implicit_axes
_NDARRAY_NO_ZERO_DIM_BOOL_ARRAY = -1
_NDARRAY_ZERO_DIM_BOOL_ARRAY_FALSE = 0
_NDARRAY_ZERO_DIM_BOOL_ARRAY_TRUE = 1


def _is_array_like(idx):
    from gpunda.ndarray.ndarray import NDArray
    return isinstance(idx, (NDArray, np.ndarray, list, range))


def check_key_types(key):
    """Raise MXNet's ValueError for an index entry that is not an int, slice, None,
    Ellipsis, bool or array-like (a float, a str ...)."""
    for idx in key if isinstance(key, tuple) else (key,):
        if idx is None or idx is Ellipsis or isinstance(idx, (slice, bool, tuple)) \
                or isinstance(idx, integer_types) or _is_array_like(idx):
            continue
        if hasattr(idx, "__cuda_array_interface__"):
            continue
        raise GpundaValueError(f"NDArray does not support slicing with key {idx!r} of type "
                               f"{type(idx)}.")


def get_indexing_dispatch_code(key):
    """0 for basic indexing (ints, slices, None), 1 for advanced (arrays, lists),
    2 for an empty tuple entry; ValueError for an unsupported entry. ``key`` is a tuple."""
    if not isinstance(key, tuple):
        raise GpundaValueError(f"get_indexing_dispatch_code: key must be a tuple, got "
                               f"{type(key).__name__}")
    for idx in key:
        if isinstance(idx, tuple):
            return _NDARRAY_EMPTY_TUPLE_INDEXING if not idx else _NDARRAY_ADVANCED_INDEXING
        if _is_array_like(idx):
            return _NDARRAY_ADVANCED_INDEXING
        if not (idx is None or isinstance(idx, (slice, integer_types))):
            raise GpundaValueError(f"NDArray does not support slicing with key {idx!r} of type "
                                   f"{type(idx)}.")
    return _NDARRAY_BASIC_INDEXING


def indexing_key_expand_implicit_axes(key, shape):
    """``(key, prepend)``: ``key`` as a tuple with the axes an Ellipsis (or a short key)
    stands for written out as ``slice(None)``; ``prepend`` marks a 0-d boolean entry
    (-1 none, 0 False, 1 True). Boolean arrays need NumPy array mode (ValueError here).

    Example:
        >>> indexing_key_expand_implicit_axes((0,), (3, 4, 5))[0]
        (0, slice(None, None, None), slice(None, None, None))
    """
    from gpunda.ndarray.ndarray import NDArray
    if not isinstance(key, tuple):
        key = (key,)
    ell_at = None
    n_new = 0
    rest = []
    prepend = _NDARRAY_NO_ZERO_DIM_BOOL_ARRAY
    for i, idx in enumerate(key):
        if idx is Ellipsis:
            if ell_at is not None:
                raise GpundaIndexError("Cannot use more than one ellipsis (`...`) for indexing")
            ell_at = i
            continue
        if isinstance(idx, bool) or (isinstance(idx, (NDArray, np.ndarray)) and idx.ndim == 0
                                     and np.dtype(idx.dtype) == np.bool_):
            prepend = _NDARRAY_ZERO_DIM_BOOL_ARRAY_TRUE if bool(idx) \
                else _NDARRAY_ZERO_DIM_BOOL_ARRAY_FALSE
            continue
        if isinstance(idx, (NDArray, np.ndarray)) and np.dtype(idx.dtype) == np.bool_:
            raise GpundaValueError("Cannot perform boolean indexing in legacy mode. Please "
                                   "activate numpy semantics by calling `npx.set_np()` in the "
                                   "global scope before calling this function.")
        if isinstance(idx, (NDArray, np.ndarray)) and idx.ndim == 0:
            idx = int(idx.item())
        if idx is None:
            n_new += 1
        rest.append(idx)
    if ell_at is None:
        ell_at = len(rest)
    fill = len(shape) + n_new - len(rest)
    return tuple(rest[:ell_at]) + (slice(None),) * fill + tuple(rest[ell_at:]), prepend


def get_oshape_of_gather_nd_op(dshape, ishape):
    """Output shape of ``gather_nd`` for data shape ``dshape`` and indices shape ``ishape``."""
    m = ishape[0]
    return tuple(ishape[1:]) + tuple(dshape[m:])


def slice_is_contiguous(slc_key, shape):
    """Whether ``x[slc_key]`` (one slice per axis of ``shape``) is C-contiguous, by
    NumPy's rule: length-1 axes are ignored and an empty result is contiguous."""
    if len(slc_key) != len(shape):
        raise GpundaValueError(f"slice_is_contiguous: {len(slc_key)} slices for a shape with "
                               f"{len(shape)} axes")
    lens, steps = [], []
    for slc, n in zip(slc_key, shape):
        start, stop, step = slc.indices(n)
        lens.append(len(range(start, stop, step)))
        steps.append(step)
    if 0 in lens:
        return True
    expect = 1          # the stride (in elements) a contiguous result has on this axis
    c_stride = 1        # the stride of the axis in the original array
    for ln, step, n in zip(reversed(lens), reversed(steps), reversed(shape)):
        if ln != 1:
            if c_stride * step != expect:
                return False
            expect *= ln
        c_stride *= n
    return True


# -- MXNet's private slicing and broadcasting helpers (mxnet.ndarray.ndarray) ---------

def check_boolean_array_dimension(array_shape, axis, bool_shape):
    """IndexError unless a boolean index of shape ``bool_shape`` used from axis ``axis``
    matches ``array_shape`` on every axis it covers."""
    for i, n in enumerate(bool_shape):
        if array_shape[axis + i] != n:
            raise GpundaIndexError(f"boolean index did not match indexed array along axis "
                                   f"{axis + i}; size is {array_shape[axis + i]} but "
                                   f"corresponding boolean size is {n}")


def _int_to_slice(idx):
    """The one-element slice that selects what the integer index ``idx`` selects."""
    return slice(-1, None) if idx == -1 else slice(idx, idx + 1)


def _shape_for_bcast(shape, target_ndim, new_axes):
    """``shape`` widened to ``target_ndim`` axes for broadcasting: 1 at the axes
    ``new_axes`` (only when ``shape`` is shorter), the rest filled from the right with
    ``shape``'s sizes and then with 1."""
    out = [None] * target_ndim
    if len(shape) < target_ndim:
        for ax in new_axes:
            out[ax] = 1
    src = list(shape)
    for ax in range(target_ndim - 1, -1, -1):
        if out[ax] is None:
            out[ax] = src.pop() if src else 1
    return tuple(out)


def _is_advanced_index(idx):
    """Whether index entry ``idx`` takes part in advanced indexing: arrays, lists, tuples,
    ranges and integers do, slices and None do not; anything else is refused."""
    from gpunda.ndarray.ndarray import NDArray
    if isinstance(idx, (NDArray, np.ndarray, list, tuple, range)) or \
            isinstance(idx, integer_types):
        return True
    if idx is None or isinstance(idx, slice):
        return False
    raise GpundaError(f"illegal index type {type(idx)}")


def _get_index_range(start, stop, length, step=1):
    """``(start, stop, step)`` of a slice on an axis of ``length``, with negative bounds
    wrapped and clipped into the axis; ``stop`` is -1 (before index 0) for a reversed
    slice that runs to the start."""
    if step == 0:
        raise GpundaValueError("step size cannot be zero")
    if length < 0:
        raise GpundaValueError("array length cannot be less than zero")
    if step is None:
        step = 1
    if start is None:
        start = 0 if step > 0 else length - 1
    elif start < 0:
        start = max(start + length, 0)
    elif start >= length:
        start = length
    if stop is None:
        stop = length if step > 0 else -1
    elif stop < 0:
        stop = max(stop + length, 0)
    elif stop > length:
        stop = length
    return start, stop, step


def _get_dim_size(start, stop, step):
    """How many elements ``range(start, stop, step)`` has; the bounds must run in the
    direction of ``step`` (or be equal)."""
    if step == 0:
        raise GpundaAssertionError("_get_dim_size: step must not be zero")
    if stop == start:
        return 0
    if (step > 0) != (start < stop):
        raise GpundaAssertionError(f"_get_dim_size: start={start} and stop={stop} do not run "
                                   f"in the direction of step={step}")
    return (abs(stop - start) - 1) // abs(step) + 1


def _get_slice_len(slc, seq_length):
    """How many elements slice ``slc`` takes from a sequence of ``seq_length``."""
    return len(range(*slc.indices(seq_length)))


def _get_broadcast_shape(shape1, shape2):
    """The shape both shapes broadcast to (ValueError when they do not)."""
    if shape1 == shape2:
        return shape1
    out = list(shape1 if len(shape1) > len(shape2) else shape2)
    i = len(out) - 1
    for a, b in zip(shape1[::-1], shape2[::-1]):
        if a != 1 and b != 1 and a != b:
            raise GpundaValueError(f"shape1={shape1} is not broadcastable to shape2={shape2}")
        out[i] = b if a == 1 else a
        i -= 1
    return tuple(out)


def _broadcast_shapes(seq):
    """The broadcast shape of the ``.shape`` of every entry of ``seq`` (``()`` for none)."""
    shape = ()
    for x in seq:
        shape = _get_broadcast_shape(shape, x.shape)
    return shape
