"""``mx.np.ndarray`` indexing with NumPy's rules for which elements and MXNet's for
which results share memory (NOTE [View or copy] in ndarray/indexing.py): a basic key
(ints, slices, ``None``, ``...``) selecting a contiguous run is a view, another basic
key and integer/list/boolean-mask keys give copies, and a 0-d result stays 0-d. While
recording, ``x[key]`` is the ``_getitem`` op, whose gradient scatters back into ``x``'s
shape."""
from __future__ import annotations

import numpy as _onp

from gpunda._engine import autograd as _ag
from gpunda.base import GpundaError
from gpunda.context import shares_memory_space
from gpunda.ndarray.ndarray import NDArray
from gpunda.ndarray.indexing import check_slice_write, select
from gpunda.numpy.multiarray import _wrap

__all__ = ["getitem", "setitem"]


def _raw(key, ctx):
    """The key with arrays as backend arrays (mx arrays, lists, ranges)."""
    if isinstance(key, NDArray):
        if not shares_memory_space(key._ctx, ctx):
            raise GpundaError(f"index array is on {key._ctx} but the array is on {ctx}")
        k = key._data
        # MXNet casts a float index array to integers (D2L's data_iter relies on it:
        # ``np.array(list_of_ints)`` is float32)
        return k.astype(_onp.int64) if k.dtype.kind == "f" else k
    if isinstance(key, tuple):
        return tuple(_raw(k, ctx) for k in key)
    if isinstance(key, (list, range)):
        arr = _onp.asarray(key)
        if arr.dtype.kind == "f" or arr.dtype == object:
            raise IndexError(f"index {key!r}: only integer or boolean lists are valid indices")
        return arr if ctx._xp is _onp else ctx.backend.from_host(arr)
    return key


def _check_key(key):
    for k in (key if isinstance(key, tuple) else (key,)):
        if isinstance(k, (float, _onp.floating)):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                             "(`None`) and integer or boolean arrays are valid indices")


def getitem(x, key):
    """``x[key]`` for an ``mx.np.ndarray`` ``x``."""
    # MXNet answers ``a[:]`` and ``a[()]`` with the array itself
    if key.__class__ is slice:
        if key.start is None and key.stop is None and (key.step is None or key.step == 1):
            return x
    elif key.__class__ is tuple and not key:
        return x
    _check_key(key)
    ctx = x._ctx
    raw = _raw(key, ctx)
    if x._ag is not None and _ag._is_rec():
        from gpunda.util import np_shape
        with np_shape(True):        # a 0-d result stays 0-d
            from gpunda.ndarray import _op
            return _op._getitem(x, key=raw)
    try:
        r = x._data[raw]
    except IndexError as e:
        raise IndexError(f"index {key!r} does not fit an array of shape {x.shape}: {e}") \
            from None
    # MXNet's view-or-copy rule (NOTE [View or copy]); a 0-d result is a 0-d view
    r, view = select(x._data, raw, r, True)
    return _wrap(r, ctx, (x._base if x._base is not None else x) if view else None)


def setitem(x, key, value):
    """``x[key] = value`` for an ``mx.np.ndarray`` ``x`` (NumPy's broadcasting)."""
    _check_key(key)
    _ag.check_writable(x, "__setitem__")
    if key.__class__ is slice or key.__class__ is tuple:
        check_slice_write(key, x.shape)
    ctx = x._ctx
    raw = _raw(key, ctx)
    if isinstance(value, NDArray):
        if not shares_memory_space(value._ctx, ctx):
            raise GpundaError(f"__setitem__: value is on {value._ctx} but the array is on "
                              f"{ctx}")
        if value._ag is not None and _ag._is_rec():
            return _ag.record_assign(x, raw, value)
        v = value._data
    else:
        v = _onp.asarray(value)
        if ctx._xp is not _onp:
            v = ctx.backend.from_host(v)
    try:
        x._data[raw] = _fit(x._data, raw, v)
    except IndexError as e:
        raise IndexError(f"index {key!r} does not fit an array of shape {x.shape}: {e}") \
            from None
    except ValueError as e:
        raise ValueError(f"__setitem__: cannot assign a value of shape "
                         f"{getattr(v, 'shape', ())} to index {key!r} of an array of shape "
                         f"{x.shape}: {e}") from None
    _ag.bump_version(x)


def _fit(data, raw, v):
    """``v`` with leading length-1 axes dropped beyond the indexed region's rank (NumPy
    accepts them in assignments; CuPy does not)."""
    nd = getattr(v, "ndim", 0)
    if nd == 0:
        return v
    target = data[raw]
    tnd = getattr(target, "ndim", 0)
    while nd > tnd and v.shape[0] == 1:
        v = v.reshape(v.shape[1:])
        nd -= 1
    return v
