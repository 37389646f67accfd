"""The machinery of ``mx.metric``: EvalMetric, the registry, create, CompositeEvalMetric,
CustomMetric and ``np``. The metrics themselves live in _metric_classification.py and
_metric_regression.py; ``gpunda.metric`` is the public face of all three.

A metric keeps a local accumulation (``sum_metric``/``num_inst``, cleared by
``reset_local``) and a global one (``global_*``, cleared only by ``reset``).
Values are computed on the host with NumPy, as MXNet's metrics do.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as _np

from gpunda import registry as _registry
from gpunda.base import GpundaAssertionError, numeric_types, string_types

__all__ = ["EvalMetric", "CompositeEvalMetric", "CustomMetric", "check_label_shapes",
           "create", "register", "alias", "np"]


def host(x):
    """``x`` (NDArray, NumPy array or scalar) as a NumPy array."""
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    return _np.asarray(x)


def as_list(x):
    """A list/tuple as a list; a single array as a one-element list."""
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raise ValueError unless labels and preds agree in count (``shape=True``: in shape).

    With ``wrap=True`` a single array on either side becomes a one-element list.
    """
    if shape:
        a, b = tuple(labels.shape), tuple(preds.shape)
    else:
        a, b = len(labels), len(preds)
    if a != b:
        raise ValueError(f"Shape of labels {a} does not match shape of predictions {b}")
    if wrap:
        labels, preds = as_list(labels), as_list(preds)
    return labels, preds


class EvalMetric:
    """Base class of the metrics.

    Args:
        name: the name ``get()`` reports.
        output_names, label_names: which entries ``update_dict`` reads.
        has_global_stats (keyword): keep the global accumulation apart from the local one.
    """

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
        config = dict(self._kwargs)
        config.update({"metric": type(self).__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label, pred):
        """``update`` from dicts name -> array, read by ``label_names``/``output_names``."""
        preds = ([pred[n] for n in self.output_names] if self.output_names is not None
                 else list(pred.values()))
        labels = ([label[n] for n in self.label_names] if self.label_names is not None
                  else list(label.values()))
        self.update(labels, preds)

    def update(self, labels, preds):
        """Accumulate one batch of labels and predictions."""
        raise NotImplementedError()

    def reset(self):
        """Clear the local and the global accumulation."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clear the local accumulation only (the global one keeps counting)."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _add(self, value, count):
        """Add ``value`` over ``count`` instances to both accumulations."""
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def get(self):
        """``(name, value)`` of the local accumulation; NaN before any update."""
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, self.sum_metric / self.num_inst

    def get_global(self):
        """``(name, value)`` since the last ``reset`` (the local value without global stats)."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, self.global_sum_metric / self.global_num_inst

    @staticmethod
    def _pairs(name, value):
        if not isinstance(name, list):
            name = [name]
        if not isinstance(value, list):
            value = [value]
        return list(zip(name, value))

    def get_name_value(self):
        """``[(name, value), ...]`` of the local accumulation."""
        return self._pairs(*self.get())

    def get_global_name_value(self):
        """``[(name, value), ...]`` since the last ``reset``."""
        if not self._has_global_stats:
            return self.get_name_value()
        return self._pairs(*self.get_global())


register = _registry.get_register_func(EvalMetric, "metric")
alias = _registry.get_alias_func(EvalMetric, "metric")
_create = _registry.get_create_func(EvalMetric, "metric")


def create(metric, *args, **kwargs):
    """A metric from a registered name or alias ('acc', 'ce', 'top_k_accuracy', ...), an
    EvalMetric (returned as is), a config dict or JSON string, a callable
    ``feval(label, pred)`` (a CustomMetric), or a list of any of these (a
    CompositeEvalMetric). ``args``/``kwargs`` go to the constructor(s).

    >>> create(["acc", "mse"]).get()
    (['accuracy', 'mse'], [nan, nan])
    """
    if isinstance(metric, type) and issubclass(metric, EvalMetric):
        return metric(*args, **kwargs)
    if callable(metric) and not isinstance(metric, EvalMetric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


def _flatten(results):
    names, values = [], []
    for name, value in results:
        names.extend([name] if isinstance(name, string_types) else name)
        values.extend([value] if isinstance(value, numeric_types) else value)
    return names, values


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` gives lists of names and values."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Add a child metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at ``index``."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise ValueError(f"Metric index {index} is out of range 0 and {len(self.metrics)}")
        return self.metrics[index]

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict(kv for kv in labels.items() if kv[0] in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict(kv for kv in preds.items() if kv[0] in self.output_names)
        for m in self.metrics:
            m.update_dict(labels, preds)

    def update(self, labels, preds):
        for m in self.metrics:
            m.update(labels, preds)

    def reset(self):
        # EvalMetric.__init__ resets before the children exist
        for m in getattr(self, "metrics", ()):
            m.reset()

    def reset_local(self):
        for m in self.metrics:
            m.reset_local()

    def get(self):
        return _flatten(m.get() for m in self.metrics)

    def get_global(self):
        return _flatten(m.get_global() for m in self.metrics)

    def get_config(self):
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


@register
class CustomMetric(EvalMetric):
    """A metric from ``feval(label, pred)`` on NumPy arrays returning a value (one
    instance) or ``(sum, count)``.

    Args:
        feval: the function; its ``__name__`` names the metric unless ``name`` is given
            (a lambda becomes ``custom(<lambda>)``).
        allow_extra_outputs: do not require as many predictions as labels.
    """

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = getattr(feval, "__name__", type(feval).__name__)
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        labels, preds = as_list(labels), as_list(preds)
        if not self._allow_extra_outputs:
            check_label_shapes(labels, preds)
        for pred, label in zip(preds, labels):
            result = self._feval(host(label), host(pred))
            if isinstance(result, tuple):
                self._add(result[0], result[1])
            else:
                self._add(result, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A CustomMetric from a NumPy function ``numpy_feval(label, pred)``.

    >>> m = np(lambda label, pred: float((label == pred).mean()), name="same")
    """
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)


def reject(cond, where, what):
    """Raise ``"<where>: <what>"`` when ``cond`` holds: MXNet asserts these, so the error is
    both a GpundaError and an AssertionError."""
    if cond:
        raise GpundaAssertionError(f"{where}: {what}")
