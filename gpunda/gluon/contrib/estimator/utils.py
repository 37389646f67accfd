"""Helpers of the Estimator: metric checks and the default metric for a loss."""
from __future__ import annotations

from gpunda.metric import Accuracy, CompositeEvalMetric, EvalMetric
from gpunda.gluon.loss import SoftmaxCrossEntropyLoss


def _check_metrics(metrics):
    """``metrics`` (a metric, a CompositeEvalMetric, a list or None) as a flat list."""
    if isinstance(metrics, CompositeEvalMetric):
        return [m for child in metrics.metrics for m in _check_metrics(child)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    metrics = list(metrics or [])
    if not all(isinstance(m, EvalMetric) for m in metrics):
        raise ValueError(f"metrics must be a Metric or a list of Metric, refer to "
                         f"mxnet.metric.EvalMetric: {metrics}")
    return metrics


def _check_handler_metric_ref(handler, known_metrics):
    """Raise unless every metric a handler holds (attributes named ``*metric*``) is one of
    ``known_metrics`` (the estimator's own train and validation metrics)."""
    for attribute in dir(handler):
        # MXNet looks at 'metric' attributes only (its list reads ['metric' or 'monitor'])
        if "metric" not in attribute:
            continue
        reference = getattr(handler, attribute)
        if not reference:
            continue
        for metric in reference if isinstance(reference, list) else [reference]:
            _check_metric_known(handler, metric, known_metrics)


def _check_metric_known(handler, metric, known_metrics):
    if metric not in known_metrics:
        raise ValueError(f"Event handler {type(handler).__name__} refers to a metric instance "
                         f"{metric} outside of the known training and validation metrics. "
                         f"Please use the metrics from estimator.train_metrics and "
                         f"estimator.val_metrics instead.")


def _suggest_metric_for_loss(loss):
    """Accuracy for a softmax cross-entropy loss, None otherwise."""
    if isinstance(loss, SoftmaxCrossEntropyLoss):
        return Accuracy()
    return None
