"""The short paths of ``mx.np``'s most frequent calls: NumPy-mode code runs ``a + b``,
``a * 2``, ``np.exp(a)`` and ``np.sum(a)`` on small arrays all the time, so these cost
what their ``nd`` counterparts cost.

NOTE [np fast paths]: the operators of ``ndarray`` and the one-array ``mx.np``
functions are ``imperative.binary_fn`` / ``unary_fn`` closures made for the ``ndarray``
class: two (or one) dense host arrays with default params run the op's compute inline;
anything else (params, ``out=``, scalars, lists, Symbols, GPU) goes to the function
written for the general case, which reaches the same op through ``invoke_parsed``. The
compute bodies apply MXNet's np dtype rules themselves, so both paths give the same
dtypes. Scalar operands (``a * 2``) go through ``scalar_call``, which parses the
``scalar``/``is_int`` params once per scalar value and type.
"""
from __future__ import annotations

import numpy as _onp

from gpunda._engine import imperative as _imp
from gpunda import autograd as _ag
from gpunda.ops.registry import get_op

__all__ = []

_cls = None     # mx.np.ndarray, set by install()
_alloc = object.__new__
_is_rec = _ag._is_rec
_record1 = _ag._record1


def is_int_scalar(s):
    """Whether scalar ``s`` counts as an integer for the ``is_int`` param (bools do)."""
    return isinstance(s, (int, _onp.integer, _onp.bool_))


def scalar_call(op, x, s):
    """``op(x, scalar=s, is_int=...)`` for ``ndarray`` ``x``; params cached per (value,
    type): 1, 1.0 and True are equal keys of a dict but parse differently."""
    cache = op._scalar_cache
    key = (s, type(s))
    p = cache.get(key)
    if p is None:
        p = op.parse_params({"scalar": s, "is_int": is_int_scalar(s)})
        if len(cache) < 1024:
            cache[key] = p
    ctx = x._ctx
    if type(x) is _cls and ctx._xp is _onp:
        try:
            r = op.compute(_onp, p, x._data)
        except Exception:
            pass    # invoke_parsed raises the proper error
        else:
            o = _alloc(_cls)
            o._data = r
            o._ctx = ctx
            if x._ag is not None and _is_rec() and not op.nondiff:
                _record1(op, p, x, o)
            return o
    return _imp.invoke_parsed(op, (x,), p)


def unary(opname, general):
    """``mx.np`` function ``general`` of one array, with the call on one dense host
    ``ndarray`` and no other argument inlined (op ``opname``, default params)."""
    _require_installed()
    f = _imp.unary_fn(get_op(opname), general, cls=_cls)
    f.__name__, f.__qualname__, f.__doc__ = general.__name__, general.__qualname__, general.__doc__
    f.__module__, f.__wrapped__ = general.__module__, general
    return f


def binary(opname):
    """``f(x1, x2)`` for two ``ndarray`` s: op ``opname``, inline on dense host arrays."""
    _require_installed()
    return _imp.binary_fn(get_op(opname), cls=_cls)


def _require_installed():
    if _cls is None:    # an import-order bug: the closures would test for NDArray instead
        raise RuntimeError("gpunda.numpy._fast: install(ndarray) must run before the "
                           "mx.np function modules are imported")


# operator -> op of the array-array case (the method written in multiarray handles
# scalars, lists and official NumPy arrays, and stays the fallback)
_OPERATORS = {
    "__add__": "_npi_add", "__sub__": "_npi_subtract", "__mul__": "_npi_multiply",
    "__truediv__": "_npi_true_divide", "__floordiv__": "_npi_floor_divide",
    "__mod__": "_npi_mod", "__pow__": "_npi_power", "__eq__": "_npi_equal",
    "__ne__": "_npi_not_equal", "__gt__": "_npi_greater", "__ge__": "_npi_greater_equal",
    "__lt__": "_npi_less", "__le__": "_npi_less_equal",
}
_UNARY_OPERATORS = {"__neg__": "_npi_negative", "__abs__": "_npi_abs"}


def install(cls):
    """Make ``cls``'s (``mx.np.ndarray``'s) operators fast closures (NOTE [np fast paths])."""
    global _cls
    _cls = cls
    for name, opname in _OPERATORS.items():
        slow = cls.__dict__[name]
        f = _imp.binary_fn(get_op(opname), other=slow, cls=cls)
        f.__name__ = name
        setattr(cls, name, f)
    for name, opname in _UNARY_OPERATORS.items():
        setattr(cls, name, _imp.unary_fn(get_op(opname), cls.__dict__[name], cls=cls))
    cls.__div__ = cls.__truediv__
