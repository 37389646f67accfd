"""``SequentialModule``: modules chained, each one's outputs the next one's data.

``add(module, take_labels=True)`` marks a module that gets the batch's labels
(and updates the metric); ``auto_wiring=True`` renames the previous outputs to
the module's data names. Backward runs in reverse, passing each module's input
gradients to the one before as its ``out_grads``.
"""
from __future__ import annotations

import copy
import logging

from gpunda.base import GpundaError
from gpunda.initializer import Uniform
from gpunda.module.base_module import BaseModule, _require

__all__ = ["SequentialModule"]


class SequentialModule(BaseModule):
    """A chain of modules (see the module docstring)."""

    META_TAKE_LABELS = "take_labels"
    META_AUTO_WIRING = "auto_wiring"

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None
        self._data_shapes = None
        self._meta_keys = {getattr(SequentialModule, x) for x in dir(SequentialModule)
                           if x.startswith("META_")}

    def add(self, module, **kwargs):
        """Append ``module`` (metas: ``take_labels``, ``auto_wiring``); returns self."""
        for key in kwargs:
            if key not in self._meta_keys:
                raise GpundaError(f'SequentialModule.add: unknown meta "{key}", a typo? '
                                  f"Known: {sorted(self._meta_keys)}")
        self._modules.append(module)
        self._metas.append(kwargs)
        # a new module invalidates the binding and the initialization
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        _require(self.binded, "SequentialModule.data_shapes: call bind() first")
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "SequentialModule.label_shapes: call bind() first")
        return self._label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "SequentialModule.output_shapes: call bind() first")
        return self._modules[-1].output_shapes

    def get_params(self):
        self._check_ready("get_params")
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize every module; a parameter name used by two modules is an error."""
        if self.params_initialized and not force_init:
            return
        _require(self.binded, "SequentialModule.init_params: call bind before initializing "
                              "the parameters")
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        seen_arg, seen_aux = {}, {}
        for i, module in enumerate(self._modules):
            args, auxs = module.get_params()
            for seen, names in ((seen_arg, args), (seen_aux, auxs)):
                for name in names:
                    if name in seen:
                        raise GpundaError(
                            f'Duplicated parameter names: name "{name}" in layer {i} '
                            f"({type(module).__name__}) is already used in layer {seen[name]} "
                            f"({type(self._modules[seen[name]]).__name__}).")
                    seen[name] = i
        self.params_initialized = True

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Bind each module to the previous one's output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if inputs_need_grad and not for_training:
            raise GpundaError("SequentialModule.bind: inputs_need_grad=True needs "
                              "for_training=True")
        if shared_module is not None:
            raise GpundaError("SequentialModule.bind: shared_module is not supported")
        if not self._modules:
            raise GpundaError("SequentialModule.bind: attempting to bind an empty "
                              "SequentialModule")
        self.binded = True
        self._label_shapes = label_shapes
        my_data_shapes = data_shapes
        anybody_needs_label = False
        for i, module in enumerate(self._modules):
            meta = self._metas[i]
            if meta.get(SequentialModule.META_TAKE_LABELS):
                my_label_shapes = label_shapes
                anybody_needs_label = True
            else:
                my_label_shapes = None
            # every module after the first passes gradients back, so needs its inputs'
            my_inputs_need_grad = bool(inputs_need_grad or (for_training and i > 0))
            if meta.get(SequentialModule.META_AUTO_WIRING, False):
                names = module.data_names
                if len(names) != len(my_data_shapes):
                    raise GpundaError(f"SequentialModule.bind: layer {i} has data names "
                                      f"{names} for {len(my_data_shapes)} inputs")
                my_data_shapes = [(n, shape) for n, (_, shape) in zip(names, my_data_shapes)]
            module.bind(data_shapes=my_data_shapes, label_shapes=my_label_shapes,
                        for_training=for_training, inputs_need_grad=my_inputs_need_grad,
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            my_data_shapes = module.output_shapes
        if not anybody_needs_label:
            self._label_shapes = None

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    def forward(self, data_batch, is_train=None):
        self._check_ready("forward")
        data_batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            data_batch.data = module.get_outputs()
            if hasattr(data_batch, "provide_data"):
                names = [x[0] for x in module.output_shapes]
                data_batch.provide_data = [(n, x.shape) for n, x in zip(names, data_batch.data)]

    def backward(self, out_grads=None):
        self._check_ready("backward")
        for i in range(len(self._modules) - 1, -1, -1):
            module = self._modules[i]
            module.backward(out_grads=out_grads)
            if i == 0:
                break
            out_grads = module.get_input_grads()

    def update(self):
        self._check_ready("update", optimizer=True)
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        self._check_ready("get_outputs")
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._check_ready("get_input_grads")
        _require(self.inputs_need_grad,
                 "SequentialModule.get_input_grads: bind with inputs_need_grad=True first")
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._check_ready("update_metric")
        for meta, module in zip(self._metas, self._modules):
            if meta.get(SequentialModule.META_TAKE_LABELS):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        _require(self.binded, "SequentialModule.install_monitor: call bind() first")
        for module in self._modules:
            module.install_monitor(mon)
