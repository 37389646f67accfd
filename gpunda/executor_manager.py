"""MXNet's ``mxnet.executor_manager``: data parallelism over bound executors (the
machinery of MXNet's old ``FeedForward`` model), built on ``Symbol.bind``.

A batch is cut into slices, one per device (``_split_input_slice``, in proportion to a work
load); ``DataParallelExecutorGroup`` binds one executor per device and loads each slice into
it; ``DataParallelExecutorManager`` adds bucketing (a symbol per bucket key, sharing the
parameters and the data arrays) and copies averaged parameters back out.
"""
from __future__ import annotations

import logging

import numpy as np

from gpunda import ndarray as nd
from gpunda.base import GpundaAssertionError, GpundaError, GpundaValueError, mx_real_t
from gpunda.context import cpu

__all__ = ["DataParallelExecutorGroup", "DataParallelExecutorManager"]


class _NotForBucketing(GpundaError, NotImplementedError):
    """What MXNet raises as NotImplementedError: a feature bucketing lacks."""


def _split_input_slice(batch_size, work_load_list):
    """Slices of ``range(batch_size)``, one per device, sized in proportion to
    ``work_load_list`` (rounded, the last one taking what rounding left). A ValueError
    when some slice would be empty."""
    total = sum(work_load_list)
    counts = [round(w * batch_size / total) for w in work_load_list]
    short = batch_size - sum(counts)
    if short > 0:
        counts[-1] += short
    slices = []
    end = 0
    for n in counts:
        begin = int(min(end, batch_size))
        end = int(min(begin + n, batch_size))
        if begin >= end:
            raise GpundaValueError(f"executor_manager: too many slices: splitting a batch of "
                                   f"{batch_size} by the work load {list(work_load_list)} "
                                   f"leaves some splits empty")
        slices.append(slice(begin, end))
    return slices


def _first_duplicate(names):
    """The first name of ``names`` seen before, or None."""
    seen = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def _check_arguments(symbol):
    """A ValueError when ``symbol`` has two arguments (or two auxiliary states) of one
    name."""
    arg_names = symbol.list_arguments()
    name = _first_duplicate(arg_names)
    if name is not None:
        raise GpundaValueError(
            f"Find duplicated argument name \"{name}\", please make the weight name "
            f"non-duplicated(using name arguments), arguments are {arg_names}")
    aux_names = symbol.list_auxiliary_states()
    name = _first_duplicate(aux_names)
    if name is not None:
        raise GpundaValueError(
            f"Find duplicated auxiliary param name \"{name}\", please make the weight name "
            f"non-duplicated(using name arguments), arguments are {arg_names}, auxiliary "
            f"params are {aux_names}")


def _load_general(data, targets):
    """Copy each array of ``data`` into its target: an NDArray, or a list of
    ``(slice, array)`` pairs receiving those rows."""
    for src, dst in zip(data, targets):
        if isinstance(dst, nd.NDArray):
            src.copyto(dst)
            continue
        stop = dst[-1][0].stop
        if stop != src.shape[0]:
            raise GpundaAssertionError(f"Batch size miss match. Expected {stop}, got "
                                       f"{src.shape[0]}")
        for rows, arr in dst:
            src[rows].copyto(arr)


def _load_data(batch, targets):
    """Load ``batch.data`` into the sliced arrays ``targets``."""
    _load_general(batch.data, targets)


def _load_label(batch, targets):
    """Load ``batch.label`` into the sliced arrays ``targets``."""
    _load_general(batch.label, targets)


def _bind_exec(sym, ctx, input_shapes, param_names, need_grad=False, base_exec=None,
               shared_data_arrays=None, input_types=None, logger=logging):
    """Bind ``sym`` on ``ctx`` for the inputs ``input_shapes`` (name -> shape).

    Parameters (``param_names``) come from ``base_exec`` when given (shared, as bucketing
    does), else are fresh zeros; data and labels reuse ``shared_data_arrays[name]`` when it
    is large enough (reshaped), else are allocated (and recorded there). ``need_grad``:
    False, True (every argument but the inputs) or a set of names.
    """
    arg_shapes, _, aux_shapes = sym.infer_shape(**input_shapes)
    if arg_shapes is None:
        raise GpundaAssertionError(f"executor_manager: cannot infer the shapes of {sym.name} "
                                   f"from {input_shapes}")
    if input_types is None:
        input_types = {k: mx_real_t for k in input_shapes}
    arg_types, _, aux_types = sym.infer_type(**input_types)
    if arg_types is None:
        raise GpundaAssertionError(f"executor_manager: cannot infer the types of {sym.name} "
                                   f"from {input_types}")
    arg_names = sym.list_arguments()
    if need_grad is False:
        need_grad = set()
    elif need_grad is True:
        need_grad = set(arg_names) - set(input_shapes)
    elif not isinstance(need_grad, set):
        raise GpundaAssertionError("need_grad must be boolean or set.")
    grad_req = {n: ("write" if n in need_grad else "null") for n in arg_names}
    grads = {} if need_grad else None

    args = []
    for name, shape, dtype in zip(arg_names, arg_shapes, arg_types):
        if name in param_names:
            if base_exec is None:
                arr = nd.zeros(shape, ctx, dtype=dtype)
                if name in need_grad:
                    grads[name] = nd.zeros(shape, ctx, dtype=dtype)
            else:
                arr = base_exec.arg_dict[name]
                if tuple(arr.shape) != tuple(shape) or arr.dtype != np.dtype(dtype):
                    raise GpundaAssertionError(
                        f"executor_manager: the shared parameter {name} is {arr.shape} "
                        f"{arr.dtype}; this symbol needs {shape} {np.dtype(dtype)}")
                if name in need_grad:
                    grads[name] = base_exec.grad_dict[name]
        elif shared_data_arrays is not None and name in shared_data_arrays:
            arr = shared_data_arrays[name]
            if np.prod(arr.shape) >= np.prod(shape):
                if arr.dtype != np.dtype(dtype):
                    raise GpundaAssertionError(f"executor_manager: the shared input {name} is "
                                               f"{arr.dtype}, this symbol needs "
                                               f"{np.dtype(dtype)}")
                arr = arr.reshape(shape)
            else:
                logger.warning(f"bucketing: data \"{name}\" has a shape {shape}, which is "
                               f"larger than already allocated shape {arr.shape}. Need to "
                               f"re-allocate. Consider putting default_bucket_key to be the "
                               f"bucket taking the largest input for better memory sharing.")
                arr = nd.zeros(shape, ctx, dtype=dtype)
                shared_data_arrays[name] = arr
        else:
            arr = nd.zeros(shape, ctx, dtype=dtype)
            if shared_data_arrays is not None:
                shared_data_arrays[name] = arr
        args.append(arr)

    if base_exec is None:
        aux = [nd.zeros(s, ctx, dtype=t) for s, t in zip(aux_shapes, aux_types)]
    else:
        aux = list(base_exec.aux_arrays)
        for a, s, t in zip(aux, aux_shapes, aux_types):
            if tuple(a.shape) != tuple(s) or a.dtype != np.dtype(t):
                raise GpundaAssertionError("executor_manager: a shared auxiliary state does "
                                           "not match this symbol's shape or type")
    return sym.bind(ctx=ctx, args=args, args_grad=grads, aux_states=aux, grad_req=grad_req,
                    shared_exec=base_exec)


def _name(desc):
    return desc[0] if isinstance(desc, (tuple, list)) else desc.name


class DataParallelExecutorGroup:
    """One executor per device in ``ctx``, each taking its ``slices`` part of a batch.

    Parameters
    ----------
    sym : Symbol
    arg_names : list of str
        ``sym.list_arguments()``.
    param_names : list of str
        The trainable parameters.
    ctx : list of Context
    slices : list of slice
        Each device's rows of a batch.
    train_data : DataIter or DataBatch
        Anything with ``provide_data`` and ``provide_label``.
    shared_group : DataParallelExecutorGroup or None
        A group whose parameters and data arrays this one shares (bucketing).
    """

    def __init__(self, sym, arg_names, param_names, ctx, slices, train_data,
                 shared_group=None):
        _check_arguments(sym)
        if shared_group is None:
            self.shared_data_arrays = [{} for _ in ctx]
        else:
            self.shared_data_arrays = shared_group.shared_data_arrays
        descs = list(train_data.provide_data) + list(train_data.provide_label)
        self.data_names = [_name(d) for d in train_data.provide_data]
        self.label_names = [_name(d) for d in train_data.provide_label]
        self.aux_names = sym.list_auxiliary_states()
        self.param_idx = [i for i, n in enumerate(arg_names) if n in param_names]
        self.param_names = [arg_names[i] for i in self.param_idx]

        self.train_execs = []
        for i, dev in enumerate(ctx):
            rows = slices[i].stop - slices[i].start
            shapes = {_name(d): (rows,) + tuple(d[1][1:]) for d in descs}
            types = {_name(d): getattr(d, "dtype", mx_real_t) for d in descs}
            shared = None if shared_group is None else shared_group.train_execs[i]
            self.train_execs.append(_bind_exec(
                sym, dev, shapes, self.param_names, need_grad=True, base_exec=shared,
                shared_data_arrays=self.shared_data_arrays[i], input_types=types))

        def per_device(name):
            return [(slices[i], e.arg_dict[name]) for i, e in enumerate(self.train_execs)]
        self.data_arrays = [per_device(n) for n in self.data_names]
        self.label_arrays = [per_device(n) for n in self.label_names]
        self.param_arrays = [[e.arg_arrays[i] for e in self.train_execs]
                             for i in self.param_idx]
        self.grad_arrays = [[e.grad_arrays[i] for e in self.train_execs]
                            for i in self.param_idx]
        self.aux_arrays = [[e.aux_arrays[i] for e in self.train_execs]
                           for i in range(len(self.aux_names))]
        self.slices = slices

    def load_data_batch(self, data_batch):
        """Copy the batch's data and labels into each device's slice."""
        _load_data(data_batch, self.data_arrays)
        _load_label(data_batch, self.label_arrays)

    def forward(self, is_train=False):
        """Forward on every device."""
        for e in self.train_execs:
            e.forward(is_train=is_train)

    def backward(self):
        """Backward on every device."""
        for e in self.train_execs:
            e.backward()

    def update_metric(self, metric, labels, pre_sliced=False):
        """Update ``metric`` with each device's outputs and its part of ``labels`` (already
        one list per device when ``pre_sliced``)."""
        for i, (e, rows) in enumerate(zip(self.train_execs, self.slices)):
            part = labels[i] if pre_sliced else [label[rows] for label in labels]
            metric.update(part, e.outputs)


class DataParallelExecutorManager:
    """Executors for data parallelism over the devices ``ctx``.

    Parameters
    ----------
    symbol : Symbol
    ctx : list of Context
    train_data : DataIter
    arg_names, param_names, aux_names : list of str
        The symbol's arguments, trainable parameters and auxiliary states.
    work_load_list : list of float or int, optional
        Each device's share of a batch (equal shares by default).
    logger : logging.Logger, optional
    sym_gen : callable, optional
        ``bucket_key -> Symbol`` for bucketing (``train_data.default_bucket_key`` first).
    """

    def __init__(self, symbol, ctx, train_data, arg_names, param_names, aux_names,
                 work_load_list=None, logger=None, sym_gen=None):
        if logger is None:
            logger = logging
        logger.info("Start training with %s", str(ctx))
        if work_load_list is None:
            work_load_list = [1] * len(ctx)
        if not (isinstance(work_load_list, list) and len(work_load_list) == len(ctx)):
            raise GpundaAssertionError(f"Invalid settings for work load: work_load_list="
                                       f"{work_load_list!r} must be a list of one number per "
                                       f"device ({len(ctx)})")
        self.slices = _split_input_slice(train_data.batch_size, work_load_list)
        self.arg_names = arg_names
        self.param_names = param_names
        self.aux_names = aux_names
        self.ctx = ctx
        self.execgrp = DataParallelExecutorGroup(symbol, arg_names, param_names, ctx,
                                                 self.slices, train_data)
        self.symbol = symbol
        self.sym_gen = sym_gen
        self.curr_execgrp = None        # set by load_data_batch
        if sym_gen is not None:
            self.execgrp_bucket = {train_data.default_bucket_key: self.execgrp}

    def install_monitor(self, monitor):
        """Install ``monitor`` on every executor (not with bucketing)."""
        if self.sym_gen is not None:
            raise _NotForBucketing("DataParallelExecutorManager.install_monitor: monitoring "
                                   "is not implemented for bucketing")
        for e in self.execgrp.train_execs:
            monitor.install(e)

    def set_params(self, arg_params, aux_params):
        """Copy ``arg_params`` and ``aux_params`` (name -> NDArray) into every executor."""
        for e in self.execgrp.train_execs:
            e.copy_params_from(arg_params, aux_params)

    def copy_to(self, arg_params, aux_params):
        """Write the devices' average of each parameter and auxiliary state into
        ``arg_params`` and ``aux_params`` (in place)."""
        for names, blocks, dst in ((self.param_names, self.param_arrays, arg_params),
                                   (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                mean = sum(w.copyto(cpu()) for w in block) / len(block)
                mean.astype(dst[name].dtype).copyto(dst[name])

    @property
    def param_arrays(self):
        """Per parameter, its array on each device (shared by every bucket)."""
        return self.execgrp.param_arrays

    @property
    def grad_arrays(self):
        """Per parameter, its gradient on each device (shared by every bucket)."""
        return self.execgrp.grad_arrays

    @property
    def aux_arrays(self):
        """Per auxiliary state, its array on each device (shared by every bucket)."""
        return self.execgrp.aux_arrays

    def load_data_batch(self, data_batch):
        """Pick the batch's executor group (binding one for a new bucket key) and load the
        batch into it."""
        if self.sym_gen is not None:
            key = data_batch.bucket_key
            if key not in self.execgrp_bucket:
                self.execgrp_bucket[key] = DataParallelExecutorGroup(
                    self.sym_gen(key), self.arg_names, self.param_names, self.ctx,
                    self.slices, data_batch, shared_group=self.execgrp)
            self.curr_execgrp = self.execgrp_bucket[key]
        else:
            self.curr_execgrp = self.execgrp
        self.curr_execgrp.load_data_batch(data_batch)

    def forward(self, is_train=False):
        """Forward on the current group."""
        self.curr_execgrp.forward(is_train=is_train)

    def backward(self):
        """Backward on the current group."""
        self.curr_execgrp.backward()

    def update_metric(self, metric, labels, pre_sliced=False):
        """Update ``metric`` from the current group."""
        self.curr_execgrp.update_metric(metric, labels, pre_sliced)
