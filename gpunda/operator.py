"""MXNet's ``mx.operator``: operators written in Python (``CustomOp``, ``CustomOpProp``, ``register``).

A custom operator is a ``CustomOpProp`` subclass registered under a name; ``nd.Custom(...,
op_type=name)`` and ``sym.Custom(..., op_type=name)`` call it. The keyword arguments of the call
(other than ``op_type``) reach the prop's constructor as strings, as in MXNet. The prop declares
the argument, output and auxiliary-state names and infers shapes, dtypes and storage types;
``create_operator`` returns the ``CustomOp`` whose ``forward``/``backward`` do the work on
NDArrays.

In gpunda ``Custom`` is one registry op (``ops/control_flow/custom.py``) whose body calls back here, so the
imperative path, Symbol/Executor, CachedOp and autograd all serve custom operators. The
operator instance a forward call created is the one its backward uses (MXNet's op state); a
call replayed from a static CachedOp buffer whose instance is gone gets a fresh one.
Custom operators are once-differentiable: differentiating their gradient raises.
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from collections import namedtuple

import numpy as np

from gpunda.base import GpundaError

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators",
           "get_operator_arguments", "PythonOp", "NumpyOp", "NDArrayOp", "OperatorArguments"]

_PROPS = {}                 # registered name -> CustomOpProp subclass
_NP_ARRAYS = {}             # registered name -> registered under NumPy-array semantics
_LOCK = threading.Lock()


class CustomOp:
    """Base class of the operators a ``CustomOpProp`` creates.

    Override ``forward(is_train, req, in_data, out_data, aux)`` and
    ``backward(req, out_grad, in_data, out_data, in_grad, aux)``; all arrays are NDArrays
    and results go into ``out_data``/``in_grad`` (``self.assign`` honours ``req``).
    """

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute ``out_data`` from ``in_data`` (and ``aux``)."""

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute ``in_grad`` from ``out_grad`` (and the forward's arrays)."""

    def assign(self, dst, req, src):
        """Write ``src`` into ``dst`` as ``req`` says: 'null' (skip), 'write'/'inplace', 'add'."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] += src
        else:
            raise GpundaError(f"CustomOp.assign: req={req!r} must be 'null', 'write', "
                              f"'inplace' or 'add'")


_DEFAULT = "default"


class CustomOpProp:
    """Base class of a custom operator's properties (names, shapes, dtypes, stypes).

    Args:
        need_top_grad: whether ``backward`` reads the outputs' gradients (MXNet's
            default backward dependency declaration).
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """(argument shapes, output shapes[, aux shapes]); by default every output is
        shaped as the first argument."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """(argument dtypes, output dtypes[, aux dtypes]); by default the first argument's."""
        return in_type, [in_type[0]] * len(self.list_outputs()), \
            [in_type[0]] * len(self.list_auxiliary_states())

    def infer_storage_type(self, in_stype):
        """(argument stypes, output stypes[, aux stypes]); the default allows dense only."""
        for i, st in enumerate(in_stype):
            if st != _DEFAULT:
                raise GpundaError(f"{type(self).__name__}.infer_storage_type: the default "
                                  f"implementation allows only dense inputs, got stype {st!r} "
                                  f"for input {i}; implement infer_storage_type and "
                                  f"infer_storage_type_backward for sparse inputs")
        return in_stype, [_DEFAULT] * len(self.list_outputs()), \
            [_DEFAULT] * len(self.list_auxiliary_states())

    def infer_storage_type_backward(self, ograd_stype, in_stype, out_stype, igrad_stype,
                                    aux_stype):
        """Storage types of (output grads, inputs, outputs, input grads, aux) in backward;
        the default allows dense only."""
        for what, lst in (("output gradient", ograd_stype), ("input gradient", igrad_stype)):
            for i, st in enumerate(lst):
                if st not in (_DEFAULT, "undefined"):
                    raise GpundaError(f"{type(self).__name__}.infer_storage_type_backward: the "
                                      f"default implementation allows only dense arrays, got "
                                      f"stype {st!r} for {what} {i}")
        return tuple([_DEFAULT] * len(lst) for lst in
                     (ograd_stype, in_stype, out_stype, igrad_stype, aux_stype))

    def list_outputs(self):
        """Output names."""
        return ["output"]

    def list_arguments(self):
        """Argument (input) names."""
        return ["data"]

    def list_auxiliary_states(self):
        """Auxiliary state names (inputs the operator may update, no gradient)."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Ids of the arrays ``backward`` needs (gpunda always provides all of them)."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The ``CustomOp`` that computes this operator for these input shapes and dtypes."""
        return CustomOp()


def register(reg_name):
    """Class decorator: register a ``CustomOpProp`` subclass as custom op ``reg_name``."""
    if not isinstance(reg_name, str) or not reg_name:
        raise GpundaError(f"operator.register: the name must be a non-empty string, "
                          f"got {reg_name!r}")

    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise GpundaError(f"operator.register({reg_name!r}): {prop_cls!r} is not a "
                              f"CustomOpProp subclass")
        from gpunda.util import is_np_array as _np_mode_now
        with _LOCK:
            _PROPS[reg_name] = prop_cls
            # as MXNet: an op registered under NumPy-array semantics (np_array(), use_np)
            # sees its arrays as mx.np.ndarray in forward and backward
            _NP_ARRAYS[reg_name] = _np_mode_now()
            # a re-registered name gets new props (tests re-register inside functions)
            for key in [k for k in _PROP_CACHE if k[0] == reg_name]:
                _registry.ref_holder.pop(_PROP_CACHE.pop(key)[1], None)
        return prop_cls
    return do_register


OperatorArguments = namedtuple("OperatorArguments", ["narg", "names", "types"])


def get_all_registered_operators():
    """Names of every registered operator (built-in and custom)."""
    from gpunda.ops.registry import all_names
    return sorted(set(all_names()) | set(_PROPS))


def get_operator_arguments(op_name):
    """``OperatorArguments(narg, names, types)`` of a built-in operator's parameters."""
    from gpunda.ops.registry import get_op
    from gpunda.ops.registry import REQUIRED
    op = get_op(op_name)
    inputs = [] if op.variadic else list(op.inputs)
    names = inputs + [s.name for s in op.params]
    types = ["NDArray-or-Symbol"] * len(inputs)
    for s in op.params:     # dmlc's parameter type strings, as MXSymbolGetAtomicSymbolInfo
        kind = ("{" + ", ".join(repr(c) for c in sorted(s.choices)) + "}" if s.choices else
                _DMLC_KINDS.get(s.kind, s.kind))
        types.append(f"{kind}, required" if s.default is REQUIRED else
                     f"{kind}, optional, default={s.default!r}")
    return OperatorArguments(len(names), names, types)


_DMLC_KINDS = {"bool": "boolean", "shape": "Shape(tuple)", "shape_none": "Shape(tuple)",
               "floats": "tuple of <float>", "ints": "tuple of <int>"}


# ---------------------------------------------------------------------------
# the runtime the registry's Custom op calls (ops/control_flow/custom.py)

_PROP_CACHE = {}


class _Registry:
    """MXNet's CustomOp registry: ``ref_holder`` keeps the live CustomOpProp and CustomOp
    instances (keyed by a running counter, ``inc()``) until their op is gone;
    ``result_deps`` holds the last backward dependencies declared."""

    def __init__(self):
        self.ref_holder = {}
        self.counter = 0
        self.result_deps = set()
        self.lock = threading.Lock()

    def inc(self):
        """The key for a new entry (the counter, then advanced)."""
        with self.lock:
            cur = self.counter
            self.counter += 1
        return cur


_registry = _Registry()


def prop_for(p):
    """The prop instance for a call's params (one per op_type and keyword set)."""
    info = getattr(p, "info", None)
    if info is not None:        # _Native / _NDArray: a NumpyOp or NDArrayOp (_frontend/legacy_op.py)
        from gpunda._frontend.legacy_op import prop_for_info
        return prop_for_info(info, p)
    extra = p._extra
    key = (p.op_type, tuple(sorted(extra.items())))
    prop = _PROP_CACHE.get(key)
    if prop is None:
        cls = _PROPS.get(p.op_type)
        if cls is None:
            raise GpundaError(f"Operator Custom: op_type={p.op_type!r} is not registered; "
                              f"registered: {sorted(_PROPS) or 'none'} "
                              f"(decorate a CustomOpProp with @mx.operator.register(name))")
        try:
            prop = cls(**extra)
        except TypeError as e:
            raise GpundaError(f"Operator Custom: op_type={p.op_type!r}: {cls.__name__}"
                              f"(**{extra}) failed: {e}") from None
        if len(_PROP_CACHE) > 4096:
            for _, slot in _PROP_CACHE.values():
                _registry.ref_holder.pop(slot, None)
            _PROP_CACHE.clear()
        slot = _registry.inc()
        _registry.ref_holder[slot] = prop
        _PROP_CACHE[key] = (prop, slot)
    else:
        prop = prop[0]
    return prop


def input_names(p):
    prop = prop_for(p)
    return tuple(prop.list_arguments()) + tuple(prop.list_auxiliary_states())


def aux_names(p):
    return tuple(prop_for(p).list_auxiliary_states())


def output_names(p):
    return tuple(prop_for(p).list_outputs())


def _split(ret, what, counts, where):
    """Check a prop's (inputs, outputs[, aux]) answer against the declared counts."""
    if not isinstance(ret, (tuple, list)) or len(ret) not in (2, 3):
        raise GpundaError(f"{where}: {what} must return 2 or 3 lists, got {ret!r}")
    ins, outs = list(ret[0]), list(ret[1])
    aux = list(ret[2]) if len(ret) == 3 else []
    for got, n, name in ((ins, counts[0], "input"), (outs, counts[1], "output"),
                         (aux, counts[2], "aux state")):
        if len(got) != n:
            raise GpundaError(f"{where}: {what} returned {len(got)} {name} entries, "
                              f"expected {n}")
    return ins, outs, aux


def _where(p, prop):
    """How messages name the operator: its op_type, or the legacy op's class."""
    label = getattr(prop, "label_", None)
    return label if label is not None else f"Custom operator {p.op_type!r}"


def _profiled(p, prop, backward=False):
    """While mx.profiler records: a scope that times the user's Python as MXNet's
    '<op_type>::pure_python' ('_backward_<op_type>::...' for the backward) and files the
    ops it calls under '<op_type>::<op>' (category 'Custom Operator')."""
    from gpunda._core import hooks
    scope = hooks.profile_scope
    if scope is None:
        return contextlib.nullcontext()
    name = getattr(p, "op_type", None) or type(prop).__name__
    return scope(("_backward_" if backward else "") + name)


def _counts(prop):
    return (len(prop.list_arguments()), len(prop.list_outputs()),
            len(prop.list_auxiliary_states()))


def infer_shape(p, in_shapes):
    """OpDef.infer_shape hook: (input + aux shapes, output shapes), None while unknown.

    As in MXNet, the prop is asked while some argument shapes are still unknown (they
    arrive as ``[]``), so a label's or a weight's shape can follow from the data's;
    what it answers from the unknowns (an empty shape, a 0 dimension) stays unknown."""
    prop = prop_for(p)
    n = _counts(prop)
    args = in_shapes[:n[0]]
    partial = any(s is None or 0 in s for s in args)
    if partial and all(s is None for s in args):
        return None
    ret = prop.infer_shape([[] if s is None else list(s) for s in args])
    ins, outs, aux = _split(ret, "infer_shape", n, _where(p, prop))
    if partial:
        settle = [None if s is None or not len(s) or 0 in s else tuple(int(d) for d in s)
                  for s in ins + outs + aux]
        return settle[:n[0]] + settle[n[0] + n[1]:], settle[n[0]:n[0] + n[1]]
    as_t = [None if s is None else tuple(int(d) for d in s) for s in ins + aux]
    return as_t, [tuple(int(d) for d in s) for s in outs]


def infer_type(p, in_types):
    """OpDef.infer_type hook: (input + aux dtypes, output dtypes).

    Unknown argument dtypes are taken as float32 (MXNet's default dtype): the prop must
    answer now, since the other way to learn output dtypes would run its forward."""
    prop = prop_for(p)
    n = _counts(prop)
    args = [np.float32 if t is None else t for t in in_types[:n[0]]]
    ins, outs, aux = _split(prop.infer_type([np.dtype(t).type for t in args]), "infer_type", n,
                            _where(p, prop))
    return [None if t is None else np.dtype(t) for t in ins + aux], [np.dtype(t) for t in outs]


# forward's operator instance, found again by the identity of the first output's storage
_STATES = {}


def _remember(out_raw, op):
    key = id(out_raw)
    _STATES[key] = (weakref.ref(out_raw), op)
    weakref.finalize(out_raw, _STATES.pop, key, None)
    slot = _registry.inc()      # held, as in MXNet, while its outputs live
    _registry.ref_holder[slot] = op
    weakref.finalize(out_raw, _registry.ref_holder.pop, slot, None)


def _recall(out_raw):
    entry = _STATES.get(id(out_raw))
    if entry is not None and entry[0]() is out_raw:
        return entry[1]
    return None


def _zeros(shape, dtype, stype, ctx):
    from gpunda.ndarray import ndarray as _nd
    if stype == _DEFAULT:
        return _nd.zeros(shape, ctx=ctx, dtype=dtype)
    from gpunda.ndarray import sparse
    return sparse.zeros(stype, shape, ctx=ctx, dtype=dtype)


def _flavoured(p, arrays):
    """``arrays`` as the op's registration wants them: ``mx.np.ndarray`` views (same storage)
    for an op registered under NumPy-array semantics, else as given."""
    if not _NP_ARRAYS.get(getattr(p, "op_type", None), False):   # _Native/_NDArray: no op_type
        return list(arrays)
    return [a.as_np_ndarray() if a is not None and a.stype == _DEFAULT and
            hasattr(a, "as_np_ndarray") else a for a in arrays]


def _user_error(where, e):
    if isinstance(e, GpundaError):
        return GpundaError(f"{where}: {e}")
    return GpundaError(f"{where} raised {type(e).__name__}: {e}")


def run_forward(p, inputs, ctx):
    """Run the custom op's forward on NDArray ``inputs``; returns the output NDArrays."""
    from gpunda._engine import autograd as ag
    prop = prop_for(p)
    n_args, n_out, n_aux = _counts(prop)
    if len(inputs) != n_args + n_aux:
        raise GpundaError(f"{_where(p, prop)}: expects {n_args + n_aux} inputs "
                          f"({', '.join(input_names(p)) or 'none'}), got {len(inputs)}")
    args, aux = list(inputs[:n_args]), list(inputs[n_args:])
    where = _where(p, prop)
    shapes = [list(x.shape) for x in args]
    dtypes = [np.dtype(x.dtype).type for x in args]
    _, out_shapes, _ = _split(prop.infer_shape(shapes), "infer_shape", (n_args, n_out, n_aux),
                              where)
    if args:
        _, out_types, _ = _split(prop.infer_type(dtypes), "infer_type", (n_args, n_out, n_aux),
                                 where)
    else:
        try:
            _, out_types, _ = _split(prop.infer_type([]), "infer_type", (0, n_out, n_aux), where)
        except (IndexError, GpundaError):
            out_types = [np.float32] * n_out
    _, out_stypes, _ = _split(prop.infer_storage_type([x.stype for x in args]),
                              "infer_storage_type", (n_args, n_out, n_aux), where)
    outs = [_zeros(tuple(int(d) for d in s), np.dtype(t), st, ctx)
            for s, t, st in zip(out_shapes, out_types, out_stypes)]
    prev = ag.set_recording(False)
    try:
        op = prop.create_operator(ctx, shapes, dtypes)
        with ctx, _profiled(p, prop):
            op.forward(is_train=ag.is_training(), req=["write"] * n_out,
                       in_data=_flavoured(p, args), out_data=_flavoured(p, outs),
                       aux=_flavoured(p, aux))
    except Exception as e:
        raise _user_error(f"{where}.forward", e) from e
    finally:
        ag.set_recording(prev)
    if outs:
        _remember(outs[0]._data, op)
    return outs


def run_backward(p, inputs, outs, ograds, ctx):
    """Run the custom op's backward; returns one gradient NDArray per input (None for aux)."""
    from gpunda._engine import autograd as ag
    prop = prop_for(p)
    n_args, n_out, n_aux = _counts(prop)
    args, aux = list(inputs[:n_args]), list(inputs[n_args:])
    where = _where(p, prop)
    op = _recall(outs[0]._data) if outs else None
    if op is None:
        op = prop.create_operator(ctx, [list(x.shape) for x in args],
                                  [np.dtype(x.dtype).type for x in args])
    ograds = [g if g is not None else _zeros(o.shape, o.dtype, _DEFAULT, ctx)
              for g, o in zip(ograds, outs)]
    st = prop.infer_storage_type_backward([g.stype for g in ograds], [x.stype for x in args],
                                          [o.stype for o in outs], [_DEFAULT] * n_args,
                                          [x.stype for x in aux])
    if not isinstance(st, (tuple, list)) or len(st) not in (4, 5):
        raise GpundaError(f"{where}: infer_storage_type_backward must return 4 or 5 lists")
    igrad_stypes = list(st[3])
    if len(igrad_stypes) != n_args:
        raise GpundaError(f"{where}: infer_storage_type_backward returned {len(igrad_stypes)} "
                          f"input gradient stypes, expected {n_args}")
    in_grad = [_zeros(x.shape, x.dtype, s if s != "undefined" else _DEFAULT, ctx)
               for x, s in zip(args, igrad_stypes)]
    prev = ag.set_recording(False)
    try:
        with ctx, _profiled(p, prop, backward=True):
            op.backward(req=["write"] * n_args, out_grad=_flavoured(p, ograds),
                        in_data=_flavoured(p, args), out_data=_flavoured(p, outs),
                        in_grad=_flavoured(p, in_grad), aux=_flavoured(p, aux))
    except Exception as e:
        raise _user_error(f"{where}.backward", e) from e
    finally:
        ag.set_recording(prev)
    return in_grad + [None] * n_aux


# MXNet's deprecated PythonOp interface, built on the Custom runtime above
# ---------------------------------------------------------------------------
# The Custom op's calls (gpunda/ops/control_flow/custom.py declares the op; its forward
# and gradient run here, on NDArrays)

def _nd_context(arrays):
    """The Context of raw backend arrays (the CPU for NumPy; the array's GPU for CuPy)."""
    from gpunda.context import cpu, gpu
    for a in arrays:
        if a is None:
            continue
        a = getattr(a, "data", a) if not isinstance(a, np.ndarray) and hasattr(a, "indices") else a
        dev = getattr(a, "device", None)
        if isinstance(a, np.ndarray) or dev is None or isinstance(dev, str):
            return cpu()
        return gpu(int(dev.id))
    from gpunda.context import current_context
    return current_context()


def _as_nd(raws, ctx):
    from gpunda.ndarray.sparse import _wrap
    return [None if r is None else _wrap(r, ctx) for r in raws]


def custom_forward(p, arrays, ctx):
    """A Custom op's forward on backend arrays (dense, or sparse storage with ``ctx`` None)."""
    if ctx is None:
        ctx = _nd_context(arrays)
    outs = run_forward(p, _as_nd(arrays, ctx), ctx)
    raws = tuple(o._data for o in outs)
    return raws[0] if len(raws) == 1 else raws


def custom_gradient(p, ins, outs, ograds):
    """A Custom op's gradient rule: raw arrays on the plain backward, NDArrays (recorded as a
    once-differentiable node) under create_graph."""
    from gpunda.ndarray.ndarray import NDArray
    from gpunda._engine import autograd as ag
    from gpunda.autograd import _ONCE_OP, _once_rule
    raw = not isinstance(outs[0], NDArray)
    if raw:
        ctx = _nd_context(list(ins) + list(outs))
        ins_nd, outs_nd, og_nd = _as_nd(ins, ctx), _as_nd(outs, ctx), _as_nd(ograds, ctx)
    else:
        ctx = outs[0]._ctx
        ins_nd, outs_nd, og_nd = list(ins), list(outs), list(ograds)
    grads = run_backward(p, ins_nd, outs_nd, og_nd, ctx)
    if raw:
        return [None if g is None else g._data for g in grads]
    real = [g for g in grads if g is not None]
    if real:
        ag.record_node(_ONCE_OP, None, ins_nd + [g for g in og_nd if g is not None], real,
                       rule=_once_rule(f"Custom operator {p.op_type!r}"))
    return grads


from gpunda._frontend.legacy_op import NDArrayOp, NumpyOp, PythonOp  # noqa: E402

# MXNet's operator module has no __all__, so ``from mxnet.operator import *`` also brings
# the ctypes and C-API names it imports; MXNet code (its own test_operator.py) relies on them
import collections  # noqa: E402
import ctypes  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from array import array  # noqa: E402
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char, c_char_p,  # noqa: E402
                    c_int, c_void_p, cast, pointer)
from threading import Lock  # noqa: E402

from gpunda import context, symbol  # noqa: E402
from gpunda.base import (MXCallbackList, NDArrayHandle, OpHandle, c_array, c_array_buf,  # noqa: E402
                   c_str, check_call, ctypes2numpy_shared, mx_float, mx_int, mx_uint, py_str)
from gpunda.ndarray import NDArray  # noqa: E402
from gpunda.ndarray.ndarray import (_STORAGE_TYPE_STR_TO_ID, _STORAGE_TYPE_ID_TO_STR,  # noqa: E402,F401
                                    _STORAGE_TYPE_UNDEFINED, _STORAGE_TYPE_DEFAULT,
                                    _STORAGE_TYPE_CSR, _STORAGE_TYPE_ROW_SPARSE)
from gpunda.util import is_np_array  # noqa: E402

c_int_p = POINTER(c_int)
__all__ += [
    "CFUNCTYPE", "Lock", "MXCallbackList", "NDArray", "NDArrayHandle", "OpHandle", "POINTER",
    "Structure", "array", "c_array", "c_array_buf", "c_bool", "c_char", "c_char_p", "c_int",
    "c_int_p", "c_str", "c_void_p", "cast", "check_call", "collections", "context", "ctypes",
    "ctypes2numpy_shared", "is_np_array", "mx_float", "mx_int", "mx_uint", "pointer",
    "py_str", "symbol", "traceback", "warnings"]

