"""``mx.np.ndarray``: the NumPy-semantics array class, and the helpers every ``mx.np``
function uses to call registered ops.

NOTE [One array, two front ends]: ``ndarray`` subclasses ``NDArray`` and adds no slots,
so an op's output (an ``NDArray`` made by ``imperative.invoke``) becomes an ``ndarray``
by assigning ``__class__`` -- no copy, and the object keeps its autograd entry
(``_ag``), its version counter and its identity. ``as_nd_ndarray()`` /
``as_np_ndarray()`` make a second object over the same buffer. Every ``mx.np``
function is a thin wrapper: it calls a registered op (``_np_*``/``_npi_*`` OpDefs where
NumPy's semantics differ from MXNet's ``nd`` op) through ``invoke_np`` and so runs on the
same registry, Symbol, CachedOp and CuPy paths as ``nd``.

NOTE [Output flavour follows the first input]: any registered op called with an
``ndarray`` as its first input returns ``ndarray`` outputs (``imperative.invoke_parsed``
treats ``ndarray`` inputs as dense NDArrays and wraps the outputs with ``_new_np``; the
test sits in the branch it already takes for non-``NDArray`` inputs, so the ``nd`` hot
path pays nothing). A Symbol op whose first
input is an np Symbol (``symbol.numpy._Symbol``) gives an np Symbol. That is why Gluon
layers written with ``F.FullyConnected`` also work in NumPy mode. (MXNet refuses legacy
ops on np arrays with a TypeError; gpunda is permissive here.)

NOTE [Writing an mx.np function once for ndarray and Symbol]: call
``invoke_np(opname, inputs, **params)``. It dispatches on the inputs: when any input is
a Symbol, or no input is given and the call comes through ``F.np``/``F.npx`` of the
symbol namespace (``mx.sym.np``, which sets ``symbolic_scope()``), it builds the op's
node and returns an np Symbol (``_Symbol``); otherwise it invokes the op and returns
``ndarray`` outputs. Python-side logic that needs shapes must therefore go through ops
(or check ``is_symbolic(inputs)`` and build the graph another way).
"""
from __future__ import annotations

import threading

import numpy as _onp

from gpunda._engine import imperative as _imp
from gpunda._engine import autograd as _ag
from gpunda.base import GpundaError, GpundaValueError
from gpunda.ndarray.ndarray import NDArray
from gpunda.ndarray import ndarray as _nd_mod
from gpunda.ops.registry import get_op
from gpunda.numpy import _fast

__all__ = ["ndarray", "as_np", "invoke_np", "is_symbolic", "symbolic_scope"]

_SCALARS = (int, float, bool, _onp.generic)
_alloc_np = NDArray.__new__
_Symbol = None      # symbol.numpy._Symbol, bound on first symbolic call


class _SymbolicState(threading.local):
    on = False


_symbolic = _SymbolicState()


class symbolic_scope:  # noqa: N801 (a context manager used like a function)
    """While active, ``invoke_np`` calls without array inputs build Symbols (``F.np`` of
    ``mx.sym``)."""

    def __enter__(self):
        self._prev = _symbolic.on
        _symbolic.on = True
        return self

    def __exit__(self, *exc):
        _symbolic.on = self._prev
        return False


def _symbol_cls():
    from gpunda.symbol.symbol import Symbol
    return Symbol


def is_symbolic(inputs):
    """Whether ``invoke_np`` would build a Symbol for these inputs."""
    for x in inputs:
        if isinstance(x, NDArray):
            return False
        if x is not None and isinstance(x, _symbol_cls()):
            return True
    return _symbolic.on


def invoke_np(opname, inputs, out=None, **params):
    """Call registered op ``opname`` on ``inputs``: ``ndarray`` outputs for arrays, an np
    Symbol when building a graph (see NOTE [Writing an mx.np function once ...])."""
    inputs = tuple(inputs)
    if inputs and type(inputs[0]) is ndarray:
        return _imp.invoke(opname, inputs, out=out, **params)
    if is_symbolic(inputs):
        from gpunda.symbol.numpy import make_np_node
        return make_np_node(opname, inputs, params)
    return as_np(_imp.invoke(opname, inputs, out=out, **params))


def as_np(out):
    """Turn op outputs (an NDArray or a list of them) into ``ndarray`` in place."""
    if isinstance(out, NDArray):
        if out.stype == "default":
            out.__class__ = ndarray
        return out
    for o in out:
        if isinstance(o, NDArray) and o.stype == "default":
            o.__class__ = ndarray
    return out


def _view_as(x, cls):
    """A second object over ``x``'s buffer, with its autograd entry and version root."""
    y = _nd_mod._alloc(cls)
    y._data, y._ctx = x._data, x._ctx
    if x._ag is not None:
        y._ag = x._ag
    y._base = x._base if x._base is not None else x
    return y


def _np_to_nd(x):
    return _view_as(x, NDArray)


def _nd_as_np_ndarray(self):
    """``NDArray.as_np_ndarray()``: the same buffer as an ``mx.np.ndarray``."""
    if self.stype != "default":
        raise ValueError("as_np_ndarray: only dense NDArrays (stype 'default') can become "
                         f"mx.np.ndarray, this one has stype {self.stype!r}")
    return _view_as(self, ndarray)


def _new_np(data, ctx):
    """Wrap backend array ``data`` on ``ctx`` as an ``ndarray`` (no copy, no checks)."""
    a = _alloc_np(ndarray)
    a._data = data
    a._ctx = ctx
    return a


def _wrap(data, ctx, base=None):
    a = _nd_mod._alloc(ndarray)
    a._data, a._ctx = data, ctx
    if base is not None:
        a._base = base
    return a


# -- the class -------------------------------------------------------------------------

def _binary(aop, sop, rsop=None, operand=NDArray):
    """(forward, reflected) operator methods over op ``aop`` and scalar op ``sop`` (the
    forward one becomes the fallback of a fast closure, NOTE [np fast paths]).

    ``operand``: the array class the other side may be -- ``NDArray`` for ``ndarray``
    (which also takes host arrays and lists), ``Symbol`` for the np Symbol (which does not:
    a graph holds no host data, and its scalar ops make graph nodes)."""
    host = (_onp.ndarray, list, tuple) if operand is NDArray else ()
    if operand is NDArray:
        sop_def, rsop_def = get_op(sop), get_op(rsop or sop)
        scalar_fwd = lambda self, s: _scalar_call(sop_def, self, s)     # noqa: E731
        scalar_rev = lambda self, s: _scalar_call(rsop_def, self, s)    # noqa: E731
    else:
        scalar_fwd = lambda self, s: invoke_np(sop, (self,), scalar=s,  # noqa: E731
                                               is_int=_is_int(s))
        scalar_rev = lambda self, s: invoke_np(rsop or sop, (self,), scalar=s,  # noqa: E731
                                               is_int=_is_int(s))

    def fwd(self, other):
        if isinstance(other, _SCALARS):
            return scalar_fwd(self, other)
        if isinstance(other, operand):
            return invoke_np(aop, (self, other))
        if isinstance(other, host):
            return invoke_np(aop, (self, _from_host(other, self)))
        return NotImplemented

    def rev(self, other):
        if isinstance(other, _SCALARS):
            return scalar_rev(self, other)
        if isinstance(other, host):
            return invoke_np(aop, (_from_host(other, self), self))
        return NotImplemented
    return fwd, rev


# (forward, reflected) dunder names -> (array op, scalar op, reflected scalar op): the
# operators mx.np.ndarray and the np Symbol share (comparisons have no reflected form)
_NP_OPERATORS = (
    (("__add__", "__radd__"), "_npi_add", "_npi_add_scalar", None),
    (("__sub__", "__rsub__"), "_npi_subtract", "_npi_subtract_scalar", "_npi_rsubtract_scalar"),
    (("__mul__", "__rmul__"), "_npi_multiply", "_npi_multiply_scalar", None),
    (("__truediv__", "__rtruediv__"), "_npi_true_divide", "_npi_true_divide_scalar",
     "_npi_rtrue_divide_scalar"),
    (("__floordiv__", "__rfloordiv__"), "_npi_floor_divide", "_npi_floor_divide_scalar",
     "_npi_rfloor_divide_scalar"),
    (("__mod__", "__rmod__"), "_npi_mod", "_npi_mod_scalar", "_npi_rmod_scalar"),
    (("__pow__", "__rpow__"), "_npi_power", "_npi_power_scalar", "_npi_rpower_scalar"),
    (("__and__", "__rand__"), "_npi_bitwise_and", "_npi_bitwise_and_scalar", None),
    (("__or__", "__ror__"), "_npi_bitwise_or", "_npi_bitwise_or_scalar", None),
    (("__xor__", "__rxor__"), "_npi_bitwise_xor", "_npi_bitwise_xor_scalar", None),
    (("__lshift__", "__rlshift__"), "_npi_left_shift", "_npi_left_shift_scalar",
     "_npi_rleft_shift_scalar"),
    (("__rshift__", "__rrshift__"), "_npi_right_shift", "_npi_right_shift_scalar",
     "_npi_rright_shift_scalar"),
    (("__eq__",), "_npi_equal", "_npi_equal_scalar", None),
    (("__ne__",), "_npi_not_equal", "_npi_not_equal_scalar", None),
    (("__gt__",), "_npi_greater", "_npi_greater_scalar", None),
    (("__ge__",), "_npi_greater_equal", "_npi_greater_equal_scalar", None),
    (("__lt__",), "_npi_less", "_npi_less_scalar", None),
    (("__le__",), "_npi_less_equal", "_npi_less_equal_scalar", None),
)


def add_np_operators(cls, operand, skip=()):
    """Give ``cls`` NumPy's binary operators over the _npi_* ops (``_binary``; ``operand``:
    the class the other side may be), less the forward names in ``skip``."""
    for names, aop, sop, rsop in _NP_OPERATORS:
        if names[0] not in skip:
            for name, method in zip(names, _binary(aop, sop, rsop, operand)):
                setattr(cls, name, method)
    cls.__div__, cls.__rdiv__ = cls.__truediv__, cls.__rtruediv__


_is_int = _fast.is_int_scalar
_scalar_call = _fast.scalar_call


def _from_host(value, like):
    from gpunda.numpy.creation import array
    return array(value, ctx=like._ctx)


def _inplace(aop, sop):
    def f(self, other):
        _ag.check_writable(self, aop)
        if isinstance(other, NDArray):
            return invoke_np(aop, (self, other), out=self)
        if isinstance(other, _SCALARS):
            return invoke_np(sop, (self,), out=self, scalar=other, is_int=_is_int(other))
        if isinstance(other, (_onp.ndarray, list, tuple)):
            return invoke_np(aop, (self, _from_host(other, self)), out=self)
        return NotImplemented
    return f


def _method(name, legacy_cls=NDArray):
    """``a.name(...)`` = ``mx.np.name(a, ...)`` (the function lives in gpunda.numpy and
    is looked up at the first call, once gpunda.numpy is complete); a name mx.np lacks
    falls back to ``legacy_cls``'s method when it has one."""
    legacy = getattr(legacy_cls, name, None)
    found = []

    def m(self, *args, **kwargs):
        if found:
            return found[0](self, *args, **kwargs)
        from gpunda import numpy as _np_mod
        fn = getattr(_np_mod, name, None)
        if fn is None and legacy is not None:   # not in mx.np yet: the nd op's method
            return legacy(self, *args, **kwargs)
        if fn is None:
            getattr(_np_mod, name)              # raises the AttributeError naming it
        found.append(fn)
        return fn(self, *args, **kwargs)
    m.__name__ = name
    m.__doc__ = f"``mx.np.{name}(self, ...)``."
    return m


class ndarray(NDArray):  # noqa: N801 (MXNet's class name)
    """An n-dimensional array with NumPy semantics (``mx.np.ndarray``).

    Zero-dimensional arrays, NumPy broadcasting and type promotion (with MXNet's
    exceptions: float32 is the default float, ``int / int`` gives float32); indexing as
    NumPy's (basic slices are views; integer, list and boolean-mask keys copy).
    """

    __slots__ = ()
    __hash__ = NDArray.__hash__

    # -- conversion between the front ends -----------------------------------------
    def as_nd_ndarray(self):
        """The same buffer as a classic ``NDArray`` (shares memory and autograd entry)."""
        return _view_as(self, NDArray)

    def as_np_ndarray(self):
        """This array (already an ``mx.np.ndarray``)."""
        return self

    # -- NumPy's printing ------------------------------------------------------------
    def __repr__(self):
        s = repr(self.asnumpy())
        dt = self.dtype
        if "dtype=" in s:
            if dt == _onp.float32:
                s = s[:s.rindex(",")] + ")"
        elif dt not in (_onp.float32, _onp.bool_):
            s = s[:-1] + f", dtype={_onp.dtype(dt).name})"
        if self._ctx.device_type != "cpu":
            s = s[:-1] + f", ctx={self._ctx})"
        return s

    def __str__(self):
        s = str(self.asnumpy())
        if self._ctx.device_type == "cpu" or self.ndim == 0:
            return s
        return f"{s} @{self._ctx}"

    def __format__(self, fmt):
        if self.ndim == 0:
            return self.item().__format__(fmt)
        if not fmt:
            return self.__str__().__format__(fmt)
        raise TypeError("Cannot format mxnet.numpy.ndarray with format_spec")

    def __bool__(self):
        if self.size == 1:
            return bool(self.item())
        if self.size == 0:
            raise ValueError("The truth value of an empty array is ambiguous.")
        raise ValueError("The truth value of an ndarray with more than one element is "
                         "ambiguous. Use a.any() or a.all()")

    __nonzero__ = __bool__

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    def __float__(self):
        if self.size != 1:
            raise TypeError("only size-1 arrays can be converted to Python scalars")
        return float(self.item())

    def __int__(self):
        if self.size != 1:
            raise TypeError("only size-1 arrays can be converted to Python scalars")
        return int(self.item())

    def __index__(self):
        if self.size == 1 and _onp.dtype(self.dtype).kind in "iu":
            return int(self.item())
        raise TypeError("only integer scalar arrays can be converted to a scalar index")

    def __round__(self, n=0):
        from gpunda import numpy as _np_mod
        return _np_mod.round(self, decimals=n)

    def item(self, *args):
        """A Python scalar: the single element, or the one at ``args``."""
        return self.asnumpy().item(*args)

    def tolist(self):
        return self.asnumpy().tolist()

    def __reduce__(self):
        return (_unpickle_np, (self.asnumpy(), self._ctx.device_type, self._ctx.device_id))

    # -- arithmetic (NumPy's promotion: _npi_* ops): add_np_operators below -----------
    __iadd__ = _inplace("_npi_add", "_npi_add_scalar")
    __isub__ = _inplace("_npi_subtract", "_npi_subtract_scalar")
    __imul__ = _inplace("_npi_multiply", "_npi_multiply_scalar")
    __itruediv__ = __idiv__ = _inplace("_npi_true_divide", "_npi_true_divide_scalar")
    __imod__ = _inplace("_npi_mod", "_npi_mod_scalar")
    __iand__ = _inplace("_npi_bitwise_and", "_npi_bitwise_and_scalar")
    __ior__ = _inplace("_npi_bitwise_or", "_npi_bitwise_or_scalar")
    __ixor__ = _inplace("_npi_bitwise_xor", "_npi_bitwise_xor_scalar")

    def __neg__(self):
        return invoke_np("_npi_negative", (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return invoke_np("_npi_abs", (self,))

    def __invert__(self):
        return invoke_np("_npi_bitwise_not", (self,))

    def __matmul__(self, other):
        from gpunda import numpy as _np_mod
        return _np_mod.matmul(self, other)

    def __rmatmul__(self, other):
        from gpunda import numpy as _np_mod
        return _np_mod.matmul(other, self)

    def __imatmul__(self, other):
        from gpunda import numpy as _np_mod
        return _np_mod.matmul(self, other, out=self)

    # -- indexing ----------------------------------------------------------------------
    def __getitem__(self, key):
        from gpunda.numpy._indexing import getitem
        return getitem(self, key)

    def __setitem__(self, key, value):
        from gpunda.numpy._indexing import setitem
        setitem(self, key, value)

    # -- NumPy's methods ----------------------------------------------------------------
    @property
    def dtype(self):
        """The element type as a NumPy dtype (``dtype('float32')``), as NumPy's and
        MXNet's np arrays give it (legacy NDArrays give the type, ``numpy.float32``)."""
        return self._data.dtype

    @property
    def T(self):
        return self.transpose()

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """This array as ``dtype``; the array itself when ``copy=False`` and the dtype
        is already ``dtype``."""
        if order != "K":
            raise NotImplementedError(f"astype: order={order!r} is not supported")
        if casting != "unsafe":
            raise NotImplementedError(f"astype: casting={casting!r} is not supported")
        from gpunda.numpy._dtypes import resolve_dtype
        dt = resolve_dtype(dtype, "astype")
        if not copy and self._data.dtype == dt:
            return self
        return invoke_np("Cast", (self,), dtype=dt)

    def copy(self, order="C"):
        """A copy on the same context (only order 'C')."""
        if order != "C":
            raise NotImplementedError(f"ndarray.copy: order={order!r} is not supported, "
                                      f"only 'C'")
        return invoke_np("_copy", (self,))

    def copyto(self, other):
        r = super().copyto(other)
        if type(r) is NDArray and type(other) is not NDArray:
            r.__class__ = ndarray
        return r

    def as_in_context(self, context):
        r = super().as_in_context(context)
        return r if type(r) is ndarray else as_np(r)

    as_in_ctx = as_in_context

    def to_device(self, device):
        return self.as_in_context(device)

    def detach(self):
        """The same values, cut from the autograd graph."""
        return _wrap(self._data, self._ctx, self._base if self._base is not None else self)

    def attach_grad(self, grad_req="write", stype=None):
        """Allocate an ``ndarray`` gradient buffer and mark this array as a variable."""
        if stype is not None and stype != "default":
            raise ValueError("attach_grad: mx.np.ndarray gradients are dense (stype "
                             f"'default'), got stype={stype!r}")
        g = _wrap(self._ctx.backend.xp.zeros(self.shape, self._data.dtype)
                  if self._ctx._xp is not _onp else _onp.zeros(self.shape, self._data.dtype),
                  self._ctx)
        _ag.mark_variables([self], [g], grad_req)

    @property
    def grad(self):
        g = NDArray.grad.fget(self)
        if g is not None and type(g) is NDArray:
            g.__class__ = ndarray
        return g

    def reshape(self, *args, **kwargs):
        """NumPy's reshape (-1 infers one axis; ``order='C'`` only)."""
        order = kwargs.pop("order", "C")
        if order != "C":
            raise NotImplementedError(f"reshape: order={order!r} is not supported")
        if "newshape" in kwargs:
            args = (kwargs.pop("newshape"),)
        if "shape" in kwargs:
            args = (kwargs.pop("shape"),)
        if kwargs:
            raise TypeError(f"reshape: unexpected keyword arguments {sorted(kwargs)}")
        if len(args) == 1 and isinstance(args[0], (tuple, list)):
            args = tuple(args[0])
        shape = tuple(int(s) for s in args)
        if any(s < -1 for s in shape):
            raise ValueError(f"reshape: shape {shape} holds a negative size other than -1; "
                             f"npx.reshape takes MXNet's special codes")
        return invoke_np("_np_reshape", (self,), newshape=shape)

    def reshape_view(self, *shape, **kwargs):
        return _nd_mod.NDArray.reshape(self.as_nd_ndarray(), *shape, **kwargs).as_np_ndarray()

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if len(axes) == 1 and axes[0] is None:
            axes = ()
        from gpunda import numpy as _np_mod
        return _np_mod.transpose(self, axes if axes else None)

    def broadcast_to(self, shape):
        from gpunda import numpy as _np_mod
        return _np_mod.broadcast_to(self, shape)

    def flatten(self, order="C"):
        if order != "C":
            raise NotImplementedError(f"flatten: order={order!r} is not supported")
        return self.reshape(-1)

    def squeeze(self, axis=None):
        from gpunda import numpy as _np_mod
        return _np_mod.squeeze(self, axis=axis)

    def split(self, *args, **kwargs):
        from gpunda import numpy as _np_mod
        return _np_mod.split(self, *args, **kwargs)

    def nonzero(self):
        from gpunda import numpy as _np_mod
        return _np_mod.nonzero(self)

    def clip(self, min=None, max=None, out=None):  # noqa: A002 (NumPy's method signature)
        """Values limited to ``[min, max]`` (``mx.np.clip(self, min, max)``)."""
        from gpunda import numpy as _np_mod
        return _np_mod.clip(self, min, max, out=out)

    def zeros_like(self, *args, **kwargs):
        from gpunda.numpy.creation import zeros_like
        return zeros_like(self, *args, **kwargs)

    def ones_like(self, *args, **kwargs):
        from gpunda.numpy.creation import ones_like
        return ones_like(self, *args, **kwargs)

    def tostype(self, stype):
        if stype != "default":
            raise TypeError("tostype: mx.np.ndarray only has the 'default' storage type")
        return self

    def __array_function__(self, func, types, args, kwargs):
        from gpunda.numpy._interop import array_function
        return array_function(func, types, args, kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from gpunda.numpy._interop import array_ufunc
        return array_ufunc(ufunc, method, inputs, kwargs)


# methods that are ``mx.np`` functions of the same name (h-npfuncs' modules)
for _name in ("sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "all",
              "any", "cumsum", "dot", "repeat", "take", "sort", "argsort", "round",
              "swapaxes", "tile", "diag", "flip", "nansum", "nanprod", "norm", "abs", "exp",
              "expm1", "log", "log10", "log1p", "log2", "sqrt", "cbrt", "square", "sign",
              "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
              "arcsinh", "arccosh", "arctanh", "degrees", "radians", "floor", "ceil", "trunc",
              "rint", "fix", "reciprocal"):
    setattr(ndarray, _name, _method(_name))
del _name
add_np_operators(ndarray, NDArray)


def _unpickle_np(data, dev_type, dev_id):
    from gpunda.context import Context, cpu
    from gpunda.numpy.creation import array
    try:
        ctx = Context(dev_type, dev_id)
        ctx.backend
    except GpundaError:
        ctx = cpu()
    return array(data, ctx=ctx, dtype=data.dtype)


def _install():
    """Hook ``ndarray`` into the layers below (called once by gpunda.numpy)."""
    _imp._np_cls = ndarray
    _imp._np_new = _new_np
    _fast.install(ndarray)



# MXNet's multiarray module defines mx.np's array functions; here they live in gpunda.numpy
# (which imports this module), so they are served from there on first access
_MXNET_FUNCTIONS = (
    "abs", "absolute", "add", "append", "arange", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "argmax", "argmin", "argsort", "around", "array",
    "array_split", "average", "bincount", "bitwise_and", "bitwise_not", "bitwise_or",
    "bitwise_xor", "blackman", "broadcast_to", "cbrt", "ceil", "clip", "column_stack",
    "concatenate", "copysign", "cos", "cosh", "deg2rad", "degrees", "delete",
    "diag_indices_from", "diff", "divide", "dsplit", "dstack", "ediff1d", "einsum", "empty",
    "empty_like", "equal", "exp", "expand_dims", "expm1", "eye", "fabs", "fix", "flip", "fliplr",
    "flipud", "floor", "full", "full_like", "greater", "greater_equal", "hamming", "hanning",
    "histogram", "hsplit", "hstack", "hypot", "identity", "indices", "inner", "insert", "invert",
    "isfinite", "isinf", "isnan", "isneginf", "isposinf", "lcm", "ldexp", "less", "less_equal",
    "linspace", "log", "log10", "log1p", "log2", "logical_not", "logspace", "matmul", "maximum",
    "may_share_memory", "mean", "minimum", "mod", "multiply", "nan_to_num", "negative",
    "nonzero", "not_equal", "ones", "ones_like", "outer", "pad", "percentile", "polyval",
    "power", "quantile", "rad2deg", "radians", "ravel", "reciprocal", "remainder", "resize",
    "rint", "rot90", "round", "round_", "row_stack", "shape", "shares_memory", "sign", "sin",
    "sinh", "sort", "split", "sqrt", "square", "stack", "std", "subtract", "swapaxes", "take",
    "tan", "tanh", "tensordot", "tile", "tril", "true_divide", "trunc", "unique",
    "unravel_index", "var", "vdot", "vsplit", "vstack", "where", "zeros", "zeros_like",
)

# -- MXNet's private helpers of mxnet.numpy.multiarray ------------------------------------
_new_alloc_handle = _nd_mod._new_alloc_handle     # the same C-API stand-in handle


def _np_ndarray_cls(handle, writable=True, stype=0):
    """The array ``handle`` names as an ``mx.np.ndarray``; only dense storage (stype 0, or
    -1: read it from the array) is accepted."""
    if stype == -1:
        stype = _nd_mod._storage_type(handle)
    if stype != 0:
        raise GpundaValueError(f"_np_ndarray_cls currently only supports default storage "
                               f"type, while received stype = {stype}")
    return ndarray(handle, writable=writable)


def _reshape_view(a, *shape):
    """A view of ``a`` (same memory) with a new shape, as an ``mx.np.ndarray``; ``shape``
    is a tuple or ints and may hold MXNet's reshape codes (-1 infers an axis)."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    base = a.as_nd_ndarray() if isinstance(a, ndarray) else a
    return _nd_mod.NDArray.reshape(base, shape).as_np_ndarray()


def _as_mx_np_array(object, ctx=None):  # noqa: A002 (MXNet's parameter name)
    """``object`` for ``mx.np`` code: a NumPy array becomes an ``mx.np.ndarray`` (sharing
    the memory of a C-contiguous one, on ``ctx`` when given), numbers stay, lists and
    tuples are converted item by item; anything else is a TypeError."""
    from gpunda.base import GpundaTypeError, numeric_types
    if isinstance(object, _onp.ndarray):
        if not object.flags["C_CONTIGUOUS"]:
            object = _onp.ascontiguousarray(object, dtype=object.dtype)
        ret = _nd_mod.from_numpy(object).as_np_ndarray()
        return ret if ctx is None else ret.as_in_ctx(ctx)
    if isinstance(object, numeric_types):
        return object
    if isinstance(object, (list, tuple)):
        return object.__class__([_as_mx_np_array(x) for x in object])
    raise GpundaTypeError(f"Does not support converting {type(object)} to mx.np.ndarray.")


def _as_onp_array(object):  # noqa: A002 (MXNet's parameter name)
    """``(value, ctx)``: ``object`` with every ``mx.np.ndarray`` in it (also inside lists
    and tuples) copied to NumPy, and the context they were on (None when none was; a
    ValueError when they were on different devices)."""
    if isinstance(object, ndarray):
        return object.asnumpy(), object.ctx
    if isinstance(object, (list, tuple)):
        items, ctx = [], None
        for x in object:
            v, c = _as_onp_array(x)
            items.append(v)
            if ctx is None:
                ctx = c
            elif c is not None and c != ctx:
                raise GpundaValueError(f"Ambiguous to set the context for the output ndarray "
                                       f"since input ndarrays are allocated on different "
                                       f"devices: {ctx} and {c}")
        return object.__class__(items), ctx
    return object, None


from gpunda._core.reexports import forwarding_getattr as _forwarding_getattr  # noqa: E402

__getattr__ = _forwarding_getattr(__name__, _MXNET_FUNCTIONS, "gpunda.numpy")
