"""NDArray: a dense array on a context, with MXNet 1.x semantics.

The payload ``_data`` is a backend array (numpy.ndarray or cupy.ndarray).
Views made by basic indexing share memory with their root (``_base``); every
in-place write sets the root's ``_version`` (see autograd's NOTE [In-place writes]).
"""
from __future__ import annotations

import operator
import weakref

import numpy as np

from gpunda._engine import autograd as _ag
from gpunda._engine import imperative as _imp
from gpunda.ops.registry import get_op
from gpunda.ops._util import wrapped_array, wrapped_int
from gpunda.base import GpundaError, GpundaIndexError, GpundaTypeError, GpundaValueError, numeric_types
from gpunda.context import Context, current_context, cpu, shares_memory_space
from gpunda._core import deferred as _deferred
from gpunda._core import hooks as _hooks
from gpunda._core import bf16 as _core_bf16
from gpunda._core.deferred import Poisoned as _Poisoned
from gpunda.ndarray.indexing import select as _select
from gpunda.ndarray.indexing import check_slice_write as _check_slice_write
from gpunda.ndarray.indexing import refuse_legacy_bool_index as _refuse_legacy_bool_index

__all__ = ["NDArray", "array", "empty", "zeros", "ones", "full", "arange", "waitall",
           "from_dlpack", "concatenate", "moveaxis", "onehot_encode", "imdecode"]

_is_rec = _ag._is_rec


def _unary_operator(name):
    """An NDArray operator such as ``-x``: op ``name`` with default params, the dense
    NumPy case inline (imperative.unary_fn), anything else through invoke."""
    op = get_op(name)
    return _imp.unary_fn(
        op, lambda x, out=None, name=None: _imp.invoke_parsed(op, (x,), op.default_params))


class NDArray:
    """A dense n-dimensional array on a device (``cpu(0)``, ``gpu(1)``).

    Create one with ``nd.array``, ``nd.zeros`` and friends; every ``nd.<op>``
    returns NDArrays. Arithmetic follows MXNet (broadcasting, scalars on
    either side); ``asnumpy()`` copies the values to the host.
    """

    # _ag, _base and _version live in the lazily created __dict__ and default to
    # the class values, so a fresh array costs two slot writes
    __slots__ = ("_data", "_ctx", "__dict__", "__weakref__")
    stype = "default"
    _ag = None          # autograd entry: (Node or Leaf, output index)
    _base = None        # the array a view was taken from
    _version = 0        # write count at the last in-place write to this root array
    __array_priority__ = 1000.0

    def __init__(self, handle=None, writable=True):
        # MXNet's NDArray(handle): arrays are made by nd.array & co. (which bypass this);
        # a handle is an NDArrayHandle from gpunda's C-API stand-in (base._LIB)
        if handle is None:
            raise GpundaError("NDArray(handle=...) needs a handle; create arrays with "
                              "nd.array, nd.zeros, nd.empty, ...")
        from gpunda._core.capi import take_handle
        src = take_handle(handle)
        self._data, self._ctx = src._data, src._ctx

    # -- basic properties -----------------------------------------------------
    @property
    def shape(self):
        """The shape, a tuple of ints."""
        return self._data.shape

    @property
    def dtype(self):
        """The element type as a NumPy type (``numpy.float32``); bfloat16 as MXNet spells
        it, ``np.dtype([('bfloat16', np.uint16)])`` (gpunda/_core/bf16.py)."""
        t = self._data.dtype.type
        return t if t is not _core_bf16.type_ else _core_bf16.MX_RECORD

    @property
    def size(self):
        """Number of elements."""
        return self._data.size

    @property
    def ndim(self):
        """Number of dimensions."""
        return self._data.ndim

    @property
    def context(self):
        """The device this array lives on."""
        return self._ctx

    ctx = context

    @property
    def handle(self):
        return self

    @property
    def _as_parameter_(self):
        # ctypes reads this when the array is passed as a pointer: MXNet code casts the
        # arrays its monitor callbacks get (``ctypes.cast(arr, NDArrayHandle)``) and
        # wraps them again with ``NDArray(handle)``
        from gpunda._core.capi import lend_handle
        return lend_handle(self)

    @property
    def writable(self):
        return True

    @property
    def T(self):
        """Transpose (reverses the axes)."""
        from gpunda.ndarray import _op
        return _op.transpose(self)

    def __len__(self):
        return self._data.shape[0] if self._data.ndim else 0

    def __hash__(self):
        return id(self)

    def __bool__(self):
        if self._data.size == 1:
            return bool(self.asnumpy().reshape(-1)[0])
        if self._data.size == 0:
            return False
        raise GpundaValueError("The truth value of an NDArray with multiple elements is "
                               "ambiguous.")

    __nonzero__ = __bool__

    def __iter__(self):
        for i in range(self.shape[0] if self.ndim else 0):
            yield self[i]

    # -- conversion -------------------------------------------------------------
    def asnumpy(self):
        """A NumPy copy of the values (waits for pending work)."""
        d = self._data
        if type(d) is np.ndarray:
            return d.copy()
        if type(d) is _Poisoned:     # NOTE [Deferred op errors]
            d = _deferred.host_values(d)
            if type(d) is np.ndarray:
                return d.copy()
        return self._ctx.backend.to_host(d)

    def asscalar(self):
        """The single value of a size-1 array as a NumPy scalar."""
        if self.size != 1:
            raise GpundaValueError(f"The current array is not a scalar: asscalar needs a size-1 "
                                   f"array, this one has shape {self.shape}")
        return self.asnumpy().reshape(-1)[0]

    def item(self):
        """The single value as a Python scalar."""
        return self.asscalar().item()

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __float__(self):
        if self.size != 1:
            raise GpundaTypeError("only size-1 arrays can be converted to Python scalars")
        return float(self.asscalar())

    def __int__(self):
        if self.size != 1:
            raise GpundaTypeError("only size-1 arrays can be converted to Python scalars")
        return int(self.asscalar())

    def __index__(self):
        if self.dtype is not None and np.dtype(self.dtype).kind in "iub" and self.size == 1:
            return int(self.asscalar())
        raise GpundaError("only integer size-1 NDArrays can be used as an index")

    def tolist(self):
        return self.asnumpy().tolist()

    def astype(self, dtype, copy=True):
        """This array converted to ``dtype`` (a copy unless ``copy=False`` and same dtype)."""
        from gpunda.ops.registry import parse_dtype
        try:
            dt = parse_dtype(dtype, "astype")
        except GpundaError as e:    # MXNet: NumPy's TypeError for what is not a dtype
            raise GpundaTypeError(str(e)) from None
        if not copy and self._data.dtype == dt:
            return self
        from gpunda.ndarray import _op
        return _op.Cast(self, dtype=dt)

    def copy(self):
        """A new array with the same values on the same context."""
        return self.copyto(self._ctx)

    def copyto(self, other):
        """Copy into NDArray ``other`` (any context) or to a new array on Context ``other``."""
        if isinstance(other, NDArray):
            if other is self:
                return other
            if other.shape != self.shape:
                raise GpundaError(f"copyto: target has shape {other.shape} but the source "
                                  f"has shape {self.shape}")
            _ag.check_writable(other, "copyto")
            if self._ag is not None and _is_rec() and type(self) is type(other) is NDArray:
                # recorded: ``other`` takes the copy's place in the graph
                _imp.write_outputs([other], [_transfer(self, other._ctx)], "copyto")
                return other
            self._copy_into(other)
            return other
        return self._copy_to_context(other)

    def _copy_into(self, other):
        """Write this array's values into NDArray ``other`` (storage types override it)."""
        if other._ctx is self._ctx and self._ctx._xp is np:
            # NumPy's assignment copies straight across (overlapping views included):
            # no temporary copy first (Module copies every batch into its executor)
            other._assign_from(self)
            return
        other._assign_from(_transfer(self, other._ctx))

    def _copy_to_context(self, other):
        """``copyto`` with a Context (shared by the sparse subclasses)."""
        if isinstance(other, Context):
            if other is self._ctx:
                from gpunda.ndarray import _op
                return _op._copy(self)
            return self._to_ctx(other)
        raise GpundaTypeError(f"copyto: target must be an NDArray or Context, got "
                              f"{type(other).__name__}")

    def _to_ctx(self, ctx):
        """A copy on another context; storage types override it."""
        return _transfer(self, ctx)

    def as_in_context(self, context):
        """This array on ``context``: itself when already there, else a copy."""
        context = Context(context)
        if context is self._ctx:
            return self
        return self._to_ctx(context)

    as_in_ctx = as_in_context

    def to_device(self, device):
        return self.as_in_context(device)

    def tostype(self, stype):
        """Convert to storage type 'default', 'csr' or 'row_sparse'."""
        from gpunda.ndarray import _op
        if stype == "csr" and len(self.shape) != 2:     # MXNet raises ValueError here
            raise ValueError(f"tostype: to convert to csr the NDArray must be 2-D, got shape "
                             f"{self.shape}")
        return _op.cast_storage(self, stype=stype)

    def wait_to_read(self):
        """Block until pending writes to this array are done."""
        if type(self._data) is _Poisoned:
            _deferred.host_values(self._data)
        if self._ctx.device_type == "gpu":
            self._ctx.backend.synchronize()

    def wait_to_write(self):
        self.wait_to_read()

    # -- DLPack -----------------------------------------------------------------
    def __dlpack__(self, *args, **kwargs):
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def to_dlpack_for_read(self):
        """A DLPack capsule sharing this array's memory."""
        return self._data.__dlpack__()

    to_dlpack_for_write = to_dlpack_for_read

    # -- pickling and printing ------------------------------------------------------
    def __reduce__(self):
        return (_unpickle, (self.asnumpy(), self._ctx.device_type, self._ctx.device_id))

    def __repr__(self):
        shape_info = "x".join(str(d) for d in self.shape)
        return f"\n{self.asnumpy()}\n<{type(self).__name__} {shape_info} @{self._ctx}>"

    def __str__(self):
        return self.__repr__()

    # -- autograd ---------------------------------------------------------------------
    def attach_grad(self, grad_req="write", stype=None):
        """Allocate a gradient buffer and mark this array as a variable.

        ``stype`` is the gradient's storage type, by default this array's own."""
        if stype is None:
            stype = self.stype
        if stype != "default":
            from gpunda.ndarray import sparse
            g = sparse.zeros(stype, self.shape, ctx=self._ctx, dtype=self.dtype)
        else:
            g = _new(self._ctx.backend.xp.zeros(self.shape, self._data.dtype) if self._ctx._xp is not np
                     else np.zeros(self.shape, self._data.dtype), self._ctx._plain)  # zeros_like's
        _ag.mark_variables([self], [g], grad_req)

    @property
    def grad(self):
        """The gradient buffer of a variable (None before ``attach_grad``).

        A 'null' variable has its zero buffer too, as in MXNet, until a backward through
        it (without retain_graph) drops it from the graph (MXNet's AGInfo::Clear)."""
        e = self._ag
        if e is not None and e[0].is_leaf and not e[0].freed:
            return e[0].grad
        return None

    @property
    def _fresh_grad(self):
        """Whether a backward wrote this variable's ``.grad`` since the flag was reset."""
        e = self._ag
        return e is not None and getattr(e[0], "fresh", False)

    @_fresh_grad.setter
    def _fresh_grad(self, state):
        e = self._ag
        if e is None:
            raise GpundaError("_fresh_grad: this NDArray is not marked as a variable and "
                              "has no gradient state; call attach_grad() first")
        e[0].fresh = bool(state)

    def detach(self):
        """The same values, cut from the autograd graph."""
        a = _new(self._data, self._ctx)
        a._base = self._base if self._base is not None else self
        return a

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Gradients of this array into the variables' ``.grad``."""
        _ag.backward([self], None if out_grad is None else [out_grad], retain_graph, train_mode)

    # -- in-place writes ----------------------------------------------------------
    def _assign_from(self, src):
        """Write values of NDArray ``src`` (same context, broadcastable) into self."""
        d = src._data if isinstance(src, NDArray) else src
        if type(d) is _Poisoned:     # a failed op's result written into an array: report it
            d = _deferred.host_values(d)
        self._data[...] = d
        _ag.bump_version(self)

    def __setitem__(self, key, value):
        _ag.check_writable(self, "__setitem__")
        orig_key = key
        if key.__class__ is slice or key.__class__ is tuple:
            _check_slice_write(key, self.shape)
        key = _raw_key(key, self._ctx, True)
        if isinstance(value, NDArray):
            if value._ctx is not self._ctx and not shares_memory_space(value._ctx, self._ctx):
                # MXNet's __setitem__ copies a value from another device first (an explicit
                # write into this array's device, recorded as a copy under autograd)
                value = value.as_in_context(self._ctx)
            if value._ag is not None and _is_rec():
                return _ag.record_assign(self, key, value)
            value = value._data
        elif not isinstance(value, numeric_types):
            value = np.asarray(value)
            if self._ctx._xp is not np:
                value = self._ctx.backend.from_host(value)
        try:
            self._data[key] = value
        except OverflowError:       # an integer that the dtype wraps, as on NumPy 1.x and MXNet
            self._data[key] = wrapped_int(self.dtype, value)
        except ValueError as e:
            # MXNet fits a value of the right size to the indexed shape (b[0] = array([x]))
            if not _assign_resized(self._data, key, value):
                raise GpundaValueError(f"__setitem__: cannot assign to index {key!r} of an "
                                       f"array of shape {self.shape}: {e}") from None
        except IndexError as e:
            _check_key_types(orig_key)
            raise GpundaIndexError(f"__setitem__: index {key!r} does not fit an array of shape "
                                   f"{self.shape}: {e}") from None
        except TypeError as e:
            raise GpundaError(f"__setitem__: cannot assign to index {key!r} of an array of "
                              f"shape {self.shape}: {e}") from None
        _ag.bump_version(self)

    def __getitem__(self, key):
        # MXNet answers ``a[:]`` and ``a[()]`` with the array itself
        if key.__class__ is slice:
            if key.start is None and key.stop is None and (key.step is None or key.step == 1):
                return self
        elif key.__class__ is tuple and not key:
            return self
        if _is_rec() and self._ag is not None:
            _check_key_types(key)
            from gpunda.ndarray import _op
            return _op._getitem(self, key=_raw_key(key, self._ctx, True))
        rkey = _raw_key(key, self._ctx, True)
        try:
            r = self._data[rkey]
        except IndexError as e:
            _check_key_types(key)   # a float or str key is MXNet's ValueError (error path only)
            raise GpundaIndexError(f"__getitem__: index {key!r} does not fit an array of shape "
                                   f"{self.shape}: {e}") from None
        except ValueError as e:     # slice step 0
            raise GpundaValueError(f"__getitem__: index {key!r} does not fit an array of shape "
                                   f"{self.shape}: {e}") from None
        except TypeError as e:
            raise GpundaError(f"__getitem__: index {key!r} does not fit an array of shape "
                              f"{self.shape}: {e}") from None
        if r.ndim == 0:
            from gpunda.util import is_np_shape
            r, view = _select(self._data, rkey, r, is_np_shape())
        else:
            r, view = _select(self._data, rkey, r, False)
        a = _new(r, self._ctx)
        if view:
            a._base = self._base if self._base is not None else self
        return a

    def _at(self, idx):
        """MXNet's ``_at``: the view of row ``idx`` (what ``a[idx]`` gives for an int);
        a 1-D array gives a (1,)-shaped view (0-d under ``np_shape`` and for ``mx.np``)."""
        from gpunda.ndarray.indexing import at
        from gpunda.util import is_np_shape
        return self._view(at(self._data, idx, type(self) is not NDArray or is_np_shape()))

    def _slice(self, start, stop):
        """MXNet's ``_slice``: the view of rows ``[start, stop)`` (``a[start:stop]``)."""
        from gpunda.ndarray.indexing import slice_rows
        return self._view(slice_rows(self._data, start, stop))

    def _view(self, r):
        """Backend view ``r`` of this array's memory as an array of this class."""
        a = _alloc(type(self))
        a._data, a._ctx = r, self._ctx
        a._base = self._base if self._base is not None else self
        return a

    # -- shape helpers that take MXNet's calling styles ------------------------------
    def reshape(self, *shape, **kwargs):
        """This array with a new shape, sharing its memory as MXNet's ``reshape`` does
        (writes to one show in the other). MXNet's codes 0, -1, -2, -3, -4 apply;
        ``reverse=True`` reads them right to left. While recording, the Reshape op
        makes a recorded copy instead, so gradients flow through it."""
        from gpunda.ndarray import _op
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if "shape" in kwargs:
            shape = kwargs.pop("shape")
        if type(self) is not NDArray or (_is_rec() and self._ag is not None) \
                or set(kwargs) - {"reverse"}:
            return _op.Reshape(self, shape=shape, **kwargs)
        from gpunda.ops.tensor.matrix import infer_reshape
        try:
            new_shape = infer_reshape(self.shape, tuple(shape), bool(kwargs.get("reverse")))
        except GpundaError as e:    # MXNet's NDArray.reshape raises ValueError here
            raise GpundaValueError(str(e)) from None
        r = self._data.reshape(new_shape)
        a = _new(r, self._ctx)
        if _shares(r, self._data):
            a._base = self._base if self._base is not None else self
        return a

    def reshape_like(self, *args, **kwargs):
        """``nd.reshape_like(self, rhs, ...)``: this array in the shape of ``rhs``."""
        from gpunda.ndarray import _op
        return _op.reshape_like(self, *args, **kwargs)

    def zeros_like(self):
        from gpunda.ndarray import _op
        return _op.zeros_like(self)

    def ones_like(self):
        from gpunda.ndarray import _op
        return _op.ones_like(self)

    def broadcast_to(self, shape):
        """This array broadcast to ``shape``; shapes that do not fit raise ValueError.

        As MXNet's method (looser than the ``broadcast_to`` op): an array with fewer
        dimensions lines up with the trailing ones of ``shape`` (NumPy's rule)."""
        from gpunda.ndarray import _op
        shape = tuple(shape)
        cur = self.shape
        padded = (1,) * (len(shape) - len(cur)) + cur
        if len(shape) < len(cur) or any(c != s and c != 1 for c, s in zip(padded, shape)):
            raise GpundaValueError(f"broadcast_to: operands could not be broadcast together "
                                   f"with remapped shapes [original->remapped]: {cur} and "
                                   f"requested shape {shape}")
        src = self.reshape(padded) if padded != cur else self
        try:
            return _op.broadcast_to(src, shape=shape)
        except GpundaError as e:    # MXNet's method checks the shapes itself: ValueError
            raise GpundaValueError(str(e)) from None

    def broadcast_like(self, other):
        """This array broadcast to ``other``'s shape, as ``broadcast_to(other.shape)``."""
        return self.broadcast_to(other.shape)

    def expand_dims(self, axis, inplace=False):
        """A new axis at ``axis``; ``inplace=True`` gives a view sharing this memory."""
        from gpunda.ndarray import _op
        r = _op.expand_dims(self, axis=axis)
        return self.reshape(r.shape) if inplace else r

    def squeeze(self, axis=None, inplace=False):
        """Drop axes of length 1 (``axis`` selects which); ``inplace=True`` gives a view."""
        from gpunda.ndarray import _op
        r = _op.squeeze(self, axis=axis)
        return self.reshape(r.shape) if inplace else r

    def transpose(self, *axes, **kwargs):
        from gpunda.ndarray import _op
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if axes:
            kwargs["axes"] = axes
        return _op.transpose(self, **kwargs)

    def flatten(self, inplace=False):
        """Collapse all axes but the first; ``inplace=True`` gives a view sharing memory."""
        from gpunda.ndarray import _op
        r = _op.Flatten(self)
        return self.reshape(r.shape) if inplace else r

    def split(self, *args, **kwargs):
        from gpunda.ndarray import _op
        return _op.split(self, *args, **kwargs)

    def as_np_ndarray(self):
        """The same buffer as an ``mx.np.ndarray`` (shares memory and autograd entry)."""
        from gpunda import numpy as _np_front   # loads mx.np on first use
        return _np_front.multiarray._nd_as_np_ndarray(self)

    def as_nd_ndarray(self):
        return self

    # -- arithmetic ------------------------------------------------------------
    __neg__ = _unary_operator("negative")

    def __pos__(self):
        return self

    def __abs__(self):
        return _imp.invoke_parsed(_OPS["abs"], (self,), _OPS["abs"].default_params)

    # the common operators are imperative.binary_fn closures: ``a * b`` on two dense
    # NumPy arrays runs without an extra Python frame; scalars go to _binary
    __add__ = __radd__ = _imp.binary_fn(
        get_op("broadcast_add"), lambda a, b: _binary(a, b, "broadcast_add", "_plus_scalar"))
    __sub__ = _imp.binary_fn(
        get_op("broadcast_sub"), lambda a, b: _binary(a, b, "broadcast_sub", "_minus_scalar"))

    def __rsub__(self, other):
        return _rbinary(self, other, "broadcast_sub", "_rminus_scalar")

    __mul__ = __rmul__ = _imp.binary_fn(
        get_op("broadcast_mul"), lambda a, b: _binary(a, b, "broadcast_mul", "_mul_scalar"))
    __truediv__ = _imp.binary_fn(
        get_op("broadcast_div"), lambda a, b: _binary(a, b, "broadcast_div", "_div_scalar"))

    def __rtruediv__(self, other):
        return _rbinary(self, other, "broadcast_div", "_rdiv_scalar")

    __div__, __rdiv__ = __truediv__, __rtruediv__

    def __floordiv__(self, other):
        q = self / other
        return q.floor() if hasattr(q, "floor") else q

    def __mod__(self, other):
        return _binary(self, other, "broadcast_mod", "_mod_scalar")

    def __rmod__(self, other):
        return _rbinary(self, other, "broadcast_mod", "_rmod_scalar")

    def __pow__(self, other):
        return _binary(self, other, "broadcast_power", "_power_scalar")

    def __rpow__(self, other):
        return _rbinary(self, other, "broadcast_power", "_rpower_scalar")

    def __matmul__(self, other):
        from gpunda.ndarray import _op
        return _op.dot(self, other)

    def __eq__(self, other):
        if other is None:
            return False
        r = _binary(self, other, "broadcast_equal", "_equal_scalar")
        if r is NotImplemented:     # MXNet: a str or other object is a TypeError, not False
            raise GpundaTypeError(f"type {type(other)} not supported")
        return r

    def __ne__(self, other):
        if other is None:
            return True
        r = _binary(self, other, "broadcast_not_equal", "_not_equal_scalar")
        if r is NotImplemented:
            raise GpundaTypeError(f"type {type(other)} not supported")
        return r

    def __gt__(self, other):
        return _binary(self, other, "broadcast_greater", "_greater_scalar")

    def __ge__(self, other):
        return _binary(self, other, "broadcast_greater_equal", "_greater_equal_scalar")

    def __lt__(self, other):
        return _binary(self, other, "broadcast_lesser", "_lesser_scalar")

    def __le__(self, other):
        return _binary(self, other, "broadcast_lesser_equal", "_lesser_equal_scalar")

    def _inplace(self, other, opname, scalar_opname):
        if isinstance(other, NDArray):
            op = _OPS[opname]
            return _imp.invoke_parsed(op, (self, other), op.default_params, out=self)
        if isinstance(other, numeric_types):
            op = _OPS[scalar_opname]
            return _imp.invoke_parsed(op, (self,), op.parse_params({"scalar": other}), out=self)
        raise GpundaTypeError(f"{opname}: cannot combine an NDArray with {type(other).__name__}")

    def __iadd__(self, other):
        return self._inplace(other, "broadcast_add", "_plus_scalar")

    def __isub__(self, other):
        return self._inplace(other, "broadcast_sub", "_minus_scalar")

    def __imul__(self, other):
        return self._inplace(other, "broadcast_mul", "_mul_scalar")

    def __itruediv__(self, other):
        return self._inplace(other, "broadcast_div", "_div_scalar")

    __idiv__ = __itruediv__

    def __imod__(self, other):
        return self._inplace(other, "broadcast_mod", "_mod_scalar")

    # -- MXNet 1.x methods the registry cannot generate (variadic ops, in-place forms) --
    def softmax(self, *args, **kwargs):
        """``nd.softmax(self, ...)``."""
        from gpunda.ndarray import _op
        return _op.softmax(self, *args, **kwargs)

    def log_softmax(self, *args, **kwargs):
        """``nd.log_softmax(self, ...)``."""
        from gpunda.ndarray import _op
        return _op.log_softmax(self, *args, **kwargs)

    def softmin(self, *args, **kwargs):
        """``nd.softmin(self, ...)``."""
        from gpunda.ndarray import _op
        return _op.softmin(self, *args, **kwargs)

    def split_v2(self, *args, **kwargs):
        """``nd.split_v2(self, ...)``: split at indices or into equal sections."""
        from gpunda.ndarray.functions import split_v2
        return split_v2(self, *args, **kwargs)

    def slice_assign(self, rhs, begin, end, step):
        """Write ``rhs`` into the slice [begin, end) (step) of this array, in place."""
        from gpunda.ndarray import _op
        return _op._slice_assign(self, rhs, begin=begin, end=end, step=step, out=self)

    def slice_assign_scalar(self, value, begin, end, step):
        """Set the slice [begin, end) (step) of this array to ``value``, in place."""
        from gpunda.ndarray import _op
        return _op._slice_assign_scalar(self, scalar=float(value), begin=begin, end=end,
                                        step=step, out=self)

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape):
        """Whether slicing ``shape`` with one slice per axis gives a contiguous view."""
        from gpunda.ndarray.indexing import slice_is_contiguous
        return slice_is_contiguous(slc_key, shape)

    def __getstate__(self):
        # MXNet's pickle state: the array's record in the NDArray file format
        from gpunda.ndarray.io import record_bytes
        return {"handle": bytearray(record_bytes(self))}

    def __setstate__(self, state):
        from gpunda.ndarray.io import read_record_bytes, _to_ndarray
        handle = state.get("handle") if isinstance(state, dict) else None
        if handle is None:
            raise GpundaError("__setstate__: state must be a dict with the 'handle' bytes made by "
                              "__getstate__")
        rec = read_record_bytes(handle)
        # the saved device may be absent here (a GPU array loaded without a GPU): then CPU
        try:
            ctx = Context(rec.dev_type, rec.dev_id)
            ctx.backend
        except GpundaError:
            ctx = cpu()
        a = _to_ndarray(rec, ctx)
        if a is None or a.stype != "default":
            raise GpundaError("__setstate__: the state holds no dense array")
        self._data, self._ctx = a._data, a._ctx


_OPS = {}   # filled by gpunda.ndarray after the op families load

_alloc = NDArray.__new__
_SCALAR_TYPES = (int, float, np.generic, bool)


def _new(data, ctx):
    """Wrap backend array ``data`` on ``ctx`` (no copy, no checks)."""
    a = _alloc(NDArray)
    a._data = data
    a._ctx = ctx
    return a


def _binary(self, other, opname, scalar_opname):
    if isinstance(other, NDArray):
        op = _OPS[opname]
        return _imp.invoke_parsed(op, (self, other), op.default_params)
    if isinstance(other, _SCALAR_TYPES):
        return _imp.fast_scalar(_OPS[scalar_opname], self, other)
    if isinstance(other, np.ndarray):
        raise _operand_error(other)
    return NotImplemented


def _rbinary(self, other, opname, rscalar_opname):
    if isinstance(other, _SCALAR_TYPES):
        return _imp.fast_scalar(_OPS[rscalar_opname], self, other)
    if isinstance(other, np.ndarray):
        raise _operand_error(other)
    return NotImplemented


def _operand_error(other):
    # MXNet refuses NumPy arrays as operands (it would not know their context or
    # whether to keep their dtype); nd.array(x) converts one explicitly
    return GpundaTypeError(f"type {type(other)} not supported: convert the NumPy array with "
                           f"nd.array() first")


def _check_key_types(key):
    from gpunda.ndarray.indexing import check_key_types
    check_key_types(key)


def _assign_resized(data, key, value):
    """``data[key] = value`` for a value with as many elements as the indexed region but
    another shape (MXNet drops or adds length-1 axes); False when the sizes differ."""
    try:
        target = data[key]
    except (IndexError, ValueError, TypeError):
        return False
    shape = getattr(target, "shape", ())
    if getattr(value, "size", None) != max(int(np.prod(shape)), 0):
        return False
    data[key] = value.reshape(shape)
    return True


def _shares(view, base):
    try:
        return np.shares_memory(view, base) if isinstance(view, np.ndarray) else True
    except Exception:
        return True


def _raw_key(key, ctx, legacy=False):
    """An index with NDArrays replaced by backend arrays on ``ctx``; ``legacy``: the index
    of a legacy ``nd`` array, where a boolean NDArray is MXNet's ValueError."""
    if isinstance(key, NDArray):
        if not shares_memory_space(key._ctx, ctx):
            raise GpundaError(f"index array is on {key._ctx} but the array is on {ctx}")
        k = key._data
        if legacy and k.dtype.kind == "b":
            _refuse_legacy_bool_index(key)
        return k.astype(np.int64) if k.dtype.kind == "f" else k
    if isinstance(key, tuple):
        return tuple(_raw_key(k, ctx, legacy) for k in key)
    if isinstance(key, list):
        arr = np.asarray(key)
        if ctx._xp is not np:
            arr = ctx.backend.from_host(arr)
        return arr
    return key


def _transfer(src, ctx):
    """A copy of ``src`` on context ``ctx`` (recorded as a differentiable copy)."""
    from gpunda.ndarray import _op
    if ctx.device_type == src._ctx.device_type and ctx.device_id == src._ctx.device_id:
        return _op._copy(src)
    return _op._copyto(src, ctx=ctx)


def _unpickle(data, dev_type, dev_id):
    try:
        ctx = Context(dev_type, dev_id)
        ctx.backend
    except GpundaError:
        ctx = cpu()
    return array(data, ctx=ctx, dtype=data.dtype)


# -- creation ---------------------------------------------------------------------

def _ctx_of(ctx):
    return current_context() if ctx is None else Context(ctx)


def _dtype_of(dtype, default=np.float32):
    from gpunda.ops.registry import parse_dtype
    return np.dtype(default) if dtype is None else parse_dtype(dtype, "dtype")


def _check_shape(shape, where):
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    try:
        shape = tuple(shape)
    except TypeError:
        raise GpundaError(f"{where}: shape={shape!r} must be an int or a tuple of ints") from None
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
            raise GpundaError(f"{where}: shape={shape!r} must hold non-negative integers")
    return tuple(int(d) for d in shape)


def array(source_array, ctx=None, dtype=None):
    """An NDArray copied from a list, NumPy array, NDArray or scalar.

    dtype defaults to float32, or to the source's dtype for an NDArray (as in
    MXNet 1.x, a NumPy array of any dtype becomes float32 unless ``dtype`` is given).
    """
    if isinstance(source_array, NDArray) and source_array.stype != "default" or \
            type(source_array).__module__.startswith(("scipy.sparse", "cupyx.scipy.sparse")):
        from gpunda.ndarray import sparse    # as MXNet: a sparse source gives a sparse copy
        return sparse.array(source_array, ctx=ctx, dtype=dtype)
    ctx = _ctx_of(ctx)
    if isinstance(source_array, NDArray):
        dt = _dtype_of(dtype, source_array._data.dtype)
        src = source_array.as_in_context(ctx)._data
        xp = ctx.backend.xp
        return _new(xp.array(src, dtype=dt, copy=True), ctx)
    if hasattr(source_array, "__cuda_array_interface__") and ctx.device_type == "gpu":
        xp = ctx.backend.xp
        with ctx.backend.device_scope():
            src = xp.asarray(source_array)
            return _new(xp.array(src, dtype=_dtype_of(dtype, src.dtype), copy=True), ctx)
    if isinstance(source_array, np.ndarray):
        # MXNet 1.x: float32 unless dtype is given, whatever the NumPy dtype
        dt = _dtype_of(dtype)
        host = np.array(source_array, dtype=dt, copy=True)
    else:
        if hasattr(source_array, "__cuda_array_interface__"):
            source_array = _cuda_to_host(source_array)
        try:
            host = wrapped_array(source_array, _dtype_of(dtype) if dtype is not None else None)
        except (ValueError, TypeError) as e:
            raise GpundaError(f"array: cannot make an array from {type(source_array).__name__}: {e}") from None
        if host.dtype.kind not in "fiubc" and not _core_bf16.is_bf16(host.dtype):
            raise GpundaTypeError(f"array: source of type {type(source_array).__name__} is not "
                                  f"numeric (NumPy dtype {host.dtype})")
        if dtype is None:
            host = host.astype(np.float32 if host.dtype.kind in "fiub" or host.ndim else host.dtype)
    if ctx._xp is np:
        return _new(host, ctx)
    try:
        return _new(ctx.backend.from_host(host), ctx)
    except Exception as e:   # noqa: BLE001 -- only out of memory is handled here
        from gpunda._engine import oom as _oom
        if not _oom.is_oom(e, ctx):
            raise
        return _new(_oom.retry(lambda: ctx.backend.from_host(host), ctx,
                               lambda e2: _oom.describe("array", host.shape, host.dtype), e), ctx)


def _cuda_to_host(obj):
    from gpunda.backends import array_module
    xp = array_module(obj) if not isinstance(obj, np.ndarray) else None
    if xp is not None and xp is not np and isinstance(obj, xp.ndarray):
        return xp.asnumpy(obj)
    import cupy
    return cupy.asnumpy(cupy.asarray(obj))


def _make(where, shape, ctx, dtype, fill):
    shape = _check_shape(shape, where)
    if where != "empty" and (not shape or 0 in shape):
        _legacy_unknown_shape(where, shape)
    ctx = _ctx_of(ctx)
    dt = _dtype_of(dtype)
    if _hooks.profile_creation is not None and where != "empty":
        fill = _hooks.profile_creation("_" + where, fill)   # MXNet's _zeros/_ones/_full op
    xp = ctx.backend.xp
    if xp is np:
        return _new(fill(np, shape, dt), ctx)
    with ctx.backend.device_scope():
        try:
            return _new(fill(xp, shape, dt), ctx)
        except Exception as e:   # noqa: BLE001 -- only out of memory is handled here
            from gpunda._engine import oom as _oom
            if not _oom.is_oom(e, ctx):
                raise
            return _new(_oom.retry(lambda: fill(xp, shape, dt), ctx,
                                   lambda e2: _oom.describe(where, shape, dt), e), ctx)


def empty(shape, ctx=None, dtype=None, stype=None):
    """An uninitialised array; ``stype`` 'csr'/'row_sparse' gives an empty sparse one."""
    if stype is not None and stype != "default":
        from gpunda.ndarray import sparse
        return sparse.empty(stype, shape, ctx=ctx, dtype=dtype)
    return _make("empty", shape, ctx, dtype, lambda xp, s, d: xp.empty(s, d))


def zeros(shape, ctx=None, dtype=None, stype=None, **kwargs):
    """An array of zeros; ``stype`` 'csr'/'row_sparse' gives a sparse one."""
    if stype is not None and stype != "default":
        from gpunda.ndarray import sparse
        return sparse.zeros(stype, shape, ctx=ctx, dtype=dtype)
    return _into(kwargs.get("out"), _make("zeros", shape, ctx, dtype,
                                          lambda xp, s, d: xp.zeros(s, d)))


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An array of ones (written into ``out=`` when given)."""
    return _into(kwargs.get("out"), _make("ones", shape, ctx, dtype,
                                          lambda xp, s, d: xp.ones(s, d)))


def _legacy_unknown_shape(where, shape):
    """MXNet's _zeros/_ones/_full fail shape inference for () or a 0 dimension unless
    mx.np_shape() is on (legacy shapes read them as unknown); empty() allocates anyway."""
    from gpunda.util import is_np_shape
    if not is_np_shape():
        raise GpundaError(f"Operator _{where}: shape={shape} is unknown outside mx.np_shape() "
                          f"(legacy shapes read () and 0 as unknown sizes)")


def _into(out, r):
    if out is None:
        return r
    if not isinstance(out, NDArray) or out.shape != r.shape:
        raise GpundaError(f"out= must be an NDArray of shape {r.shape}, got "
                          f"{getattr(out, 'shape', type(out).__name__)}")
    out._assign_from(r)
    return out


def full(shape, val, ctx=None, dtype=None, out=None):
    """An array filled with ``val``."""
    r = _make("full", shape, ctx, dtype, lambda xp, s, d: xp.full(s, _fill_value(val, d), d))
    if out is not None:
        out._assign_from(r)
        return out
    return r


def _fill_value(val, dtype):
    # an integer the dtype cannot hold wraps, as on NumPy 1.x and in MXNet's kernels
    if isinstance(val, numeric_types) and np.dtype(dtype).kind in "iu":
        try:
            np.dtype(dtype).type(val)
        except OverflowError:
            return wrapped_int(dtype, val)
    return val


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=None):
    """Evenly spaced values in [start, stop), each repeated ``repeat`` times."""
    from gpunda.ops.tensor.creation import range_bounds, range_values
    start, stop = range_bounds("arange", start, stop, step, infer_range)
    if repeat != 1 and (not isinstance(repeat, int) or repeat < 1):
        raise GpundaError(f"arange: repeat={repeat!r} must be a positive integer")
    host = range_values(np, start, stop, step, repeat, _dtype_of(dtype))
    return array(host, ctx=ctx, dtype=_dtype_of(dtype))


def waitall():
    """Wait for all queued work on every device."""
    from gpunda.backends import _gpus
    for b in list(_gpus.values()):
        b.synchronize()
    _deferred.raise_pending()


def from_dlpack(ext_tensor, ctx=None):
    """An NDArray sharing the memory of a DLPack producer (NumPy, CuPy, PyTorch) or of
    a DLPack capsule (what ``to_dlpack_for_read`` returns, as in MXNet)."""
    if type(ext_tensor).__name__ == "PyCapsule":
        from gpunda.ndarray._dlpack import CapsuleTensor
        ext_tensor = CapsuleTensor(ext_tensor)
    dev = ext_tensor.__dlpack_device__() if hasattr(ext_tensor, "__dlpack_device__") else (1, 0)
    if dev[0] in (2, 13):    # CUDA / managed
        from gpunda.context import gpu
        c = gpu(int(dev[1]))
        xp = c.backend.xp
        with c.backend.device_scope():
            return _new(xp.from_dlpack(ext_tensor), c)
    try:
        data = np.from_dlpack(ext_tensor)
    except TypeError:   # an old-style capsule
        raise GpundaError("from_dlpack: pass an object with __dlpack__ (a tensor), not a capsule") from None
    if not data.flags.writeable:
        # NumPy marks DLPack imports read-only; the memory is still shared
        data = _writable_view(data)
    return _new(data, cpu())


def _writable_view(a):
    iface = dict(a.__array_interface__)
    iface["data"] = (iface["data"][0], False)

    class _Holder:
        __array_interface__ = iface
    holder = _Holder()
    holder.owner = a    # the view's base is the holder: it keeps the imported memory alive
    return np.asarray(holder)


def concatenate(arrays, axis=0, always_copy=True):
    """Join arrays along ``axis``."""
    from gpunda.ndarray import _op
    return _op.concat(*arrays, dim=axis)


def moveaxis(tensor, source, destination):
    """Move axes ``source`` to positions ``destination`` (ints or sequences)."""
    from gpunda.ndarray.functions import moveaxis as move
    return move(tensor, source, destination)


def onehot_encode(indices, out):
    """One-hot encode ``indices`` into ``out`` (MXNet's legacy helper)."""
    from gpunda.ndarray import _op
    return _op.one_hot(indices, depth=out.shape[1], out=out)


def imdecode(*args, **kwargs):
    raise GpundaError("imdecode: image decoding is not part of gpunda; decode with Pillow "
                      "and pass the array to nd.array")


# -- MXNet's module-level names (mxnet.ndarray.ndarray) ---------------------------
py_slice = slice    # MXNet's name for the builtin, which its own slice op shadows

_STORAGE_TYPE_UNDEFINED = -1
_STORAGE_TYPE_DEFAULT = 0
_STORAGE_TYPE_ROW_SPARSE = 1
_STORAGE_TYPE_CSR = 2
_STORAGE_TYPE_STR_TO_ID = {"undefined": _STORAGE_TYPE_UNDEFINED, "default": _STORAGE_TYPE_DEFAULT,
                           "row_sparse": _STORAGE_TYPE_ROW_SPARSE, "csr": _STORAGE_TYPE_CSR}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}
_GRAD_REQ_MAP = {"null": 0, "write": 1, "add": 3}
# MXNet's type codes (mshadow's TypeFlag); 12 is bfloat16, stored as a 2-byte record
_DTYPE_NP_TO_MX = {None: -1, np.float32: 0, np.float64: 1, np.float16: 2, np.uint8: 3,
                   np.int32: 4, np.int8: 5, np.int64: 6, np.bool_: 7,
                   np.dtype([("bfloat16", np.uint16)]): 12}
_DTYPE_MX_TO_NP = {v: k for k, v in _DTYPE_NP_TO_MX.items()}

# the rest of MXNet's module-level functions, defined over the registry ops
from gpunda.ndarray.functions import (add, subtract, multiply, divide, true_divide, modulo, power,  # noqa: E402
                        maximum, minimum, equal, not_equal, greater, greater_equal, lesser,
                        lesser_equal, logical_and, logical_or, logical_xor, linspace, eye,
                        split_v2, from_numpy, histogram, to_dlpack_for_read, to_dlpack_for_write)
from gpunda.ndarray.indexing import (indexing_key_expand_implicit_axes, get_indexing_dispatch_code,  # noqa: E402
                       get_oshape_of_gather_nd_op, _NDARRAY_UNSUPPORTED_INDEXING,
                       _NDARRAY_BASIC_INDEXING, _NDARRAY_ADVANCED_INDEXING,
                       _NDARRAY_EMPTY_TUPLE_INDEXING)
__all__ += ["_DTYPE_NP_TO_MX", "_DTYPE_MX_TO_NP", "_GRAD_REQ_MAP", "add", "linspace", "eye",
            "divide", "equal", "greater", "greater_equal", "lesser", "lesser_equal",
            "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "modulo",
            "multiply", "not_equal", "power", "subtract", "true_divide", "histogram", "split_v2",
            "to_dlpack_for_read", "to_dlpack_for_write", "from_numpy",
            "indexing_key_expand_implicit_axes", "get_indexing_dispatch_code",
            "get_oshape_of_gather_nd_op"]


from gpunda.ndarray.indexing import (  # noqa: E402,F401  (MXNet's private helpers)
    _NDARRAY_NO_ZERO_DIM_BOOL_ARRAY, _NDARRAY_ZERO_DIM_BOOL_ARRAY_FALSE,
    _NDARRAY_ZERO_DIM_BOOL_ARRAY_TRUE, check_boolean_array_dimension, _int_to_slice,
    _shape_for_bcast, _is_advanced_index, _get_index_range, _get_dim_size, _get_slice_len,
    _get_broadcast_shape, _broadcast_shapes)
from gpunda.ndarray._dlpack import (  # noqa: E402,F401
    DLContext, DLDataType, DLTensor, DLManagedTensor, _c_str_dltensor, _c_str_used_dltensor,
    _dlpack_deleter)
__all__.append("check_boolean_array_dimension")

# whether the library handles tensors of 2**31 elements and more (runtime feature
# INT64_TENSOR_SIZE); read once, on the first _int64_enabled()
_INT64_TENSOR_SIZE_ENABLED = None


def _int64_enabled():
    """Whether tensors may have 2**31 elements or more (cached in
    ``_INT64_TENSOR_SIZE_ENABLED``)."""
    global _INT64_TENSOR_SIZE_ENABLED
    if _INT64_TENSOR_SIZE_ENABLED is None:
        # always: sizes and indices are NumPy/CuPy's 64-bit integers (runtime.Features
        # reports INT64_TENSOR_SIZE on; a test checks the two agree)
        _INT64_TENSOR_SIZE_ENABLED = True
    return _INT64_TENSOR_SIZE_ENABLED


def _new_alloc_handle(shape, ctx, delay_alloc, dtype=np.float32):
    """A handle (``NDArrayHandle``) to a new uninitialised dense array of ``shape`` and
    ``dtype`` on ``ctx``; ``NDArray(handle)`` takes it. ``delay_alloc`` is accepted as
    MXNet's (gpunda allocates at once)."""
    from gpunda._core.capi import new_handle
    return new_handle(empty(tuple(shape), ctx=ctx, dtype=dtype))


def _storage_type(handle):
    """The storage type id (0 default, 1 row_sparse, 2 csr) of the array ``handle`` names
    (an NDArrayHandle from gpunda, or the array itself: ``arr.handle``)."""
    from gpunda._core.capi import peek_handle
    arr = peek_handle(handle)
    if not isinstance(arr, NDArray):
        raise GpundaError(f"_storage_type: handle={handle!r} does not name an array")
    return _STORAGE_TYPE_STR_TO_ID[arr.stype]


def _ufunc_helper(lhs, rhs, fn_array, fn_scalar, lfn_scalar, rfn_scalar=None):
    """MXNet's dispatch of a binary function on NDArrays and numbers: ``fn_scalar(lhs,
    rhs)`` for two numbers, ``fn_array(lhs, rhs)`` for two arrays, ``lfn_scalar(array,
    float(number))`` for an array and a number (``rfn_scalar`` instead when the number is
    on the left and one is given; without it the function is commutative)."""
    if isinstance(lhs, numeric_types):
        if isinstance(rhs, numeric_types):
            return fn_scalar(lhs, rhs)
        if rfn_scalar is None:
            return lfn_scalar(rhs, float(lhs))
        return rfn_scalar(rhs, float(lhs))
    if isinstance(rhs, numeric_types):
        return lfn_scalar(lhs, float(rhs))
    if isinstance(rhs, NDArray):
        return fn_array(lhs, rhs)
    raise GpundaTypeError(f"type {type(rhs)} not supported")


def _new_empty_handle():
    """MXNet: a fresh C handle for an output; gpunda arrays have no C handles."""
    from gpunda.base import NotImplementedForGpunda
    raise NotImplementedForGpunda("_new_empty_handle is not supported: a gpunda array always "
                                  "has its storage, so there is no empty C-API handle to fill "
                                  "(create arrays with nd.empty)")


__all__.append("_new_empty_handle")


def _new_from_shared_mem(shared_pid, shared_id, shape, dtype):
    """MXNet: a handle to an array in another process's shared memory (its DataLoader
    workers); gpunda has no such arrays."""
    from gpunda.base import NotImplementedForGpunda
    raise NotImplementedForGpunda("_new_from_shared_mem is not supported: gpunda arrays "
                                  "have no C-API handles to another process's storage (its "
                                  "DataLoader workers share batches their own way)")
