"""Optimizers (MXNet 1.x ``mx.optimizer``): SGD, NAG, Adam, RMSProp, AdaGrad, ...

``Optimizer.update(index, weight, grad, state)`` changes ``weight`` in place.
The learning rate and weight decay of parameter ``index`` are the global ones
times the Parameter's ``lr_mult``/``wd_mult`` (``param_dict``, set by the
Trainer) or the per-name ``set_lr_mult``/``set_wd_mult`` tables. Every update
first rescales the gradient by ``rescale_grad`` and clips it to
``[-clip_gradient, clip_gradient]`` when ``clip_gradient`` is set.

SGD, Adam and RMSProp use the fused update operators (``sgd_update``,
``sgd_mom_update``, ``adam_update``, ``rmsprop_update``) when the build has
them; otherwise, and for the others, the same formulas run on the backend
arrays in place.
"""
from __future__ import annotations

import math
import pickle

import numpy as np

from gpunda._engine import autograd as _ag
from gpunda.optimizer._rows import op_params, run_update
from gpunda.base import GpundaError, GpundaValueError
from gpunda.ops.optimizer import updates as _ops

__all__ = ["Optimizer", "SGD", "NAG", "Adam", "RMSProp", "AdaGrad", "AdaDelta", "Signum",
           "Updater", "get_updater", "create", "register"]


def _nd():
    from gpunda import ndarray
    return ndarray


def _fused(name):
    """``nd.<name>`` when that update operator is registered, else None."""
    try:
        return _FUSED[name]
    except KeyError:
        pass
    from gpunda.ops.registry import _REGISTRY
    from gpunda.ndarray import _op
    fn = getattr(_op, name, None) if name in _REGISTRY else None
    _FUSED[name] = fn
    return fn


_FUSED = {}


def _flatten_list(nested_list):
    """The items of the inner sequences of ``nested_list``, in order, as one list (the
    argument list of MXNet's multi-tensor update ops: ``zip(weights, grads, ...)``)."""
    return [item for inner in nested_list for item in inner]


def _as_classic(a, allow_np):
    """``a`` (an array or a list of them) with ``mx.np.ndarray`` entries turned into
    ``mx.nd.NDArray`` views, so that optimizers written with ``nd`` ops take them; with
    ``allow_np`` False an ``np.ndarray`` is an error. Anything else is returned as is."""
    import sys
    np_mod = sys.modules.get("gpunda.numpy")
    if np_mod is None:          # no mx.np array can exist before mx.np is loaded
        return a
    is_np = lambda x: isinstance(x, np_mod.ndarray)  # noqa: E731
    if isinstance(a, (tuple, list)):
        if not any(is_np(x) for x in a):
            return a
        if not allow_np:
            raise GpundaValueError("Converting np.ndarray to mx.nd.NDArray is not allowed")
        return [x.as_nd_ndarray() for x in a]
    if is_np(a):
        if not allow_np:
            raise GpundaValueError("Converting np.ndarray to mx.nd.NDArray is not allowed")
        return a.as_nd_ndarray()
    return a


def _dense(grad):
    """The backend array of a gradient (sparse gradients densified)."""
    if grad.stype == "default":
        return grad._data
    return grad.tostype("default")._data


def _bump(arr):
    _ag.bump_version(arr)


class Optimizer:
    """Base class. Create one by name with ``Optimizer.create_optimizer('sgd', ...)``."""

    opt_registry = {}

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0, clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None, aggregate_num=None, **kwargs):
        if kwargs:
            raise GpundaError(f"Optimizer {type(self).__name__}: unknown arguments "
                              f"{sorted(kwargs)}")
        self.rescale_grad = rescale_grad
        from gpunda.util import is_np_array
        self.allow_np_array = is_np_array()    # MXNet's flag (created in NumPy mode)
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        # with a scheduler and no learning_rate, the scheduler's base_lr rules
        if lr_scheduler is not None and learning_rate is not None:
            self.lr_scheduler.base_lr = learning_rate
        self.lr = learning_rate
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = aggregate_num or 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise GpundaError("Optimizer: param_idx2name must be a dict of index -> name")
        self.idx2name = param_idx2name.copy()
        # a Symbol's variables carry __lr_mult__/__wd_mult__ attributes (Module passes it)
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # -- registry ---------------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Class decorator: make ``klass`` creatable by its lower-case name."""
        if not (isinstance(klass, type) and issubclass(klass, Optimizer)):
            raise GpundaError(f"Optimizer.register: {klass!r} is not an Optimizer subclass")
        Optimizer.opt_registry[klass.__name__.lower()] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An optimizer by registered name ('sgd', 'adam', ...) with ``kwargs``."""
        if not isinstance(name, str):
            raise GpundaError(f"create_optimizer: name={name!r} must be a string")
        klass = Optimizer.opt_registry.get(name.lower())
        if klass is None:
            raise ValueError(f"create_optimizer: cannot find optimizer {name!r}; known: "
                              f"{', '.join(sorted(Optimizer.opt_registry))}")
        return klass(**kwargs)

    # -- learning rate and multipliers --------------------------------------------------
    @property
    def learning_rate(self):
        """The current learning rate (from the scheduler when there is one)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Set the global learning rate (not allowed with an lr_scheduler)."""
        if self.lr_scheduler is not None:
            # MXNet raises (not warns) a UserWarning here
            raise UserWarning("Optimizer.set_learning_rate: the optimizer has an lr_scheduler; "
                              "changing the rate would be overridden by it")
        self.lr = lr

    def set_lr_scale(self, args_lrscale):
        """Removed in MXNet 1.x: raises, pointing to ``set_lr_mult``."""
        raise GpundaError("Optimizer.set_lr_scale is deprecated; use set_lr_mult")

    def set_lr_mult(self, args_lr_mult):
        """Per-name learning-rate multipliers (``{'fc_weight': 0.1}``)."""
        self.lr_mult = {}
        self.lr_mult.update(self._sym_mults("__lr_mult__"))
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Per-name weight-decay multipliers (names not ending in _weight/_gamma default to 0
        in symbolic MXNet; with a param_dict the Parameter's wd_mult is used)."""
        self.wd_mult = {}
        for n in self.idx2name.values():
            if not (n.endswith("_weight") or n.endswith("_gamma")):
                self.wd_mult[n] = 0.0
        self.wd_mult.update(self._sym_mults("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def _sym_mults(self, key):
        """``{argument: float(attr[key])}`` from the Symbol given as ``sym``."""
        if not self.sym_info:
            return {}
        attrs, arg_names = self.sym_info
        return {n: float(attrs[n][key]) for n in arg_names if key in attrs.get(n, {})}

    def _set_current_context(self, device_id):
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]

    def _update_count(self, index):
        if not isinstance(index, (list, tuple)):
            index = [index]
        for idx in index:
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return self._lrs_from(lr, indices)

    def _lrs_from(self, lr, indices):
        """The global rate ``lr`` times each index's lr_mult."""
        out = []
        for index in indices:
            if index in self.param_dict:
                out.append(lr * self.param_dict[index].lr_mult)
            elif index in self.lr_mult:
                out.append(lr * self.lr_mult[index])
            elif index in self.idx2name:
                out.append(lr * self.lr_mult.get(self.idx2name[index], 1.0))
            else:
                out.append(lr)
        return out

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        out = []
        for index in indices:
            wd = self.wd
            if index in self.param_dict:
                wd *= self.param_dict[index].wd_mult
            elif index in self.wd_mult:
                wd *= self.wd_mult[index]
            elif index in self.idx2name:
                wd *= self.wd_mult.get(self.idx2name[index], 1.0)
            out.append(wd)
        return out

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    def __getstate__(self):
        ret = self.__dict__.copy()
        # the Parameters themselves are not part of the optimizer state
        ret["param_dict"] = {}
        return ret

    def __setstate__(self, state):
        self.__dict__ = state

    # -- states and updates -----------------------------------------------------------
    def create_state(self, index, weight):
        """Auxiliary state (momentum, moments) for one weight; None when not needed."""
        return None

    def create_state_multi_precision(self, index, weight):
        """Like ``create_state``; float16 weights get a float32 master copy when
        ``multi_precision``."""
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (master, self.create_state(index, master))
        if weight.dtype == np.float16 and not self.multi_precision:
            import warnings
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or "
                          "slow convergence. Consider using multi_precision=True option of the "
                          "optimizer")
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Change ``weight`` in place from ``grad`` and ``state``."""
        raise NotImplementedError

    def update_multi_precision(self, index, weight, grad, state):
        """``update``, through the float32 master copy for float16 weights."""
        if self.multi_precision and weight.dtype == np.float16 and isinstance(state, tuple):
            master, inner = state
            self.update(index, master, grad.astype(np.float32), inner)
            weight._data[...] = master._data.astype(weight._data.dtype)
            _bump(weight)
            return
        self.update(index, weight, grad, state)

    # shared pieces of the formulas, on backend arrays
    def _clip_kw(self):
        kw = {"rescale_grad": self.rescale_grad}
        if self.clip_gradient is not None:
            kw["clip_gradient"] = self.clip_gradient
        return kw

    def _prep_wd(self, grad, w, wd):
        """``clip(rescale_grad * grad + wd * weight)`` (Adam's and RMSProp's order)."""
        g = _dense(grad) * self.rescale_grad + wd * w
        if self.clip_gradient is not None:
            xp = grad.context.backend.xp
            g = xp.clip(g, -self.clip_gradient, self.clip_gradient)
        return g

    def _prep(self, grad):
        """The rescaled, clipped gradient as a new backend array."""
        g = _dense(grad) * self.rescale_grad
        if self.clip_gradient is not None:
            xp = grad.context.backend.xp
            g = xp.clip(g, -self.clip_gradient, self.clip_gradient)
        return g


register = Optimizer.register
create = Optimizer.create_optimizer


def _check(weight, grad, where):
    if weight.shape != grad.shape:
        raise GpundaError(f"{where}: weight has shape {weight.shape} but grad has shape "
                          f"{grad.shape}")
    if weight.context != grad.context:
        raise GpundaError(f"{where}: weight is on {weight.context} but grad is on "
                          f"{grad.context}")


@register
class SGD(Optimizer):
    """SGD with optional momentum.

    ``rescaled = clip(rescale_grad * grad)``; without momentum
    ``weight -= lr * (rescaled + wd * weight)``; with it
    ``mom = momentum * mom - lr * (rescaled + wd * weight); weight += mom``.
    """

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return _nd().zeros(weight.shape, ctx=weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        _check(weight, grad, "SGD.update")
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if self.clip_gradient is None and weight.dtype == grad.dtype and \
                grad.stype == "default" and weight.stype == "default":
            # in place on the backend arrays: the same formula with the fewest passes
            # over memory (the fused ops allocate the new weight and copy it back)
            w, g = weight._data, grad._data
            step = lr * self.rescale_grad
            if state is None:
                if wd:
                    w *= 1.0 - lr * wd
                w -= step * g
            else:
                m = state._data
                m *= self.momentum
                m -= step * g
                if wd:
                    m -= (lr * wd) * w
                w += m
                _bump(state)
            _bump(weight)
            return
        p = op_params(self, lr, wd, momentum=self.momentum)
        if state is None:
            run_update(weight, grad, (), lambda w, g: _ops._sgd(_xp(w), p, w, g),
                       self.lazy_update)
        else:
            run_update(weight, grad, (state,),
                       lambda w, g, m: _ops._sgd_mom(_xp(w), p, w, g, m), self.lazy_update)

    def create_state_multi_precision(self, index, weight):
        return _mp_state_mom_first(self, index, weight)

    def update_multi_precision(self, index, weight, grad, state):
        _mp_update_mom_first(self, index, weight, grad, state)


def _xp(arr):
    from gpunda.ops.sparse.ops import xp_of
    return xp_of(arr)


def _mp_state_mom_first(opt, index, weight):
    """SGD's and NAG's multi-precision state: ``(state, float32 master copy)``."""
    if opt.multi_precision and weight.dtype == np.float16:
        master = weight.astype(np.float32)
        return (opt.create_state(index, master), master)
    return Optimizer.create_state_multi_precision(opt, index, weight)


def _mp_update_mom_first(opt, index, weight, grad, state):
    if opt.multi_precision and weight.dtype == np.float16 and isinstance(state, (tuple, list)):
        inner, master = state
        opt.update(index, master, grad.astype(np.float32), inner)
        weight._data[...] = master._data.astype(weight._data.dtype)
        _bump(weight)
        return
    opt.update(index, weight, grad, state)


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient (MXNet 1.x formula).

    ``g = rescaled + wd * weight; mom = momentum * mom + g;
    weight -= lr * (g + momentum * mom)``.
    """

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return _nd().zeros(weight.shape, ctx=weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        _check(weight, grad, "NAG.update")
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        p = op_params(self, lr, wd, momentum=self.momentum)
        if state is None:
            run_update(weight, grad, (), lambda w, g: _ops._sgd(_xp(w), p, w, g), False)
        else:
            mu = self.momentum

            def step(w, g, m):
                # MXNet's kernel runs in place (out=weight): the momentum's weight-decay
                # term reads the weight it has just written
                g = _ops._rescaled(_xp(w), p, g, w.dtype)
                m *= mu
                w[...] = w - m + (mu + 1) * (m - lr * (g + wd * w))
                m -= lr * (g + wd * w)
            run_update(weight, grad, (state,), step, False)

    def create_state_multi_precision(self, index, weight):
        return _mp_state_mom_first(self, index, weight)

    def update_multi_precision(self, index, weight, grad, state):
        _mp_update_mom_first(self, index, weight, grad, state)


@register
class Adam(Optimizer):
    """Adam with bias correction folded into the step size (MXNet 1.x).

    ``g = clip(rescale_grad * grad + wd * weight); m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g**2;
    weight -= lr * sqrt(1-b2**t)/(1-b1**t) * m / (sqrt(v) + epsilon)``.
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        nd = _nd()
        return (nd.zeros(weight.shape, ctx=weight.context, dtype=weight.dtype),
                nd.zeros(weight.shape, ctx=weight.context, dtype=weight.dtype))

    def update(self, index, weight, grad, state):
        _check(weight, grad, "Adam.update")
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        p = op_params(self, lr, wd, beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon)
        run_update(weight, grad, tuple(state),
                   lambda w, g, m, v: _ops._adam(_xp(w), p, w, g, m, v), self.lazy_update)


@register
class RMSProp(Optimizer):
    """RMSProp (Tieleman & Hinton); ``centered=True`` is Graves' variant.

    Plain: ``n = (1-g1)*g**2 + g1*n; weight -= lr * g / sqrt(n + epsilon)``.
    Centered: also ``gbar = (1-g1)*g + g1*gbar``,
    ``delta = g2*delta - lr * g / sqrt(n - gbar**2 + epsilon); weight += delta``.
    ``clip_weights`` clips the weight afterwards.
    """

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2 = gamma1, gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        nd = _nd()
        z = lambda: nd.zeros(weight.shape, ctx=weight.context, dtype=weight.dtype)  # noqa: E731
        if self.centered:
            return (z(), z(), z())
        return (z(),)

    def update(self, index, weight, grad, state):
        _check(weight, grad, "RMSProp.update")
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if not self.centered:
            op = _fused("rmsprop_update")
            if op is not None:
                kw = self._clip_kw()
                if self.clip_weights:
                    kw["clip_weights"] = self.clip_weights
                op(weight, grad, state[0], out=weight, lr=lr, wd=wd, gamma1=self.gamma1,
                   epsilon=self.epsilon, **kw)
                return
        xp = weight.context.backend.xp
        w = weight._data
        g = self._prep_wd(grad, w, wd)
        n = state[0]._data
        n *= self.gamma1
        n += (1.0 - self.gamma1) * g * g
        if not self.centered:
            w -= lr * g / xp.sqrt(n + self.epsilon)
        else:
            gbar, delta = state[1]._data, state[2]._data
            gbar *= self.gamma1
            gbar += (1.0 - self.gamma1) * g
            delta *= self.gamma2
            delta -= lr * g / xp.sqrt(n - gbar * gbar + self.epsilon)
            w += delta
        if self.clip_weights:
            xp.clip(w, -self.clip_weights, self.clip_weights, out=w)
        for a in (weight,) + tuple(state):
            _bump(a)


@register
class AdaGrad(Optimizer):
    """AdaGrad: ``h += g**2; weight -= lr * (g / sqrt(h + eps) + wd * weight)``."""

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return _nd().zeros(weight.shape, ctx=weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        _check(weight, grad, "AdaGrad.update")
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        p = op_params(self, lr, wd)
        eps = self.float_stable_eps

        def step(w, g, h):
            xp = _xp(w)
            g = _ops._rescaled(xp, p, g, w.dtype)
            h += g * g
            w -= lr * (g / xp.sqrt(h + eps) + wd * w)
        # MXNet updates only the rows of a row_sparse gradient (sparse adagrad_update)
        run_update(weight, grad, (state,), step, True)


@register
class AdaDelta(Optimizer):
    """AdaDelta (Zeiler): step sizes from running averages of g**2 and delta**2."""

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho, self.epsilon = rho, epsilon

    def create_state(self, index, weight):
        nd = _nd()
        return (nd.zeros(weight.shape, ctx=weight.context, dtype=weight.dtype),
                nd.zeros(weight.shape, ctx=weight.context, dtype=weight.dtype))

    def update(self, index, weight, grad, state):
        _check(weight, grad, "AdaDelta.update")
        self._update_count(index)
        wd = self._get_wd(index)
        xp = weight.context.backend.xp
        w = weight._data
        acc_g, acc_d = state[0]._data, state[1]._data
        g = self._prep(grad)
        acc_g *= self.rho
        acc_g += (1.0 - self.rho) * g * g
        delta = xp.sqrt(acc_d + self.epsilon) / xp.sqrt(acc_g + self.epsilon) * g
        acc_d *= self.rho
        acc_d += (1.0 - self.rho) * delta * delta
        w -= delta + wd * w
        for a in (weight,) + tuple(state):
            _bump(a)


@register
class Signum(Optimizer):
    """signSGD / Signum: step by the sign of the (momentum-averaged) gradient."""

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return _nd().zeros(weight.shape, ctx=weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state):
        _check(weight, grad, "Signum.update")
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        xp = weight.context.backend.xp
        w = weight._data
        g = self._prep(grad)
        if state is not None:
            m = state._data
            m *= self.momentum
            m -= (1 - self.momentum) * (g + wd * w)
            w *= (1 - lr * self.wd_lh)
            w += lr * xp.sign(m)
            _bump(state)
        else:
            w *= (1 - lr * (wd + self.wd_lh))
            w -= lr * xp.sign(g)
        _bump(weight)


class Updater:
    """Applies an optimizer to (index, grad, weight), creating states on first use."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        # as MXNet's: an optimizer with aggregate_num > 0 (LAMB, LARS) gets lists of
        # indices, up to aggregate_num weights of one dtype per call
        self.aggregate_updates = (optimizer.aggregate_num or 0) > 0

    def __call__(self, index, grad, weight):
        if not isinstance(index, (list, tuple)):
            index, grad, weight = [index], [grad], [weight]
        for i, w in zip(index, weight):
            if i not in self.states:
                self.states[i] = self.optimizer.create_state_multi_precision(i, w)
                self.states_synced[i] = True
            elif not self.states_synced[i]:
                self.states[i] = self.sync_state_context(self.states[i], w.context)
                self.states_synced[i] = True
        if self.aggregate_updates:
            self._update_in_groups(index, grad, weight)
            return
        for i, g, w in zip(index, grad, weight):
            self._on_device(w.context, i, w, g, self.states[i])

    def _on_device(self, ctx, index, weight, grad, state):
        if ctx.device_type == "gpu":
            # backend math on raw CuPy arrays must run on the weight's device
            with ctx.backend.device_scope():
                self.optimizer.update_multi_precision(index, weight, grad, state)
        else:
            self.optimizer.update_multi_precision(index, weight, grad, state)

    def _update_in_groups(self, index, grad, weight):
        by_dtype = {}
        for i, g, w in zip(index, grad, weight):
            by_dtype.setdefault(np.dtype(w.dtype), []).append((i, w, g))
        n = self.optimizer.aggregate_num
        for entries in by_dtype.values():
            for s in range(0, len(entries), n):
                idx, ws, gs = zip(*entries[s:s + n])
                self._on_device(ws[0].context, idx, ws, gs, [self.states[i] for i in idx])

    def sync_state_context(self, state, context):
        """``state`` copied to ``context`` (states loaded from a file live on the CPU)."""
        from gpunda.ndarray import NDArray
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states):
        """Restore from ``get_states`` bytes."""
        states = pickle.loads(states)
        if isinstance(states, tuple) and len(states) == 2:
            self.states, self.optimizer = states
        else:
            self.states = states
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer=False):
        """The states (and optimizer) as bytes."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer):
    """An ``Updater`` for ``optimizer``."""
    return Updater(optimizer)



# the less common optimizers live in their own module (it imports this one)
from gpunda.optimizer._more import (DCASGD, FTML, LAMB, LARS, LBSGD, SGLD, Adamax, Ftrl,  # noqa: E402
                               Nadam, Test, ccSGD)

__all__ += ["Adamax", "Nadam", "FTML", "Ftrl", "LAMB", "SGLD", "DCASGD", "ccSGD", "Test", "LARS",
            "LBSGD"]
