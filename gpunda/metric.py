"""Evaluation metrics (MXNet 1.x ``mx.metric``).

A metric accumulates ``update(labels, preds)`` (lists of NDArrays, or single
arrays) and reports ``get() -> (name, value)``; ``get_global()`` covers everything
since ``reset()`` while ``reset_local()`` restarts only the local value. Metrics
are made by name with ``create('acc')``, and ``register``/``alias`` add new ones.
The code lives in _lib/metric_base.py (the machinery), _lib/metric_classification.py and
_lib/metric_regression.py.
"""
from __future__ import annotations

from gpunda import ndarray, registry  # noqa: F401 -- module names MXNet's metric module has
from gpunda.base import numeric_types, string_types  # noqa: F401
from gpunda._lib.metric_base import (EvalMetric, CompositeEvalMetric, CustomMetric, check_label_shapes,
                           create, register, alias, np)
from gpunda._lib.metric_classification import (Accuracy, TopKAccuracy, F1, MCC, PCC,
                                               _BinaryClassificationMetrics)
from gpunda._lib.metric_regression import (MAE, MSE, RMSE, CrossEntropy, NegativeLogLikelihood,
                                 Perplexity, PearsonCorrelation, Loss, Torch, Caffe)

__all__ = ["EvalMetric", "CompositeEvalMetric", "CustomMetric", "check_label_shapes", "create",
           "register", "alias", "np", "Accuracy", "TopKAccuracy", "F1", "MCC", "PCC", "MAE",
           "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood", "Perplexity",
           "PearsonCorrelation", "Loss", "Torch", "Caffe"]

# the __future__ import binds `annotations`; MXNet's namespace has no such name (dir())
del annotations
