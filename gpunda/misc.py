"""MXNet's ``mxnet.misc``: the old learning-rate schedulers of its FeedForward API
(``lr_scheduler`` holds the current ones)."""
from __future__ import annotations

import logging
import math

__all__ = ["LearningRateScheduler", "FactorScheduler"]


class LearningRateScheduler:
    """Base class: ``scheduler(iteration)`` returns the learning rate for that iteration,
    starting from ``base_lr`` (0.01 unless set)."""

    def __init__(self):
        self.base_lr = 0.01

    def __call__(self, iteration):
        raise NotImplementedError("LearningRateScheduler.__call__: a subclass must define "
                                  "the schedule")


class FactorScheduler(LearningRateScheduler):
    """``base_lr * factor ** (iteration // step)``; each change of rate is logged.

    Args:
        step: iterations between reductions (at least 1).
        factor: the multiplier, below 1.
    """

    def __init__(self, step, factor=0.1):
        super().__init__()
        if step < 1:
            raise ValueError(f"FactorScheduler: step must be >= 1, got {step}")
        if factor >= 1.0:
            raise ValueError(f"FactorScheduler: factor must be below 1 to reduce the rate, "
                             f"got {factor}")
        self.step = step
        self.factor = factor
        self.old_lr = self.base_lr
        self.init = False

    def __call__(self, iteration):
        if not self.init:
            self.init = True
            self.old_lr = self.base_lr
        lr = self.base_lr * math.pow(self.factor, int(iteration / self.step))
        if lr != self.old_lr:
            self.old_lr = lr
            logging.info("At Iteration [%d]: Swith to new learning rate %.5f", iteration, lr)
        return lr
