"""Event interfaces and the standard handlers of the Estimator.

A handler subclasses the interfaces for the events it wants (TrainBegin, EpochEnd, ...)
and may set ``priority`` (lower runs first). ``batch_end`` and ``epoch_end`` return
True to stop training. CheckpointHandler lives in checkpoint_handler.py.
"""
from __future__ import annotations

import math
import time
import warnings

from gpunda.metric import CompositeEvalMetric, EvalMetric
from gpunda.metric import Loss as metric_loss
from gpunda.gluon.contrib.estimator.utils import _check_metrics

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd",
           "StoppingHandler", "MetricHandler", "ValidationHandler", "LoggingHandler",
           "CheckpointHandler", "EarlyStoppingHandler", "GradientUpdateHandler"]


class EventHandler:
    """Base of the event interfaces."""


def _check_event_handlers(handlers):
    """``handlers`` (one handler, a list or None) as a list of EventHandlers."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    if not all(isinstance(h, EventHandler) for h in handlers):
        raise ValueError(f"handlers must be an EventHandler or a list of EventHandler, got: "
                         f"{handlers}")
    return handlers


class TrainBegin(EventHandler):
    """Called once before training starts."""

    def train_begin(self, estimator, *args, **kwargs):
        pass


class TrainEnd(EventHandler):
    """Called once after training ends."""

    def train_end(self, estimator, *args, **kwargs):
        pass


class EpochBegin(EventHandler):
    """Called at the start of every epoch."""

    def epoch_begin(self, estimator, *args, **kwargs):
        pass


class EpochEnd(EventHandler):
    """Called at the end of every epoch; return True to stop training."""

    def epoch_end(self, estimator, *args, **kwargs):
        return False


class BatchBegin(EventHandler):
    """Called before every batch (keyword ``batch``)."""

    def batch_begin(self, estimator, *args, **kwargs):
        pass


class BatchEnd(EventHandler):
    """Called after every batch (keywords ``batch``, ``pred``, ``label``, ``loss``);
    return True to stop training."""

    def batch_end(self, estimator, *args, **kwargs):
        return False


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops training after ``max_epoch`` epochs or ``max_batch`` batches (read from the
    estimator at train begin)."""

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets ``metrics`` every epoch and updates them after every batch (Loss metrics
    from the loss, the others from label and prediction)."""

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            if isinstance(metric, metric_loss):
                metric.update(0, kwargs["loss"])
            else:
                metric.update(kwargs["label"], kwargs["pred"])


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs ``eval_fn(val_data=..., batch_axis=..., event_handlers=...)`` every
    ``epoch_period`` epochs and/or every ``batch_period`` batches."""

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000,
                 event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = 0
        self.current_epoch = 0

    def _validate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._validate(estimator)

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._validate(estimator)


def _metric_text(metrics):
    return ", ".join("%s: %.4f" % m.get() for m in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs training progress to ``estimator.logger``.

    Args:
        log_interval: 'epoch' logs at epoch begin/end; an int ``n`` also logs every
            ``n``-th batch (samples seen, time per interval, metric values); 'batch' is 1.
        metrics: the metrics whose values are logged.
        priority: runs last by default, after the metrics are updated.
    """

    def __init__(self, log_interval="epoch", metrics=None, priority=math.inf):
        if log_interval == "batch":
            log_interval = 1
        if isinstance(log_interval, bool) or (not isinstance(log_interval, int)
                                               and log_interval != "epoch"):
            raise ValueError("log_interval must be either an integer or string 'epoch'")
        if isinstance(log_interval, int) and log_interval < 1:
            raise ValueError(f"log_interval={log_interval} must be a positive integer")
        self.metrics = _check_metrics(metrics)
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.priority = priority
        self.log_interval = log_interval
        self.log_interval_time = 0

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info("Training begin: using optimizer %s with current learning rate "
                              "%.4f ", type(trainer.optimizer).__name__, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0

    def train_end(self, estimator, *args, **kwargs):
        train_time = time.time() - self.train_start
        msg = "Train finished using total %ds with %d epochs. " % (train_time, self.current_epoch)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.log_interval_time += time.time() - self.batch_start
            self.processed_samples += kwargs["batch"][0].shape[0]
            if self.batch_index % self.log_interval == 0:
                msg = "[Epoch %d][Batch %d][Samples %s] time/interval: %.3fs " % (
                    self.current_epoch, self.batch_index, self.processed_samples,
                    self.log_interval_time)
                self.log_interval_time = 0
                estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.batch_index += 1

    def epoch_begin(self, estimator, *args, **kwargs):
        self.epoch_start = time.time()
        if any("training" in m.name for m in self.metrics):
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator, *args, **kwargs):
        epoch_time = time.time() - self.epoch_start
        msg = "[Epoch %d] Finished in %.3fs, " % (self.current_epoch, epoch_time)
        estimator.logger.info((msg + _metric_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0


def _improvement_op(mode, monitor, who):
    """``(op, mode)``: ``op(new, best)`` is True when ``new`` improves on ``best``."""
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{who} mode {mode} is unknown, fallback to auto mode. {who} will use "
                      f"max mode for f1 and accuracy metric comparison and use min mode other "
                      f"wise", RuntimeWarning)
        mode = "auto"
    if mode == "auto":
        name = monitor.get()[0].lower()
        # MXNet 1.9.1 meant this rule but its test ('acc' or ...) always picked 'max'
        mode = "max" if ("acc" in name or "f1" in name) else "min"
        other = "min" if mode == "max" else "max"
        warnings.warn(f"`{'greater' if mode == 'max' else 'less'}` operator will be used to "
                      f"determine if {monitor.get()[0]} has improved. Please specify "
                      f"`mode='{other}'` to use the other operator. Specify `mode='{mode}'` "
                      f"to disable this warning.")
    return (lambda a, b: a > b) if mode == "max" else (lambda a, b: a < b), mode


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops training when ``monitor`` has not improved by more than ``min_delta`` for
    ``patience`` epochs.

    Args:
        monitor: one of the estimator's train or validation metrics (not a composite).
        min_delta: the smallest change that counts as an improvement.
        patience: epochs without improvement before stopping.
        mode: 'min', 'max', or 'auto' (max for accuracy and f1 metrics, min otherwise).
        baseline: the value to beat at the start (default: none).
    """

    def __init__(self, monitor, min_delta=0, patience=0, mode="auto", baseline=None):
        if not isinstance(monitor, EvalMetric):
            raise ValueError("Please provide one of the metric objects from "
                             "estimator.train_metrics and estimator.val_metrics as monitor.")
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError("CompositeEvalMetric is not supported for EarlyStoppingHandler, "
                             "please specify a simple metric instead.")
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.monitor_op, self.mode = _improvement_op(mode, monitor, "EarlyStopping")
        # the delta is subtracted from a new value before comparing: negative for 'min'
        self.min_delta = min_delta if self.mode == "max" else -min_delta

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = -math.inf if self.mode == "max" else math.inf

    def epoch_end(self, estimator, *args, **kwargs):
        name, value = self.monitor.get()
        if math.isnan(value):
            warnings.warn(RuntimeWarning(f"{name} is not updated, make sure you pass one of the "
                                         f"metric objects from estimator.train_metrics and "
                                         f"estimator.val_metrics as monitor."))
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHanlder: early stopping due to %s "
                                  "not improving", self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """Steps the trainer after every batch, normalising by the number of samples in the
    loss (the sum of the first dimensions of the per-context losses)."""

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs["loss"]
        parts = loss if isinstance(loss, list) else [loss]
        estimator.trainer.step(sum(part.shape[0] for part in parts))


from gpunda.gluon.contrib.estimator.checkpoint_handler import CheckpointHandler  # noqa: E402 -- it builds on the above
