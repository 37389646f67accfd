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


class _BinaryStats:
    """Confusion counts of a binary classifier, local and global."""

    _FIELDS = ("tp", "fp", "fn", "tn")

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred):
        p = host(pred)
        lab = host(label).astype("int32")
        pred_label = _np.argmax(p, axis=1)
        check_label_shapes(lab, p)
        if len(_np.unique(lab)) > 2:
            raise ValueError(f"{self.owner} currently only supports binary classification.")
        pred_true = pred_label == 1
        label_true = lab.reshape(pred_label.shape) == 1
        counts = {"tp": int((pred_true & label_true).sum()),
                  "fp": int((pred_true & ~label_true).sum()),
                  "fn": int((~pred_true & label_true).sum()),
                  "tn": int((~pred_true & ~label_true).sum())}
        for f, n in counts.items():
            self.local[f] += n
            self.glob[f] += n

    owner = "F1"

    def local_reset_stats(self):
        self.local = dict.fromkeys(self._FIELDS, 0)

    def reset_stats(self):
        self.local_reset_stats()
        self.glob = dict.fromkeys(self._FIELDS, 0)

    @staticmethod
    def total(c):
        return sum(c.values())

    @staticmethod
    def fscore(c):
        prec = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] > 0 else 0.0
        rec = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] > 0 else 0.0
        return 2 * prec * rec / (prec + rec) if prec + rec > 0 else 0.0

    @staticmethod
    def matthewscc(c):
        if not sum(c.values()):
            return 0.0
        tp, fp, fn, tn = (float(c[f]) for f in ("tp", "fp", "fn", "tn"))
        denom = 1.0
        for t in (tp + fp, tp + fn, tn + fp, tn + fn):
            if t != 0.0:    # a zero margin leaves the product, as MXNet does
                denom *= t
        return (tp * tn - fp * fn) / math.sqrt(denom)


class _BinaryMetric(EvalMetric):
    """F1 and MCC: 'macro' averages the per-update score, 'micro' scores all counts."""

    _score = None

    def __init__(self, name, output_names, label_names, average):
        self.average = average
        self._stats = _BinaryStats()
        self._stats.owner = type(self).__name__
        super().__init__(name=name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        st = self._stats
        for label, pred in zip(labels, preds):
            st.update_binary_stats(label, pred)
        if self.average == "macro":
            self.sum_metric += self._score(st.local)
            self.global_sum_metric += self._score(st.glob)
            self.num_inst += 1
            self.global_num_inst += 1
            st.reset_stats()
        else:
            self.sum_metric = self._score(st.local) * st.total(st.local)
            self.global_sum_metric = self._score(st.glob) * st.total(st.glob)
            self.num_inst = st.total(st.local)
            self.global_num_inst = st.total(st.glob)

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
    _score = staticmethod(_BinaryStats.fscore)

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)


@register
class MCC(_BinaryMetric):
    """Binary Matthews correlation coefficient of 2-D score predictions ('macro'/'micro')."""
    _score = staticmethod(_BinaryStats.matthewscc)

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
