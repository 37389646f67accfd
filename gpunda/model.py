"""MXNet's ``mx.model`` checkpoint helpers: ``prefix-symbol.json`` + ``prefix-EPOCH.params``.

The ``.params`` file is an NDArray dict file whose keys are ``arg:<name>``
(trainable parameters) and ``aux:<name>`` (auxiliary states such as BatchNorm's
running mean/var), exactly as written by MXNet 1.x's ``save_checkpoint`` and
``HybridBlock.export``.
"""
from __future__ import annotations

import os
import time
import warnings

import numpy as np

from gpunda.base import (GpundaAssertionError, GpundaError, GpundaTypeError, GpundaValueError,
                         mx_real_t)
from gpunda.initializer import Uniform

__all__ = ["save_checkpoint", "load_checkpoint", "load_params", "params_path", "symbol_path"]



def __getattr__(name):
    # SKLEARN_INSTALLED: whether scikit-learn can be imported, looked up on first use (a
    # search of sys.path at `import gpunda` costs time for nothing); MXNet's FeedForward
    # derives from sklearn's BaseEstimator when it is, gpunda's never does
    if name == "SKLEARN_INSTALLED":
        import importlib.util
        value = globals()[name] = importlib.util.find_spec("sklearn") is not None
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def symbol_path(prefix):
    """The symbol file of a checkpoint: ``prefix-symbol.json``."""
    return f"{prefix}-symbol.json"


def params_path(prefix, epoch):
    """The parameter file of a checkpoint: ``prefix-%04d.params``."""
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        raise GpundaError(f"checkpoint: epoch={epoch!r} must be an integer >= 0")
    return f"{prefix}-{epoch:04d}.params"


def _split_params(save_dict, fname):
    arg_params, aux_params = {}, {}
    for key, value in save_dict.items():
        kind, sep, name = key.partition(":")
        if not sep or kind not in ("arg", "aux"):
            raise GpundaError(
                f"load_params: key {key!r} in {fname!r} has no 'arg:'/'aux:' prefix; this is not "
                f"a checkpoint .params file (files from Block.save_parameters load with "
                f"Block.load_parameters)")
        (arg_params if kind == "arg" else aux_params)[name] = value
    return arg_params, aux_params


def load_params(prefix, epoch, ctx=None):
    """Load ``prefix-EPOCH.params``.

    Returns:
        ``(arg_params, aux_params)``: dicts name -> NDArray with the ``arg:``/``aux:``
        prefixes removed, on ``ctx`` (default cpu).
    """
    from gpunda.ndarray import load
    fname = params_path(prefix, epoch)
    save_dict = load(fname, ctx=ctx)
    if not isinstance(save_dict, dict):
        if not save_dict:      # an empty dict is saved with no names and reads back as []
            return {}, {}
        raise GpundaError(f"load_params: {fname!r} holds an unnamed list of arrays, not a "
                          f"checkpoint dict")
    return _split_params(save_dict, fname)


def load_checkpoint(prefix, epoch):
    """Load a checkpoint written by ``mx.model.save_checkpoint`` or ``HybridBlock.export``.

    Returns:
        ``(symbol, arg_params, aux_params)``.

    Example:
        >>> sym, args, auxs = mx.model.load_checkpoint('resnet', 0)
    """
    from gpunda import symbol as _sym
    symbol = _sym.load(symbol_path(prefix))
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write ``prefix-symbol.json`` (unless ``symbol`` is None) and ``prefix-EPOCH.params``.

    Args:
        arg_params, aux_params: dicts name -> NDArray; saved as ``arg:<name>`` and
            ``aux:<name>`` in that order. Each file is replaced atomically.
        remove_amp_cast: passed to ``Symbol.save`` when it accepts it.
    """
    from gpunda.ndarray import NDArray, save
    fname = params_path(prefix, epoch)
    save_dict = {}
    for kind, params in (("arg", arg_params), ("aux", aux_params)):
        if params is None:
            continue
        if not isinstance(params, dict):
            raise GpundaError(f"save_checkpoint: {kind}_params must be a dict name -> NDArray, "
                              f"got {type(params).__name__}")
        for name, value in params.items():
            if not isinstance(value, NDArray):
                raise GpundaError(f"save_checkpoint: {kind}_params[{name!r}] is a "
                                  f"{type(value).__name__}, not an NDArray")
            save_dict[f"{kind}:{name}"] = value
    folder = os.path.dirname(os.path.abspath(fname))
    if not os.path.isdir(folder):
        raise GpundaError(f"save_checkpoint: the folder {folder!r} of prefix {prefix!r} does "
                          f"not exist; create it first (nothing was written)")
    if symbol is not None:
        _save_symbol(symbol, symbol_path(prefix), remove_amp_cast)
    save(fname, save_dict)


def _save_symbol(symbol, fname, remove_amp_cast):
    import inspect
    saver = getattr(symbol, "save", None)
    if saver is None:
        raise GpundaError(f"save_checkpoint: symbol is a {type(symbol).__name__}, not a Symbol")
    try:
        accepts = "remove_amp_cast" in inspect.signature(saver).parameters
    except (TypeError, ValueError):
        accepts = False
    if accepts:
        saver(fname, remove_amp_cast=remove_amp_cast)
    else:
        saver(fname)


# what batch-end callbacks receive from Module.fit/score (MXNet's namedtuple, its type name too)
from collections import namedtuple as _namedtuple  # noqa: E402

BatchEndParam = _namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])
__all__.append("BatchEndParam")


# ---------------------------------------------------------------------------------------------
# MXNet's old training API: the kvstore and update helpers and ``FeedForward``, run over the
# data-parallel executors of ``gpunda.executor_manager`` (one bound Executor per device).
# ---------------------------------------------------------------------------------------------

def _create_sparse_kvstore(kvstore):
    """``(kvstore, True)``: the store for a model with row_sparse weights, which always
    updates on the store.

    Args:
        kvstore: a KVStore, or the type name of one to create.
    """
    from gpunda import kvstore as kvs
    if isinstance(kvstore, kvs.KVStore):
        kv = kvstore
    elif isinstance(kvstore, str):
        kv = kvs.create(kvstore)
    else:
        raise GpundaTypeError(f"_create_sparse_kvstore: kvstore={kvstore!r}: cannot create a "
                              f"KVStore for row_sparse parameters from a "
                              f"{type(kvstore).__name__}; give a KVStore or a type name")
    if not kv.is_capable(kvs.KVStoreBase.OPTIMIZER):
        raise GpundaAssertionError(
            f"_create_sparse_kvstore: a KVStore with sparse weights must run the optimizer, "
            f"and {type(kv).__name__} cannot; use another kvstore type")
    return kv, True


def _create_kvstore(kvstore, num_device, arg_params):
    """``(kv, update_on_kvstore)`` for training on ``num_device`` devices.

    A type name makes a store, except that one non-distributed device needs none
    (``kv`` is None). ``update_on_kvstore`` starts from ``MXNET_UPDATE_ON_KVSTORE``
    (default 1), is False for a 'local' store once some parameter of ``arg_params``
    holds more than 16M values, and needs a store that can run the optimizer.
    """
    from gpunda import kvstore as kvs
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                largest = max(int(np.prod(p.shape, dtype=np.int64)) for p in arg_params.values())
                if largest > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise GpundaTypeError(f"_create_kvstore: kvstore must be KVStore, str or None, got "
                              f"{type(kvstore).__name__}")
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore = update_on_kvstore and kv.is_capable(kvs.KVStoreBase.OPTIMIZER)
    return kv, update_on_kvstore


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Put each parameter in ``kvstore``: ``init`` it, or, when the store updates dense
    weights itself, ``broadcast`` it into the per-device arrays ``param_arrays[i]``."""
    for i, on_devices in enumerate(param_arrays):
        name = param_names[i]
        value = arg_params[name]
        if update_on_kvstore and value.stype == "default":
            kvstore.broadcast(name, value, out=on_devices)
        else:
            kvstore.init(name, value)


def _update_params_on_kvstore_nccl(param_arrays, grad_arrays, kvstore, param_names):
    """Push the gradients and pull the updated weights, in groups of
    ``MXNET_UPDATE_AGGREGATION_SIZE`` (default 16) parameters per ``pushpull``;
    parameters without a gradient are skipped."""
    keep = [i for i, grads in enumerate(grad_arrays) if grads[0] is not None]
    names = [param_names[i] for i in keep]
    grads = [grad_arrays[i] for i in keep]
    weights = [param_arrays[i] for i in keep]
    step = int(os.getenv("MXNET_UPDATE_AGGREGATION_SIZE", "16"))
    for start in range(0, len(keep), step):
        stop = min(start + step, len(keep))
        kvstore.pushpull(names[start:stop], grads[start:stop], out=weights[start:stop],
                         priority=-start)


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Push each parameter's gradients to ``kvstore`` (which runs the optimizer) and pull
    the new weights back into every device's copy."""
    for i, (weights, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        name = param_names[i]
        if grads[0].stype == "default" and weights[0].stype == "default":
            kvstore.pushpull(name, grads, out=weights, priority=-i)
        else:
            kvstore.push(name, grads, priority=-i)
            kvstore.pull(name, out=weights, priority=-i)


def _update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None,
                   param_names=None):
    """Update the weights with ``updater`` on each device.

    With a ``kvstore`` the gradients are first summed over the devices through it. The
    updater sees index ``i * num_device + k`` for parameter ``i`` on device ``k`` (so each
    device keeps its own optimizer state), one call per device with that device's lists.
    """
    per_device = [[] for _ in range(num_device)]
    for i, (weights, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        if kvstore:
            name = param_names[i]
            if grads[0].stype == "default" and weights[0].stype == "default":
                kvstore.pushpull(name, grads, priority=-i)
            else:
                kvstore.push(name, grads, priority=-i)
                kvstore.pull(name, out=grads, priority=-i)
        for k, (w, g) in enumerate(zip(weights, grads)):
            per_device[k].append((i * num_device + k, g, w))
    for updates in per_device:
        if updates:
            index, grad, weight = zip(*updates)
            updater(index, grad, weight)


def _multiple_callbacks(callbacks, *args, **kwargs):
    """Call ``callbacks`` (None, one callable or a list of them) with the arguments."""
    if isinstance(callbacks, list):
        for cb in callbacks:
            cb(*args, **kwargs)
    elif callbacks:
        callbacks(*args, **kwargs)


def _train_multi_device(symbol, ctx, arg_names, param_names, aux_names, arg_params, aux_params,
                        begin_epoch, end_epoch, epoch_size, optimizer, kvstore,
                        update_on_kvstore, train_data, eval_data=None, eval_metric=None,
                        epoch_end_callback=None, batch_end_callback=None, logger=None,
                        work_load_list=None, monitor=None, eval_end_callback=None,
                        eval_batch_end_callback=None, sym_gen=None):
    """FeedForward's training loop, data-parallel over the devices ``ctx``.

    Each batch is split over one executor per device; after backward the weights are
    updated on the kvstore (``update_on_kvstore``) or by an updater of ``optimizer``.
    An epoch is ``epoch_size`` batches (the iterator is reset when it runs out first)
    or, when None, one pass. ``arg_params``/``aux_params`` are updated in place with the
    devices' average at each epoch end that has an ``epoch_end_callback``, and at the
    last one. Callbacks get MXNet's ``BatchEndParam``.
    """
    from gpunda.executor_manager import DataParallelExecutorManager
    from gpunda.optimizer import get_updater
    if logger is None:
        import logging
        logger = logging
    manager = DataParallelExecutorManager(symbol=symbol, sym_gen=sym_gen, ctx=ctx,
                                          train_data=train_data, param_names=param_names,
                                          arg_names=arg_names, aux_names=aux_names,
                                          work_load_list=work_load_list, logger=logger)
    if monitor:
        manager.install_monitor(monitor)
    manager.set_params(arg_params, aux_params)
    if update_on_kvstore:
        kvstore.set_optimizer(optimizer)
    else:
        updater = get_updater(optimizer)
    if kvstore:
        _initialize_kvstore(kvstore=kvstore, param_arrays=manager.param_arrays,
                            arg_params=arg_params, param_names=manager.param_names,
                            update_on_kvstore=update_on_kvstore)

    train_data.reset()
    for epoch in range(begin_epoch, end_epoch):
        tic = time.time()
        eval_metric.reset()
        nbatch = 0
        while True:
            ran_out = True
            for batch in train_data:
                manager.load_data_batch(batch)
                if monitor is not None:
                    monitor.tic()
                manager.forward(is_train=True)
                manager.backward()
                if update_on_kvstore:
                    step = (_update_params_on_kvstore_nccl if "nccl" in kvstore.type
                            else _update_params_on_kvstore)
                    step(manager.param_arrays, manager.grad_arrays, kvstore,
                         manager.param_names)
                else:
                    _update_params(manager.param_arrays, manager.grad_arrays, updater=updater,
                                   num_device=len(ctx), kvstore=kvstore,
                                   param_names=manager.param_names)
                if monitor is not None:
                    monitor.toc_print()
                manager.update_metric(eval_metric, batch.label)
                nbatch += 1
                if batch_end_callback is not None:
                    _multiple_callbacks(batch_end_callback, BatchEndParam(
                        epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals()))
                if epoch_size is not None and nbatch >= epoch_size:
                    ran_out = False
                    break
            if ran_out:
                logger.info("Epoch[%d] Resetting Data Iterator", epoch)
                train_data.reset()
            if epoch_size is None or nbatch >= epoch_size:
                break
        logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)

        if epoch_end_callback or epoch + 1 == end_epoch:
            manager.copy_to(arg_params, aux_params)
        _multiple_callbacks(epoch_end_callback, epoch, symbol, arg_params, aux_params)

        if eval_data:
            eval_metric.reset()
            eval_data.reset()
            count = 0
            for i, batch in enumerate(eval_data):
                manager.load_data_batch(batch)
                manager.forward(is_train=False)
                manager.update_metric(eval_metric, batch.label)
                if eval_batch_end_callback is not None:
                    _multiple_callbacks(eval_batch_end_callback, BatchEndParam(
                        epoch=epoch, nbatch=i, eval_metric=eval_metric, locals=locals()))
                count += 1
            if eval_end_callback is not None:
                _multiple_callbacks(eval_end_callback, BatchEndParam(
                    epoch=epoch, nbatch=count, eval_metric=eval_metric, locals=locals()))
            eval_data.reset()


class _LogValidationMetrics:
    """The default ``eval_end_callback`` of fit/create: MXNet's default,
    ``mx.callback.LogValidationMetricsCallback``, loaded on first call so that
    ``import gpunda`` does not load ``gpunda.callback``."""

    def __call__(self, param):
        from gpunda.callback import LogValidationMetricsCallback
        return LogValidationMetricsCallback()(param)


class FeedForward:
    """MXNet's deprecated model class: trains and runs a Symbol with one data input and one
    label (use ``mx.mod.Module`` in new code).

    Args:
        symbol: the network, or a callable ``bucket_key -> Symbol`` (bucketing).
        ctx: a Context or a list of them (data parallel); default cpu().
        num_epoch: the epoch to train up to; epoch_size: batches per epoch (one pass
            when None).
        optimizer: a name (made with ``rescale_grad=1/batch_size`` and ``kwargs``) or an
            Optimizer.
        initializer: fills parameters not given in ``arg_params``/``aux_params``.
        numpy_batch_size: the batch size for NumPy/NDArray input.
        allow_extra_params: drop entries of the params that the symbol does not use,
            instead of failing on them.
        begin_epoch: the first epoch trained.
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
                 initializer=Uniform(0.01), numpy_batch_size=128, arg_params=None,
                 aux_params=None, allow_extra_params=False, begin_epoch=0, **kwargs):
        from gpunda.context import Context, cpu
        from gpunda.symbol import Symbol
        warnings.warn("\033[91mmxnet.model.FeedForward has been deprecated. Please use "
                      "mxnet.mod.Module instead.\033[0m", DeprecationWarning, stacklevel=2)
        if isinstance(symbol, Symbol):
            self.symbol, self.sym_gen = symbol, None
        elif callable(symbol):
            self.symbol, self.sym_gen = None, symbol
        else:
            raise GpundaAssertionError(f"FeedForward: symbol must be a Symbol or a callable "
                                       f"bucket_key -> Symbol, got {type(symbol).__name__}")
        self.arg_params = arg_params
        self.aux_params = aux_params
        self.allow_extra_params = allow_extra_params
        self.argument_checked = False
        if self.sym_gen is None:
            self._check_arguments()
        if ctx is None:
            ctx = [cpu()]
        elif isinstance(ctx, Context):
            ctx = [ctx]
        self.ctx = ctx
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.kwargs = kwargs.copy()
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = numpy_batch_size
        self._pred_exec = None
        self.begin_epoch = begin_epoch

    def _check_arguments(self):
        """Check the symbol's argument names are unique; with ``allow_extra_params`` keep
        only the params the symbol uses."""
        from gpunda.executor_manager import _check_arguments
        if self.argument_checked:
            return
        self.argument_checked = True
        _check_arguments(self.symbol)
        if self.allow_extra_params:
            if self.arg_params:
                used = set(self.symbol.list_arguments())
                self.arg_params = {k: v for k, v in self.arg_params.items() if k in used}
            if self.aux_params:
                used = set(self.symbol.list_auxiliary_states())
                self.aux_params = {k: v for k, v in self.aux_params.items() if k in used}

    @staticmethod
    def _is_data_arg(name):
        """Whether ``name`` is an input (ends with 'data' or 'label')."""
        return name.endswith("data") or name.endswith("label")

    def _init_params(self, inputs, overwrite=False):
        """Make ``arg_params``/``aux_params`` for the input descriptions ``inputs``:
        the given values where present (unless ``overwrite``), else the initializer's.
        Returns ``(arg_names, param_names, aux_names)``."""
        from gpunda import ndarray as nd
        from gpunda.io import DataDesc
        inputs = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in inputs]
        shapes = {d.name: d.shape for d in inputs}
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise GpundaAssertionError(f"FeedForward: cannot infer the parameter shapes from "
                                       f"the inputs {shapes}")
        arg_types, _, aux_types = self.symbol.infer_type(**{d.name: d.dtype for d in inputs})
        if arg_types is None:
            raise GpundaAssertionError("FeedForward: cannot infer the parameter types")
        arg_names = self.symbol.list_arguments()
        param_names = [n for n in arg_names if n not in shapes]
        aux_names = self.symbol.list_auxiliary_states()
        arg_params = {n: nd.zeros(shape=s, dtype=t)
                      for n, s, t in zip(arg_names, arg_shapes, arg_types) if n in param_names}
        aux_params = {n: nd.zeros(shape=s, dtype=t)
                      for n, s, t in zip(aux_names, aux_shapes, aux_types)}
        for new, given in ((arg_params, self.arg_params), (aux_params, self.aux_params)):
            for name, arr in new.items():
                if given and name in given and not overwrite:
                    arr[:] = given[name][:]
                else:
                    self.initializer(name, arr)
        self.arg_params = arg_params
        self.aux_params = aux_params
        return arg_names, list(param_names), aux_names

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_pred_exec"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _init_predictor(self, input_shapes, type_dict=None):
        """Bind (or keep, when the shapes agree) the executor used by predict and score,
        on the first context, with the current parameters."""
        from gpunda.executor_manager import _check_arguments
        shapes = {name: arr.shape for name, arr in self.arg_params.items()}
        shapes.update(dict(input_shapes))
        if self._pred_exec is not None:
            arg_shapes, _, _ = self.symbol.infer_shape(**shapes)
            if arg_shapes is None:
                raise GpundaAssertionError("FeedForward: incomplete input shapes")
            if arg_shapes == [x.shape for x in self._pred_exec.arg_arrays]:
                return
        pred_exec = self.symbol.simple_bind(self.ctx[0], grad_req="null", type_dict=type_dict,
                                            **shapes)
        pred_exec.copy_params_from(self.arg_params, self.aux_params)
        _check_arguments(self.symbol)
        self._pred_exec = pred_exec

    def _init_iter(self, X, y, is_train):
        """``X`` as a DataIter: NumPy/NDArray data (with labels ``y``, zeros when
        predicting) becomes an NDArrayIter of ``numpy_batch_size``, shuffled and rolled
        over for training."""
        from gpunda import io
        from gpunda import ndarray as nd
        if isinstance(X, (np.ndarray, nd.NDArray)):
            if y is None:
                if is_train:
                    raise GpundaValueError("FeedForward: y must be specified when X is "
                                           "numpy.ndarray")
                y = np.zeros(X.shape[0])
            if not isinstance(y, (np.ndarray, nd.NDArray)):
                raise GpundaTypeError("FeedForward: y must be ndarray when X is numpy.ndarray")
            if X.shape[0] != y.shape[0]:
                raise GpundaValueError("FeedForward: the numbers of data points and labels "
                                       f"are not equal ({X.shape[0]} != {y.shape[0]})")
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.flatten()
            if y.ndim != 1:
                raise GpundaValueError("FeedForward: label must be 1D or 2D (with 2nd "
                                       "dimension being 1)")
            batch_size = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return io.NDArrayIter(X, y, batch_size, shuffle=True,
                                      last_batch_handle="roll_over")
            return io.NDArrayIter(X, y, batch_size, shuffle=False)
        if not isinstance(X, io.DataIter):
            raise GpundaTypeError(f"FeedForward: X must be DataIter, NDArray or "
                                  f"numpy.ndarray, got {type(X).__name__}")
        return X

    def _init_eval_iter(self, eval_data):
        """``eval_data`` as a DataIter: None, a DataIter, or a ``(data, label)`` pair."""
        from gpunda import io
        if eval_data is None:
            return None
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            data, label = eval_data
            if data is None:
                raise GpundaValueError("FeedForward: eval data is None")
            if label is None and isinstance(data, io.DataIter):
                return data
            data = np.array(data) if isinstance(data, list) else data
            label = np.array(label) if isinstance(label, list) else label
            return self._init_iter(data, label, is_train=True)
        if not isinstance(eval_data, io.DataIter):
            raise GpundaTypeError("FeedForward: eval data must be DataIter, or "
                                  "NDArray/numpy.ndarray/list pair (i.e. tuple/list of "
                                  "length 2)")
        return eval_data

    def _predictor_for(self, X):
        from gpunda.io import DataDesc
        types = {name: arr.dtype for name, arr in self.arg_params.items()}
        for desc in X.provide_data:
            if isinstance(desc, DataDesc):
                types[desc.name] = desc.dtype
            else:
                types[desc[0]] = mx_real_t
        self._init_predictor(X.provide_data, types)
        return [self._pred_exec.arg_dict[desc[0]] for desc in X.provide_data]

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """The network's outputs over ``X`` (first context only), as NumPy arrays (a list
        when there are several outputs); padding of the last batch is dropped.

        With ``return_data`` also the data and labels read, as ``(outputs, data, label)``.
        """
        from gpunda.executor_manager import _load_data
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        data_arrays = self._predictor_for(X)
        batch_size = X.batch_size
        outputs = [[] for _ in self._pred_exec.outputs]
        data_list = [[] for _ in X.provide_data]
        label_list = [[] for _ in X.provide_label]
        for i, batch in enumerate(X):
            _load_data(batch, data_arrays)
            self._pred_exec.forward(is_train=False)
            real = batch_size - batch.pad
            for got, out in zip(outputs, self._pred_exec.outputs):
                got.append(out[0:real].asnumpy())
            if return_data:
                for j, x in enumerate(batch.data):
                    data_list[j].append(x[0:real].asnumpy())
                for j, x in enumerate(batch.label):
                    label_list[j].append(x[0:real].asnumpy())
            if num_batch is not None and i + 1 == num_batch:
                break
        outputs = [np.concatenate(x) for x in outputs]
        if len(outputs) == 1:
            outputs = outputs[0]
        if not return_data:
            return outputs
        data = [np.concatenate(x) for x in data_list]
        label = [np.concatenate(x) for x in label_list]
        return (outputs, data[0] if len(data) == 1 else data,
                label[0] if len(label) == 1 else label)

    def score(self, X, eval_metric="acc", num_batch=None, batch_end_callback=None, reset=True):
        """``eval_metric`` (a name or an EvalMetric) of the network over ``X``."""
        from gpunda import metric
        from gpunda.executor_manager import _load_data
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        data_arrays = self._predictor_for(X)
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            _load_data(batch, data_arrays)
            self._pred_exec.forward(is_train=False)
            eval_metric.update(batch.label, self._pred_exec.outputs)
            if batch_end_callback is not None:
                _multiple_callbacks(batch_end_callback, BatchEndParam(
                    epoch=0, nbatch=i, eval_metric=eval_metric, locals=locals()))
        return eval_metric.get()[1]

    def fit(self, X, y=None, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", logger=None, work_load_list=None,
            monitor=None, eval_end_callback=_LogValidationMetrics(),
            eval_batch_end_callback=None):
        """Train from ``begin_epoch`` to ``num_epoch`` on ``X`` (a DataIter, or arrays with
        labels ``y``), evaluating on ``eval_data`` after each epoch."""
        from gpunda import metric
        from gpunda import optimizer as opt
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        if self.sym_gen:
            self.symbol = self.sym_gen(data.default_bucket_key)
            self._check_arguments()
        self.kwargs["sym"] = self.symbol
        arg_names, param_names, aux_names = self._init_params(data.provide_data
                                                              + data.provide_label)
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self.ctx), self.arg_params)
        idx2name = {}
        if update_on_kvstore:
            idx2name.update(enumerate(param_names))
        else:
            for i, name in enumerate(param_names):
                for k in range(len(self.ctx)):
                    idx2name[i * len(self.ctx) + k] = name
        self.kwargs["param_idx2name"] = idx2name
        if isinstance(self.optimizer, str):
            batch_size = data.batch_size
            if kvstore and "dist" in kvstore.type and "_async" not in kvstore.type:
                batch_size *= kvstore.num_workers
            optimizer = opt.create(self.optimizer, rescale_grad=1.0 / batch_size, **self.kwargs)
        elif isinstance(self.optimizer, opt.Optimizer):
            optimizer = self.optimizer
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        else:
            raise GpundaTypeError(f"FeedForward: optimizer must be a name or an Optimizer, "
                                  f"got {type(self.optimizer).__name__}")
        _train_multi_device(self.symbol, self.ctx, arg_names, param_names, aux_names,
                            self.arg_params, self.aux_params, begin_epoch=self.begin_epoch,
                            end_epoch=self.num_epoch, epoch_size=self.epoch_size,
                            optimizer=optimizer, train_data=data, eval_data=eval_data,
                            eval_metric=eval_metric, epoch_end_callback=epoch_end_callback,
                            batch_end_callback=batch_end_callback, kvstore=kvstore,
                            update_on_kvstore=update_on_kvstore, logger=logger,
                            work_load_list=work_load_list, monitor=monitor,
                            eval_end_callback=eval_end_callback,
                            eval_batch_end_callback=eval_batch_end_callback,
                            sym_gen=self.sym_gen)

    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """Write the checkpoint ``prefix-symbol.json`` + ``prefix-EPOCH.params`` (epoch
        defaults to ``num_epoch``)."""
        if epoch is None:
            epoch = self.num_epoch
        if epoch is None:
            raise GpundaAssertionError("FeedForward.save: give an epoch (num_epoch is None)")
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params,
                        remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward from the checkpoint ``prefix``/``epoch`` (training would resume at
        ``epoch``); ``kwargs`` go to the constructor."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None, optimizer="sgd",
               initializer=Uniform(0.01), eval_data=None, eval_metric="acc",
               epoch_end_callback=None, batch_end_callback=None, kvstore="local", logger=None,
               work_load_list=None, eval_end_callback=_LogValidationMetrics(),
               eval_batch_end_callback=None, **kwargs):
        """Make a FeedForward and ``fit`` it; returns the trained model."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                  kvstore=kvstore, logger=logger, work_load_list=work_load_list,
                  eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model


__all__ += ["FeedForward", "SKLEARN_INSTALLED"]
