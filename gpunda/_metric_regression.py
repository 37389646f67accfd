"""Regression, probability and loss metrics of ``mx.metric``: MAE, MSE, RMSE,
CrossEntropy, NegativeLogLikelihood, Perplexity, PearsonCorrelation, Loss (Torch, Caffe)."""
from __future__ import annotations

import math

import numpy as _np

from gpunda._lib.metric_base import EvalMetric, alias, as_list, check_label_shapes, host, register, reject

__all__ = ["MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "Perplexity",
           "PearsonCorrelation", "Loss", "Torch", "Caffe"]


class _PerBatchError(EvalMetric):
    """An error computed per (label, pred) pair, both made 2-D, averaged over pairs."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            lab, p = host(label), host(pred)
            if lab.ndim == 1:
                lab = lab.reshape(lab.shape[0], 1)
            if p.ndim == 1:
                p = p.reshape(p.shape[0], 1)
            self._add(self._error(lab, p), 1)


@register
class MAE(_PerBatchError):
    """Mean absolute error, per batch, averaged over batches."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(lab, p):
        return _np.abs(lab - p).mean()


@register
class MSE(_PerBatchError):
    """Mean squared error, per batch, averaged over batches."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(lab, p):
        return ((lab - p) ** 2.0).mean()


@register
class RMSE(_PerBatchError):
    """Root mean squared error, per batch, averaged over batches."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(lab, p):
        return _np.sqrt(((lab - p) ** 2.0).mean())


class _PickedLogLoss(EvalMetric):
    """Mean of ``-log(pred[i, label[i]] + eps)`` over the samples."""

    def __init__(self, eps, name, output_names, label_names):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            lab = host(label).ravel()
            p = host(pred)
            n = p.shape[0]
            reject(lab.shape[0] != n, type(self).__name__,
                   f"{lab.shape[0]} labels but {n} predictions")
            prob = p[_np.arange(n, dtype=_np.int64), lab.astype(_np.int64)]
            self._add((-_np.log(prob + self.eps)).sum(), n)


@register
@alias("ce")
class CrossEntropy(_PickedLogLoss):
    """Cross entropy of probability predictions (N, C) against class labels (N,)."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_PickedLogLoss):
    """Negative log likelihood of probability predictions (N, C) against labels (N,)."""

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
class Perplexity(EvalMetric):
    """``exp`` of the mean negative log probability of the labels.

    Args:
        ignore_label: a label value left out of the count (None: keep all).
        axis: the class axis of the predictions.
    """

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        reject(len(labels) != len(preds), "Perplexity",
               f"{len(labels)} labels but {len(preds)} predictions")
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            lab, p = host(label), host(pred)
            reject(lab.size * p.shape[self.axis] != p.size, "Perplexity",
                   f"shape mismatch: {lab.shape} vs. {p.shape}")
            lab = lab.reshape(lab.size)
            scores = _np.moveaxis(p, self.axis, -1)
            scores = scores.reshape(-1, scores.shape[-1])
            # pick() clips out-of-range class indices
            idx = _np.clip(lab.astype(_np.int64), 0, scores.shape[1] - 1)
            picked = scores[_np.arange(scores.shape[0]), idx]
            if self.ignore_label is not None:
                ignore = (lab == self.ignore_label).astype(picked.dtype)
                num -= int(ignore.sum())
                picked = picked * (1 - ignore) + ignore
            loss -= float(_np.log(_np.maximum(picked.dtype.type(1e-10), picked)).sum())
            num += picked.size
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.sum_metric / self.num_inst)

    def get_global(self):
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, math.exp(self.global_sum_metric / self.global_num_inst)


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels.

    Args:
        average: 'macro' averages the per-batch coefficients; 'micro' keeps running
            means, variances and covariance over every value seen.
    """

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        if self.average == "micro":
            self.reset_micro()

    def reset_micro(self):
        """Clear the running moments of the 'micro' average."""
        self._sse_p = self._mean_p = self._sse_l = self._mean_l = 0
        self._pred_nums = self._label_nums = 0
        self._conv = 0

    def reset(self):
        super().reset()
        if self.average == "micro":
            self.reset_micro()

    @staticmethod
    def update_variance(new_values, *aggregate):
        """Welford-style batch update of ``(count, mean, sum of squared deviations)``."""
        count, mean, m_2 = aggregate
        count += len(new_values)
        delta = new_values - mean
        mean += _np.sum(delta / count)
        m_2 += _np.sum(delta * (new_values - mean))
        return count, mean, m_2

    def update_cov(self, label, pred):
        """Add this batch's co-moment (label about its new mean, pred about its old one)."""
        self._conv = self._conv + _np.sum((label - self._mean_l) * (pred - self._mean_p))

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            lab = host(label).ravel().astype(_np.float64)
            p = host(pred).ravel().astype(_np.float64)
            if self.average == "macro":
                self._add(_np.corrcoef(p, lab)[0, 1], 1)
                continue
            self.num_inst += 1
            self.global_num_inst += 1
            self._label_nums, self._mean_l, self._sse_l = self.update_variance(
                lab, self._label_nums, self._mean_l, self._sse_l)
            self.update_cov(lab, p)
            self._pred_nums, self._mean_p, self._sse_p = self.update_variance(
                p, self._pred_nums, self._mean_p, self._sse_p)

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        if self.average == "macro":
            return self.name, self.sum_metric / self.num_inst
        n = self._label_nums
        denom = (n - 1) * _np.sqrt(self._sse_p / (n - 1)) * _np.sqrt(self._sse_l / (n - 1))
        return self.name, self._conv / denom


@register
class Loss(EvalMetric):
    """Mean of the values given as predictions (a loss output); labels are ignored."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        for pred in as_list(preds):
            p = host(pred)
            self._add(p.sum().item(), p.size)


@register
class Torch(Loss):
    """A Loss named 'torch' (MXNet's name for outputs of Torch modules)."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """A Loss named 'caffe' (MXNet's name for outputs of Caffe layers)."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)
