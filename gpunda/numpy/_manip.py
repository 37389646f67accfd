"""``mx.np`` array manipulation (ops in ops/numpy/manip.py): shape changes, joining and
splitting, tiling, flipping, padding, triangles/diagonals, take/where, insert/delete."""
from __future__ import annotations

import numbers

import numpy as _onp

from gpunda.base import GpundaError
from gpunda.numpy._helpers import is_tensor, is_scalar, to_tensor, tensors, invoke, axis_param

__all__ = ["reshape", "transpose", "swapaxes", "moveaxis", "rollaxis", "expand_dims", "squeeze",
           "broadcast_to", "broadcast_arrays", "atleast_1d", "atleast_2d", "atleast_3d", "ravel",
           "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack", "column_stack",
           "append", "split", "array_split", "hsplit", "vsplit", "dsplit", "tile", "repeat",
           "flip", "flipud", "fliplr", "roll", "rot90", "pad", "tril", "triu", "diag",
           "diagflat", "diagonal", "trace", "take", "take_along_axis", "where", "insert",
           "delete", "resize", "shape", "ndim", "size"]


def _shape_tuple(shape):
    if isinstance(shape, (numbers.Integral, _onp.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def reshape(a, newshape, order="C"):
    """A new shape for the same data (one -1 is inferred)."""
    if order == "A":        # 'A' reads an mx.np array (always C-contiguous) in C order
        order = "C"
    if order != "C":
        # MXNet 1.9.1's _np_reshape takes order='F' and computes C order anyway: a silent
        # wrong answer, refused here once the shape itself is valid (docs/compat.md)
        r = invoke("_np_reshape", [to_tensor(a)], newshape=_shape_tuple(newshape))
        raise NotImplementedError(f"reshape: order={order!r} is not supported, only 'C' "
                                  f"(MXNet 1.9.1 silently reshapes in C order); result shape "
                                  f"would be {r.shape}")
    return invoke("_np_reshape", [to_tensor(a)], newshape=_shape_tuple(newshape), order=order)


def ravel(x, order="C"):
    """The flattened array."""
    return reshape(x, -1, order)


def transpose(a, axes=None):
    """Permute the axes (reverse them when ``axes`` is None)."""
    if axes is not None:
        axes = _shape_tuple(axes)
    return invoke("_np_transpose", [to_tensor(a)], axes=axes)


def swapaxes(a, axis1, axis2):
    """Interchange two axes."""
    return invoke("_npi_swapaxes", [to_tensor(a)], axis1=axis1, axis2=axis2)


def moveaxis(a, source, destination):
    """Move axes to new positions."""
    return invoke("_np_moveaxis", [to_tensor(a)], source=_shape_tuple(source),
                  destination=_shape_tuple(destination))


def _fallback_dtype(name, dtype):
    # MXNet 1.9.1 computes rollaxis and take_along_axis with official NumPy (numpy/fallback.py)
    # and converts the result through DLPack, which has no int8: ValueError "int8 is not
    # supported." (what gpunda's host fallbacks do too, numpy/_helpers.back_to)
    if dtype == _onp.int8:
        raise ValueError(f"{name}: int8 is not supported. (MXNet's NumPy fallback cannot "
                         f"return an int8 array)")


def rollaxis(a, axis, start=0):
    """Roll ``axis`` backwards until it lies before ``start``."""
    r = invoke("_npi_rollaxis", [to_tensor(a)], axis=axis, start=start)
    _fallback_dtype("rollaxis", r.dtype)
    return r


def expand_dims(a, axis):
    """Insert a length-1 axis at ``axis``."""
    if isinstance(axis, (tuple, list)):
        # MXNet 1.9.1's expand_dims takes one int: "Invalid Parameter format for axis"
        raise GpundaError(f"expand_dims: axis={axis!r} must be an int (MXNet 1.9.1 takes one "
                          f"axis)")
    return invoke("_npi_expand_dims", [to_tensor(a)], axis=axis_param(axis))


def squeeze(a, axis=None):
    """Remove length-1 axes (only ``axis`` when given)."""
    return invoke("_np_squeeze", [to_tensor(a)], axis=axis_param(axis))


def broadcast_to(array, shape):
    """Broadcast ``array`` to ``shape`` (a copy)."""
    return invoke("_npi_broadcast_to", [to_tensor(array)], shape=_shape_tuple(shape))


def _many(opname, arrays, **params):
    xs = tensors(list(arrays))
    r = invoke(opname, xs, num_args=len(xs), **params)
    return r if isinstance(r, list) else [r]


def broadcast_arrays(*args):
    """Broadcast arrays against each other (a list of copies)."""
    return _many("_npi_broadcast_arrays", args)


def _atleast(n, arys):
    r = _many(f"_np_atleast_{n}d", arys)
    return r[0] if len(r) == 1 else r


def atleast_1d(*arys):
    """Arrays with at least one dimension."""
    return _atleast(1, arys)


def atleast_2d(*arys):
    """Arrays with at least two dimensions."""
    return _atleast(2, arys)


def atleast_3d(*arys):
    """Arrays with at least three dimensions."""
    return _atleast(3, arys)


def concatenate(seq, axis=0, out=None):
    """Join arrays along an existing axis (None: flattened)."""
    xs = tensors(list(seq))
    return invoke("_npi_concatenate", xs, out=out, axis=axis, num_args=len(xs))


def stack(arrays, axis=0, out=None):
    """Join same-shape arrays along a new axis."""
    xs = tensors(list(arrays))
    return invoke("_npi_stack", xs, out=out, axis=axis, num_args=len(xs))


def _stacker(name):
    def f(arrays):
        xs = tensors(list(arrays))
        return invoke(f"_npi_{name}", xs, num_args=len(xs))
    f.__name__ = name
    f.__doc__ = f"NumPy's ``{name}``."
    return f


hstack, vstack, dstack, column_stack = (_stacker(n) for n in ("hstack", "vstack", "dstack",
                                                              "column_stack"))
row_stack = vstack


def append(arr, values, axis=None):
    """``arr`` with ``values`` appended (flattened when ``axis`` is None)."""
    return concatenate([arr, values], axis=axis)


def _split(ary, indices_or_sections, axis, array_split, hsplit=False):
    if isinstance(indices_or_sections, (numbers.Integral, _onp.integer)):
        if int(indices_or_sections) <= 0:
            raise ValueError("number sections must be larger than 0.")
        shape = getattr(ary, "shape", None)
        if not array_split and not hsplit and shape is not None and len(shape) and \
                shape[axis] % int(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
        kw = dict(indices_or_sections=(int(indices_or_sections),), sections=True)
    else:
        kw = dict(indices_or_sections=tuple(int(i) for i in indices_or_sections), sections=False)
    r = invoke("_npi_split", [to_tensor(ary)], axis=axis, array_split=array_split,
               hsplit=hsplit, **kw)
    return r if isinstance(r, list) else [r]


def split(ary, indices_or_sections, axis=0):
    """Split into equal sections (an error when they are not) or at indices."""
    return _split(ary, indices_or_sections, axis, False)


def array_split(ary, indices_or_sections, axis=0):
    """Split into sections that may differ in size by one, or at indices."""
    return _split(ary, indices_or_sections, axis, True)


def hsplit(ary, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-D arrays)."""
    nd = getattr(ary, "ndim", None)
    if nd == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    if nd is None:        # a Symbol: the op picks the axis from the runtime shape
        return _split(ary, indices_or_sections, 1, False, hsplit=True)
    return split(ary, indices_or_sections, 1 if nd > 1 else 0)


def vsplit(ary, indices_or_sections):
    """Split along axis 0 (arrays of 2 or more dimensions)."""
    if getattr(ary, "ndim", 2) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    """Split along axis 2 (arrays of 3 or more dimensions)."""
    if getattr(ary, "ndim", 3) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, 2)


def tile(A, reps):
    """Repeat the whole array ``reps`` times."""
    return invoke("_npi_tile", [to_tensor(A)], reps=_shape_tuple(reps))


def repeat(a, repeats, axis=None):
    """Repeat each element ``repeats`` times (an int or one count per element)."""
    if is_tensor(repeats):
        repeats = repeats.asnumpy()
    return invoke("_npi_repeats", [to_tensor(a)], repeats=_shape_tuple(_onp.ravel(repeats)),
                  axis=axis)


def flip(m, axis=None, out=None):
    """Reverse the order of elements along ``axis`` (all axes when None)."""
    return invoke("_npi_flip", [to_tensor(m)], out=out, axis=axis_param(axis))


def flipud(m):
    """Flip along axis 0."""
    return flip(m, 0)


def fliplr(m):
    """Flip along axis 1."""
    return flip(m, 1)


def roll(a, shift, axis=None):
    """Roll elements along ``axis`` (the flattened array when None)."""
    return invoke("_np_roll", [to_tensor(a)], shift=_shape_tuple(shift), axis=axis_param(axis))


def rot90(m, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes``."""
    return invoke("_npi_rot90", [to_tensor(m)], k=k, axes=_shape_tuple(axes))


def _pad_pairs(pad_width, ndim, mode):
    """MXNet 1.9.1's checks of ``np.pad``'s arguments, in its order, and its reading of
    ``pad_width`` (a tuple; an int entry ``k`` reads as ``(k,)``): a 1-D array takes
    ``pad_width[0][0]`` before and ``pad_width[1][0]`` after, an N-D array
    ``pad_width[i][0:2]`` for each axis i (entries past the last axis are ignored)."""
    if _onp.asarray(pad_width).dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    if not isinstance(pad_width, tuple):
        raise TypeError("`pad_width` must be tuple.")
    if callable(mode) or mode in ("linear_ramp", "wrap", "median", "mean", "empty"):
        raise ValueError(f"mode {{{'<function>' if callable(mode) else mode!r}}} is not "
                         f"supported.")
    if ndim is None:        # a Symbol: its rank is known only at inference
        return pad_width
    rows = [tuple(e) if isinstance(e, (tuple, list)) else (e,) for e in pad_width]
    try:
        if ndim == 1:
            return ((int(rows[0][0]), int(rows[1][0])),)
        return tuple((int(rows[i][0]), int(rows[i][1])) for i in range(ndim))
    except IndexError:
        raise GpundaError(f"Operator _npi_pad: pad_width={pad_width} does not give a "
                          f"(before, after) pair for each of the {ndim} axes") from None


def pad(x, pad_width, mode="constant", **kwargs):
    """Pad an array (NumPy's modes; ``constant_values`` a single number)."""
    x = to_tensor(x)
    pad_width = _pad_pairs(pad_width, getattr(x, "ndim", None), mode)
    pw = _onp.asarray(pad_width)
    cv = kwargs.get("constant_values", 0)
    if _onp.ndim(cv) > 0:
        cv = _onp.ravel(cv)[0]
    return invoke("_npi_pad", [to_tensor(x)], pad_width=tuple(int(v) for v in pw.reshape(-1)),
                  mode=mode, constant_values=float(cv),
                  reflect_type=kwargs.get("reflect_type", "even"))


def tril(m, k=0):
    """The lower triangle (below the k-th diagonal); other elements zero."""
    return invoke("_npi_tril", [to_tensor(m)], k=k)


def triu(m, k=0):
    """The upper triangle (above the k-th diagonal); other elements zero."""
    return invoke("_npi_triu", [to_tensor(m)], k=k)


def diag(v, k=0):
    """The k-th diagonal of a 2-D array, or a 2-D array with ``v`` on it."""
    return invoke("_np_diag", [to_tensor(v)], k=k)


def diagflat(v, k=0):
    """A 2-D array with the flattened input on the k-th diagonal."""
    return invoke("_np_diagflat", [to_tensor(v)], k=k)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonals along ``axis1``/``axis2`` (the last axis of the result)."""
    return invoke("_np_diagonal", [to_tensor(a)], offset=offset, axis1=axis1, axis2=axis2)


def trace(a, offset=0, axis1=0, axis2=1, out=None):
    """Sum along the diagonals."""
    return invoke("_np_trace", [to_tensor(a)], out=out, offset=offset, axis1=axis1,
                  axis2=axis2)


def take(a, indices, axis=None, mode="raise", out=None):
    """Elements of ``a`` at ``indices`` along ``axis`` (flattened when None)."""
    if mode not in ("raise", "wrap", "clip"):
        raise GpundaError(f"take: mode={mode!r} is not one of 'raise', 'wrap', 'clip'")
    a = to_tensor(a)
    return invoke("_npi_take", [a, to_tensor(indices, a, dtype="int64")], out=out, axis=axis,
                  mode=mode)


def take_along_axis(arr, indices, axis):
    """Values of ``arr`` at the matching positions of ``indices`` along ``axis``."""
    arr = to_tensor(arr)
    idx_dt = getattr(indices, "dtype", None)
    if idx_dt is not None and _onp.dtype(idx_dt).kind not in "iu":
        raise IndexError("`indices` must be an integer array")     # NumPy's, as in MXNet
    r = invoke("_npi_take_along_axis", [arr, to_tensor(indices, arr, dtype="int64")], axis=axis)
    _fallback_dtype("take_along_axis", r.dtype)
    return r


def _operand(v, like):
    if is_tensor(v):
        return v
    dt = getattr(like, "dtype", None) if is_scalar(v) else None
    return to_tensor(v, like, dtype=dt)


def where(condition, x=None, y=None):
    """``x`` where ``condition`` is true, else ``y`` (broadcast); the indices of the true
    elements (``nonzero``) when only ``condition`` is given."""
    if x is None and y is None:
        from gpunda.numpy._sort import nonzero
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    ref = x if is_tensor(x) else y if is_tensor(y) else condition
    c = to_tensor(condition, ref)
    return invoke("_npi_where", [c, _operand(x, y if is_tensor(y) else c),
                                 _operand(y, x if is_tensor(x) else c)])


def _obj_params(obj):
    if isinstance(obj, slice):
        return dict(start=obj.start, stop=obj.stop, step=obj.step), None
    if isinstance(obj, (numbers.Integral, _onp.integer)):
        return dict(int_ind=int(obj)), None
    return {}, obj


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before index/indices/slice ``obj`` along ``axis``."""
    arr = to_tensor(arr)
    kw, tensor_obj = _obj_params(obj)
    vals = _operand(values, arr)
    ins = [arr, vals]
    if tensor_obj is not None:
        ins.append(to_tensor(tensor_obj, arr, dtype="int64"))
    return invoke("_npi_insert", ins, axis=axis, has_obj=tensor_obj is not None, **kw)


def delete(arr, obj, axis=None):
    """``arr`` without the sub-arrays at index/indices/slice ``obj`` along ``axis``."""
    arr = to_tensor(arr)
    kw, tensor_obj = _obj_params(obj)
    ins = [arr] if tensor_obj is None else [arr, to_tensor(tensor_obj, arr, dtype="int64")]
    return invoke("_npi_delete", ins, axis=axis, has_obj=tensor_obj is not None, **kw)


def resize(a, new_shape):
    """A new array of ``new_shape`` filled with repeated copies of ``a``."""
    return invoke("_npi_resize", [to_tensor(a)], new_shape=_shape_tuple(new_shape))


def copy(a):
    """A copy of ``a``."""
    return invoke("_np_copy", [to_tensor(a)])


def shape(a):
    """The shape of an array (a tuple)."""
    return a.shape if is_tensor(a) else _onp.shape(a)


def ndim(a):
    """The number of dimensions."""
    return a.ndim if is_tensor(a) else _onp.ndim(a)


def size(a, axis=None):
    """The number of elements (along ``axis`` when given)."""
    if axis is None:
        return a.size if is_tensor(a) else _onp.size(a)
    return a.shape[axis]
