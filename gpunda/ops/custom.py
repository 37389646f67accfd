"""Ops that act on gradients rather than values, and user-defined autograd Functions.

``BlockGrad`` (alias ``stop_gradient``) passes values through and stops the
gradient; ``make_loss``/``MakeLoss`` pass them through and start the gradient.
``call_function`` runs an ``autograd.Function``: forward with recording paused,
then one tape node whose gradient calls the Function's ``backward`` on NDArrays.
``Custom`` runs an operator written in Python (``mx.operator``).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register

register(OpDef(
    "BlockGrad", lambda xp, p, x: x.copy(), aliases=("stop_gradient",),
    gradient=lambda F, p, i, o, g: [None], save=(), family="custom",
    doc="The input's values; no gradient flows back through it (its gradient is zero)."))


# Loss heads (MXNet's make_loss / MakeLoss): the value passes through, and the backward
# ignores the head gradient and starts from the loss's own constant gradient
register(OpDef(
    "make_loss", lambda xp, p, x: x.copy(), output_names=("loss",),
    # ones shaped like the head gradient, which is shaped like the input: nothing is saved
    gradient=lambda F, p, i, o, g: [F.ones_like(g[0])], save=(), family="custom",
    doc="A loss head: the input's values; its gradient is ones (the head gradient is "
        "ignored)."))


def _make_loss_grad(F, p, ins, outs, og):
    x = ins[0]
    ones = F.ones_like(x)
    if p.normalization == "batch":
        return [ones * (p.grad_scale / x.shape[0])]
    if p.normalization == "valid":
        valid = F._maximum_scalar(F.sum(F._greater_scalar(x, scalar=p.valid_thresh)), scalar=1)
        return [F.broadcast_div(ones * p.grad_scale, valid)]
    return [ones * p.grad_scale]


register(OpDef(
    "MakeLoss", lambda xp, p, x: x.copy(), gradient=_make_loss_grad, save=("inputs",),
    params=[Param("grad_scale", "float", 1.0, "gradient scale"),
            Param("valid_thresh", "float", 0.0, "values above it count as valid ('valid')"),
            Param("normalization", "enum", "null", choices=("null", "batch", "valid"),
                  doc="divide the gradient by nothing, the batch size or the valid count")],
    family="custom",
    doc="A loss head: the input's values; its gradient is grad_scale, normalized per "
        "`normalization`, whatever the head gradient."))


def _never_computed(xp, p, *arrays):
    raise GpundaError("_CustomFunction nodes only exist on the autograd tape")


# Tape-only op records (not registered: they cannot be called as nd.<op>).
_FUNCTION_OP = OpDef("_CustomFunction", _never_computed, inputs=lambda p: (), save=(),
                     family="custom", doc="A call of a user-defined autograd.Function.")
_ONCE_OP = OpDef("_CustomFunctionBackward", _never_computed, inputs=lambda p: (), save=(),
                 family="custom", doc="The gradients an autograd.Function's backward returned.")


def _as_outputs(value, where):
    from gpunda.ndarray.ndarray import NDArray
    if isinstance(value, NDArray):
        return [value], True
    if isinstance(value, (list, tuple)) and all(isinstance(v, NDArray) for v in value) and value:
        return list(value), False
    raise GpundaError(f"{where} must return an NDArray or a non-empty list/tuple of NDArrays, "
                      f"got {type(value).__name__}")


def call_function(fn, inputs):
    """Run ``autograd.Function`` instance ``fn`` on NDArray ``inputs`` and record it.

    Forward runs with recording paused (training mode unchanged). When
    recording, the call becomes one tape node whose gradient calls
    ``fn.backward`` with the outputs' gradients as NDArrays.
    """
    from gpunda import autograd as ag
    from gpunda.ndarray.ndarray import NDArray, _new
    name = type(fn).__name__
    where = f"autograd.Function {name}"
    if getattr(fn, "_used", False):
        raise GpundaError(f"{where}: each Function instance can be called only once; "
                          f"create a new instance for every call")
    for i, x in enumerate(inputs):
        if not isinstance(x, NDArray):
            raise GpundaError(f"{where}: input {i} must be an NDArray, got {type(x).__name__}")
    fn._used = True
    prev = ag.set_recording(False)
    try:
        result = fn.forward(*inputs)
    finally:
        ag.set_recording(prev)
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
        was = ag.set_recording(False)
        try:
            res = fn.backward(*og)
        finally:
            ag.set_recording(was)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        if len(res) != n_in:
            raise GpundaError(f"{where}.backward returned {len(res)} gradients for "
                              f"{n_in} inputs")
        for i, r in enumerate(res):
            if r is None:
                continue
            if not isinstance(r, NDArray):
                raise GpundaError(f"{where}.backward: gradient {i} must be an NDArray or None, "
                                  f"got {type(r).__name__}")
            if r.shape != in_shapes[i]:
                raise GpundaError(f"{where}.backward: gradient {i} has shape {r.shape} but "
                                  f"input {i} has shape {in_shapes[i]}")
        if raw:
            return [None if r is None else r._data for r in res]
        # create_graph: the gradients are values of a node that refuses to be
        # differentiated, so a second derivative fails loudly instead of being zero
        grads = [None if r is None else _new(r._data, r._ctx) for r in res]
        real = [g for g in grads if g is not None]
        if real:
            ag.record_node(_ONCE_OP, None, list(held) + og, real, rule=_once_rule(where))
        return grads

    ag.record_node(_FUNCTION_OP, None, inputs, wrapped, rule=rule)
    if single:
        return wrapped[0]
    return type(result)(wrapped) if isinstance(result, tuple) else wrapped


def _once_rule(where):
    def rule(F, p, ins, outs, ograds):
        raise GpundaError(f"{where}: its backward is once-differentiable; a Function's "
                          f"gradient cannot be differentiated again (write the computation "
                          f"with gpunda ops for higher-order gradients)")
    return rule


# ---------------------------------------------------------------------------
# Custom: operators written in Python (mx.operator.CustomOp / CustomOpProp)
#
# The prop decides the inputs, outputs, shapes and dtypes of each call, so every hook
# asks gpunda.operator (imported lazily: it sits above the ops layer because user code
# receives NDArrays). Keyword arguments other than op_type reach the prop as strings.

def _operator():
    from gpunda import operator
    return operator


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


def _custom_forward(xp, p, *arrays, ctx):
    outs = _operator().run_forward(p, _as_nd(arrays, ctx), ctx)
    raws = tuple(o._data for o in outs)
    return raws[0] if len(raws) == 1 else raws


def _custom_sparse_forward(xp, sp, p, *raws):
    return _custom_forward(xp, p, *raws, ctx=_nd_context(raws))


def _custom_gradient(F, p, ins, outs, ograds):
    from gpunda.ndarray.ndarray import NDArray
    from gpunda import autograd as ag
    raw = not isinstance(outs[0], NDArray)
    if raw:
        ctx = _nd_context(list(ins) + list(outs))
        ins_nd, outs_nd, og_nd = _as_nd(ins, ctx), _as_nd(outs, ctx), _as_nd(ograds, ctx)
    else:
        ctx = outs[0]._ctx
        ins_nd, outs_nd, og_nd = list(ins), list(outs), list(ograds)
    grads = _operator().run_backward(p, ins_nd, outs_nd, og_nd, ctx)
    if raw:
        return [None if g is None else g._data for g in grads]
    real = [g for g in grads if g is not None]
    if real:
        ag.record_node(_ONCE_OP, None, ins_nd + [g for g in og_nd if g is not None], real,
                       rule=_once_rule(f"Custom operator {p.op_type!r}"))
    return grads


def _custom_sparse_gradient(p, ins, outs, ograds, need):
    return _custom_gradient(None, p, ins, outs, ograds)


def _python_op(name, params, doc, extra_params=False):
    """An op whose calls run Python through gpunda.operator's runtime: ``Custom`` and the
    deprecated interface's ``_Native`` (NumpyOp) and ``_NDArray`` (NDArrayOp), which
    differ only in how their params name the Python object."""
    return OpDef(
        name, _custom_forward, family="custom", wants_ctx=True, extra_params=extra_params,
        params=params,
        inputs=lambda p: _operator().input_names(p),
        aux_inputs=lambda p: _operator().aux_names(p),
        num_outputs=lambda p: len(_operator().output_names(p)),
        output_names=lambda p: _operator().output_names(p),
        infer_shape=lambda p, s: _operator().infer_shape(p, s),
        infer_type=lambda p, t: _operator().infer_type(p, t),
        gradient=_custom_gradient, save=("inputs", "outputs"),
        sparse={"*": _custom_sparse_forward, "grad": _custom_sparse_gradient},
        capture="a Python custom operator runs Python on every call", doc=doc)


register(_python_op(
    "Custom", (Param("op_type", "str", doc="the name the CustomOpProp was registered under"),),
    extra_params=True,
    doc="A custom operator written in Python (mx.operator.CustomOp), named by op_type; "
        "other keyword arguments go to its CustomOpProp as strings."))

_INFO = Param("info", "str", doc="the token mx.operator's get_symbol gave the Python op "
                                 "(MXNet: a pointer to its callbacks)")
register(_python_op(
    "_Native", (_INFO, Param("need_top_grad", "bool", True,
                             "whether backward reads the outputs' gradients (False for "
                             "loss layers)")),
    doc="A call of a deprecated mx.operator.NumpyOp (made by its get_symbol): forward "
        "and backward run on NumPy float32 copies of the arrays."))
register(_python_op(
    "_NDArray", (_INFO,),
    doc="A call of a deprecated mx.operator.NDArrayOp (made by its get_symbol): forward "
        "and backward run on the NDArrays."))
