"""A fused softmax cross entropy for Gluon's SoftmaxCrossEntropyLoss on (batch, classes).

``_softmax_ce_loss(pred, label)`` is ``-pick(log_softmax(pred), label)`` per sample, the
value the loss's composite (log_softmax, pick, negative, mean over the size-1 axis)
gives, in one op instead of four: a training step's loss was a dozen small ops with
their bookkeeping. The plain backward is one kernel, ``(softmax(pred) - onehot) * g``;
under ``create_graph`` the same formula is written with differentiable ops.
Labels are class indices, clipped into range as ``pick``'s default mode does.
"""
from __future__ import annotations

from gpunda import autograd as _ag
from gpunda.base import GpundaError
from gpunda.ops.tensor.indexing import _fix_indices
from gpunda.ops.nn.basic import _softmax_core
from gpunda.ops.registry import OpDef, register


def _rows(xp, pred, label):
    """(row indices, class indices) of each sample's label, made integers and clipped
    into range as pick's default mode does."""
    N, C = pred.shape
    if label.size != N:
        raise GpundaError(f"Operator _softmax_ce_loss: label of shape {tuple(label.shape)} "
                          f"does not give one class per row of pred {tuple(pred.shape)}")
    return xp.arange(N), _fix_indices(xp, label.reshape(N), C, "clip", "_softmax_ce_loss")


def _softmax_ce_loss(xp, p, pred, label):
    if pred.ndim != 2:
        raise GpundaError(f"Operator _softmax_ce_loss: pred must be (batch, classes), got "
                          f"shape {tuple(pred.shape)}")
    if pred.shape[1] == 0:
        raise GpundaError("Operator _softmax_ce_loss: pred has no classes")
    rows, idx = _rows(xp, pred, label)
    return (-_softmax_core(xp, pred, 1, True)[rows, idx]).astype(pred.dtype, copy=False)


def _grad_softmax_ce_loss(F, p, ins, outs, og):
    pred, label, g = ins[0], ins[1], og[0]
    if isinstance(F, _ag._RawF):     # plain backward: one kernel on the backend arrays
        xp = F._xp
        rows, idx = _rows(xp, pred, label)
        d = xp.exp(_softmax_core(xp, pred, 1, True))
        d[rows, idx] -= 1
        d *= g.reshape(-1, 1)
        return [d.astype(pred.dtype, copy=False), None]
    soft = F.softmax(pred, axis=1)
    hit = F._pick_backward(g, label, shape=pred.shape, axis=1, mode="clip")
    return [F.broadcast_mul(soft, F.reshape(g, shape=(-1, 1))) - hit, None]


register(OpDef(
    "_softmax_ce_loss", _softmax_ce_loss, inputs=("data", "label"), params=[],
    gradient=_grad_softmax_ce_loss, save=("inputs",), hidden=True, family="nn",
    infer_shape=lambda p, s: (list(s), None if s[0] is None else [s[0][:1]]),
    doc="Per-sample softmax cross entropy of (batch, classes) logits and class labels."))
