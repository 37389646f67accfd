"""Gluon Trainer (MXNet 1.x): applies an optimizer to a set of Parameters.

``step(batch_size)`` = reduce the gradients over contexts through the kvstore
(``allreduce_grads``), then update every parameter with gradients rescaled by
``1/batch_size`` (``update``). The kvstore is made on first use, as MXNet's
(NOTE [Trainer kvstore]). A gradient backward has not written since the last
step is stale: ``step`` refuses it, naming the parameter, unless
``ignore_stale_grad=True``, which skips those parameters.
"""
from __future__ import annotations

import os

import numpy as np

from gpunda import optimizer as opt
from gpunda.base import GpundaAssertionError, GpundaError, GpundaUserWarning
from gpunda.gluon.parameter import Parameter, ParameterDict
from gpunda.optimizer._flat import flat_update

__all__ = ["Trainer"]

_DIST_TYPES = ("dist_sync", "dist_sync_device", "dist", "nccl", "horovod")

# NOTE [Trainer kvstore]
# As MXNet 1.9.1 (gluon/trainer.py, model._create_kvstore): a single context with a
# kvstore name gets no kvstore; several contexts (or row_sparse weights) get
# ``kv.create(name)``; a KVStore object is used as it is. ``update_on_kvstore``
# defaults to MXNET_UPDATE_ON_KVSTORE (1) for dense parameters, to False with
# row_sparse gradients and to True (required) with row_sparse weights; a store that
# cannot run optimizers (``is_capable('optimizer')`` false) updates on the workers.
# With ``update_on_kvstore`` the store holds the weights and applies the optimizer
# on push (``pushpull`` into the weights); otherwise it only sums the gradients and
# each context's updater applies the optimizer. Distributed stores (dist_sync, nccl
# under mpiexec) always update on the workers: the parameters are broadcast from
# rank 0 at the first step and the gradients summed in fused buckets, rescaled by
# 1/batch_size as MXNet's store does. 'dist_async' is MXNet's other case: the store (its server on
# rank 0) applies the optimizer to each worker's push on arrival, so it always updates
# on the kvstore, even with one context, and update_on_kvstore=False is refused.


def _is_async(name):
    return isinstance(name, str) and name.startswith("dist") and "async" in name


def _is_dist(kv):
    """Whether ``kv`` all-reduces over MPI/NCCL (the workers update; not 'dist_async')."""
    return kv is not None and not _is_async(kv.type) and \
        (kv.type in _DIST_TYPES or kv.type.startswith("dist"))


class Trainer:
    """Updates ``params`` (ParameterDict, dict or list of Parameters) with ``optimizer``.

    ``optimizer`` is a name ('sgd', 'adam', ...) with ``optimizer_params``
    (``{'learning_rate': 0.1, 'momentum': 0.9}``), or an Optimizer. ``kvstore``
    may be None, 'local' or 'device' (gradients are reduced in this process),
    or 'dist_sync' / 'nccl' (a name or a KVStore) under ``mpiexec``: then the
    parameters are broadcast from rank 0 before the first step, and each step
    all-reduces the gradients (in fused buckets) and rescales them by the
    ``batch_size`` as MXNet's Trainer does: the gradients are summed over the ranks
    and rescaled by 1/batch_size, ``batch_size`` being this worker's batch (MXNet's
    store sums the workers' pushes and updates with the same factor), so every rank
    keeps identical weights.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device",
                 compression_params=None, update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = list(params.values())
        if not isinstance(params, (list, tuple)):
            raise ValueError(f"Trainer: the first argument must be a list or dict of "
                             f"Parameters, got {type(params).__name__}")
        self._params = []
        self._param2idx = {}
        self._contains_sparse_weight = False
        self._contains_sparse_grad = False
        seen = set()
        for i, p in enumerate(params):
            if not isinstance(p, Parameter):
                raise ValueError(f"Trainer: the first argument must be a list or dict of "
                                 f"Parameters, got a list with {type(p).__name__} at index {i}")
            if id(p) in seen:
                continue     # a parameter shared by several blocks is updated once
            seen.add(id(p))
            self._param2idx[p.name] = len(self._params)
            self._params.append(p)
            p._set_trainer(self)
            self._contains_sparse_weight |= p._stype != "default"
            self._contains_sparse_grad |= p._grad_stype != "default"
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._check_kvstore_name(kvstore, update_on_kvstore)
        self._compression_params = compression_params
        optimizer_params = optimizer_params if optimizer_params else {}
        self._scale = float(optimizer_params.get("rescale_grad", 1.0))
        self._contexts = None
        self._init_optimizer(optimizer, optimizer_params)
        self._reset_kvstore()
        if _is_dist(self._dist_kv) and all(p._data is not None for p in self._params):
            # broadcast now, so even the first forward pass uses rank 0's weights everywhere
            self._ready()

    def _check_kvstore_name(self, kvstore, update_on_kvstore):
        from gpunda import kvstore as kvs
        self._dist_kv = None
        name = getattr(kvstore, "type", kvstore)
        if _is_async(name):
            # MXNet: "The only unsupported mode is async with update_on_kvstore=False";
            # the store itself is made (collectively, on every rank) on first use
            if update_on_kvstore is False:
                raise ValueError("Please set update_on_kvstore=True when training in async mode.")
        elif isinstance(name, str) and (name in _DIST_TYPES or name.startswith("dist")):
            self._dist_kv = kvstore if isinstance(kvstore, kvs.KVStoreBase) else kvs.create(name)
            if update_on_kvstore:
                raise GpundaError(f"Trainer: update_on_kvstore=True with the distributed "
                                  f"kvstore {name!r} is not supported; gpunda updates on the "
                                  f"workers")
        elif isinstance(kvstore, str):
            kvs.create(kvstore)       # an unknown name raises now, naming the valid ones
        elif kvstore is not None and not isinstance(kvstore, kvs.KVStoreBase):
            raise GpundaError(f"Trainer: kvstore={kvstore!r} must be None, a name or a KVStore")

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: p for i, p in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params and set(optimizer_params) != {"rescale_grad"}:
                raise GpundaAssertionError("Trainer: optimizer_params must be None if optimizer "
                                           "is an Optimizer instance instead of a name")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        elif isinstance(optimizer, str):
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        else:
            raise GpundaError(f"Trainer: optimizer={optimizer!r} must be a name or an Optimizer")
        self._updaters = None

    def _init_contexts(self):
        ctxs = None
        for p in self._params:
            c = p.list_ctx()
            if ctxs is None:
                ctxs = c
            elif c != ctxs:
                raise GpundaError(f"Trainer: all Parameters must be on the same contexts; "
                                  f"Parameter {p.name!r} is on {c} but others are on {ctxs}")
        self._contexts = ctxs or []
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]

    # -- the kvstore (NOTE [Trainer kvstore]) ----------------------------------------------
    def _reset_kvstore(self):
        """Forget the kvstore; it is made again (and the parameters pushed) on next use."""
        if _is_dist(self._kvstore if hasattr(self, "_kvstore") else None) and \
                getattr(self, "_kv_initialized", False):
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self):
        """Create the kvstore and decide ``update_on_kvstore`` (MXNet's rules)."""
        from gpunda import kvstore as kvs
        self._ready_contexts()
        config = self._kvstore_params
        kvstore, want = config["kvstore"], config["update_on_kvstore"]
        if self._dist_kv is not None:
            kv, update = self._dist_kv, False
        elif self._contains_sparse_weight:
            if isinstance(kvstore, kvs.KVStoreBase):
                kv = kvstore
            elif isinstance(kvstore, str):
                kv = kvs.create(kvstore)
            else:
                raise TypeError(f"Cannot create {kvstore!r} KVStore with row_sparse "
                                f"parameters. The type must be KVStore or str.")
            if not kv.is_capable(kvs.KVStoreBase.OPTIMIZER):
                raise GpundaError(f"Trainer: row_sparse weights need a kvstore that runs "
                                  f"the optimizer, and {kv.type!r} does not")
            update = True
            if want is False:
                raise ValueError("Cannot set update_on_kvstore=False when sparse weights "
                                 "are present.")
        else:
            kv, update = self._create_kvstore(kvstore)
            if self._contains_sparse_grad:
                update = False if want is None else want
                if kv is not None and not isinstance(kv, kvs.KVStore):
                    raise ValueError(f"Cannot use {type(kv).__name__} for multi-device "
                                     f"training with sparse gradients")
            elif want is not None:
                update = want
            if kv is not None and _is_async(kv.type):
                update = True
            if kv is not None and update and not kv.is_capable(kvs.KVStoreBase.OPTIMIZER):
                if want:
                    raise ValueError(f"Please set update_on_kvstore=False when training with "
                                     f"{type(kv).__name__}")
                update = False
        if kv is not None:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            if update:
                kv.set_optimizer(self._optimizer)
            self._kvstore = kv
            self._update_on_kvstore = bool(update)
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        self._distributed = _is_dist(kv)
        self._kv_initialized = True

    def _create_kvstore(self, kvstore):
        from gpunda import kvstore as kvs
        update = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
        if kvstore is None:
            kv = None
        elif isinstance(kvstore, kvs.KVStoreBase):
            kv = kvstore
        elif len(self._contexts) == 1 and not _is_async(kvstore):
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local":
                # as MXNet: very large weights are updated on the workers
                biggest = max((int(np.prod(p.shape)) for p in self._params), default=0)
                if biggest > 1024 * 1024 * 16:
                    update = False
        if kv is None:
            return None, False
        return kv, update and kv.is_capable(kvs.KVStoreBase.OPTIMIZER)

    def _init_params(self):
        """Put the parameters not yet in the kvstore there (deferred ones wait)."""
        waiting = []
        for p in self._params_to_init:
            if p._data is None:
                waiting.append(p)
                continue
            if self._kvstore is not None and not self._distributed:
                idx = self._param2idx[p.name]
                arrays = p._data
                kv = self._kvstore
                if p._stype != "default":
                    kv.init(idx, arrays[0])
                elif len(arrays) > 1:
                    # the other copies take the first one's value; the first is not
                    # rewritten, as a forward may already have used it
                    kv.broadcast(idx, arrays[0], list(arrays[1:]), priority=-idx)
                elif hasattr(kv, "init"):
                    kv.init(idx, arrays[0])
                else:
                    kv.broadcast(idx, arrays[0], list(arrays), priority=-idx)
        self._params_to_init = waiting

    def _prepare(self):
        """Make the kvstore and push new parameters, as each public entry point does."""
        from gpunda import autograd
        self._ready()
        with autograd.pause():      # may run inside record() (row_sparse_data in forward)
            if not self._kv_initialized:
                self._init_kvstore()
            if self._params_to_init:
                self._init_params()

    def _row_sparse_pull(self, parameter, out, row_id, full_idx=False):
        """Rows ``row_id`` of a row_sparse ``parameter`` from the kvstore into ``out``."""
        from gpunda import autograd
        self._prepare()
        idx = self._param2idx[parameter.name]
        with autograd.pause():      # a pull is not part of the recorded computation
            if full_idx and not self._distributed:
                self._kvstore.pull(idx, out=out, priority=-idx, ignore_sparse=False)
            else:
                self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id, priority=-idx)

    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise GpundaUserWarning("Optimizer has to be defined before its learning rate can "
                                    "be accessed.")
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        """The Optimizer instance."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise GpundaUserWarning("Optimizer has not been initialized yet")
        return self._optimizer

    def set_learning_rate(self, lr):
        """Set the optimizer's learning rate."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise GpundaUserWarning("Optimizer has to be defined before its learning rate is "
                                    "mutated.")
        self._optimizer.set_learning_rate(lr)

    def _ready_contexts(self):
        if self._contexts is not None:
            return
        for p in self._params:
            if p._data is None and not p._deferred_init:
                raise GpundaError(f"Trainer: Parameter {p.name!r} has not been "
                                  f"initialized; call initialize() first")
        self._init_contexts()

    def _check_initialized(self):
        for p in self._params:
            if p._data is None:
                raise GpundaError(
                    f"Trainer: Parameter {p.name!r} has not been initialized yet because "
                    f"initialization was deferred; run one forward pass before step()")

    def _ready(self):
        if self._contexts is None:
            self._ready_contexts()
            if self._dist_kv is not None:
                self._check_initialized()
            if self._dist_kv is not None and self._dist_kv.num_workers > 1:
                self._broadcast_params()

    def _broadcast_params(self):
        """Give every rank rank 0's parameter values (once, before the first step)."""
        comm = self._dist_kv._comm
        for p in self._params:
            host = np.ascontiguousarray(p.data(p._ctx_list[0]).asnumpy())
            comm.bcast(host)
            for d in p.list_data():
                d[:] = host

    def _check_update_on_kvstore(self, what):
        if self._kvstore is not None and self._update_on_kvstore:
            raise AssertionError(f"Trainer.{what}() when parameters are updated on kvstore is "
                                 f"not supported. Try setting `update_on_kvstore` to False "
                                 f"when creating trainer.")

    def step(self, batch_size, ignore_stale_grad=False):
        """One update: reduce gradients over contexts (and ranks), then update.

        Gradients are rescaled by 1/batch_size, ``batch_size`` being this worker's batch;
        on a distributed store they are summed over the workers first, as MXNet 1.9.1 does
        (its Trainer does not divide by the number of workers; Module does).
        """
        self._prepare()
        self._check_initialized()
        self._optimizer.rescale_grad = self._scale / batch_size
        if not ignore_stale_grad:
            self._check_stale()     # before the reduction, which would refresh every gradient
        self._allreduce_grads()
        self._update(ignore_stale_grad=True)    # checked above; stale ones are skipped

    def allreduce_grads(self):
        """Sum each parameter's gradients over its contexts (copies stay equal)."""
        self._prepare()
        self._check_initialized()
        self._check_update_on_kvstore("allreduce_grads")
        self._allreduce_grads()

    def _allreduce_grads(self):
        # a stale gradient must not be refreshed by the reduction: remember which were
        fresh = {id(p): [p._fresh_grad(i) for i in range(len(p._grad))] for p in self._params
                 if p.grad_req != "null"}
        if self._distributed:
            self._allreduce_dist()
        elif self._kvstore is not None:
            self._allreduce_kvstore()
        for p in self._params:
            if p.grad_req != "null":
                for i, was in enumerate(fresh[id(p)]):
                    if not was:
                        p._mark_grad_used(i)

    def _allreduce_kvstore(self):
        kv, on_kv = self._kvstore, self._update_on_kvstore
        for i, p in enumerate(self._params):
            if p.grad_req == "null":
                continue
            grads = p.list_grad()
            if grads[0].stype != "default":
                kv.push(i, grads, priority=-i)
                if p._stype == "default":
                    kv.pull(i, p.list_data() if on_kv else grads, priority=-i,
                            ignore_sparse=False)
            elif on_kv:
                kv.pushpull(i, grads, out=p.list_data(), priority=-i)
            else:
                kv.pushpull(i, grads, priority=-i)

    def _allreduce_dist(self):
        if len(self._contexts) > 1:
            self._reduce_over_contexts()
        if self._dist_kv.num_workers <= 1:
            return
        grads = [p.list_grad()[0] for p in self._params if p.grad_req != "null"]
        reduced = self._dist_kv.allreduce_arrays(grads)
        k = 0
        for p in self._params:
            if p.grad_req == "null":
                continue
            first = reduced[k]
            k += 1
            for i, g in enumerate(p.list_grad()):
                if first is not g or i:
                    g[:] = first.as_in_context(g.context)

    def _reduce_over_contexts(self):
        for p in self._params:
            if p.grad_req == "null":
                continue
            grads = p.list_grad()
            total = grads[0].copy()
            for g in grads[1:]:
                total += g.as_in_context(total.context)
            for g in grads:
                g[:] = total.as_in_context(g.context)

    def update(self, batch_size, ignore_stale_grad=False):
        """Update with the current gradients (after ``allreduce_grads``), rescaled by 1/batch_size."""
        self._prepare()
        self._check_initialized()
        self._check_update_on_kvstore("update")
        self._optimizer.rescale_grad = self._scale / batch_size
        self._update(ignore_stale_grad)

    def _check_stale(self):
        for p in self._params:
            if p.grad_req == "null":
                continue
            for i, c in enumerate(p._ctx_list):
                if not p._fresh_grad(i):
                    # a UserWarning raised, as MXNet's (code catches that class)
                    raise GpundaUserWarning(
                        f"Trainer.step: gradient of Parameter {p.name!r} on context {c} has "
                        f"not been updated by backward since the last step. This could mean "
                        f"a bug in your model that made it only use a subset of the "
                        f"Parameters (Blocks) for this iteration. If you are intentionally "
                        f"only using a subset, call step with ignore_stale_grad=True to skip "
                        f"updating Parameters with a stale gradient")

    def _update(self, ignore_stale_grad=False):
        params = self._params
        # amp.init_trainer gave this trainer a loss scaler: a step whose gradients hold
        # inf/NaN is skipped (the scaler lowers its scale), as MXNet's Trainer
        loss_scaler = getattr(self, "_amp_loss_scaler", None)
        if loss_scaler is not None and loss_scaler.has_overflow(params):
            return
        if not ignore_stale_grad:
            self._check_stale()
        if not (self._kvstore is not None and self._update_on_kvstore):
            for dev, upd in enumerate(self._updaters):
                self._optimizer._set_current_context(dev)
                flat = flat_update(self, dev, upd)     # NOTE [Flat buffers]
                # the rest in one call, as MXNet's Trainer: the updater then hands an
                # optimizer with aggregate_num > 0 its parameters in groups of that size
                # (per dtype), which aggregated optimizers (multi_* ops) rely on
                todo = [(i, p._grad[dev], p._data[dev]) for i, p in enumerate(params)
                        if p.grad_req != "null" and i not in flat and p._fresh_grad(dev)]
                if todo:
                    index, grads, weights = zip(*todo)
                    upd(index, grads, weights)
        for p in params:
            if p.grad_req != "null":
                for dev in range(len(p._grad)):
                    p._mark_grad_used(dev)

    def save_states(self, fname):
        """Write the optimizer states (momenta, moments, counts) to ``fname``."""
        self._prepare()
        if self._update_on_kvstore:
            if self._params_to_init:
                raise AssertionError("Cannot save trainer states when some parameters are "
                                     "not yet initialized in kvstore.")
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
            return
        with open(fname, "wb") as f:
            f.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Read optimizer states written by ``save_states``."""
        self._prepare()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, "rb") as f:
                states = f.read()
            for upd in self._updaters:
                upd.set_states(states)
                upd.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: p for i, p in enumerate(self._params)}
