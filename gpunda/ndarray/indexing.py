"""MXNet's indexing helpers of ``mxnet.ndarray.ndarray``: key validation, implicit axes,
dispatch codes, the contiguity rule of basic slicing and the view-or-copy rule.

``NDArray.__getitem__``/``__setitem__`` index the backend array directly (NumPy's
rules for which elements, which MXNet 1.x follows); ``select`` then applies MXNet's
rule for whether the result shares memory (NOTE [View or copy]); the other helpers
give MXNet's errors for keys it refuses and its public helper functions.

NOTE [View or copy]
MXNet 1.9.1 (``_get_nd_basic_indexing``, ``_get_np_basic_indexing``, ``_at``,
``_slice``) makes a basic index (ints, slices, ``None``, ``...``) a view exactly when
the selected elements are one contiguous run of the C-ordered source -- it slices the
flat array and reshapes -- and a copy (the ``slice`` op) otherwise. So ``a[1]``,
``a[1:3]``, ``a[1, 2]``, ``a[::2]`` of a length-2 axis and ``a[:, 1]`` of a (1, 3, 4)
array are views, while ``a[:, 1]`` of a (2, 3, 4) array, ``a[::2]`` over more than
one element and ``a[::-1]`` are copies. An all-integer key is a view too: of shape
(1,) for a legacy NDArray (0-d under ``np_shape``), 0-d for ``mx.np``. Advanced
indexing (arrays, lists, boolean masks) always copies. The backend's own basic
index is a strided view: a view of a C-contiguous source is contiguous exactly when
MXNet's rule says "view", so the flag decides; a source that is itself not
C-contiguous falls back to the rule on the key (``slice_is_contiguous``).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import (GpundaAssertionError, GpundaError, GpundaIndexError, GpundaValueError,
                         integer_types)
from gpunda.ops._util import is_view_of

__all__ = ["indexing_key_expand_implicit_axes", "get_indexing_dispatch_code",
           "get_oshape_of_gather_nd_op", "slice_is_contiguous", "check_key_types", "select",
           "at", "slice_rows"]

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


# -- the view-or-copy rule (NOTE [View or copy]) ----------------------------------------

def _key_is_contiguous(key, shape):
    """MXNet's rule on the key itself: whether basic index ``key`` selects one contiguous
    run of a C-ordered array of ``shape``."""
    try:
        full, _ = indexing_key_expand_implicit_axes(key, shape)
    except (GpundaError, IndexError, ValueError, TypeError):
        return False
    slc = tuple(i if isinstance(i, slice) else _int_to_slice(int(i))
                for i in full if i is not None)
    return len(slc) == len(shape) and slice_is_contiguous(slc, shape)


def select(data, key, r, zero_dim):
    """``(result, is_view)`` for ``r = data[key]`` (backend arrays) under MXNet's
    view-or-copy rule (NOTE [View or copy]): a basic index whose elements are contiguous
    stays a view, another basic index becomes a C-ordered copy, and an all-integer index
    becomes a view of one element, shaped (1,) or, with ``zero_dim``, 0-d."""
    if r.ndim == 0:
        if isinstance(r, np.generic):
            # NumPy answers an all-integer key with a scalar: index once more keeping the
            # element's axis, which gives a (1,)-shaped view
            r = data[(key if isinstance(key, tuple) else (key,)) + (None,)]
            if r.ndim != 1 or not is_view_of(r, data):
                return r.reshape(()) if zero_dim else r.reshape(1), False
            return (r.reshape(()) if zero_dim else r), True
        return (r if zero_dim else r.reshape(1)), is_view_of(r, data)
    if not is_view_of(r, data):
        return r, False
    if r.flags.c_contiguous:
        if data.flags.c_contiguous or _key_is_contiguous(key, data.shape):
            return r, True
    elif not data.flags.c_contiguous and _key_is_contiguous(key, data.shape):
        return r, True
    return r.copy(), False


def at(data, idx, zero_dim):
    """MXNet's ``NDArray._at``: the view of row ``idx`` (negative counts from the end) of
    backend array ``data``; a 1-D source gives a (1,)-shaped view (0-d with ``zero_dim``)."""
    n = data.shape[0] if data.ndim else 0
    i = int(idx)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise GpundaIndexError(f"_at: index {idx} is out of bounds for axis 0 with size {n}")
    r = data[i:i + 1]
    if data.ndim > 1 or zero_dim:
        r = r.reshape(data.shape[1:])
    return r


def slice_rows(data, start, stop):
    """MXNet's ``NDArray._slice``: the view of rows ``[start, stop)`` of backend array
    ``data`` (negative bounds count from the end, out-of-range ones are clipped)."""
    n = data.shape[0] if data.ndim else 0
    start, stop, _ = _get_index_range(start, stop, n)
    if stop < start:
        raise GpundaValueError(f"_slice: start={start} must not be after stop={stop} "
                               f"(axis 0 has size {n})")
    return data[start:stop]


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


def refuse_legacy_bool_index(key):
    """ValueError for a boolean NDArray index (1-D or more) of a legacy ``nd`` array
    outside NumPy semantics, as MXNet's indexing_key_expand_implicit_axes: legacy mode has
    no boolean indexing (a 0-d boolean entry adds an axis and is allowed)."""
    from gpunda.ndarray.ndarray import NDArray
    from gpunda.util import is_np_array
    parts = key if isinstance(key, tuple) else (key,)
    for idx in parts:
        if isinstance(idx, NDArray) and idx.ndim and np.dtype(idx.dtype) == np.bool_:
            if is_np_array():
                return
            # MXNet's Python side raises a plain ValueError here (no MXNetError)
            raise ValueError("Cannot perform boolean indexing in legacy mode. Please "
                             "activate numpy semantics by calling `npx.set_np()` in the "
                             "global scope before calling this function.")


def check_slice_write(key, shape):
    """AssertionError for a write through a basic index whose slice runs against its step
    (``a[-1:1] = 0``: start 3, stop 1, step 1), as MXNet's _set_nd_basic_indexing, whose
    _get_dim_size asserts it; an equal start and stop is an empty write, allowed. Keys with
    an array or list (advanced indexing) take MXNet's other path and are not checked."""
    parts = key if isinstance(key, tuple) else (key,)
    axes = sum(1 for k in parts if k is not None and k is not Ellipsis)
    ax = 0
    for k in parts:
        if k is None:
            continue
        if k is Ellipsis:
            ax += max(len(shape) - axes, 0)
            continue
        if isinstance(k, slice):
            if ax < len(shape) and k.step != 0:
                start, stop, step = k.indices(shape[ax])
                if stop != start and (step > 0) != (start < stop):
                    raise AssertionError(     # a plain assert in MXNet's Python side
                        f"__setitem__: slice {k} of axis {ax} (size {shape[ax]}) selects "
                        f"start={start}, stop={stop}, which do not run in the direction of "
                        f"step={step}; MXNet refuses to write through it")
        elif not isinstance(k, (int, np.integer)):
            return      # advanced indexing
        ax += 1
