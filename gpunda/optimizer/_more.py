"""The less common MXNet 1.x optimizers: Adamax, Nadam, FTML, Ftrl, LAMB, SGLD,
DCASGD, ccSGD, Test (LARS and LBSGD are in ``optimizer/_lars.py``).

Formulas follow MXNet 1.9.1's ``python/mxnet/optimizer/optimizer.py`` and its
update kernels; ``gpunda.optimizer`` re-exports every class here.
"""
from __future__ import annotations

import math
import os

import numpy as np

from gpunda.optimizer._rows import op_params, run_update
from gpunda.ops.optimizer import updates as _ops
from gpunda.optimizer.optimizer import SGD, Optimizer, _xp, register


def _zeros(weight, dtype=None):
    from gpunda import ndarray as nd
    return nd.zeros(weight.shape, ctx=weight.context,
                    dtype=weight.dtype if dtype is None else dtype)


@register
class Adamax(Optimizer):
    """AdaMax (Adam with the infinity norm): ``m = b1*m + (1-b1)*g; u = max(b2*u, |g|);
    weight -= lr / (1 - b1**t) * m / u`` with ``g = clip(rescale_grad*grad + wd*weight)``."""

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2 = beta1, beta2

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        lr /= 1.0 - self.beta1 ** self._index_update_count[index]
        p = op_params(self, lr, wd)
        b1, b2 = self.beta1, self.beta2

        def step(w, g, m, u):
            xp = _xp(w)
            g = _ops._clip(xp, g * p.rescale_grad + wd * w, p.clip_gradient)
            m[...] = b1 * m + (1.0 - b1) * g
            u[...] = xp.maximum(b2 * u, xp.abs(g))
            w -= lr * m / u
        run_update(weight, grad, tuple(state), step, False)


@register
class Nadam(Optimizer):
    """Nesterov Adam (Dozat) with MXNet's momentum schedule
    ``mu_t = beta1 * (1 - 0.5 * 0.96**(t * schedule_decay))``."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        b1, b2, eps = self.beta1, self.beta2, self.epsilon
        mu_t = b1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        # the schedule product is shared by all parameters, as in MXNet
        self.m_schedule *= mu_t
        sched, sched_next = self.m_schedule, self.m_schedule * mu_next
        p = op_params(self, lr, wd)

        def step(w, g, m, v):
            xp = _xp(w)
            g = _ops._clip(xp, g * p.rescale_grad + wd * w, p.clip_gradient)
            m[...] = b1 * m + (1.0 - b1) * g
            v[...] = b2 * v + (1.0 - b2) * g * g
            m_bar = (1.0 - mu_t) * (g / (1.0 - sched)) + mu_next * (m / (1.0 - sched_next))
            w -= lr * m_bar / (xp.sqrt(v / (1.0 - b2 ** t)) + eps)
        run_update(weight, grad, tuple(state), step, False)


@register
class FTML(Optimizer):
    """Follow The Moving Leader (Zheng & Kwok 2017), through ``ftml_update``'s formula."""

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight), _zeros(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        p = op_params(self, lr, wd, beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon,
                      t=self._index_update_count[index])
        p.clip_grad = p.clip_gradient
        run_update(weight, grad, tuple(state),
                   lambda w, g, d, v, z: _ops._ftml(_xp(w), p, w, g, d, v, z), False)


@register
class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al.), through ``ftrl_update``'s formula; a row_sparse
    gradient updates only its rows."""

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(**kwargs)
        self.lamda1, self.beta = lamda1, beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        p = op_params(self, lr, wd, lamda1=self.lamda1, beta=self.beta)
        run_update(weight, grad, tuple(state),
                   lambda w, g, z, n: _ops._ftrl(_xp(w), p, w, g, z, n), True)


def _lamb_direction(xp, w, g, m, v, b1, b2, eps, t, wd, bias_correction, p):
    """LAMB phase 1: moments in place; the (bias-corrected) Adam direction plus wd*w."""
    g = _ops._rescaled(xp, p, g, w.dtype)
    m[...] = b1 * m + (1.0 - b1) * g
    v[...] = b2 * v + (1.0 - b2) * g * g
    if bias_correction:
        return (m / (1.0 - b1 ** t)) / (xp.sqrt(v / (1.0 - b2 ** t)) + eps) + wd * w
    return m / (xp.sqrt(v) + eps) + wd * w


@register
class LAMB(Optimizer):
    """LAMB (You et al. 2019): the Adam direction scaled by the trust ratio
    ``||w|| / ||direction||`` (``||w||`` clipped to [lower_bound, upper_bound] when set;
    ratio 1 when either norm is 0). A list of indices updates each tensor in turn."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bias_correction
        # as MXNet's: up to MXNET_OPTIMIZER_AGGREGATION_SIZE (at most 45) tensors a call
        self.aggregate_num = max(1, min(45, int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE",
                                                          "45"))))

    def create_state(self, index, weight):
        return (_zeros(weight), _zeros(weight))

    def _step(self, index, weight, grad, state, master=None):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        p = op_params(self, lr, wd)
        target = weight if master is None else master
        if master is not None:
            grad = grad.astype(np.float32)
        lo, hi = self.lower_bound, self.upper_bound

        def step(w, g, m, v):
            xp = _xp(w)
            d = _lamb_direction(xp, w, g, m, v, self.beta1, self.beta2, self.epsilon, t, wd,
                                self.bias_correction, p)
            r1 = float(xp.linalg.norm(w))
            r2 = float(xp.linalg.norm(d))
            if lo:
                r1 = max(r1, lo)
            if hi:
                r1 = min(r1, hi)
            ratio = 1.0 if r1 == 0.0 or r2 == 0.0 else r1 / r2
            w -= (lr * ratio) * d
        run_update(target, grad, tuple(state), step, False)
        if master is not None:
            weight._data[...] = master._data.astype(weight._data.dtype)

    def update(self, index, weight, grad, state):
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self._step(i, w, g, s)
            return
        self._step(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        if not isinstance(index, (list, tuple)):
            index, weight, grad, state = [index], [weight], [grad], [state]
        for i, w, g, s in zip(index, weight, grad, state):
            if self.multi_precision and w.dtype == np.float16:
                self._step(i, w, g, s[1], master=s[0])
            else:
                self._step(i, w, g, s)


@register
class SGLD(Optimizer):
    """Stochastic Gradient Langevin Dynamics: ``weight += -lr/2 * (g + wd*weight) +
    N(0, sqrt(lr))`` with the noise drawn from gpunda's random stream."""

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        from gpunda.ndarray import random as _rnd
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        p = op_params(self, lr, wd)

        def step(w, g):
            g = _ops._rescaled(_xp(w), p, g, w.dtype)
            w += (-lr / 2) * (g + wd * w)
        run_update(weight, grad, (), step, False)
        noise = _rnd.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype,
                            ctx=weight.context)
        weight[:] += noise


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD (Zheng et al. 2016): the step adds
    ``lamda * g*g * (weight - previous weight)``; states are (momentum or None, previous)."""

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum, self.lamda = momentum, lamda
        self.weight_previous = {}

    def create_state(self, index, weight):
        mom = None if self.momentum == 0.0 else _zeros(weight)
        return (mom, weight.copy())

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        p = op_params(self, lr, wd)
        mom, prev = state
        momentum, lamda = self.momentum, self.lamda

        def step(w, g, prev_w, m=None):
            g = _ops._rescaled(_xp(w), p, g, w.dtype)
            d = -lr * (g + wd * w + lamda * g * g * (w - prev_w))
            if m is not None:
                m[...] = momentum * m + d
                d = m
            prev_w[...] = w
            w += d
        states = (prev,) if mom is None else (prev, mom)
        run_update(weight, grad, states, step, False)


@register
class ccSGD(SGD):  # noqa: N801 (MXNet's name)
    """Deprecated alias of SGD kept by MXNet 1.x."""


@register
class Test(Optimizer):
    """The optimizer MXNet's own tests use: ``weight += rescale_grad * grad; state = weight``."""

    def create_state(self, index, weight):
        return _zeros(weight, np.float32)

    def update(self, index, weight, grad, state):
        weight[:] += grad * self.rescale_grad
        state[:] = weight


# LARS and LBSGD live in their own module; re-exported here for gpunda.optimizer
from gpunda.optimizer._lars import LARS, LBSGD  # noqa: E402,F401
