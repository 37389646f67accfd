"""``mx.callback``: MXNet's training callbacks for ``Module.fit`` / ``FeedForward``.

Batch-end callbacks get a ``BatchEndParam(epoch, nbatch, eval_metric, locals)``;
epoch-end callbacks get ``(epoch, symbol, arg_params, aux_params)``. The log
lines are MXNet's, word for word, so log parsers keep working.
"""
from __future__ import annotations

import logging
import math
import time

__all__ = ["module_checkpoint", "do_checkpoint", "log_train_metric", "Speedometer",
           "ProgressBar", "LogValidationMetricsCallback"]


def _period(period):
    return int(max(1, period))


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """Epoch-end callback: ``mod.save_checkpoint(prefix, epoch + 1, ...)`` every ``period``."""
    period = _period(period)

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix, period=1):
    """Epoch-end callback: ``mx.model.save_checkpoint(prefix, epoch + 1, ...)`` every
    ``period`` epochs (so the files are numbered from 1)."""
    from gpunda.model import save_checkpoint
    period = _period(period)

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period, auto_reset=False):
    """Batch-end callback: log the training metric every ``period`` batches."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch,
                             name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Batch-end callback: log samples/sec (and the metric) every ``frequent`` batches.

    With ``auto_reset`` the metric's local value is reset after each log, so each
    line covers the last ``frequent`` batches ("Batch [50-100]"); otherwise it
    covers the epoch so far ("Batch [0-100]").
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.init = False
        self.tic = 0
        self.last_count = 0
        self.auto_reset = auto_reset

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:     # a new epoch started
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        try:
            speed = self.frequent * self.batch_size / (time.time() - self.tic)
        except ZeroDivisionError:
            speed = float("inf")
        if param.eval_metric is not None:
            name_value = param.eval_metric.get_name_value()
            if self.auto_reset:
                param.eval_metric.reset_local()
                msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(
                    name_value)
                logging.info(msg, param.epoch, count - self.frequent, count, speed,
                             *sum(name_value, ()))
            else:
                msg = "Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(
                    name_value)
                logging.info(msg, param.epoch, count, speed, *sum(name_value, ()))
        else:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                         speed)
        self.tic = time.time()


class ProgressBar:
    """Batch-end callback: log a text progress bar of ``length`` characters."""

    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        count = param.nbatch
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        bar = "=" * filled + "-" * (self.bar_len - filled)
        logging.info("[%s] %s%s\r", bar, percents, "%")


class LogValidationMetricsCallback:
    """Eval-end callback: log each validation metric."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
