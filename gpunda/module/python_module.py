"""``PythonModule`` / ``PythonLossModule``: modules whose computation is written in Python.

A PythonModule has no parameters and no optimizer; subclasses give
``_compute_output_shapes``, ``forward``, ``get_outputs`` and (to train)
``backward``/``get_input_grads``. PythonLossModule is a loss at the end of a
SequentialModule: its output is its input scores, and its input gradient is
``grad_func(scores, labels)``.
"""
from __future__ import annotations

import logging

from gpunda.base import GpundaError
from gpunda.initializer import Uniform
from gpunda.module.base_module import BaseModule, _require

__all__ = ["PythonModule", "PythonLossModule"]


class PythonModule(BaseModule):
    """A module computed in Python; subclass it and implement the computation."""

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        self._data_names = list(data_names) if isinstance(data_names, tuple) else data_names
        self._label_names = list(label_names) if isinstance(label_names, tuple) else label_names
        self._output_names = output_names
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    @property
    def data_names(self):
        return self._data_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        return self._data_shapes

    @property
    def label_shapes(self):
        return self._label_shapes

    @property
    def output_shapes(self):
        return self._output_shapes

    def get_params(self):
        """No parameters: two empty dicts."""
        return {}, {}

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Nothing to initialize."""

    def update(self):
        """Nothing to update."""

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` with the outputs (only when bound with labels)."""
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise RuntimeError("PythonModule does not support presliced labels")
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Record the shapes and compute the output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if grad_req != "write":
            raise GpundaError(f"PythonModule.bind: grad_req={grad_req!r}; a Python module "
                              f"only supports 'write'")
        names = [x[0] for x in data_shapes]
        if names != list(self._data_names):
            raise GpundaError(f"PythonModule.bind: data_shapes name {names}, but the module's "
                              f"data_names are {self._data_names}")
        if label_shapes is not None:
            lnames = [x[0] for x in label_shapes]
            if self._label_names is None or lnames != list(self._label_names):
                raise GpundaError(f"PythonModule.bind: label_shapes name {lnames}, but the "
                                  f"module's label_names are {self._label_names}")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = data_shapes
        self._label_shapes = label_shapes
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self):
        """The ``(name, shape)`` list of the outputs, from the bound shapes."""
        raise NotImplementedError()

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """No parameters, so no optimizer."""


class PythonLossModule(PythonModule):
    """A loss written in Python: ``grad_func(scores, labels)`` gives the input gradient."""

    def __init__(self, name="pyloss", data_names=("data",), label_names=("softmax_label",),
                 logger=logging, grad_func=None):
        super().__init__(data_names, label_names, [name + "_output"], logger=logger)
        self._name = name
        if len(data_names) != 1 or len(label_names) != 1:
            raise GpundaError(f"PythonLossModule: needs one data and one label name, got "
                              f"data_names={data_names}, label_names={label_names}")
        self._scores = None
        self._labels = None
        self._scores_grad = None
        if grad_func is not None and not callable(grad_func):
            raise GpundaError(f"PythonLossModule: grad_func must be callable, got "
                              f"{type(grad_func).__name__}")
        self._grad_func = grad_func

    def _compute_output_shapes(self):
        return [(self._name + "_output", self._data_shapes[0][1])]

    def forward(self, data_batch, is_train=None):
        """Keep the scores (and, training, the labels)."""
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context=True):
        _require(merge_multi_context is True,
                 "PythonLossModule.get_outputs: only merge_multi_context=True")
        return [self._scores]

    def backward(self, out_grads=None):
        """The input gradient from ``grad_func``; a loss takes no ``out_grads``."""
        _require(out_grads is None, "PythonLossModule.backward: for a loss module, out_grads "
                                    "should be None")
        _require(self.for_training, "PythonLossModule.backward: bind with for_training=True")
        self._backward_impl()

    def _backward_impl(self):
        from gpunda import ndarray as nd
        if self._grad_func is None:
            raise NotImplementedError("PythonLossModule: give grad_func or override "
                                      "_backward_impl")
        grad = self._grad_func(self._scores, self._labels)
        self._scores_grad = grad if isinstance(grad, nd.NDArray) else nd.array(grad)

    def get_input_grads(self, merge_multi_context=True):
        _require(merge_multi_context is True,
                 "PythonLossModule.get_input_grads: only merge_multi_context=True")
        return [self._scores_grad]

    def install_monitor(self, mon):
        raise NotImplementedError("PythonLossModule.install_monitor")
