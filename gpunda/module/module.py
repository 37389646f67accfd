"""``Module``: a Symbol bound to data shapes on one or more contexts, trained by an optimizer.

The module keeps a master copy of the parameters (``_arg_params``/``_aux_params``,
on the CPU) beside the executors' own arrays; ``_params_dirty`` says the
executors' copies are newer (after ``update``), and ``get_params`` syncs them
back. Each executor runs the symbol as one CachedOp (see executor_group.py), so
a training step is the plan a hybridized Gluon block runs, recorded as one
autograd node whose backward is the cached gradient plan.
"""
from __future__ import annotations

import logging
import warnings

from gpunda.base import GpundaError
from gpunda.initializer import Uniform
from gpunda.module.base_module import BaseModule, _check_input_names, _parse_data_desc, _require

__all__ = ["Module"]


class Module(BaseModule):
    """A trainable module over ``symbol``.

    Args:
        symbol: the network (its outputs are the module's outputs).
        data_names, label_names: the symbol's arguments fed from the batch's data and
            label (a label name that is not an argument only warns, as in MXNet).
        context: a Context or a list of them (default: the current context, which
            is cpu(0), MXNet's default, unless GPUNDA_DEFAULT_DEVICE or a ``with``
            scope says otherwise); the batch is split among them in proportion to
            ``work_load_list``.
        fixed_param_names: parameters that are not updated.
        state_names: arguments that are states, set with ``set_states``.
        group2ctxs: ``ctx_group`` attribute -> Context (or a list, one per context).
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=None, work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        from gpunda.context import Context, current_context
        super().__init__(logger=logger)
        if context is None:
            # MXNet's default, cpu(), is its default device; gpunda's may be a GPU
            context = current_context()
        if isinstance(context, Context):
            context = [context]
        self._context = list(context)
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise GpundaError(f"Module: work_load_list has {len(work_load_list)} entries for "
                              f"{len(self._context)} contexts")
        self._work_load_list = list(work_load_list)
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)
        inputs = data_names + label_names + state_names
        self._param_names = [x for x in symbol.list_arguments() if x not in inputs]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # -- checkpoints ------------------------------------------------------------------
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from ``prefix-symbol.json`` and ``prefix-EPOCH.params`` (MXNet's files).

        With ``load_optimizer_states`` the optimizer states in ``prefix-EPOCH.states``
        are loaded when ``init_optimizer`` runs. ``kwargs`` go to ``Module(...)``.
        """
        from gpunda.model import load_checkpoint
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{epoch:04d}.states"
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Write ``prefix-symbol.json``, ``prefix-EPOCH.params`` (and ``.states``)."""
        from gpunda.model import save_checkpoint
        arg_params, aux_params = self.get_params()
        save_checkpoint(prefix, epoch, self._symbol, arg_params, aux_params,
                        remove_amp_cast=remove_amp_cast)
        logging.info('Saved checkpoint to "%s-%04d.params"', prefix, epoch)
        if save_optimizer_states:
            state_name = f"{prefix}-{epoch:04d}.states"
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # -- properties -------------------------------------------------------------------
    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        _require(self.binded, "Module.data_shapes: call bind() first")
        return self._data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "Module.label_shapes: call bind() first")
        return self._label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "Module.output_shapes: call bind() first")
        return self._exec_group.get_output_shapes()

    # -- parameters -------------------------------------------------------------------
    def get_params(self):
        """``(arg_params, aux_params)``, synced from the devices when they changed."""
        _require(self.params_initialized, "Module.get_params: call init_params() first")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize the parameters: from ``arg_params``/``aux_params`` where given,
        else by ``initializer`` (a variable's own ``init`` attribute wins).

        A parameter missing from given dicts raises RuntimeError unless
        ``allow_missing``; a name the symbol lacks raises ValueError unless
        ``allow_extra``. Already initialized parameters stay unless ``force_init``.
        """
        from gpunda.initializer import InitDesc
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        _require(self.binded, "Module.init_params: call bind before initializing the parameters")

        def fill(name, arr, given):
            if given is None:
                initializer(name, arr)
            elif name in given:
                src = given[name]
                if src is not arr:
                    src.copyto(arr)
            else:
                if not allow_missing:
                    raise RuntimeError(f"{name} is not presented")
                if initializer is not None:
                    initializer(name, arr)

        attrs = self._symbol.attr_dict()
        for name, arr in sorted(self._arg_params.items()):
            fill(InitDesc(name, attrs.get(name, None)), arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            fill(InitDesc(name, attrs.get(name, None)), arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._set_exec_params(self._arg_params, self._aux_params, allow_extra)

    def _set_exec_params(self, arg_params, aux_params, allow_extra=False):
        if not allow_extra:
            known = set(self._exec_group.arg_names) | set(self._exec_group.aux_names)
            for what, given in (("arg", arg_params), ("aux", aux_params)):
                extra = sorted(k for k in (given or {}) if k not in known)
                if extra:
                    raise ValueError(f"Find name '{extra[0]}' ({what}) that is not in the "
                                     f"symbol's arguments; pass allow_extra=True to ignore "
                                     f"such names")
        self._exec_group.set_params(arg_params, aux_params or {}, allow_extra=True)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assign parameter values (with ``allow_missing``, names not given keep theirs)."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        _require(self.binded, "Module.set_params: call bind() first")
        self._set_exec_params(arg_params, aux_params, allow_extra)
        # the executors now hold the truth; the master copy follows on the next get_params
        self._params_dirty = True
        self.params_initialized = True

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        if self._kvstore and self._update_on_kvstore:
            from gpunda import ndarray as nd
            for name, value in sorted(self._arg_params.items()):
                if value.stype == "row_sparse":
                    ids = nd.arange(0, value.shape[0], dtype="int64")
                    self._kvstore.row_sparse_pull(name, value, row_ids=ids)
        self._params_dirty = False

    # -- binding ----------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Allocate the executors for ``data_shapes``/``label_shapes``.

        Shapes are DataDescs or ``(name, shape)`` pairs. ``shared_module`` (bound,
        initialized) lends its parameters and memory. ``grad_req`` is 'write', 'add',
        'null', a dict name -> req, or a list over the arguments.
        """
        from gpunda.module.executor_group import DataParallelExecutorGroup
        from gpunda import ndarray as nd
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise GpundaError("Module.bind: inputs_need_grad=True needs for_training=True")
        data_shapes, label_shapes = _parse_data_desc(self.data_names, self.label_names,
                                                     data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            _require(isinstance(shared_module, Module) and shared_module.binded
                     and shared_module.params_initialized,
                     "Module.bind: shared_module must be a Module that is bound and has "
                     "its parameters initialized")
            shared_group = shared_module._exec_group
            _require(len(shared_group.execs) >= len(self._context),
                     "Module.bind: shared_module runs on fewer contexts than this module")
        group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, data_shapes, label_shapes,
            self._param_names, for_training, inputs_need_grad, shared_group,
            logger=self.logger, fixed_param_names=self._fixed_param_names, grad_req=grad_req,
            group2ctxs=self._group2ctxs, state_names=self._state_names)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = data_shapes, label_shapes
        self._exec_group = group
        self._total_exec_bytes = group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            # parameters loaded before bind (Module.load) go to the new executors
            group.set_params(self._arg_params, self._aux_params)
        else:
            if self._arg_params is not None or self._aux_params is not None:
                raise GpundaError("Module.bind: parameters exist but are not initialized")
            self._arg_params = {
                name: nd.zeros(block[0].shape, dtype=block[0].dtype, stype=block[0].stype)
                for name, block in zip(group.param_names_in_order(), group.param_arrays)}
            self._aux_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(self._aux_names, group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        """Re-shape the executors for new input shapes (parameters are kept)."""
        _require(self.binded, "Module.reshape: call bind() first")
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self.data_names, self.label_names, data_shapes, label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # -- optimizer --------------------------------------------------------------------
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Set up the optimizer (by name or object) and where updates run (kvstore).

        A named optimizer gets ``rescale_grad = 1/batch_size`` (times the workers of a
        dist_sync store) unless ``optimizer_params`` sets it; an Optimizer object keeps
        its own and a warning says so when it differs.
        """
        from gpunda import optimizer as opt
        from gpunda.module._updates import create_kvstore, initialize_kvstore
        self._check_ready("init_optimizer")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = create_kvstore(kvstore, len(self._context),
                                                    self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore and "dist" in kvstore.type and "_sync" in kvstore.type:
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size
        param_names = self._exec_group.param_names_in_order()
        if update_on_kvstore:
            idx2name = dict(enumerate(param_names))
        else:
            n = len(self._context)
            idx2name = {i * n + k: name for k in range(n) for i, name in enumerate(param_names)}
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name,
                                   **optimizer_params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise GpundaError(f"Module.init_optimizer: optimizer must be a name or an "
                                  f"Optimizer, got {type(optimizer).__name__}")
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(
                    f"Optimizer created manually outside Module but rescale_grad is not "
                    f"normalized to 1.0/batch_size/num_workers ({optimizer.rescale_grad} vs. "
                    f"{rescale_grad}). Is this intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            initialize_kvstore(kvstore, self._exec_group.param_arrays, self._arg_params,
                               param_names, update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Use ``shared_module``'s optimizer, kvstore and updater (bucketing)."""
        _require(shared_module.optimizer_initialized,
                 "Module.borrow_optimizer: the shared module has no optimizer yet")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        """Write the optimizer states to ``fname``."""
        _require(self.optimizer_initialized,
                 "Module.save_optimizer_states: call init_optimizer() first")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as f:
                f.write(self._updater.get_states())

    def load_optimizer_states(self, fname):
        """Read optimizer states written by ``save_optimizer_states``."""
        _require(self.optimizer_initialized,
                 "Module.load_optimizer_states: call init_optimizer() first")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as f:
                self._updater.set_states(f.read())

    # -- computation ------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Run a forward pass; a batch whose shapes differ from the bound ones reshapes
        the module first. ``is_train`` defaults to ``for_training``."""
        from gpunda.io import DataDesc
        self._check_ready("forward")
        current = tuple(d.shape for d in self._data_shapes)
        if isinstance(data_batch, list):
            _require(len(data_batch) > 0, "Module.forward: empty list of data batches")
            new_shapes = []
            for i in range(len(data_batch[0].data)):
                shape = data_batch[0].data[i].shape
                _require(all(b.data[i].shape == shape for b in data_batch),
                         "Module.forward: all data batches in a list need to have the same "
                         "shape")
                new_shapes.append((len(data_batch) * shape[0],) + tuple(shape[1:]))
            new_shapes = tuple(new_shapes)
        else:
            data = getattr(data_batch, "data", None)
            # more arrays than data names: MXNet zips them with the names and ignores the
            # rest (quantize_net_v2 feeds a DataLoader's (data, label) batches this way)
            if data is None or len(data) < len(self._data_shapes):
                _require(data is not None, f"Module.forward: data_batch must have .data, got "
                                           f"{type(data_batch).__name__}")
                _require(False, f"Module.forward: the batch has {len(data)} data arrays for "
                                f"the data names {self._data_names}")
            new_shapes = tuple(tuple(d.shape) for d in data[:len(self._data_shapes)])
        if current != new_shapes:
            provide_data = getattr(data_batch, "provide_data", None)
            if provide_data:
                new_dshape = provide_data
            else:
                new_dshape = [DataDesc(d.name, s, d.dtype, d.layout)
                              for d, s in zip(self._data_shapes, new_shapes)]
            provide_label = getattr(data_batch, "provide_label", None)
            label = getattr(data_batch, "label", None)
            if provide_label:
                new_lshape = provide_label
            elif label and self._label_shapes:
                new_lshape = [DataDesc(d.name, lab.shape, d.dtype, d.layout)
                              for d, lab in zip(self._label_shapes, label)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        """Backward from the last forward; ``out_grads`` are the outputs' head gradients."""
        self._check_ready("backward")
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Apply the optimizer to the parameters with the gradients of the last backward."""
        from gpunda.module._updates import update_params, update_params_on_kvstore
        self._check_ready("update", optimizer=True)
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            update_params_on_kvstore(group.param_arrays, group.grad_arrays, self._kvstore,
                                     group.param_names_in_order())
        else:
            update_params(group.param_arrays, group.grad_arrays, updater=self._updater,
                          num_device=len(self._context), kvstore=self._kvstore,
                          param_names=group.param_names_in_order())

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward (per device lists without merging)."""
        self._check_ready("get_outputs")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """Gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        self._check_ready("get_input_grads")
        _require(self.inputs_need_grad,
                 "Module.get_input_grads: bind with inputs_need_grad=True first")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        self._check_ready("get_states")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._check_ready("set_states")
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` with the last outputs against ``labels``."""
        _require(self.binded, "Module.update_metric: call bind() first")
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        _require(self.binded, "Module.install_monitor: call bind() first")
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Pull the row_sparse parameters the next batch needs (with ``sparse_row_id_fn``)."""
        _require(self.binded, "Module.prepare: call bind() first")
        if sparse_row_id_fn is None:
            return
        if not self._kvstore or not self._update_on_kvstore:
            warnings.warn(UserWarning("Parameters are not updated in the KVStore. "
                                      "No need to call sparse_row_id_fn."))
            return
        row_ids = sparse_row_id_fn(data_batch)
        if not isinstance(row_ids, dict):
            raise GpundaError(f"prepare: sparse_row_id_fn must return a dict name -> row ids, "
                              f"got {type(row_ids).__name__}")
        names = self._exec_group.param_names_in_order()
        for name, row_id in row_ids.items():
            idx = names.index(name)
            value = self._exec_group.param_arrays[idx]
            if value[0].stype != "row_sparse":
                warnings.warn(UserWarning(f"{name}.stype is not 'row_sparse'. No need to "
                                          f"perform row_sparse_pull."))
            else:
                self._kvstore.row_sparse_pull(name, value, row_ids=row_id, priority=-idx)
