"""LARS and LBSGD, the large-batch optimizers of MXNet 1.x (``mx.optimizer.LARS``/``LBSGD``).

Both behave as MXNet 1.9.1's ``python/mxnet/optimizer/optimizer.py`` does, quirks included:

- LARS scales each layer's learning rate by ``eta * |w| / (|g| * rescale_grad + wd * |w| +
  eps)`` (``lr`` alone when either norm is 0), except for parameters named ``*gamma``,
  ``*beta`` or ``*bias``. Dense weights and gradients go through the multi-tensor ops
  (``multi_sum_sq``, ``multi_lars``, ``preloaded_multi_(mp_)sgd(_mom)_update``) in groups of
  ``aggregate_num`` (``MXNET_OPTIMIZER_AGGREGATION_SIZE``, 4); sparse ones one at a time.
  ``momentum_correction`` scales the momentum by ``lr / previous lr`` of the previous call.
- LBSGD accumulates gradients over ``batch_scale`` calls per parameter and steps only on
  every ``batch_scale``-th one, with the learning rate raised towards ``batch_scale * lr``
  during ``warmup_epochs`` (strategies 'linear', 'power2', 'sqrt'; 'lars' uses a clipped
  per-layer trust ratio instead). As in MXNet the first gradient of an accumulation is
  kept by reference, not copied, and calls that do not step still run an SGD step with
  ``lr=0`` (so a NaN gradient still reaches the weight).
"""
from __future__ import annotations

import math
import os
import warnings

import numpy as np

from gpunda._engine import autograd as _ag
from gpunda.optimizer._rows import run_update
from gpunda.ops.optimizer import updates as _ops
from gpunda.optimizer.optimizer import Optimizer, _check, _xp, register

_NO_LARS_SUFFIXES = ("gamma", "beta", "bias")


def _nd():
    from gpunda import ndarray
    return ndarray


def _lars_exempt(name):
    return name.endswith(_NO_LARS_SUFFIXES)


def _clip_of(opt):
    """MXNet passes ``clip_gradient`` only when it is truthy (0 means no clipping here)."""
    return float(opt.clip_gradient) if opt.clip_gradient else -1.0


def _sgd_step(weight, grad, state, lr, wd, momentum, rescale_grad, clip, lazy):
    """``sgd_update``/``sgd_mom_update`` (``mp_*`` when ``state`` is ``(mom, master)``)
    on one weight; a row_sparse gradient updates only its rows when ``lazy``."""
    from types import SimpleNamespace
    p = SimpleNamespace(lr=lr, wd=wd, momentum=momentum, rescale_grad=rescale_grad,
                        clip_gradient=clip)
    if isinstance(state, (tuple, list)):
        mom, master = state
        g32 = grad.astype(np.float32) if grad.dtype != np.float32 else grad
        _sgd_step(master, g32, mom, lr, wd, momentum, rescale_grad, clip, False)
        weight._data[...] = master._data.astype(weight._data.dtype)
        _ag.bump_version(weight)
    elif state is None:
        run_update(weight, grad, (), lambda w, g: _ops._sgd(_xp(w), p, w, g), lazy)
    else:
        run_update(weight, grad, (state,), lambda w, g, m: _ops._sgd_mom(_xp(w), p, w, g, m),
                   lazy)


def _float16_warning():
    warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                  "convergence. Consider using multi_precision=True option of the SGD optimizer")


@register
class LARS(Optimizer):
    """Layer-wise Adaptive Rate Scaling (You et al., https://arxiv.org/abs/1708.03888):
    SGD with momentum whose learning rate per layer is
    ``lr * eta * |w| / (|g| + wd * |w| + eps)`` when both norms are positive.

    Args:
        momentum: momentum of the SGD step (``mom = momentum * mom - lr * (g + wd * w)``).
        lazy_update: row_sparse gradients update only their rows.
        eta: the trust coefficient.
        eps: added to the denominator of the trust ratio.
        momentum_correction: scale the momentum by ``lr / previous lr`` when an
            ``lr_scheduler`` changes the rate (Goyal et al. 2017).

    Parameters whose names end in ``gamma``, ``beta`` or ``bias`` keep the plain rate, and
    names not ending in ``_weight`` get no weight decay.

    Example::

        opt = mx.optimizer.LARS(learning_rate=0.1, momentum=0.9, eta=0.001, wd=1e-4)
    """

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0,
                 momentum_correction=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4"))
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices):
        # every call remembers the rate of the previous one, for momentum_correction
        if self.cur_lr is not None:
            self.last_lr = self.cur_lr
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        if self.cur_lr is None:
            self.last_lr = lr
        self.cur_lr = lr
        return self._lrs_from(lr, indices)

    def set_wd_mult(self, args_wd_mult):
        """As Optimizer's, except that only names ending in ``_weight`` keep weight decay
        (``*_gamma`` gets none either)."""
        self.wd_mult = {n: 0.0 for n in self.idx2name.values() if not n.endswith("_weight")}
        self.wd_mult.update(self._sym_mults("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        stype = weight.stype if self.lazy_update else "default"
        return _nd().zeros(weight.shape, ctx=weight.context, dtype=weight.dtype, stype=stype)

    def create_state_multi_precision(self, index, weight):
        """``(momentum, float32 master copy)`` for a float16 weight with multi_precision."""
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (self.create_state(index, master), master)
        if weight.dtype == np.float16:
            _float16_warning()
        return self.create_state(index, weight)

    def _name(self, index):
        return self.idx2name[index] if index in self.idx2name else str(index)

    def _norm(self, v, rescale=False):
        v = v.astype("float32")
        if rescale:
            v = v * self.rescale_grad
        return float(_nd().norm(v).asnumpy().reshape(-1)[0])

    def _lars_lr(self, index, weight, grad, lr, wd):
        """The layer's learning rate, computed on the host (the one-tensor-at-a-time path)."""
        if _lars_exempt(self._name(index)):
            return lr
        w_norm = self._norm(weight)
        g_norm = self._norm(grad, rescale=True)
        if w_norm > 0.0 and g_norm > 0.0:
            return lr * self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return lr

    def _momentum(self):
        if self.momentum_correction and self.last_lr != 0:
            return self.momentum * (self.cur_lr / self.last_lr)
        return self.momentum

    def _update_impl(self, indices, weights, grads, states, multi_precision=False):
        if not isinstance(indices, (tuple, list)):
            indices, weights, grads, states = [indices], [weights], [grads], [states]
        for w, g in zip(weights, grads):
            _check(w, g, "LARS.update")
        dense = all(w.stype == "default" and g.stype == "default"
                    for w, g in zip(weights, grads))
        self._update_count(indices)
        lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        momentum = self._momentum() if self.momentum > 0 else 0.0
        if dense:
            self._update_aggregated(indices, weights, grads, states, lrs, wds, momentum,
                                    multi_precision)
            return
        lrs = [self._lars_lr(i, w, g, lr, wd)
               for i, w, g, lr, wd in zip(indices, weights, grads, lrs, wds)]
        for w, g, s, lr, wd in zip(weights, grads, states, lrs, wds):
            _sgd_step(w, g, s, lr, wd, momentum, self.rescale_grad, _clip_of(self),
                      self.lazy_update)

    def _update_aggregated(self, indices, weights, grads, states, lrs, wds, momentum, mp):
        nd = _nd()
        names = [self._name(i) for i in indices]
        # LARS layers first, the exempt ones after: multi_lars rescales a leading slice
        order = ([k for k, n in enumerate(names) if not _lars_exempt(n)]
                 + [k for k, n in enumerate(names) if _lars_exempt(n)])
        n_lars = sum(not _lars_exempt(n) for n in names)
        ctx = weights[0].context
        lr_arr = nd.array([lrs[k] for k in order], ctx=ctx, dtype="float32")
        wd_arr = nd.array([wds[k] for k in order], ctx=ctx, dtype="float32")
        ws = [weights[k] for k in order]
        gs = [grads[k] for k in order]
        ss = [states[k] for k in order]
        if n_lars > 0:
            w_ssq = nd.multi_sum_sq(*ws[:n_lars], num_arrays=n_lars)
            g_ssq = nd.multi_sum_sq(*gs[:n_lars], num_arrays=n_lars)
            scaled = nd.multi_lars(lr_arr[:n_lars], w_ssq, g_ssq, wd_arr[:n_lars],
                                   eta=self.eta, eps=self.eps, rescale_grad=self.rescale_grad)
            lr_arr = scaled if n_lars == len(ws) else nd.concat(scaled, lr_arr[n_lars:], dim=0)
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kwargs["momentum"] = momentum
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        # an aggregation size of 0 would never advance (MXNet loops forever); take 1
        step = max(int(self.aggregate_num), 1)
        for s in range(0, len(ws), step):
            e = min(s + step, len(ws))
            groups = []
            for w, g, st in zip(ws[s:e], gs[s:e], ss[s:e]):
                if mp:
                    mom, master = st
                    groups.append((w, g, mom, master) if self.momentum > 0 else (w, g, master))
                else:
                    groups.append((w, g, st) if self.momentum > 0 else (w, g))
            op = "preloaded_multi_" + ("mp_" if mp else "") + \
                 ("sgd_mom_update" if self.momentum > 0 else "sgd_update")
            flat = [a for grp in groups for a in grp]
            getattr(nd, op)(*flat, lr_arr[s:e], wd_arr[s:e], out=ws[s:e], num_weights=e - s,
                            **kwargs)

    def update(self, index, weight, grad, state):
        """One update of ``weight`` (or of the lists ``weight``, ``grad``, ``state`` for a
        list of indices, done in groups through the multi-tensor ops)."""
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        """``update``, through the float32 master copies for float16 weights."""
        first = weight[0] if isinstance(index, (tuple, list)) else weight
        mp = bool(self.multi_precision) and first.dtype == np.float16
        self._update_impl(index, weight, grad, state, multi_precision=mp)


@register
class LBSGD(Optimizer):
    """Large-batch SGD (momentum and weight decay) with gradient accumulation and warmup.

    The gradients of ``batch_scale`` calls per parameter are averaged into one SGD step
    (``mom = momentum * mom - lr' * (g + wd * w); w += mom``) whose rate ``lr'`` is ``lr``
    times a warmup multiplier: over the first ``warmup_epochs * updates_per_epoch``
    accumulated calls it rises from 1 to ``batch_scale`` ('linear', 'power2': quadratic,
    'sqrt'), or is the per-layer ratio ``sqrt(|w|^2 / (|g|^2 + wd * |w|^2))`` clipped to
    [0.01, 100] ('lars'). ``begin_epoch`` starts the count at
    ``begin_epoch * updates_per_epoch``; ``num_epochs`` is stored only.

    Example::

        opt = mx.optimizer.LBSGD(learning_rate=0.1, momentum=0.9, batch_scale=4,
                                 warmup_strategy='linear', warmup_epochs=5,
                                 updates_per_epoch=100)
    """

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy="linear",
                 warmup_epochs=5, batch_scale=1, updates_per_epoch=32, begin_epoch=0,
                 num_epochs=60, **kwargs):
        super().__init__(**kwargs)
        import logging      # on first use: `import gpunda` stays lean
        logging.info("Running Large-Batch SGD Algorithm")
        logging.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, "
                     "updates_per_epoch=%d)", batch_scale, warmup_epochs, warmup_strategy,
                     updates_per_epoch)
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        """The momentum (None without momentum); ``(momentum, float32 master)`` for a
        float16 weight with multi_precision."""
        nd = _nd()
        if self.multi_precision and weight.dtype == np.float16:
            master = nd.array(weight, ctx=weight.context, dtype=np.float32)
            mom = None
            if self.momentum != 0.0:
                mom = nd.zeros(weight.shape, ctx=weight.context, dtype=np.float32,
                               stype=weight.stype)
            return (mom, master)
        if weight.dtype == np.float16 and not self.multi_precision:
            _float16_warning()
        if self.momentum == 0.0:
            return None
        return nd.zeros(weight.shape, ctx=weight.context, dtype=weight.dtype,
                        stype=weight.stype)

    def _get_lbmult(self, nup):
        """The warmup multiplier of the learning rate after ``nup`` accumulated calls."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        if self.warmup_strategy == "linear":
            return 1.0 + (maxmult - 1) * nup / nwup
        if self.warmup_strategy == "power2":
            return 1.0 + (maxmult - 1) * (nup * nup) / (nwup * nwup)
        if self.warmup_strategy == "sqrt":
            return 1.0 + (maxmult - 1) * math.sqrt(float(nup) / nwup)
        return 1.0

    @staticmethod
    def _l2norm(v):
        """The sum of squares (MXNet's name; summed in float32 on the host)."""
        return float((v * v).asnumpy().sum())

    def _get_lars(self, weight, g, wd):
        """The 'lars' strategy's multiplier, clipped to [0.01, 100]."""
        w2, g2 = self._l2norm(weight), self._l2norm(g)
        return min(max(math.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01), 100.0)

    def _cumulate_gradient(self, grad, index):
        """Add ``grad`` to the parameter's accumulation; the first one is kept by reference."""
        cgrad = self.cumgrads.get(index)
        if cgrad and cgrad["num_cums"] > 0:
            cgrad = {"cum_grad": cgrad["cum_grad"] + grad, "num_cums": cgrad["num_cums"] + 1}
        else:
            cgrad = {"cum_grad": grad, "num_cums": self.init_updates + 1}
        self.cumgrads[index] = cgrad
        return cgrad

    def update(self, index, weight, grad, state):
        _check(weight, grad, "LBSGD.update")
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale != 0:
            # not a step: MXNet still runs sgd_update with lr=0 and default scaling
            _sgd_step(weight, grad, None, 0.0, wd, 0.0, 1.0, -1.0, True)
            return
        grad = cgrad["cum_grad"] / self.batch_scale
        if self.warmup_strategy == "lars":
            lr *= self._get_lars(weight, grad, wd)
        else:
            lr *= self._get_lbmult(cgrad["num_cums"])
        momentum = self.momentum if self.momentum > 0 else 0.0
        _sgd_step(weight, grad, state, lr, wd, momentum, self.rescale_grad, _clip_of(self),
                  True)
        self.cumgrads[index]["cum_grad"] = 0
