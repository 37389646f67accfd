"""Estimator: fit and evaluate a Gluon network with event handlers."""
from __future__ import annotations

import copy
import logging
import sys
import warnings

from gpunda.base import GpundaAssertionError, GpundaError
from gpunda.context import Context, cpu, gpu, num_gpus
from gpunda.metric import Loss as metric_loss
from gpunda.gluon.data import DataLoader
from gpunda.gluon.loss import Loss as gluon_loss
from gpunda.gluon.trainer import Trainer
from gpunda.gluon.contrib.estimator.batch_processor import BatchProcessor
from gpunda.gluon.contrib.estimator.event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, GradientUpdateHandler,
                            LoggingHandler, MetricHandler, StoppingHandler, TrainBegin,
                            TrainEnd, ValidationHandler, _check_event_handlers)
from gpunda.gluon.contrib.estimator.utils import _check_handler_metric_ref, _check_metrics, _suggest_metric_for_loss

__all__ = ["Estimator"]

_EVENTS = (("train_begin", TrainBegin), ("epoch_begin", EpochBegin),
           ("batch_begin", BatchBegin), ("batch_end", BatchEnd), ("epoch_end", EpochEnd),
           ("train_end", TrainEnd))


class Estimator:
    """Trains ``net`` with ``loss``: ``fit`` over a DataLoader, ``evaluate`` on another.

    Args:
        net: the Block to train (initialised here with ``initializer`` unless it already is).
        loss: a ``gluon.loss.Loss``.
        train_metrics, val_metrics: metrics (default: Accuracy for softmax cross entropy,
            plus the loss itself); names get a 'training '/'validation ' prefix.
        initializer: the initializer for an uninitialised net.
        trainer: a ``gluon.Trainer`` (default: SGD, learning rate 0.001).
        context: a Context or a list of them; batches are split across the list.
        val_net, val_loss: what ``evaluate`` runs (default: net and loss).
        batch_processor: an object with ``fit_batch``/``evaluate_batch`` (default
            BatchProcessor).

    The ``logger`` (a ``logging.Logger`` writing INFO and above to stdout) carries every
    message of the estimator and its handlers.
    """

    logger = None

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None,
                 trainer=None, context=None, val_net=None, val_loss=None, batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch = self.max_batch = None
        self.batch_axis = 0

    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, gluon_loss):
            raise ValueError(f"loss must be a Loss, refer to gluon.loss.Loss:{loss}")
        return loss

    @staticmethod
    def _check_context(context):
        gpus = num_gpus()
        available = [gpu(i) for i in range(gpus)]
        if context:
            if isinstance(context, Context):
                context = [context]
            elif not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
                raise ValueError(f"context must be a Context or a list of Context, for example "
                                 f"mx.cpu() or [mx.gpu(0), mx.gpu(1)], refer to mxnet.Context:"
                                 f"{context}")
            for ctx in context:
                if ctx not in available and ctx.device_type != "cpu":
                    raise GpundaAssertionError(f"Estimator: context {ctx} is not available, please make "
                                      f"sure your context is in one of: mx.cpu(), "
                                      f"{', '.join(str(c) for c in available)}")
            return context
        if gpus > 1:
            warnings.warn("You have multiple GPUs, gpu(0) will be used by default.To utilize "
                          "all your GPUs, specify context as a list of gpus, e.g. "
                          "context=[mx.gpu(0), mx.gpu(1)] ")
        return [gpu(0)] if gpus > 0 else [cpu()]

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not (callable(getattr(batch_processor, "fit_batch", None))
                and callable(getattr(batch_processor, "evaluate_batch", None))):
            raise ValueError("Customized Batch Processor must contain fit_batch() and "
                             "evaluate_batch() methods")
        return batch_processor

    def _is_initialized(self):
        for param in self.net.collect_params().values():
            try:
                param.list_ctx()
            except (GpundaError, RuntimeError):
                return False
        return True

    def _initialize(self, initializer):
        if not self._is_initialized():
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. You "
                          "don't need to pass initializer if you already initialized your net. "
                          "You can use net.initialize(init=your_initializer, "
                          "force_reinit=True)to force re-initialize.")

    def _check_trainer(self, trainer):
        if not trainer:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate "
                          "0.001 is used.")
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError(f"Trainer must be a Gluon Trainer instance, refer to "
                             f"gluon.Trainer:{trainer}")
        return trainer

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        return BatchProcessor()._get_data_and_label(batch, ctx, batch_axis)

    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            self._train_metrics.append(metric_loss(self.loss.name.rstrip("1234567890")))
        for metric in self._train_metrics:
            metric.name = "training " + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(m) for m in self._train_metrics]
        for metric in self._val_metrics:
            if "training" in metric.name:
                metric.name = metric.name.replace("training", "validation")
            else:
                metric.name = "validation " + metric.name

    @property
    def train_metrics(self):
        """The training metrics (names prefixed 'training ')."""
        return self._train_metrics

    @property
    def val_metrics(self):
        """The validation metrics (names prefixed 'validation ')."""
        return self._val_metrics

    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """Run ``val_net``/``val_loss`` over ``val_data`` (a DataLoader) and update the
        validation metrics (through a MetricHandler, added unless given)."""
        if not isinstance(val_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. "
                             "Alternatively, you can transform your DataIter or any NDArray "
                             "into Gluon DataLoader. Refer to gluon.data.DataLoader")
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._categorize_handlers(
            self._prepare_default_validation_handlers(event_handlers))
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = handlers
        for h in epoch_begin:
            h.epoch_begin(self)
        for batch in val_data:
            for h in batch_begin:
                h.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for h in batch_end:
                h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for h in epoch_end:
            h.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None,
            batch_axis=0):
        """Train on ``train_data`` (a DataLoader) for ``epochs`` epochs or ``batches``
        batches (exactly one of them), validating on ``val_data`` after every epoch.

        ``event_handlers`` are added to the defaults (StoppingHandler, and unless one of
        the kind is given: GradientUpdateHandler, MetricHandler, ValidationHandler when
        there is val_data, LoggingHandler), all sorted by priority.
        """
        if not isinstance(train_data, DataLoader):
            raise ValueError("Estimator only support input as Gluon DataLoader. "
                             "Alternatively, you can transform your DataIter or any NDArray "
                             "into Gluon DataLoader. Refer to gluon.data.dataloader")
        if (not epochs) == (not batches):
            raise ValueError("Fit only support exactly one type of iteration, train by number "
                             "of epochs or number of batches.Please specify one and only one "
                             "of: epochs or batches.")
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(handlers)
        for h in train_begin:
            h.train_begin(self)
        while True:
            for h in epoch_begin:
                h.epoch_begin(self)
            for batch in train_data:
                for h in batch_begin:
                    h.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                # every handler sees the batch, then any of them may stop the epoch
                stops = [h.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                         for h in batch_end]
                if any(stops):
                    break
            stops = [h.epoch_end(self) for h in epoch_end]
            if any(stops):
                break
        for h in train_end:
            h.train_end(self)

    @staticmethod
    def _add_defaults(event_handlers, defaults, known_metrics):
        handlers = _check_event_handlers(event_handlers)
        mixing = bool(handlers) and bool(defaults)
        handlers.extend(defaults)
        if mixing:
            known = set(known_metrics)
            for h in handlers:
                _check_handler_metric_ref(h, known)
        handlers.sort(key=lambda h: getattr(h, "priority", 0))
        return handlers

    def _prepare_default_handlers(self, val_data, event_handlers):
        given = _check_event_handlers(event_handlers)

        def missing(kind):
            return not any(isinstance(h, kind) for h in given)

        defaults = [StoppingHandler(self.max_epoch, self.max_batch)]
        if missing(GradientUpdateHandler):
            defaults.append(GradientUpdateHandler())
        if missing(MetricHandler):
            defaults.append(MetricHandler(metrics=self.train_metrics))
        if missing(ValidationHandler) and val_data:
            defaults.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if missing(LoggingHandler):
            defaults.append(LoggingHandler(metrics=self.train_metrics))
        return self._add_defaults(given, defaults, self.train_metrics + self.val_metrics)

    def _prepare_default_validation_handlers(self, event_handlers):
        given = _check_event_handlers(event_handlers)
        defaults = []
        if not any(isinstance(h, MetricHandler) for h in given):
            defaults.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in given):
            defaults.append(LoggingHandler(metrics=self.val_metrics))
        return self._add_defaults(given, defaults, self.val_metrics)

    @staticmethod
    def _categorize_handlers(event_handlers):
        """Six lists: the handlers of train_begin, epoch_begin, batch_begin, batch_end,
        epoch_end and train_end, each in the given (priority) order."""
        return tuple([h for h in event_handlers if isinstance(h, kind)] for _, kind in _EVENTS)
