"""Two layers of MXNet 1.x defined by their backward: IdentityAttachKLSparseReg and
``_contrib_SparseEmbedding``.

- ``IdentityAttachKLSparseReg``: the forward is the identity; its backward adds the
  gradient of a KL sparseness penalty, ``penalty * (-rho / rho_hat + (1 - rho) /
  (1 - rho_hat))``, where ``rho_hat`` is the ``moving_avg`` aux state, which the
  backward first moves towards the batch's mean activation per unit
  (``moving_avg = momentum * moving_avg + (1 - momentum) * mean(data, axis=0)``).
  The gradient is therefore not the derivative of the forward, by MXNet's
  definition, and it writes ``moving_avg`` in place as MXNet's backward does.
- ``_contrib_SparseEmbedding``: Embedding whose weight gradient is always
  row_sparse (only the looked-up rows), whatever ``sparse_grad`` says.
"""
from __future__ import annotations

from ..base import GpundaError
from .registry import OpDef, Param, get_op, register
from . import nn as _nn  # noqa: F401  (Embedding)
from . import sparse_ops as _sparse_ops  # noqa: F401  (_embedding_rsp_grad)


def _kl_forward(xp, p, data, moving_avg):
    if data.ndim < 2:
        raise GpundaError(f"Operator IdentityAttachKLSparseReg: data must have at least 2 "
                          f"dimensions (batch, units, ...), got shape {tuple(data.shape)}")
    if tuple(moving_avg.shape) != (data.shape[1],):
        raise GpundaError(f"Operator IdentityAttachKLSparseReg: moving_avg has shape "
                          f"{tuple(moving_avg.shape)}; expected ({data.shape[1]},)")
    return data.copy()


def _write_in_place(dst, value):
    """Store ``value`` into the aux state ``dst`` (a raw array, or an NDArray when the
    backward is recorded) without recording the write: it is state, not a result."""
    raw = getattr(dst, "_data", dst)
    raw[...] = getattr(value, "_data", value)


def _kl_gradient(F, p, ins, outs, ograds):
    data, moving_avg = ins
    g = ograds[0]
    axes = tuple(a for a in range(data.ndim) if a != 1)
    avg = F.mean(F.BlockGrad(data), axis=axes)
    new_avg = moving_avg * p.momentum + avg * (1 - p.momentum)
    _write_in_place(moving_avg, new_avg)
    shape = (1, -1) + (1,) * (data.ndim - 2)
    rho_hat = F.reshape(F.BlockGrad(new_avg), shape=shape)
    t = p.sparseness_target
    penalty = (rho_hat ** -1) * (-t) + ((1 - rho_hat) ** -1) * (1 - t)
    return [F.broadcast_add(g, penalty * p.penalty), None]


def _kl_check(p):
    for name in ("sparseness_target", "momentum"):
        v = getattr(p, name)
        if not 0 <= v <= 1:
            raise GpundaError(f"Operator IdentityAttachKLSparseReg: parameter {name}={v} "
                              f"must be in [0, 1]")


register(OpDef(
    "IdentityAttachKLSparseReg", _kl_forward, inputs=("data", "moving_avg"),
    params=[Param("sparseness_target", "float", 0.1, "target mean activation rho"),
            Param("penalty", "float", 0.001, "weight of the KL penalty"),
            Param("momentum", "float", 0.9, "moving average decay of the mean activation")],
    check=_kl_check, aux_inputs=("moving_avg",), mutates=(1,), no_grad_inputs=("moving_avg",),
    gradient=_kl_gradient, save=("inputs",), family="nn",
    infer_shape=lambda p, s: ([s[0], None if s[0] is None else (s[0][1],)],
                              None if s[0] is None else [tuple(s[0])]),
    doc="Identity whose backward adds a KL sparseness penalty on the mean activation and "
        "updates the moving_avg aux state (see gpunda/ops/contrib_misc.py)."))


def _register_sparse_embedding():
    emb = get_op("Embedding")

    def rule(F, p, ins, outs, og):
        return [None, F._embedding_rsp_grad(ins[0], og[0], input_dim=p.input_dim,
                                             output_dim=p.output_dim)]

    register(OpDef(
        "_contrib_SparseEmbedding", emb.compute, inputs=emb.inputs, params=emb.params,
        gradient=rule, save=("inputs",), infer_shape=emb.infer_shape, family="nn",
        doc="Embedding with a row_sparse weight gradient (only the looked-up rows)."))


_register_sparse_embedding()
