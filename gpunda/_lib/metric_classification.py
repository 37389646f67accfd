"""Classification metrics of ``mx.metric``: Accuracy, TopKAccuracy, F1, MCC, PCC."""
from __future__ import annotations

import math

import numpy as _np

from gpunda._lib.metric_base import EvalMetric, alias, check_label_shapes, host, register, reject

__all__ = ["Accuracy", "TopKAccuracy", "F1", "MCC", "PCC"]


@register
@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of predictions equal to the label; scores are reduced by argmax over
    ``axis`` when pred and label shapes differ."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            p, lab = host(pred), host(label)
            if p.shape != lab.shape:
                p = _np.argmax(p, axis=self.axis)
            p = p.astype("int32").ravel()
            lab = lab.astype("int32").ravel()
            check_label_shapes(lab, p)
            self._add(int((p == lab).sum()), len(p))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` (> 1) highest scores."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        reject(not self.top_k > 1, "TopKAccuracy",
               f"top_k={top_k!r}: use Accuracy if top_k is no more than 1")
        self.name += f"_{self.top_k}"

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            p = host(pred).astype("float32")
            reject(p.ndim > 2, "TopKAccuracy", f"predictions of shape {p.shape} have more "
                   f"than 2 dims")
            order = _np.argpartition(p, -self.top_k)
            lab = host(label).astype("int32")
            check_label_shapes(lab, order)
            if order.ndim == 1:
                # MXNet compares the partition order of a 1-D score vector with the labels
                self._add(int((order.ravel() == lab.ravel()).sum()), order.shape[0])
                continue
            classes = order.shape[1]
            k = min(classes, self.top_k)
            top = order[:, classes - k:]
            self._add(int((top == lab.reshape(-1, 1)).sum()), order.shape[0])


class _BinaryClassificationMetrics:
    """Confusion counts of a binary classifier (class 1 positive), local and global, and the
    scores F1 and MCC read from them (MXNet's helper of the same name)."""

    _COUNTS = ("true_positives", "false_positives", "false_negatives", "true_negatives")

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred):
        """Add the counts of one (label, pred) pair: ``pred`` holds scores per class
        (argmax over axis 1), ``label`` the classes 0/1."""
        p = host(pred)
        lab = host(label).astype("int32")
        pred_label = _np.argmax(p, axis=1)
        check_label_shapes(lab, p)
        if len(_np.unique(lab)) > 2:
            raise ValueError(f"{self.owner} currently only supports binary classification.")
        pred_true = pred_label == 1
        label_true = lab.reshape(pred_label.shape) == 1
        counts = (int((pred_true & label_true).sum()), int((pred_true & ~label_true).sum()),
                  int((~pred_true & label_true).sum()), int((~pred_true & ~label_true).sum()))
        for field, n in zip(self._COUNTS, counts):
            setattr(self, field, getattr(self, field) + n)
            setattr(self, "global_" + field, getattr(self, "global_" + field) + n)

    owner = "_BinaryClassificationMetrics"     # the name errors give (F1 and MCC set theirs)

    def _counts(self, use_global):
        pre = "global_" if use_global else ""
        return tuple(getattr(self, pre + f) for f in self._COUNTS)

    @staticmethod
    def _ratio(num, other):
        return float(num) / (num + other) if num + other > 0 else 0.

    @property
    def precision(self):
        return self._ratio(self.true_positives, self.false_positives)

    @property
    def global_precision(self):
        return self._ratio(self.global_true_positives, self.global_false_positives)

    @property
    def recall(self):
        return self._ratio(self.true_positives, self.false_negatives)

    @property
    def global_recall(self):
        return self._ratio(self.global_true_positives, self.global_false_negatives)

    @staticmethod
    def _f(prec, rec):
        return 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.

    @property
    def fscore(self):
        return self._f(self.precision, self.recall)

    @property
    def global_fscore(self):
        return self._f(self.global_precision, self.global_recall)

    def matthewscc(self, use_global=False):
        """Matthews correlation coefficient of the local (or global) counts."""
        tp, fp, fn, tn = (float(c) for c in self._counts(use_global))
        if not tp + fp + fn + tn:
            return 0.
        denom = 1.
        for t in (tp + fp, tp + fn, tn + fp, tn + fn):
            if t != 0.:     # a zero margin leaves the product, as MXNet does
                denom *= t
        return (tp * tn - fp * fn) / math.sqrt(denom)

    @property
    def total_examples(self):
        return sum(self._counts(False))

    @property
    def global_total_examples(self):
        return sum(self._counts(True))

    def local_reset_stats(self):
        for f in self._COUNTS:
            setattr(self, f, 0)

    def reset_stats(self):
        self.local_reset_stats()
        for f in self._COUNTS:
            setattr(self, "global_" + f, 0)


class _BinaryMetric(EvalMetric):
    """F1 and MCC: 'macro' averages the per-update score, 'micro' scores all counts. The
    counts live in a _BinaryClassificationMetrics under MXNet's attribute name
    (``metrics`` on F1, ``_metrics`` on MCC)."""

    _stats_attr = None

    def __init__(self, name, output_names, label_names, average):
        self.average = average
        stats = _BinaryClassificationMetrics()
        stats.owner = type(self).__name__
        setattr(self, self._stats_attr, stats)
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    @property
    def _stats(self):
        return getattr(self, self._stats_attr)

    def _score(self, stats, use_global):
        raise NotImplementedError

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        st = self._stats
        for label, pred in zip(labels, preds):
            st.update_binary_stats(label, pred)
        if self.average == "macro":
            self.sum_metric += self._score(st, False)
            self.global_sum_metric += self._score(st, True)
            self.num_inst += 1
            self.global_num_inst += 1
            st.reset_stats()
        else:
            self.sum_metric = self._score(st, False) * st.total_examples
            self.global_sum_metric = self._score(st, True) * st.global_total_examples
            self.num_inst = st.total_examples
            self.global_num_inst = st.global_total_examples

    def reset(self):
        super().reset()
        self._stats.reset_stats()

    def reset_local(self):
        super().reset_local()
        self._stats.local_reset_stats()


@register
class F1(_BinaryMetric):
    """Binary F1 score (class 1 positive) of 2-D score predictions.

    Args:
        average: 'macro' (mean of the per-update scores) or 'micro' (over all counts).
    """
    _stats_attr = "metrics"

    def _score(self, stats, use_global):
        return stats.global_fscore if use_global else stats.fscore

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@register
class MCC(_BinaryMetric):
    """Binary Matthews correlation coefficient of 2-D score predictions ('macro'/'micro')."""
    _stats_attr = "_metrics"

    def _score(self, stats, use_global):
        return stats.matthewscc(use_global)

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


def _multiclass_mcc(cmat):
    n = cmat.sum()
    x = cmat.sum(axis=1)
    y = cmat.sum(axis=0)
    cov_xx = _np.sum(x * (n - x))
    cov_yy = _np.sum(y * (n - y))
    if cov_xx == 0 or cov_yy == 0:
        return float("nan")
    cov_xy = _np.sum(cmat.diagonal() * n - x * y)
    return cov_xy / (cov_xx * cov_yy) ** 0.5


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation (Pearson correlation of the one-hot label and
    prediction) from a confusion matrix that grows with the classes seen."""

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, inc):
        pad = ((0, inc), (0, inc))
        self.lcm = _np.pad(self.lcm, pad, "constant", constant_values=0)
        self.gcm = _np.pad(self.gcm, pad, "constant", constant_values=0)
        self.k += inc

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            lab = host(label).astype("int32")
            p = host(pred)
            p = p.argmax(axis=1) if p.shape != lab.shape else p.astype("int32")
            n = int(max(p.max(), lab.max()))
            if n >= self.k:
                self._grow(n + 1 - self.k)
            batch = _np.zeros((self.k, self.k))
            _np.add.at(batch, (p.ravel(), lab.ravel()), 1)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return _multiclass_mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self):
        return _multiclass_mcc(self.gcm) * self.global_num_inst

    def reset(self):
        self.global_num_inst = 0.0
        self.gcm = _np.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0.0
        self.lcm = _np.zeros((self.k, self.k))
