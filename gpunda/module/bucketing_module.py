"""``BucketingModule``: one Module per bucket key (sequence length ...), all sharing parameters.

``sym_gen(bucket_key)`` returns ``(symbol, data_names, label_names)``. The
default bucket's Module owns the parameters and the optimizer; a module made for
another key is bound with the default one as ``shared_module``, so its executors
use the same parameter, gradient and auxiliary arrays (and its input buffers
where they fit), and borrows the optimizer. ``forward`` switches to the batch's
``bucket_key``.
"""
from __future__ import annotations

import logging
import warnings

import numpy as np

from gpunda.base import GpundaError
from gpunda.initializer import Uniform
from gpunda.module.base_module import BaseModule, _check_input_names, _require
from gpunda.module.module import Module

__all__ = ["BucketingModule"]


class BucketingModule(BaseModule):
    """Modules for several bucket keys over shared parameters (see the module docstring)."""

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None):
        from gpunda.context import current_context
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise GpundaError("BucketingModule: default_bucket_key is required")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)
        self._compression_params = compression_params
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        # MXNet's default, cpu(), is its default device; gpunda's may be a GPU
        self._context = current_context() if context is None else context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    def _call_sym_gen(self, *args, **kwargs):
        from gpunda.name import NameManager
        # a fresh name manager per call, so every bucket's symbol names its layers alike
        with NameManager():
            return self._sym_gen(*args, **kwargs)

    def _new_module(self, symbol, data_names, label_names):
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names, state_names=self._state_names,
                      group2ctxs=self._group2ctxs, compression_params=self._compression_params)

    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        _require(self.binded, "BucketingModule.data_shapes: call bind() first")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "BucketingModule.label_shapes: call bind() first")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "BucketingModule.output_shapes: call bind() first")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        _require(self.binded, "BucketingModule.symbol: call bind() first")
        return self._curr_module.symbol

    # -- parameters -------------------------------------------------------------------
    def get_params(self):
        _require(self.params_initialized, "BucketingModule.get_params: call init_params() first")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._curr_module.set_params(arg_params, aux_params, allow_missing=allow_missing,
                                     force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        _require(self.binded, "BucketingModule.init_params: call bind before initializing "
                              "the parameters")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        self._check_ready("get_states")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._check_ready("set_states")
        self._curr_module.set_states(states, value)

    # -- binding ----------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Bind the default bucket's module (other buckets bind on first use)."""
        if self.params_initialized:
            arg_params, aux_params = self.get_params()
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise GpundaError("BucketingModule.bind: shared_module is not supported for "
                              "BucketingModule")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        key = self._default_bucket_key
        module = self._buckets.get(key)
        if module is None:
            module = self._new_module(*self._call_sym_gen(key))
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self.binded = True
        self._curr_module = module
        self._curr_bucket_key = key
        self._buckets[key] = module
        if self.params_initialized:
            self.set_params(arg_params, aux_params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make ``bucket_key``'s module current, creating and binding it on first use."""
        _require(self.binded, "BucketingModule.switch_bucket: call bind before switching bucket")
        module = self._buckets.get(bucket_key)
        default = self._buckets[self._default_bucket_key]
        if module is None:
            module = self._new_module(*self._call_sym_gen(bucket_key))
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=default, grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        elif not module.binded:
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=default, grad_req=self._grad_req)
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Bind the batch's bucket if new and let it prepare (the current bucket stays)."""
        self._check_ready("prepare")
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    # -- computation ------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        self._check_ready("forward")
        key = getattr(data_batch, "bucket_key", None)
        if key is None:
            key = self._default_bucket_key
        self.switch_bucket(key, getattr(data_batch, "provide_data", None),
                           getattr(data_batch, "provide_label", None))
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        self._check_ready("backward")
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        self._check_ready("update", optimizer=True)
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        self._check_ready("get_outputs")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._check_ready("get_input_grads")
        _require(self.inputs_need_grad,
                 "BucketingModule.get_input_grads: bind with inputs_need_grad=True first")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._check_ready("update_metric")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        _require(self.binded, "BucketingModule.install_monitor: call bind() first")
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)

    # -- checkpoints ------------------------------------------------------------------
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Write ``prefix-EPOCH.params``, one ``prefix-KEY-symbol.json`` per bucket and
        ``prefix.buckets`` (the keys), as MXNet's BucketingModule does."""
        from gpunda import ndarray as nd
        _require(len(self._buckets) > 0, "Empty BucketingModule cannot be saved")
        self.save_params(f"{prefix}-{epoch:04d}.params")
        for key in self._buckets:
            symbol, _, _ = self._sym_gen(key)
            symbol.save(f"{prefix}-{key}-symbol.json", remove_amp_cast=remove_amp_cast)
        nd.save(f"{prefix}.buckets", nd.array(list(self._buckets.keys()), dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule from files written by ``save_checkpoint``."""
        from gpunda import ndarray as nd
        from gpunda import symbol as sym
        from gpunda.model import load_params
        if sym_gen is None:
            raise GpundaError("BucketingModule.load: sym_gen is required")
        if default_bucket_key is None:
            raise GpundaError("BucketingModule.load: default_bucket_key is required")
        keys = [int(k) for k in nd.load(f"{prefix}.buckets")[0].asnumpy().astype("int32")]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key in keys:
            _, data_names, label_names = sym_gen(key)
            symbol = sym.load(f"{prefix}-{key}-symbol.json")
            mod._buckets[key] = Module(symbol, data_names, label_names, **kwargs)
            if key == default_bucket_key:
                mod._curr_module = mod._buckets[key]
        if mod._curr_module is None:
            raise GpundaError(f"BucketingModule.load: default_bucket_key={default_bucket_key!r} "
                              f"is not among the saved buckets {keys}")
        arg_params, aux_params = load_params(prefix, epoch)
        mod._curr_module._arg_params = arg_params
        mod._curr_module._aux_params = aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None,
                  aux_params=None, **kwargs):
        """A BucketingModule from ``{bucket_key: symbol}`` and parameter dicts."""
        for what, v in (("sym_dict", sym_dict), ("arg_params", arg_params),
                        ("aux_params", aux_params), ("default_bucket_key", default_bucket_key)):
            if v is None:
                raise GpundaError(f"BucketingModule.load_dict: {what} needs to be provided")
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key, loaded in sym_dict.items():
            _, data_names, label_names = sym_gen(default_bucket_key)
            mod._buckets[key] = Module(loaded, data_names, label_names, **kwargs)
            if key == default_bucket_key:
                mod._curr_module = mod._buckets[key]
        mod._curr_module._arg_params = arg_params
        mod._curr_module._aux_params = aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod
