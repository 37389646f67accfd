"""Symbol operators: arithmetic and comparisons build graph nodes named as MXNet names
them, and NDArray-only operations raise ``NotImplementedForSymbol``."""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError, NotImplementedForSymbol
from gpunda.ops.registry import get_op

__all__ = ["SymbolOperators"]


class SymbolOperators:
    """Mixin of ``Symbol``'s Python operators and NDArray-only methods."""

    __slots__ = ()

    # -- arithmetic ------------------------------------------------------------------
    # As in MXNet, Symbol operators do not broadcast: ``a + b`` is elemwise_add named
    # ``_plus0`` (use sym.broadcast_add to broadcast); comparisons build symbols.
    def __add__(self, other):
        return _arith(self, other, ("elemwise_add", "_plus"), ("_plus_scalar", "_plusscalar"))

    __radd__ = __add__

    def __sub__(self, other):
        return _arith(self, other, ("elemwise_sub", "_minus"), ("_minus_scalar", "_minusscalar"))

    def __rsub__(self, other):
        return _arith(self, other, None, ("_rminus_scalar", "_rminusscalar"))

    def __mul__(self, other):
        return _arith(self, other, ("elemwise_mul", "_mul"), ("_mul_scalar", "_mulscalar"))

    __rmul__ = __mul__

    def __truediv__(self, other):
        return _arith(self, other, ("elemwise_div", "_div"), ("_div_scalar", "_divscalar"))

    def __rtruediv__(self, other):
        return _arith(self, other, None, ("_rdiv_scalar", "_rdivscalar"))

    __div__, __rdiv__ = __truediv__, __rtruediv__

    def __mod__(self, other):
        return _arith(self, other, ("_mod", "_mod"), ("_mod_scalar", "_modscalar"))

    def __rmod__(self, other):
        return _arith(self, other, None, ("_rmod_scalar", "_rmodscalar"))

    def __pow__(self, other):
        return _arith(self, other, ("_power", "_power"),
                      ("_power_scalar", "_powerscalar"))

    def __rpow__(self, other):
        return _arith(self, other, None, ("_rpower_scalar", "_rpower_scalar"))

    def __neg__(self):
        return _arith(self, -1.0, None, ("_mul_scalar", "_mulscalar"))

    def __pos__(self):
        return self

    def __abs__(self):
        from gpunda.symbol.creation import make_node
        return make_node(get_op("abs"), [self], {}, None, None, hint="abs")

    def __eq__(self, other):
        return _arith(self, other, ("_equal", "_equal"), ("_equal_scalar", None))

    def __ne__(self, other):
        return _arith(self, other, ("_not_equal", "_not_equal"),
                      ("_not_equal_scalar", None))

    def __gt__(self, other):
        return _arith(self, other, ("_greater", "_greater"), ("_greater_scalar", None))

    def __ge__(self, other):
        return _arith(self, other, ("_greater_equal", "_greater_equal"),
                      ("_greater_equal_scalar", None))

    def __lt__(self, other):
        return _arith(self, other, ("_lesser", "_lesser"), ("_lesser_scalar", None))

    def __le__(self, other):
        return _arith(self, other, ("_lesser_equal", "_lesser_equal"),
                      ("_lesser_equal_scalar", None))

    # MXNet's Symbol is unhashable (it defines __eq__); gpunda keeps identity hashing so
    # symbols can still key the dicts of code that relied on it
    __hash__ = object.__hash__

    # -- NDArray-only operations (MXNet raises NotImplementedForSymbol) -----------------
    def __bool__(self):
        raise NotImplementedForSymbol(self.__bool__, "bool")

    __nonzero__ = __bool__

    def __iadd__(self, other):
        raise NotImplementedForSymbol(self.__iadd__, "+=", other, 1)

    def __isub__(self, other):
        raise NotImplementedForSymbol(self.__isub__, "-=", other)

    def __imul__(self, other):
        raise NotImplementedForSymbol(self.__imul__, "*=", other)

    def __idiv__(self, other):
        raise NotImplementedForSymbol(self.__idiv__, "/=", other)

    def __itruediv__(self, other):
        raise NotImplementedForSymbol(self.__itruediv__, "/=", other)

    def wait_to_read(self):
        raise NotImplementedForSymbol(self.wait_to_read, None)

    def asnumpy(self):
        raise NotImplementedForSymbol(self.asnumpy, None)

    def asscalar(self):
        raise NotImplementedForSymbol(self.asscalar, None)

    def as_in_context(self, *args, **kwargs):
        raise NotImplementedForSymbol(self.as_in_context, None)

    def detach(self):
        raise NotImplementedForSymbol(self.detach, None)

    def backward(self, *args, **kwargs):
        raise NotImplementedForSymbol(self.backward, None)

    def as_nd_ndarray(self):
        """This symbol (the legacy front end's symbols are already ``nd`` symbols)."""
        return self

    def astype(self, *args, **kwargs):
        """``sym.cast(self, dtype)`` (MXNet's fluent method)."""
        from gpunda.symbol.creation import lookup
        return lookup("cast")(self, *args, **kwargs)

    def softmax(self, *args, **kwargs):
        """``sym.softmax(self, ...)`` (MXNet's fluent method)."""
        from gpunda.symbol.creation import lookup
        return lookup("softmax")(self, *args, **kwargs)

    def log_softmax(self, *args, **kwargs):
        """``sym.log_softmax(self, ...)`` (MXNet's fluent method)."""
        from gpunda.symbol.creation import lookup
        return lookup("log_softmax")(self, *args, **kwargs)

    def softmin(self, *args, **kwargs):
        """``sym.softmin(self, ...)`` (MXNet's fluent method)."""
        from gpunda.symbol.creation import lookup
        return lookup("softmin")(self, *args, **kwargs)

    def split_v2(self, *args, **kwargs):
        """``sym.split_v2(self, ...)``: split at indices or into equal sections."""
        from gpunda.symbol import split_v2
        return split_v2(self, *args, **kwargs)

    def get_backend_symbol(self, backend):
        """This graph partitioned by every property of subgraph ``backend`` (MXNet's
        MXGenBackendSubgraph; NOTE [Subgraph partitioning] in _frontend/subgraph.py)."""
        from gpunda._frontend.subgraph import backend_symbol
        return backend_symbol(self, backend)

    def optimize_for(self, backend, args=None, aux=None, ctx=None, shape_dict=None,
                     type_dict=None, stype_dict=None, skip_infer=False, **kwargs):
        """This graph partitioned for subgraph ``backend``, a new Symbol (NOTE [Subgraph
        partitioning] in _frontend/subgraph.py).

        ``args``/``aux`` (dicts of name -> NDArray) and the shape/type dicts describe the
        inputs for backends whose selectors read them (``default`` and ``default_v2`` do
        not); inputs the partitioned graph no longer has leave ``args``/``aux``, as in
        MXNet. ``kwargs`` are the backend's options, passed as strings
        (``dedup_subgraph=True``: one subgraph input per distinct entry).
        """
        from gpunda._frontend.subgraph import optimize_for
        if not isinstance(backend, str):
            raise GpundaError(f"Symbol.optimize_for: backend must be a str, got {backend!r}")
        for what, d in (("args", args), ("aux", aux)):
            if d is None:
                continue
            if not isinstance(d, dict):
                raise GpundaError(f"Symbol.optimize_for: {what} must be a dict of name -> "
                                  f"NDArray or None, got {type(d).__name__}")
            bad = [k for k, v in d.items() if not hasattr(v, "context")]
            if bad:
                raise TypeError(f"Symbol.optimize_for: {what}[{bad[0]!r}] must be an NDArray")
        new = optimize_for(self, backend, {k: str(v) for k, v in kwargs.items()})
        for what, d, before, after in (
                ("args", args, self.list_arguments(), new.list_arguments()),
                ("aux", aux, self.list_auxiliary_states(), new.list_auxiliary_states())):
            gone = set(before) - set(after)
            if not gone:
                continue
            if d is None:
                import warnings
                warnings.warn(f"optimize_for: the partitioned graph dropped inputs "
                              f"{sorted(gone)} and no {what} dict was given; make sure the "
                              f"model's weights match the new graph", stacklevel=2)
            else:
                for name in gone:
                    d.pop(name, None)
        return new

    def as_np_ndarray(self):
        """The same graph as an np Symbol (``mx.sym.np._Symbol``): its operators and
        methods follow NumPy's semantics; ``mx.sym.np.*`` functions take it."""
        from gpunda.symbol.numpy import _Symbol
        return _Symbol(list(self._outputs))


def _arith(sym, other, binop, scalar_op):
    """``sym <op> other``: ``binop``/``scalar_op`` are (operator, name hint) pairs."""
    from gpunda.symbol.creation import make_node
    if isinstance(other, SymbolOperators):
        if binop is None:
            raise GpundaError("Symbol arithmetic: unexpected operand order")
        return make_node(get_op(binop[0]), [sym, other], {}, None, None, hint=binop[1])
    if isinstance(other, (int, float, np.integer, np.floating)) and not isinstance(other, bool):
        return make_node(get_op(scalar_op[0]), [sym], {"scalar": other}, None, None,
                         hint=scalar_op[1] or scalar_op[0])
    raise TypeError(f"type {type(other)} not supported")
