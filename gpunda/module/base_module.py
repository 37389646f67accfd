"""``BaseModule``: MXNet's interface of a trainable computation, and the loops built on it.

A module is bound to input shapes (``bind``), gets parameters (``init_params``)
and an optimizer (``init_optimizer``), then runs ``forward``/``backward``/
``update``. ``fit``, ``score``, ``predict`` and ``iter_predict`` are written here
once against that interface, as in MXNet, so every module kind (Module,
BucketingModule, SequentialModule, PythonModule) trains the same way.
"""
from __future__ import annotations

import logging
import time
import warnings

import numpy as np

from gpunda.base import GpundaAssertionError, GpundaError, _as_list
from gpunda.initializer import Uniform

__all__ = ["BaseModule"]


def _require(cond, msg):
    # every state check MXNet's module code makes is an assert: an AssertionError there
    if not cond:
        raise GpundaAssertionError(msg)


def _check_input_names(symbol, names, typename, throw):
    """Every name in ``names`` must be an argument of ``symbol`` (ValueError or a warning)."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args
                      if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = (f"You created Module with Module(..., {typename}_names={list(names)}) but input "
               f"with name '{name}' is not found in symbol.list_arguments(). Did you mean one "
               f"of:\n\t" + "\n\t".join(candidates))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _check_names_match(names, descs, kind, throw):
    actual = [d[0] for d in descs]
    if sorted(names) != sorted(actual):
        msg = (f"Data provided by {kind}_shapes don't match names specified by {kind}_names "
               f"({descs} vs. {list(names)})")
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def _as_desc(x):
    from gpunda.io import DataDesc
    if isinstance(x, DataDesc):
        desc = x
    else:
        if not isinstance(x, (list, tuple)) or len(x) < 2:
            raise TypeError(f"bind: each input shape must be a DataDesc or a (name, shape) pair, "
                            f"got {x!r}")
        desc = DataDesc(*x)
    shape = desc.shape
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in shape):
        raise TypeError(f"bind: the shape of input {desc.name!r} must be a tuple of ints, got "
                        f"{type(shape).__name__} {shape!r}")
    if isinstance(shape, list):
        desc = DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout)
    return desc


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """The data and label shapes as DataDescs, their names checked against the module's."""
    data_shapes = [_as_desc(x) for x in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [_as_desc(x) for x in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


class BaseModule:
    """The module interface; subclasses implement bind/forward/backward/update & co."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    def _check_ready(self, what, optimizer=False):
        if self.binded and self.params_initialized and (self.optimizer_initialized or
                                                        not optimizer):
            return      # runs several times a batch: no messages made unless one fails
        _require(self.binded, f"{type(self).__name__}.{what}: call bind() first")
        _require(self.params_initialized,
                 f"{type(self).__name__}.{what}: call init_params() (or set_params) first")
        _require(self.optimizer_initialized,
                 f"{type(self).__name__}.{what}: call init_optimizer() first")

    # -- high-level loops -------------------------------------------------------------
    def forward_backward(self, data_batch):
        """A training forward, then backward."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Run ``eval_data`` through the module; returns ``eval_metric``'s (name, value) list."""
        from gpunda import metric
        from gpunda.model import BatchEndParam
        self._check_ready("score")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            if isinstance(eval_batch, list):
                self.update_metric(eval_metric, [b.label for b in eval_batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, eval_batch.label)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                       locals=locals())
                for cb in _as_list(batch_end_callback):
                    cb(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch,
                                   eval_metric=eval_metric, locals=locals())
            for cb in _as_list(score_end_callback):
                cb(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs, nbatch, batch)`` per batch, the padding cut off the outputs."""
        self._check_ready("iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """Outputs over ``eval_data`` (a DataIter, or one NDArray / numpy batch).

        With ``merge_batches`` the batches are concatenated (one array when there is
        one output, unless ``always_output_list``); else one list per batch.
        """
        from gpunda import ndarray
        from gpunda.io import DataBatch, DataIter
        self._check_ready("predict")
        if isinstance(eval_data, (ndarray.NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = ndarray.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError("eval_data must be of type NDArray or DataIter")
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            output_list.append([out[0:out.shape[0] - pad].copy() for out in self.get_outputs()])
        if not output_list:
            return output_list
        if not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        if any(len(o) != num_outputs for o in output_list):
            raise GpundaError("predict: cannot merge batches, as the number of outputs is not "
                              "the same in every mini-batch (bucketing?); pass "
                              "merge_batches=False")
        merged = [ndarray.concatenate([o[i] for o in output_list]) for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Train on ``train_data`` for epochs ``begin_epoch .. num_epoch-1`` (MXNet's loop).

        Binds, initializes parameters 
        and the optimizer, then per batch: forward_backward, update, update_metric,
        the batch-end callbacks; per epoch: logs the training metric, syncs the
        parameters, calls the epoch-end callbacks and scores ``eval_data``.
        """
        from gpunda import metric
        from gpunda.model import BatchEndParam
        if num_epoch is None:
            raise GpundaError("fit: please specify number of epochs (num_epoch)")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [b.label for b in data_batch],
                                       pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                # only one batch is referenced at a time (C++ iterators free the last one)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                           locals=locals())
                    for cb in _as_list(batch_end_callback):
                        cb(params)
                nbatch += 1
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            # the devices' parameters, averaged, become the module's own
            arg_params_now, aux_params_now = self.get_params()
            self.set_params(arg_params_now, aux_params_now)
            if epoch_end_callback is not None:
                for cb in _as_list(epoch_end_callback):
                    cb(epoch, self.symbol, arg_params_now, aux_params_now)
            if eval_data is not None:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    # -- the interface subclasses fill in ----------------------------------------------
    @property
    def data_names(self):
        """Names of the data inputs."""
        raise NotImplementedError()

    @property
    def output_names(self):
        """Names of the outputs."""
        raise NotImplementedError()

    @property
    def data_shapes(self):
        """DataDescs of the data inputs (after bind)."""
        raise NotImplementedError()

    @property
    def label_shapes(self):
        """DataDescs of the label inputs (after bind; None without labels)."""
        raise NotImplementedError()

    @property
    def output_shapes(self):
        """(name, shape) pairs of the outputs (after bind)."""
        raise NotImplementedError()

    @property
    def symbol(self):
        """The module's symbol."""
        return self._symbol

    def get_params(self):
        """``(arg_params, aux_params)``: dicts name -> NDArray."""
        raise NotImplementedError()

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize the parameters and auxiliary states."""
        raise NotImplementedError()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter and aux-state values (``init_params`` without an initializer)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)

    def save_params(self, fname):
        """Save the parameters to ``fname`` (``arg:``/``aux:`` keys, MXNet's format)."""
        from gpunda import ndarray
        from gpunda.context import cpu
        arg_params, aux_params = self.get_params()
        save_dict = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
        save_dict.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
        ndarray.save(fname, save_dict)

    def load_params(self, fname):
        """Load parameters saved by ``save_params`` (or ``mx.model.save_checkpoint``)."""
        from gpunda import ndarray
        save_dict = ndarray.load(fname)
        arg_params, aux_params = {}, {}
        items = save_dict.items() if isinstance(save_dict, dict) else ()
        for k, value in items:
            kind, sep, name = k.partition(":")
            if not sep or kind not in ("arg", "aux"):
                raise ValueError(f"Invalid param file {fname}: key {k!r} has no 'arg:'/'aux:' "
                                 f"prefix")
            (arg_params if kind == "arg" else aux_params)[name] = value
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        """The state inputs (a module without states has none)."""
        self._check_ready("get_states")
        _require(not merge_multi_context,
                 "get_states: merge_multi_context=True is not supported; pass False")
        return []

    def set_states(self, states=None, value=None):
        """Set the state inputs (a module without states takes none)."""
        self._check_ready("set_states")
        _require(not states and not value, "set_states: this module has no states")

    def install_monitor(self, mon):
        """Install a ``mx.monitor.Monitor`` on the executors."""
        raise NotImplementedError()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Get ready for ``data_batch`` (switch bucket, pull row_sparse parameters)."""
        if sparse_row_id_fn is not None:
            warnings.warn(UserWarning("sparse_row_id_fn is not invoked for BaseModule."))

    def forward(self, data_batch, is_train=None):
        raise NotImplementedError()

    def backward(self, out_grads=None):
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        raise NotImplementedError()

    def update(self):
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        raise NotImplementedError()

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        raise NotImplementedError()

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        raise NotImplementedError()
