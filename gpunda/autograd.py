"""MXNet's ``mx.autograd``: recording and training scopes, backward, grad, get_symbol and
user-defined ``Function``s.

The tape and the backward pass are the engine's (gpunda/_engine/autograd.py); the modes
are the base layer's (gpunda/_core/modes.py). This module adds what needs the front
ends: ``get_symbol`` (a Symbol from the tape) and ``Function`` (forward and backward
written on NDArrays).
"""
from __future__ import annotations

from gpunda.base import GpundaError as _GpundaError
from gpunda.base import (MXCallbackList, c_array, c_array_buf, c_handle_array,  # noqa: F401
                         check_call, string_types)
from gpunda.ops.registry import OpDef as _OpDef
from gpunda._engine import autograd as _engine
from gpunda._engine.autograd import (  # noqa: F401  (MXNet's names)
    is_recording, is_training, set_recording, set_training, record, pause, train_mode,
    predict_mode, mark_variables, backward, grad, record_node)
# MXNet's scope class behind record/pause/train_mode/predict_mode (the base layer's)
from gpunda._core.modes import _Scope as _RecordingStateScope  # noqa: F401

# MXNet's module has no __all__, so ``from mxnet.autograd import *`` also brings the
# names it imports (NDArray, Symbol, the C-API helpers); user code relies on that.
__all__ = ["is_recording", "is_training", "set_recording", "set_training", "record", "pause",
           "train_mode", "predict_mode", "mark_variables", "backward", "grad", "get_symbol",
           "Function", "record_node", "NDArray", "Symbol", "MXCallbackList", "c_array",
           "c_array_buf", "c_handle_array", "check_call", "string_types"]


def __getattr__(name):
    # NDArray and Symbol are defined in modules that import this one: look them up late
    if name == "NDArray":
        from gpunda.ndarray.ndarray import NDArray
        return NDArray
    if name == "Symbol":
        from gpunda.symbol import Symbol
        return Symbol
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _parse_head(heads, head_grads):
    """MXNet's C-API form of backward's arguments: ``(head_handles, hgrad_handles)``, a
    ctypes array of the heads' NDArrayHandles and one of the head gradients' (a NULL
    handle for a None entry), or a NULL pointer when ``head_grads`` is None. A single
    NDArray counts as a one-element list; the lists must have the same length. The
    handles name the arrays while they live (``NDArray(handle=...)`` finds them)."""
    import ctypes
    from gpunda._core.capi import lend_handle
    from gpunda._engine.autograd import _parse_head as _lists
    head_list, hg_list = _lists(heads, head_grads, "_parse_head")
    head_handles = (ctypes.c_void_p * len(head_list))(*[lend_handle(h) for h in head_list])
    if hg_list is None:
        return head_handles, ctypes.c_void_p(0)
    hgrad_handles = (ctypes.c_void_p * len(hg_list))(
        *[None if g is None else lend_handle(g) for g in hg_list])
    return head_handles, hgrad_handles


def get_symbol(x):
    """The recorded history of ``x`` as a Symbol."""
    from gpunda.symbol.trace import symbol_from_tape
    return symbol_from_tape(x)


class Function:
    """A user-defined differentiable function (MXNet's ``autograd.Function``).

    Subclass it, define ``forward(self, *inputs)`` and ``backward(self,
    *output_grads)`` on NDArrays (backward returns one gradient per input),
    call ``save_for_backward`` in forward, and call an instance like a
    function; each instance may be called once. Forward runs with recording
    paused and the call is recorded as one node. Its backward is not itself
    differentiable: differentiating it again raises ``GpundaError``.
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        """Keep arrays for ``backward`` (available as ``self.saved_tensors``)."""
        self.saved_tensors = args

    def forward(self, *inputs):
        """Compute the outputs from NDArray inputs (override)."""
        raise NotImplementedError

    def backward(self, *output_grads):
        """Gradients with respect to the inputs from the outputs' gradients (override)."""
        raise NotImplementedError

    def __call__(self, *inputs):
        return _call_function(self, inputs)


# ---------------------------------------------------------------------------
# Function calls on the tape

def _never_computed(xp, p, *arrays):
    raise _GpundaError("_CustomFunction nodes only exist on the autograd tape")


# Tape-only op records (not registered: they cannot be called as nd.<op>).
_FUNCTION_OP = _OpDef("_CustomFunction", _never_computed, inputs=lambda p: (), save=(),
                     family="custom", doc="A call of a user-defined autograd.Function.")
_ONCE_OP = _OpDef("_CustomFunctionBackward", _never_computed, inputs=lambda p: (), save=(),
                 family="custom", doc="The gradients an autograd.Function's backward returned.")


def _as_outputs(value, where):
    from gpunda.ndarray.ndarray import NDArray
    if isinstance(value, NDArray):
        return [value], True
    if isinstance(value, (list, tuple)) and all(isinstance(v, NDArray) for v in value) and value:
        return list(value), False
    raise _GpundaError(f"{where} must return an NDArray or a non-empty list/tuple of NDArrays, "
                      f"got {type(value).__name__}")


def _call_function(fn, inputs):
    """Run ``autograd.Function`` instance ``fn`` on NDArray ``inputs`` and record it.

    Forward runs with recording paused (training mode unchanged). When
    recording, the call becomes one tape node whose gradient calls
    ``fn.backward`` with the outputs' gradients as NDArrays.
    """
    from gpunda.ndarray.ndarray import NDArray, _new
    name = type(fn).__name__
    where = f"autograd.Function {name}"
    if getattr(fn, "_used", False):
        raise _GpundaError(f"{where}: each Function instance can be called only once; "
                          f"create a new instance for every call")
    for i, x in enumerate(inputs):
        if not isinstance(x, NDArray):
            raise _GpundaError(f"{where}: input {i} must be an NDArray, got {type(x).__name__}")
    fn._used = True
    prev = _engine.set_recording(False)
    try:
        result = fn.forward(*inputs)
    finally:
        _engine.set_recording(prev)
    outs, single = _as_outputs(result, f"{where}.forward")
    if not prev:
        return result
    # every output gets a new wrapper (same memory) that carries the tape entry:
    # an output that is an input keeps its own history, and arrays the Function
    # saved for backward do not point back at the node (no reference cycle)
    wrapped = []
    for o in outs:
        w = _new(o._data, o._ctx)
        w._base = o._base if o._base is not None else o
        wrapped.append(w)
    n_in = len(inputs)
    in_shapes = [x.shape for x in inputs]
    held = tuple(inputs)
    ctx = wrapped[0]._ctx    # the rule must not refer to the outputs: that would be a cycle

    def rule(F, p, ins, outs_, ograds):
        raw = not isinstance(ograds[0], NDArray)
        og = [_new(g, ctx) for g in ograds] if raw else list(ograds)
        was = _engine.set_recording(False)
        try:
            res = fn.backward(*og)
        finally:
            _engine.set_recording(was)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        if len(res) != n_in:
            raise _GpundaError(f"{where}.backward returned {len(res)} gradients for "
                              f"{n_in} inputs")
        for i, r in enumerate(res):
            if r is None:
                continue
            if not isinstance(r, NDArray):
                raise _GpundaError(f"{where}.backward: gradient {i} must be an NDArray or None, "
                                  f"got {type(r).__name__}")
            if r.shape != in_shapes[i]:
                raise _GpundaError(f"{where}.backward: gradient {i} has shape {r.shape} but "
                                  f"input {i} has shape {in_shapes[i]}")
        if raw:
            return [None if r is None else r._data for r in res]
        # create_graph: the gradients are values of a node that refuses to be
        # differentiated, so a second derivative fails loudly instead of being zero
        grads = [None if r is None else _new(r._data, r._ctx) for r in res]
        real = [g for g in grads if g is not None]
        if real:
            _engine.record_node(_ONCE_OP, None, list(held) + og, real, rule=_once_rule(where))
        return grads

    _engine.record_node(_FUNCTION_OP, None, inputs, wrapped, rule=rule)
    if single:
        return wrapped[0]
    return type(result)(wrapped) if isinstance(result, tuple) else wrapped


def _once_rule(where):
    def rule(F, p, ins, outs, ograds):
        raise _GpundaError(f"{where}: its backward is once-differentiable; a Function's "
                          f"gradient cannot be differentiated again (write the computation "
                          f"with gpunda ops for higher-order gradients)")
    return rule

# the __future__ import binds `annotations`; MXNet's namespace has no such name (dir())
del annotations
