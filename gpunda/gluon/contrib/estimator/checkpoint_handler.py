"""CheckpointHandler: saves parameters and trainer states during training and resumes
from the newest checkpoint.

Files in ``model_dir``: ``<prefix>-symbol.json`` (hybridized nets), and per checkpoint
``<prefix>-epoch<E>batch<B>.params`` / ``.states``; with ``save_best`` also
``<prefix>-best.params`` / ``.states``.
"""
from __future__ import annotations

import math
import os
import re
import warnings

from gpunda.metric import EvalMetric
from gpunda.gluon.contrib.estimator.event_handler import BatchEnd, EpochEnd, TrainBegin, _improvement_op

__all__ = ["CheckpointHandler"]

_RESUME_RULE = ("To use resume from checkpoint, you must only specify the same type of period "
                "you used for training. For example, if you are training based on number of "
                "epochs, you must save only based on epochs, and set batch_period to None.")


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Save checkpoints every ``epoch_period`` epochs and/or ``batch_period`` batches.

    Args:
        model_dir: the directory (created when missing).
        model_prefix: the file name prefix.
        monitor: the metric ``save_best`` compares (one of the estimator's metrics).
        verbose: > 0 logs every save.
        save_best: also keep the best checkpoint by ``monitor`` as ``<prefix>-best``.
        mode: 'min', 'max' or 'auto' (max for accuracy and f1 metrics, min otherwise).
        max_checkpoints: how many periodic checkpoints to keep (oldest removed first).
        resume_from_checkpoint: at train begin load the newest
            ``<prefix>-epoch<E>batch<B>`` checkpoint and train only the remaining
            epochs (or batches).
    """

    def __init__(self, model_dir, model_prefix="model", monitor=None, verbose=0,
                 save_best=False, mode="auto", epoch_period=1, batch_period=None,
                 max_checkpoints=5, resume_from_checkpoint=False):
        self.monitor = monitor
        self.verbose = verbose
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        if self.save_best and not isinstance(self.monitor, EvalMetric):
            raise ValueError("To save best model only, please provide one of the metric "
                             "objects from estimator.train_metrics and estimator.val_metrics "
                             "as monitor.")
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints = []
        self.trained_epoch = self.trained_batch = -1
        if self.save_best:
            self.monitor_op, self.mode = _improvement_op(mode, monitor, "ModelCheckpoint")
            self.best = -math.inf if self.mode == "max" else math.inf

    def train_begin(self, estimator, *args, **kwargs):
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = -math.inf if self.mode == "max" else math.inf
        if self.resume_from_checkpoint:
            if estimator.max_batch and (not self.batch_period or self.epoch_period):
                raise ValueError(_RESUME_RULE)
            if estimator.max_epoch and (not self.epoch_period or self.batch_period):
                raise ValueError(_RESUME_RULE)
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    def _save_checkpoint(self, estimator):
        epoch, batch = self.current_epoch, self.current_batch
        if self.resume_from_checkpoint:
            # continue the numbering of the checkpoint training resumed from
            epoch += self.trained_epoch + 1
            batch += self.trained_batch + (0 if estimator.max_epoch else 1)
        prefix = "%s-epoch%dbatch%d" % (self.model_prefix, epoch, batch)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, "
                                  "saving model at %s with prefix: %s", self.current_epoch,
                                  self.current_batch + 1, self.model_dir, prefix)
        if not self.save_best:
            return
        name, value = self.monitor.get()
        if math.isnan(value):
            warnings.warn(RuntimeWarning(f"Skipping save best because {name} is not updated, "
                                         f"make sure you pass one of the metric objects "
                                         f"estimator.train_metrics and estimator.val_metrics "
                                         f"as monitor"))
        elif self.monitor_op(value, self.best):
            best_prefix = self.model_prefix + "-best"
            self._save_params_and_trainer(estimator, best_prefix)
            if self.verbose > 0:
                estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f to "
                                      "%0.5f, updating best model at %s with prefix: %s",
                                      self.current_epoch, name, self.best, value,
                                      self.model_dir, best_prefix)
            self.best = value
        elif self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: %s did not improve from "
                                  "%0.5f, skipping updating best model", self.current_epoch,
                                  name, self.best)

    def _save_symbol(self, estimator):
        symbol_file = os.path.join(self.model_dir, self.model_prefix + "-symbol.json")
        cached = getattr(estimator.net, "_cached_graph", None)
        if cached:
            cached[1].save(symbol_file)
        else:
            estimator.logger.info("Model architecture(symbol file) is not saved, please use "
                                  "HybridBlock to construct your model, and call "
                                  "net.hybridize() before passing to Estimator in order to save "
                                  "model architecture as %s.", symbol_file)

    def _save_params_and_trainer(self, estimator, file_prefix):
        estimator.net.save_parameters(os.path.join(self.model_dir, file_prefix + ".params"))
        estimator.trainer.save_states(os.path.join(self.model_dir, file_prefix + ".states"))
        if file_prefix.endswith("-best"):
            return
        self.saved_checkpoints.append(file_prefix)
        # only checkpoints this handler wrote are rotated out, never older files
        while len(self.saved_checkpoints) > self.max_checkpoints:
            old = self.saved_checkpoints.pop(0)
            for ext in (".params", ".states"):
                path = os.path.join(self.model_dir, old + ext)
                if os.path.exists(path):
                    os.remove(path)

    def _checkpoints_on_disk(self):
        """``(epoch, batch)`` of every ``<prefix>-epoch<E>batch<B>.params`` in model_dir."""
        pattern = re.compile(re.escape(self.model_prefix) + r"-epoch(\d+)batch(\d+)\.params$")
        found = []
        for fname in os.listdir(self.model_dir):
            m = pattern.match(fname)
            if m:
                found.append((int(m.group(1)), int(m.group(2))))
            elif fname.startswith(self.model_prefix + "-epoch") and fname.endswith(".params"):
                raise ValueError(f"Error parsing checkpoint file {fname!r}, please check your "
                                 f"checkpoints have the format: {{model_name}}-epoch"
                                 f"{{epoch_number}}batch{{batch_number}}.params, there should "
                                 f"also be a .states file for each .params file")
        return found

    def _resume_from_checkpoint(self, estimator):
        found = self._checkpoints_on_disk()
        if not found:
            self.trained_epoch = self.trained_batch = -1
            what = ("%d batches" % estimator.max_batch if estimator.max_batch
                    else "%d epochs" % estimator.max_epoch)
            estimator.logger.info("CheckpointHandler: No checkpoint found, training from "
                                  "scratch for " + what)
            return
        self.trained_epoch, self.trained_batch = max(found)
        msg = ("CheckpointHandler: Checkpoint resumed from epoch %d batch %d, continue to "
               "train for " % (self.trained_epoch, self.trained_batch))
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ValueError(f"Found checkpoint with maximum number of epoch "
                                 f"{estimator.max_epoch} reached, please specify "
                                 f"resume_from_checkpoint=False (default value) if you want to "
                                 f"train from scratch.")
            estimator.max_epoch = estimator.max_epoch - self.trained_epoch - 1
            msg += "%d epochs " % estimator.max_epoch
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ValueError(f"Found checkpoint with maximum number of batch "
                                 f"{self.trained_batch} reached, please specify "
                                 f"resume_from_checkpoint=False (default value) if you want to "
                                 f"train from scratch.")
            estimator.max_batch = estimator.max_batch - self.trained_batch - 1
            msg += "%d batches " % estimator.max_batch
        stem = os.path.join(self.model_dir, "%s-epoch%dbatch%d" % (
            self.model_prefix, self.trained_epoch, self.trained_batch))
        for ext in (".params", ".states"):
            if not os.path.exists(stem + ext):
                raise ValueError(f"Failed to load checkpoint, {stem + ext} does not exist")
        estimator.net.load_parameters(stem + ".params", ctx=estimator.context)
        estimator.trainer.load_states(stem + ".states")
        estimator.logger.warning(msg)
