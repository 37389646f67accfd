"""Ops that act on gradients rather than values, and operators written in Python.

``BlockGrad`` (alias ``stop_gradient``) passes values through and stops the
gradient; ``make_loss``/``MakeLoss`` pass them through and start the gradient.
``Custom`` runs an operator written in Python (``mx.operator``).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda._core import hooks
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


# ---------------------------------------------------------------------------
# Custom: operators written in Python (mx.operator.CustomOp / CustomOpProp)
#
# The prop decides the inputs, outputs, shapes and dtypes of each call, so every hook
# asks gpunda.operator, which sits above the ops layer because user code receives
# NDArrays: hooks.python_operators() loads it (NOTE [Upward hooks]). Keyword arguments
# other than op_type reach the prop as strings.

def _operator():
    return hooks.python_operators()


def _custom_forward(xp, p, *arrays, ctx):
    return _operator().custom_forward(p, arrays, ctx)


def _custom_sparse_forward(xp, sp, p, *raws):
    return _operator().custom_forward(p, raws, None)


def _custom_gradient(F, p, ins, outs, ograds):
    return _operator().custom_gradient(p, ins, outs, ograds)


def _custom_sparse_gradient(p, ins, outs, ograds, need):
    return _operator().custom_gradient(p, ins, outs, ograds)


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
