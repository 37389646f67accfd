"""Learning-rate schedules (MXNet 1.x ``mx.lr_scheduler``).

A scheduler is called with the number of updates done so far and returns the
learning rate. All support a warm-up phase of ``warmup_steps`` that goes from
``warmup_begin_lr`` to ``base_lr`` ('linear') or stays at ``warmup_begin_lr``
('constant').
"""
from __future__ import annotations

import math
from math import pi  # noqa: F401 (MXNet's lr_scheduler module has it)

from gpunda.base import GpundaError

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler"]


class LRScheduler:
    """Base class: ``sched(num_update) -> lr``."""

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        self.base_lr = base_lr
        if not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise GpundaError(f"LRScheduler: warmup_steps={warmup_steps!r} must be an integer "
                              f">= 0")
        if warmup_begin_lr > base_lr:
            raise GpundaError(f"LRScheduler: warmup_begin_lr={warmup_begin_lr} must not exceed "
                              f"base_lr={base_lr}")
        if warmup_mode not in ("linear", "constant"):
            raise GpundaError(f"LRScheduler: warmup_mode={warmup_mode!r} must be 'linear' or "
                              f"'constant'")
        self.warmup_steps = warmup_steps
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_final_lr = base_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The learning rate during warm-up."""
        if self.warmup_mode == "linear":
            inc = (self.warmup_final_lr - self.warmup_begin_lr) * num_update / self.warmup_steps
            return self.warmup_begin_lr + inc
        return self.warmup_begin_lr

    def __call__(self, num_update):
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` every ``step`` updates, not below ``stop_factor_lr``."""

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise GpundaError(f"FactorScheduler: step={step!r} must be >= 1")
        if factor > 1.0:
            raise GpundaError(f"FactorScheduler: factor={factor!r} must be <= 1 to decrease "
                              f"the rate")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # several steps may have passed since the last call
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                import logging
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not change "
                             "in the future", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` after each update count in the increasing list ``step``."""

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, (list, tuple)) or not step:
            raise GpundaError(f"MultiFactorScheduler: step={step!r} must be a non-empty list")
        for i, s in enumerate(step):
            if i and step[i] <= step[i - 1]:
                raise GpundaError(f"MultiFactorScheduler: step={list(step)} must be strictly "
                                  f"increasing")
            if s < 1:
                raise GpundaError(f"MultiFactorScheduler: step={list(step)} values must be >= 1")
        if factor > 1.0:
            raise GpundaError(f"MultiFactorScheduler: factor={factor!r} must be <= 1")
        self.step = list(step)
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
            else:
                return self.base_lr
        return self.base_lr


class _DecayScheduler(LRScheduler):
    """From ``base_lr`` to ``final_lr`` over ``max_update`` updates (after warm-up), along
    the curve ``_decay(t)`` that falls from 1 at t=0 to 0 at t=1."""

    def __init__(self, max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int) or max_update < 1:
            raise GpundaError(f"{type(self).__name__}: max_update={max_update!r} must be an "
                              f"integer >= 1")
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            t = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * self._decay(t)
        return self.base_lr


class PolyScheduler(_DecayScheduler):
    """``final_lr + (base_lr - final_lr) * (1 - t/T)**pwr`` up to ``max_update``."""

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.power = pwr

    def _decay(self, t):
        return pow(1 - t, self.power)


class CosineScheduler(_DecayScheduler):
    """Half a cosine from ``base_lr`` down to ``final_lr`` over ``max_update`` updates."""

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)

    def _decay(self, t):
        return (1 + math.cos(math.pi * t)) / 2
