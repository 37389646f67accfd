"""Gluon Trainer (MXNet 1.x): applies an optimizer to a set of Parameters.

``step(batch_size)`` = sum the gradients over contexts (``allreduce_grads``),
then update every parameter with gradients rescaled by ``1/batch_size``
(``update``). A gradient backward has not written since the last step is
stale: ``step`` refuses it, naming the parameter, unless
``ignore_stale_grad=True``, which skips those parameters.
"""
from __future__ import annotations

from .. import autograd as _ag
from .. import optimizer as opt
from ..base import GpundaError
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]


class Trainer:
    """Updates ``params`` (ParameterDict, dict or list of Parameters) with ``optimizer``.

    ``optimizer`` is a name ('sgd', 'adam', ...) with ``optimizer_params``
    (``{'learning_rate': 0.1, 'momentum': 0.9}``), or an Optimizer. ``kvstore``
    may be None, 'local' or 'device' (gradients are reduced in this process),
    or 'dist_sync' / 'nccl' (a name or a KVStore) under ``mpiexec``: then the
    parameters are broadcast from rank 0 before the first step, and each step
    all-reduces the gradients (in fused buckets) and rescales them by the
    global batch, ``batch_size * num_workers``, so every rank keeps identical
    weights equal to single-process training on the concatenated batches.
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device",
                 compression_params=None, update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = list(params.values())
        if not isinstance(params, (list, tuple)):
            raise GpundaError(f"Trainer: the first argument must be a list or dict of "
                              f"Parameters, got {type(params).__name__}")
        self._params = []
        self._param2idx = {}
        seen = set()
        for i, p in enumerate(params):
            if not isinstance(p, Parameter):
                raise GpundaError(f"Trainer: the first argument must be a list or dict of "
                                  f"Parameters, got a list with {type(p).__name__} at index {i}")
            if id(p) in seen:
                continue     # a parameter shared by several blocks is updated once
            seen.add(id(p))
            self._param2idx[p.name] = len(self._params)
            self._params.append(p)
            p._set_trainer(self)
        self._check_kvstore(kvstore, update_on_kvstore)
        self._kvstore_name = kvstore
        self._compression_params = compression_params
        optimizer_params = optimizer_params if optimizer_params else {}
        self._scale = float(optimizer_params.get("rescale_grad", 1.0))
        self._contexts = None
        self._init_optimizer(optimizer, optimizer_params)
        self._kv_initialized = False
        if self._kv is not None and all(p._data is not None for p in self._params):
            # broadcast now, so even the first forward pass uses rank 0's weights everywhere
            self._ready()

    def _check_kvstore(self, kvstore, update_on_kvstore):
        from .. import kvstore as kvs
        name = getattr(kvstore, "type", kvstore)
        self._kv = None
        if name in ("dist_sync", "dist_sync_device", "dist", "nccl", "horovod"):
            self._kv = kvstore if isinstance(kvstore, kvs.KVStore) else kvs.create(name)
        elif name not in (None, "local", "device") and not (isinstance(name, str)
                                                            and name.startswith("local")):
            kvs.create(name)      # raises naming the type and the valid ones
            raise GpundaError(f"Trainer: kvstore={name!r} is not supported by gpunda; use None, "
                              f"'local', 'device', 'dist_sync' or 'nccl'")
        if update_on_kvstore:
            raise GpundaError("Trainer: update_on_kvstore=True is not supported; gpunda updates "
                              "on the workers")

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: p for i, p in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params and set(optimizer_params) != {"rescale_grad"}:
                raise GpundaError("Trainer: optimizer_params must be None if optimizer is an "
                                  "Optimizer instance instead of a name")
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

    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    @property
    def _kvstore(self):
        """MXNet's attribute: the distributed KVStore, or None (gpunda reduces the
        gradients of one process itself, as MXNet does for a single device)."""
        return self._kv

    @property
    def _update_on_kvstore(self):
        """MXNet's attribute: None without a kvstore, else False (gpunda always updates
        on the workers)."""
        return None if self._kv is None else False

    @property
    def _params_to_init(self):
        """The Parameters whose (deferred) initialization has not happened yet."""
        return [p for p in self._params if p._data is None]

    @property
    def optimizer(self):
        """The Optimizer instance."""
        return self._optimizer

    def set_learning_rate(self, lr):
        """Set the optimizer's learning rate."""
        self._optimizer.set_learning_rate(lr)

    def _ready(self):
        if self._contexts is None:
            for p in self._params:
                if p._data is None:
                    if p._deferred_init:
                        raise GpundaError(
                            f"Trainer: Parameter {p.name!r} has not been initialized yet "
                            f"because initialization was deferred; run one forward pass "
                            f"before step()")
                    raise GpundaError(f"Trainer: Parameter {p.name!r} has not been "
                                      f"initialized; call initialize() first")
            self._init_contexts()
            if self._kv is not None and self._kv.num_workers > 1:
                self._broadcast_params()
            self._kv_initialized = True

    def _broadcast_params(self):
        """Give every rank rank 0's parameter values (once, before the first step)."""
        import numpy as np
        comm = self._kv._comm
        for p in self._params:
            host = np.ascontiguousarray(p.data(p._ctx_list[0]).asnumpy())
            comm.bcast(host)
            for d in p.list_data():
                d[:] = host

    @property
    def _num_workers(self):
        return self._kv.num_workers if self._kv is not None else 1

    def step(self, batch_size, ignore_stale_grad=False):
        """One update: reduce gradients over contexts (and ranks), then update.

        Gradients are rescaled by 1/(batch_size * num_workers): ``batch_size`` is
        this worker's batch.
        """
        self._ready()
        self._optimizer.rescale_grad = self._scale / (batch_size * self._num_workers)
        if not ignore_stale_grad:
            self._check_stale()     # before the all-reduce, which would refresh every gradient
        self._allreduce_grads()
        self._update(ignore_stale_grad=True)    # checked above; stale ones are skipped

    def allreduce_grads(self):
        """Sum each parameter's gradients over its contexts (copies stay equal)."""
        self._ready()
        self._allreduce_grads()

    def _allreduce_grads(self):
        if len(self._contexts) > 1:
            self._reduce_over_contexts()
        if self._kv is not None and self._kv.num_workers > 1:
            # a stale gradient must not be refreshed by the all-reduce: remember which were
            fresh = {id(p): [p._fresh_grad(i) for i in range(len(p._grad))] for p in self._params
                     if p.grad_req != "null"}
            grads = [p.list_grad()[0] for p in self._params if p.grad_req != "null"]
            reduced = self._kv.allreduce_arrays(grads)
            k = 0
            for p in self._params:
                if p.grad_req == "null":
                    continue
                first = reduced[k]
                k += 1
                for i, g in enumerate(p.list_grad()):
                    if first is not g:
                        g[:] = first.as_in_context(g.context)
                    elif i:
                        g[:] = first.as_in_context(g.context)
                    if not fresh[id(p)][i]:
                        p._mark_grad_used(i)

    def _reduce_over_contexts(self):
        for p in self._params:
            if p.grad_req == "null":
                continue
            grads = p.list_grad()
            total = grads[0].copy()
            for g in grads[1:]:
                total += g.as_in_context(total.context)
            for g in grads:
                # keeps the version bump that marks the gradient as fresh
                g._data[...] = total.as_in_context(g.context)._data
                _ag.bump_version(g)

    def update(self, batch_size, ignore_stale_grad=False):
        """Update with the current gradients (after ``allreduce_grads``), rescaled by 1/batch_size."""
        self._ready()
        self._optimizer.rescale_grad = self._scale / batch_size
        self._update(ignore_stale_grad)

    def _check_stale(self):
        for p in self._params:
            if p.grad_req == "null":
                continue
            for i, c in enumerate(p._ctx_list):
                if not p._fresh_grad(i):
                    raise GpundaError(
                        f"Trainer.step: gradient of Parameter {p.name!r} on context {c} has "
                        f"not been updated by backward since the last step. This could mean "
                        f"a bug in your model that made it only use a subset of the "
                        f"Parameters (Blocks) for this iteration. If you are intentionally "
                        f"only using a subset, call step with ignore_stale_grad=True to skip "
                        f"updating Parameters with a stale gradient")

    def _update(self, ignore_stale_grad=False):
        params = self._params
        if not ignore_stale_grad:
            self._check_stale()
        for dev, upd in enumerate(self._updaters):
            self._optimizer._set_current_context(dev)
            for i, p in enumerate(params):
                if p.grad_req == "null":
                    continue
                if not p._fresh_grad(dev):
                    continue          # only reachable with ignore_stale_grad
                upd(i, p._grad[dev], p._data[dev])
        for p in params:
            if p.grad_req != "null":
                for dev in range(len(p._grad)):
                    p._mark_grad_used(dev)

    def save_states(self, fname):
        """Write the optimizer states (momenta, moments, counts) to ``fname``."""
        self._ready()
        with open(fname, "wb") as f:
            f.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Read optimizer states written by ``save_states``."""
        self._ready()
        with open(fname, "rb") as f:
            states = f.read()
        for upd in self._updaters:
            upd.set_states(states)
            upd.optimizer = self._updaters[0].optimizer
        self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: p for i, p in enumerate(self._params)}
