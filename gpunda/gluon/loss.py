"""Gluon losses (MXNet 1.x ``gluon.loss``).

Each loss is a HybridBlock returning one value per sample: the elementwise
loss, weighted by ``weight`` and an optional per-sample ``sample_weight``, then
averaged over every axis except ``batch_axis``.
"""
from __future__ import annotations

import math

from gpunda import ndarray as _ndmod
from gpunda import ndarray  # noqa: F401 -- a name MXNet's loss module has
from gpunda.base import GpundaError, GpundaValueError, numeric_types  # noqa: F401
from gpunda.util import is_np_array  # noqa: F401
from gpunda.gluon.block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "CTCLoss", "HuberLoss",
           "HingeLoss", "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss",
           "CosineEmbeddingLoss", "SDMLLoss"]


def _apply_weighting(F, loss, weight=None, sample_weight=None):
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, (int, float)):
            raise GpundaError(f"Loss: weight={weight!r} must be a number")
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    if F is _ndmod:
        if x.size != y.size:
            raise GpundaError(f"Loss: label of shape {tuple(x.shape)} has {x.size} elements but "
                              f"pred of shape {tuple(y.shape)} has {y.size}")
        return x.reshape(y.shape)
    return F.reshape_like(x, y)


class Loss(HybridBlock):
    """Base class: ``weight`` scales the loss, ``batch_axis`` is kept in the result."""

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self):
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def _mean(self, F, loss):
        return F.mean(loss, axis=self._batch_axis, exclude=True)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class L2Loss(Loss):
    """``weight/2 * (pred - label)**2`` averaged per sample."""

    def __init__(self, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(label - pred)
        loss = _apply_weighting(F, loss, self._weight / 2, sample_weight)
        return self._mean(F, loss)


class L1Loss(Loss):
    """``weight * |pred - label|`` averaged per sample."""

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross entropy; ``from_sigmoid=False`` takes logits (numerically stable form)."""

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred)
        if not self._from_sigmoid:
            # max(x, 0) - x*z + log(1 + exp(-|x|))
            softplus = F.Activation(-F.abs(pred), act_type="softrelu")
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus
            else:
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (softplus + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1.0 - pred + eps) * (1.0 - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight)
                         + F.log(1.0 - pred + eps) * (1.0 - label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Softmax cross entropy along ``axis``.

    ``sparse_label=True``: labels are class indices; otherwise distributions
    shaped like pred. ``from_logits=True``: pred already holds log-probabilities.
    """

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if F is _ndmod and self._sparse_label:
            n = pred.shape[self._axis] if pred.ndim else 0
            want = tuple(d for i, d in enumerate(pred.shape) if i != self._axis % pred.ndim)
            if label.size != int(_prod(want)):
                raise GpundaError(f"SoftmaxCrossEntropyLoss {self.name}: label of shape "
                                  f"{tuple(label.shape)} does not match pred of shape "
                                  f"{tuple(pred.shape)} ({n} classes on axis {self._axis}); "
                                  f"expected {want} class indices")
        if F is _ndmod and self._sparse_label and not self._from_logits and pred.ndim == 2 \
                and self._axis in (-1, 1) and self._batch_axis == 0 and self._weight is None \
                and sample_weight is None:
            # (batch, classes) logits: the composite below in one fused op
            return F._internal._softmax_ce_loss(pred, label)
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class KLDivLoss(Loss):
    """Kullback-Leibler divergence per sample; ``from_logits=True`` takes log-probabilities
    as pred."""

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        # summed over the non-batch axes (a divergence per sample), not averaged
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class HuberLoss(Loss):
    """``0.5/rho * d**2`` for ``|d| <= rho``, ``|d| - 0.5*rho`` beyond (d = pred - label)."""

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(loss))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` with labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.relu(self._margin - pred * label)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class SquaredHingeLoss(Loss):
    """``max(0, margin - pred * label)**2`` with labels in {-1, 1}."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        loss = F.square(F.relu(self._margin - pred * label))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))``; label_format 'signed' ({-1,1}) or 'binary' ({0,1})."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise GpundaValueError(f"LogisticLoss: label_format={label_format!r} must be "
                                   f"'signed' or 'binary'")
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred)
        if self._label_format == "binary":
            label = 2 * label - 1
        loss = F.relu(-pred * label) + F.Activation(-F.abs(-pred * label), act_type="softrelu")
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return self._mean(F, loss)


class CTCLoss(Loss):
    """Connectionist temporal classification loss (the CTCLoss op, blank = last class).

    Args:
        layout: 'NTC' or 'TNC', the axes of pred.
        label_layout: 'NT' or 'TN', the axes of label; label values are 0..C-2 padded
            with -1 unless label_lengths is given.
        weight: scales the loss.

    Forward: ``(pred, label, pred_lengths=None, label_lengths=None, sample_weight=None)``
    returns one loss per sequence.
    """

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        if layout not in ("NTC", "TNC"):
            raise ValueError(f"CTCLoss: only 'NTC' and 'TNC' layouts for pred are supported, "
                             f"got {layout!r}")
        if label_layout not in ("NT", "TN"):
            raise ValueError(f"CTCLoss: only 'NT' and 'TN' layouts for label are supported, "
                             f"got {label_layout!r}")
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None,
                       sample_weight=None):
        if self._layout == "NTC":
            pred = F.swapaxes(pred, 0, 1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, 0, 1)
        inputs = [pred, label] + [x for x in (pred_lengths, label_lengths) if x is not None]
        loss = F.CTCLoss(*inputs, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _apply_weighting(F, loss, self._weight, sample_weight)


class TripletLoss(Loss):
    """``max(0, |pred - positive|^2 - |pred - negative|^2 + margin)`` per sample."""

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative):
        positive = _reshape_like(F, positive, pred)
        negative = _reshape_like(F, negative, pred)
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred),
                     axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, None)


class PoissonNLLLoss(Loss):
    """Negative log likelihood of ``target`` under a Poisson distribution, averaged over
    every element (a single value).

    Args:
        from_logits: pred is ``log(rate)`` (loss ``exp(pred) - target * pred``); otherwise
            pred is the rate (``pred - target * log(pred + epsilon)``).
        compute_full: add Stirling's approximation of ``log(target!)`` for target > 1.
    """

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * target * math.pi)
            # only counted where target > 1 (log(target!) is 0 for 0 and 1)
            loss = loss + stirling * (target > 1)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """``1 - cos(input1, input2)`` for label 1 and ``max(0, cos - margin)`` for label -1,
    one value per sample (shape (N, 1))."""

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2)
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        same = F._equal_scalar(label, scalar=1.0)
        different = F._equal_scalar(label, scalar=-1.0)
        loss = (1 - cos_sim) * same + F.relu(different * (cos_sim - self._margin))
        return _apply_weighting(F, loss, self._weight, sample_weight)

    @staticmethod
    def _cosine_similarity(F, x, y, axis=-1):
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        return x_dot_y / F._maximum_scalar(x_norm * y_norm, scalar=1e-12)


class SDMLLoss(Loss):
    """Smoothed deep metric learning loss over a batch of aligned pairs (x1[i], x2[i]).

    Each row's softmax over negative squared distances to every x2 is pulled (by
    KL divergence) towards a smoothed identity: ``1 - smoothing_parameter`` on the
    matching pair, the rest spread over the other pairs. Returns one value per row.
    """

    def __init__(self, smoothing_parameter=0.3, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def _compute_distances(self, F, x1, x2):
        diffs = F.broadcast_sub(F.expand_dims(x1, 1), F.expand_dims(x2, 0))
        return F.sum(F.square(diffs), axis=2)

    def _compute_labels(self, F, batch_size):
        gold = F.eye(batch_size)
        return (gold * (1 - self.smoothing_parameter)
                + (1 - gold) * self.smoothing_parameter / (batch_size - 1))

    def hybrid_forward(self, F, x1, x2):
        if x1.shape != x2.shape or len(x1.shape) != 2:
            raise GpundaError(f"SDMLLoss: x1 and x2 must be 2-D of the same shape, got "
                              f"{tuple(x1.shape)} and {tuple(x2.shape)}")
        labels = self._compute_labels(F, x1.shape[0])
        distances = self._compute_distances(F, x1, x2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        return self.kl_loss(log_probabilities, labels.as_in_context(distances.context))
