"""NumPy-mode Symbols (MXNet's ``mx.sym.np._Symbol``) and the ``mx.sym.np`` /
``mx.sym.npx`` namespaces.

A hybridized block in NumPy mode traces ``hybrid_forward`` with ``_Symbol`` inputs:
their operators build ``_npi_*`` nodes (NumPy's promotion and broadcasting), indexing
builds ``slice``/``_np_squeeze``/``expand_dims`` nodes, and any op whose first input is a
``_Symbol`` returns ``_Symbol`` outputs (NOTE [Output flavour follows the first input] in
numpy/multiarray.py). ``F.np.<f>`` of this namespace is ``mx.np.<f>`` run inside
``symbolic_scope()``, so functions without array inputs (``zeros``) build nodes too.
"""
from __future__ import annotations

import numbers
import sys
import types

import numpy as _onp

from gpunda.base import GpundaError
from gpunda.numpy.multiarray import _method, add_np_operators
from gpunda.symbol.symbol import Symbol
from gpunda.symbol import creation as _creation

__all__ = ["_Symbol", "make_np_node", "np_name_hint", "np_outputs", "npx", "load", "load_json"]


def _as_np_sym(s):
    if type(s) is Symbol:
        s.__class__ = _Symbol
    return s


def np_outputs(sym):
    """A new node's Symbol as an op call returns it: one ``_Symbol``, or a list of them
    for several visible outputs (as ``invoke`` returns a list)."""
    if len(sym._outputs) == 1:
        return _as_np_sym(sym)
    return [_Symbol([e]) for e in sym._outputs]


def np_name_hint(opname):
    """The automatic node name MXNet gives an np op's node: its function's name, the op's
    without the ``_np_``/``_npi_``/``_npx_`` prefix (``_npi_exp`` makes ``exp0``); None
    for other ops, which keep their own name."""
    for prefix in ("_np_", "_npi_", "_npx_"):
        if opname.startswith(prefix):
            return opname[len(prefix):].lower()
    return None


def make_np_node(opname, inputs, params):
    """The node of registered op ``opname`` over Symbols ``inputs`` (``np_outputs``)."""
    fn = _creation.lookup(opname, hint=np_name_hint(opname))
    return np_outputs(fn(*inputs, **{k: v for k, v in params.items()
                                     if v is not None or k == "M"}))


def _node(opname, inputs, **params):
    return make_np_node(opname, inputs, params)


class _Symbol(Symbol):
    """A Symbol with NumPy semantics (``mx.sym.np._Symbol``)."""

    __slots__ = ()
    __hash__ = Symbol.__hash__

    def __neg__(self):
        return _node("_npi_negative", (self,))

    def __abs__(self):
        return _node("_npi_abs", (self,))

    def __invert__(self):
        return _node("_npi_bitwise_not", (self,))

    def __matmul__(self, other):
        from gpunda import numpy as _np_mod
        return _np_mod.matmul(self, other)

    def __iter__(self):
        return (_Symbol([e]) for e in self._outputs)

    def as_nd_ndarray(self):
        """The same graph as a classic Symbol."""
        return Symbol(self._outputs)

    def as_np_ndarray(self):
        return self

    @property
    def T(self):
        return self.transpose()

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        from gpunda.numpy._dtypes import resolve_dtype
        dt = resolve_dtype(dtype, "astype")
        return _node("Cast", (self,), dtype=dt)

    def reshape(self, *args, **kwargs):
        order = kwargs.pop("order", "C")
        if order != "C":
            raise NotImplementedError(f"reshape: order={order!r} is not supported")
        if "newshape" in kwargs:
            args = (kwargs.pop("newshape"),)
        if len(args) == 1 and isinstance(args[0], (tuple, list)):
            args = tuple(args[0])
        return _node("_np_reshape", (self,), newshape=tuple(int(a) for a in args))

    def flatten(self, order="C"):
        """The elements as one axis (NumPy's flatten: a reshape to ``(-1,)``)."""
        if order != "C":
            raise NotImplementedError(f"flatten: order={order!r} is not supported")
        return _node("_np_reshape", (self,), newshape=(-1,))

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _node("_np_transpose", (self,), axes=axes if axes else None)

    def __getitem__(self, key):
        n = len(self._outputs)
        if n > 1:
            if isinstance(key, numbers.Integral):
                if not -n <= key < n:
                    raise IndexError("list index out of range")
                return _Symbol([self._outputs[key]])
            if isinstance(key, slice):
                return _Symbol(self._outputs[key])
            raise TypeError(f"indices of a symbol group must be integers or slices, not "
                            f"{type(key).__name__}")
        return _basic_index(self, key)


# NumPy's operators as graph nodes; MXNet's np Symbol has no shifts
add_np_operators(_Symbol, Symbol, skip=("__lshift__", "__rshift__"))


def _basic_index(s, key):
    """``s[key]`` for ints, slices and ``None`` (basic indexing, as MXNet's _Symbol)."""
    if not isinstance(key, tuple):
        key = (key,)
    if not key:
        return s
    begin, end, step, drop, new = [], [], [], [], []
    axis = 0
    for k in key:
        if k is None:
            new.append(axis + len(new))
            continue
        if isinstance(k, slice):
            if k.step == 0:
                raise ValueError("slice step cannot be zero")
            begin.append(k.start)
            end.append(k.stop)
            step.append(k.step)
        elif isinstance(k, (numbers.Integral, _onp.integer)) and not isinstance(k, bool):
            k = int(k)
            begin.append(k)
            end.append(None if k == -1 else k + 1)
            step.append(1)
            drop.append(axis)
        else:
            raise IndexError(f"Symbol indexing supports only integers, slices and None, got "
                             f"{k!r}")
        axis += 1
    out = _node("slice", (s,), begin=tuple(begin), end=tuple(end), step=tuple(step))
    if drop:
        out = _node("_np_squeeze", (out,), axis=tuple(drop))
    for a in new:
        out = _node("expand_dims", (out,), axis=a - sum(1 for d in drop if d < a))
    return out


for _name in ("sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "all",
              "any", "cumsum", "clip", "dot", "repeat", "take", "sort", "argsort", "round",
              "swapaxes", "tile", "flip", "squeeze", "split", "exp", "log", "sqrt", "square",
              "abs", "sign", "sin", "cos", "tanh", "floor", "ceil"):
    if _name not in _Symbol.__dict__:
        setattr(_Symbol, _name, _method(_name, legacy_cls=None))
del _name


def load(fname):
    """The Symbol saved in JSON file ``fname``, as an np Symbol (``mx.np_symbol.load``)."""
    return _creation.load(fname).as_np_ndarray()


def load_json(json_str):
    """The Symbol of JSON string ``json_str``, as an np Symbol."""
    return _creation.load_json(json_str).as_np_ndarray()


def _symbolic_attr(target_name, attr, cache):
    """``mx.np``/``mx.npx`` attribute ``attr`` made symbolic: a function runs in
    ``symbolic_scope()``, a submodule becomes a namespace of such functions."""
    if attr.startswith("__"):
        raise AttributeError(attr)
    import importlib
    obj = getattr(importlib.import_module(target_name), attr)
    if isinstance(obj, types.ModuleType):
        r = _SymbolicNamespace(f"{target_name}.{attr} (symbolic)", obj.__name__)
    elif callable(obj) and not isinstance(obj, type):
        from gpunda.numpy.multiarray import symbolic_scope

        def r(*args, **kwargs):
            with symbolic_scope():
                return obj(*args, **kwargs)
        r.__name__ = r.__qualname__ = attr
        r.__doc__ = getattr(obj, "__doc__", None)
    else:
        return obj
    cache[attr] = r
    return r


class _SymbolicNamespace(types.ModuleType):
    """``mx.sym.npx`` and ``mx.sym.np.<submodule>``: the functions of ``target``, each run
    in ``symbolic_scope()`` so that calls without array inputs build graph nodes."""

    def __init__(self, name, target):
        super().__init__(name, f"Symbol versions of {target}'s functions.")
        self._target = target

    def __getattr__(self, attr):
        return _symbolic_attr(self._target, attr, self.__dict__)


def _ufunc_helper(lhs, rhs, fn_array, fn_scalar, lfn_scalar, rfn_scalar=None, out=None):
    """MXNet's dispatch of a binary ``mx.sym.np`` function: ``fn_scalar(lhs, rhs, out=)``
    for two numbers, ``fn_array(lhs, rhs, out=)`` for two Symbols, and ``lfn_scalar(sym,
    scalar=float(number), is_int=<number is an int>, out=)`` for a Symbol and a number
    (``rfn_scalar`` instead when the number is on the left and one is given)."""
    from gpunda.base import GpundaTypeError, integer_types, numeric_types
    if isinstance(lhs, numeric_types):
        if isinstance(rhs, numeric_types):
            return fn_scalar(lhs, rhs, out=out)
        fn = lfn_scalar if rfn_scalar is None else rfn_scalar
        return fn(rhs, scalar=float(lhs), is_int=isinstance(rhs, integer_types), out=out)
    if isinstance(rhs, numeric_types):
        return lfn_scalar(lhs, scalar=float(rhs), is_int=isinstance(rhs, integer_types),
                          out=out)
    if isinstance(rhs, Symbol):
        return fn_array(lhs, rhs, out=out)
    raise GpundaTypeError(f"type {type(rhs)} not supported")


def _unary_func_helper(x, fn_array, fn_scalar, out=None, **kwargs):
    """MXNet's dispatch of a unary ``mx.sym.np`` function: ``fn_scalar(x, **kwargs)`` for
    a number, ``fn_array(x, out=, **kwargs)`` for a NumPy-mode Symbol."""
    from gpunda.base import GpundaTypeError, numeric_types
    if isinstance(x, numeric_types):
        return fn_scalar(x, **kwargs)
    if isinstance(x, _Symbol):
        return fn_array(x, out=out, **kwargs)
    raise GpundaTypeError(f"type {type(x)} not supported")


_made_np = {}    # not this module's globals: mx.sym.np.sum there would shadow builtins.sum


def __getattr__(attr):
    # this module is ``mx.sym.np``: mx.np's functions as graph builders
    fn = _made_np.get(attr)
    return fn if fn is not None else _symbolic_attr("gpunda.numpy", attr, _made_np)


npx = _SymbolicNamespace("gpunda.symbol.numpy_extension", "gpunda.numpy_extension")
_symbol = sys.modules[__name__]     # MXNet's mx.sym.np._symbol (mx.np_symbol) is this module
_creation._np_symbol_cls = _Symbol
_ = GpundaError

from gpunda.symbol.numpy import _op, _register  # noqa: E402,F401  (MXNet's submodules of this package)
