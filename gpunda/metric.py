"""Evaluation metrics (MXNet 1.x ``mx.metric``): Accuracy, TopKAccuracy, Loss, MSE, ...

A metric accumulates ``update(labels, preds)`` calls (lists of NDArrays or
NumPy arrays) and reports ``get() -> (name, value)``. Values are computed on
the host with NumPy.
"""
from __future__ import annotations

import numpy as _np

from .base import GpundaError

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "Loss", "MSE",
           "MAE", "RMSE", "CrossEntropy", "F1", "CustomMetric", "create", "register", "np"]

_REGISTRY = {}


def register(klass, *aliases):
    """Make a metric class creatable by its lower-case name (and ``aliases``)."""
    _REGISTRY[klass.__name__.lower()] = klass
    for a in aliases:
        _REGISTRY[a.lower()] = klass
    return klass


def alias(*aliases):
    """Class decorator registering ``aliases`` for a metric."""
    def reg(klass):
        for a in aliases:
            _REGISTRY[a.lower()] = klass
        return klass
    return reg


def create(metric, *args, **kwargs):
    """A metric from a name ('acc', 'top_k_accuracy', 'loss', 'mse', ...), an instance,
    a callable ``f(label, pred)`` or a list of these (a CompositeEvalMetric)."""
    if callable(metric) and not isinstance(metric, (EvalMetric, type)):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, EvalMetric):
        return metric
    if isinstance(metric, list):
        comp = CompositeEvalMetric()
        for m in metric:
            comp.add(create(m, *args, **kwargs))
        return comp
    if isinstance(metric, str):
        klass = _REGISTRY.get(metric.lower())
        if klass is None:
            raise GpundaError(f"metric.create: unknown metric {metric!r}; known: "
                              f"{', '.join(sorted(_REGISTRY))}")
        return klass(*args, **kwargs)
    raise GpundaError(f"metric.create: metric={metric!r} must be a name, an EvalMetric, a "
                      f"callable or a list")


def _host(x):
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    return _np.asarray(x)


def _as_list(x):
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raise unless labels and preds agree in count (or in shape with ``shape=True``)."""
    if not shape:
        a, b = len(labels), len(preds)
    else:
        a, b = labels.shape, preds.shape
    if a != b:
        raise GpundaError(f"metric: shape of labels {a} does not match shape of predictions {b}")
    if wrap:
        return _as_list(labels), _as_list(preds)
    return labels, preds


class EvalMetric:
    """Base class: keeps ``sum_metric`` and ``num_inst`` (local and global)."""

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self):
        """The arguments that recreate this metric with ``create``."""
        cfg = dict(self._kwargs)
        cfg.update({"metric": type(self).__name__, "name": self.name,
                    "output_names": self.output_names, "label_names": self.label_names})
        return cfg

    def update_dict(self, label, pred):
        """``update`` from dicts of name -> array (selected by output/label names)."""
        preds = [pred[n] for n in self.output_names] if self.output_names is not None else list(pred.values())
        labels = [label[n] for n in self.label_names] if self.label_names is not None else list(label.values())
        self.update(labels, preds)

    def update(self, labels, preds):
        """Accumulate one batch."""
        raise NotImplementedError

    def reset(self):
        """Forget everything accumulated."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Forget the local (since last reset_local) accumulation only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _add(self, value, n):
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += n
        self.global_num_inst += n

    def get(self):
        """``(name, value)``; value is NaN before any update."""
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, self.sum_metric / self.num_inst

    def get_global(self):
        """``(name, value)`` over everything since ``reset``."""
        if self._has_global_stats:
            if self.global_num_inst == 0:
                return self.name, float("nan")
            return self.name, self.global_sum_metric / self.global_num_inst
        return self.get()

    def get_name_value(self):
        """``[(name, value)]``."""
        name, value = self.get()
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))

    def get_global_name_value(self):
        """``[(name, value)]`` over everything since ``reset``."""
        name, value = self.get_global()
        if not isinstance(name, list):
            name, value = [name], [value]
        return list(zip(name, value))


class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def add(self, metric):
        """Add a metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at ``index``."""
        if not 0 <= index < len(self.metrics):
            raise GpundaError(f"CompositeEvalMetric: metric index {index} is out of range "
                              f"0..{len(self.metrics) - 1}")
        return self.metrics[index]

    def update(self, labels, preds):
        for m in self.metrics:
            m.update(labels, preds)

    def reset(self):
        for m in getattr(self, "metrics", []):
            m.reset()
        super().reset()

    def reset_local(self):
        for m in self.metrics:
            m.reset_local()

    def get(self):
        names, values = [], []
        for m in self.metrics:
            n, v = m.get()
            names.extend(_as_list(n))
            values.extend(_as_list(v))
        return names, values

    def get_global(self):
        names, values = [], []
        for m in self.metrics:
            n, v = m.get_global()
            names.extend(_as_list(n))
            values.extend(_as_list(v))
        return names, values


@alias("acc")
class Accuracy(EvalMetric):
    """Fraction of predictions equal to the label (argmax over ``axis`` when pred has scores)."""

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(_as_list(labels), _as_list(preds), True)
        for label, pred in zip(labels, preds):
            p = _host(pred)
            lab = _host(label)
            if p.shape != lab.shape:
                p = _np.argmax(p, axis=self.axis)
            p = p.astype("int64").ravel()
            lab = lab.astype("int64").ravel()
            if p.size != lab.size:
                raise GpundaError(f"Accuracy: {lab.size} labels but {p.size} predictions")
            self._add(float((p == lab).sum()), p.size)


register(Accuracy)


@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the ``top_k`` highest scores."""

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        if top_k < 1:
            raise GpundaError(f"TopKAccuracy: top_k={top_k!r} must be >= 1")
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        self.name += f"_{top_k}"

    def update(self, labels, preds):
        labels, preds = check_label_shapes(_as_list(labels), _as_list(preds), True)
        for label, pred in zip(labels, preds):
            p = _host(pred).astype("float32")
            lab = _host(label).astype("int64").ravel()
            if p.ndim == 1:
                self._add(float((p.astype("int64") == lab).sum()), lab.size)
                continue
            if p.ndim != 2:
                raise GpundaError(f"TopKAccuracy: predictions must be 1-D or 2-D, got shape "
                                  f"{p.shape}")
            k = min(self.top_k, p.shape[1])
            top = _np.argsort(-p, axis=1, kind="stable")[:, :k]
            self._add(float((top == lab[:, None]).any(axis=1).sum()), lab.size)


register(TopKAccuracy)


class Loss(EvalMetric):
    """Mean of the values given as predictions (labels are ignored)."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        for pred in _as_list(preds):
            p = _host(pred)
            self._add(float(p.sum()), p.size)


register(Loss)


class _Regression(EvalMetric):
    """Per-batch error between labels and predictions (both made 2-D), averaged over batches."""

    def __init__(self, name, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(_as_list(labels), _as_list(preds), True)
        for label, pred in zip(labels, preds):
            lab, p = _host(label), _host(pred)
            if lab.ndim == 1:
                lab = lab.reshape(-1, 1)
            if p.ndim == 1:
                p = p.reshape(-1, 1)
            self._add(float(self._batch_error(lab, p)), 1)


class MSE(_Regression):
    """Mean squared error."""

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_error(lab, p):
        return ((lab - p) ** 2.0).mean()


register(MSE)


class MAE(_Regression):
    """Mean absolute error."""

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_error(lab, p):
        return _np.abs(lab - p).mean()


register(MAE)


class RMSE(MSE):
    """Root of the mean squared error (per batch, averaged)."""

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)

    @staticmethod
    def _batch_error(lab, p):
        return _np.sqrt(((lab - p) ** 2.0).mean())


register(RMSE)


@alias("ce")
class CrossEntropy(EvalMetric):
    """Mean of ``-log(p[label])`` for probability predictions."""

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(_as_list(labels), _as_list(preds), True)
        for label, pred in zip(labels, preds):
            lab = _host(label).ravel().astype("int64")
            p = _host(pred)
            if p.shape[0] != lab.shape[0]:
                raise GpundaError(f"CrossEntropy: {lab.shape[0]} labels but {p.shape[0]} "
                                  f"predictions")
            prob = p[_np.arange(lab.shape[0]), lab]
            self._add(float((-_np.log(prob + self.eps)).sum()), lab.shape[0])


register(CrossEntropy)


class F1(EvalMetric):
    """Binary F1 score (positive class 1) over the batches seen."""

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        self._tp = self._fp = self._fn = 0
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.average = average

    def update(self, labels, preds):
        labels, preds = check_label_shapes(_as_list(labels), _as_list(preds), True)
        for label, pred in zip(labels, preds):
            p = _host(pred)
            lab = _host(label).ravel().astype("int64")
            p = (_np.argmax(p, axis=1) if p.ndim == 2 else (p > 0.5)).astype("int64").ravel()
            self._tp += int(((p == 1) & (lab == 1)).sum())
            self._fp += int(((p == 1) & (lab == 0)).sum())
            self._fn += int(((p == 0) & (lab == 1)).sum())
            self.num_inst += 1

    def reset(self):
        super().reset()
        self._tp = self._fp = self._fn = 0

    def get(self):
        if self.num_inst == 0:
            return self.name, float("nan")
        prec = self._tp / (self._tp + self._fp) if self._tp + self._fp else 0.0
        rec = self._tp / (self._tp + self._fn) if self._tp + self._fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        return self.name, f1


register(F1)


class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred) -> value`` (or ``(sum, count)``) on NumPy arrays."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = getattr(feval, "__name__", "custom")
            if name.find("<") != -1:
                name = f"custom({name})"
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        labels, preds = _as_list(labels), _as_list(preds)
        if not self._allow_extra_outputs:
            check_label_shapes(labels, preds)
        for label, pred in zip(labels, preds):
            r = self._feval(_host(label), _host(pred))
            if isinstance(r, tuple):
                s, n = r
                self._add(float(s), n)
            else:
                self._add(float(r), 1)


def np(numpy_feval, name=None, allow_extra_outputs=False):  # noqa: F811 -- MXNet's name
    """A CustomMetric from a NumPy function ``f(label, pred)``."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)

