"""``mx.contrib.svrg_optimization.svrg_module``: ``SVRGModule``, a Module trained with
Stochastic Variance Reduced Gradient.

Every ``update_freq`` epochs the full gradient over the whole data set is computed at a
snapshot of the weights (on a second Module, ``_mod_aux``); each step then uses
``g(w) - g(w_snapshot) + full_grad(w_snapshot)`` on the current batch.
"""
import logging
import time

from gpunda.module.module import Module
from gpunda.contrib.svrg_optimization.svrg_optimizer import _SVRGOptimizer

__all__ = ["SVRGModule"]


class SVRGModule(Module):
    """A Module whose updates are SVRG's (see the module docstring).

    Args:
        symbol, data_names, label_names, logger, context, work_load_list,
        fixed_param_names, state_names, group2ctxs, compression_params: as ``Module``.
        update_freq: a positive int, the epochs between two full-gradient passes.

    Raises:
        TypeError: ``update_freq`` is not an int. ValueError: it is not positive.
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=None, work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None, update_freq=None):
        kw = dict(data_names=data_names, label_names=label_names, logger=logger,
                  context=context, work_load_list=work_load_list,
                  fixed_param_names=fixed_param_names, state_names=state_names,
                  group2ctxs=group2ctxs, compression_params=compression_params)
        super().__init__(symbol, **kw)
        if not isinstance(update_freq, int) or isinstance(update_freq, bool):
            raise TypeError("update_freq in SVRGModule must be an integer to represent the "
                            "frequency for calculating full gradients")
        if update_freq <= 0:
            raise ValueError("update_freq in SVRGModule must be a positive integer to represent "
                             "the frequency for calculating full gradients")
        self.update_freq = update_freq
        self._mod_aux = Module(symbol, **kw)
        self._param_dict = None
        self._ctx_len = len(self._context)

    def _reset_bind(self):
        super()._reset_bind()
        self._mod_aux._reset_bind()

    def reshape(self, data_shapes, label_shapes=None):
        super().reshape(data_shapes, label_shapes=label_shapes)
        self._mod_aux.reshape(data_shapes, label_shapes=label_shapes)

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        super().bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind,
                     shared_module, grad_req)
        if for_training:
            self._mod_aux.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                               force_rebind, shared_module, grad_req)

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Set up an ``_SVRGOptimizer`` around ``optimizer``; with a KVStore, also the
        ``<name>_full`` keys where full gradients are summed across devices."""
        from gpunda import ndarray as nd
        self._param_dict = [{k: nd.zeros(v.shape, ctx=self._context[i])
                             for k, v in self.get_params()[0].items()}
                            for i in range(self._ctx_len)]
        svrg = self._create_optimizer(_SVRGOptimizer.__name__, optimizer, kvstore,
                                      optimizer_params)
        super().init_optimizer(kvstore=kvstore, optimizer=svrg,
                               optimizer_params=optimizer_params, force_init=force_init)
        if self._kvstore:
            group = self._exec_group
            for idx, on_devices in enumerate(group.param_arrays):
                name = group.param_names[idx]
                self._kvstore.init(name + "_full", nd.zeros(self._arg_params[name].shape))
                if self._update_on_kvstore:
                    self._kvstore.pull(name + "_full", on_devices, priority=-idx)

    def _create_optimizer(self, optimizer, default_opt, kvstore, optimizer_params):
        """The ``_SVRGOptimizer``, its index->name table covering the ``_full`` keys."""
        from gpunda.module._updates import create_kvstore
        from gpunda.optimizer import create
        batch_size = self._exec_group.batch_size
        kv, update_on_kvstore = create_kvstore(kvstore, self._ctx_len, self._arg_params)
        if kv and "dist" in kv.type and "_sync" in kv.type:
            batch_size *= kv.num_workers
        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            n = self._ctx_len
            idx2name = {i * n + k: name for k in range(n) for i, name in enumerate(names)}
        for key in self._param_dict[0]:
            idx2name[max(idx2name) + 1] = key + "_full"
        params = dict(optimizer_params)
        params.setdefault("rescale_grad", 1.0 / batch_size)
        params["default_optimizer"] = default_opt
        params["param_idx2name"] = idx2name
        return create(optimizer, **params)

    def forward(self, data_batch, is_train=None):
        super().forward(data_batch, is_train)
        if is_train:
            self._mod_aux.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        super().backward(out_grads)
        if self._mod_aux.binded:
            self._mod_aux.backward(out_grads)

    def update(self):
        """Turn the batch gradients into SVRG's, then update as a Module does."""
        self._update_svrg_gradients()
        super().update()

    def update_full_grads(self, train_data):
        """The mean gradient over all of ``train_data`` at the current weights, kept per
        device (and summed over devices through the KVStore when there is one)."""
        from gpunda import ndarray as nd
        names = self._exec_group.param_names
        arg, aux = self.get_params()
        self._mod_aux.set_params(arg_params=arg, aux_params=aux)
        train_data.reset()
        nbatch = 0
        padding = 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            nbatch += 1
            grads = self._mod_aux._exec_group.grad_arrays
            for ctx in range(self._ctx_len):
                for index, name in enumerate(names):
                    self._param_dict[ctx][name] = nd.broadcast_add(
                        self._param_dict[ctx][name], grads[index][ctx], axis=0)
            padding = batch.pad
        true_num_batch = nbatch - padding / train_data.batch_size
        for name in names:
            per_device = []
            for i in range(self._ctx_len):
                self._param_dict[i][name] /= true_num_batch
                per_device.append(self._param_dict[i][name])
            if self._kvstore:
                self._accumulate_kvstore(name, per_device)

    def _accumulate_kvstore(self, key, value):
        self._kvstore.push(key + "_full", value)
        self._kvstore._barrier()
        self._kvstore.pull(key + "_full", value)
        self._allocate_gradients(key, value)

    def _allocate_gradients(self, key, value):
        for i in range(self._ctx_len):
            self._param_dict[i][key] = value[i] / self._ctx_len

    def _svrg_grads_update_rule(self, g_curr_batch_curr_weight, g_curr_batch_special_weight,
                                g_special_weight_all_batch):
        """``g(w) - g(w_snapshot) + full_grad``, in place in the first list's arrays."""
        for i, grad in enumerate(g_curr_batch_curr_weight):
            grad -= g_curr_batch_special_weight[i]
            grad += g_special_weight_all_batch[i]
        return g_curr_batch_curr_weight

    def _update_svrg_gradients(self):
        group, aux = self._exec_group, self._mod_aux._exec_group
        for ctx in range(self._ctx_len):
            for index, name in enumerate(group.param_names):
                group.grad_arrays[index][ctx] = self._svrg_grads_update_rule(
                    group.grad_arrays[index][ctx], aux.grad_arrays[index][ctx],
                    self._param_dict[ctx][name])

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=None, arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Train as ``Module.fit`` does, with a full-gradient pass every ``update_freq``
        epochs (``initializer`` defaults to ``Uniform(0.01)``)."""
        from gpunda import initializer as init_mod, metric
        from gpunda.base import _as_list
        from gpunda.model import BatchEndParam
        assert num_epoch is not None, "please specify number of epochs"
        if initializer is None:
            initializer = init_mod.Uniform(0.01)
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params,
                         aux_params=aux_params, allow_missing=allow_missing,
                         force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            eval_metric.reset()
            tic = time.time()
            if epoch % self.update_freq == 0:
                self.update_full_grads(train_data)
            train_data.reset()
            batches = iter(train_data)
            nbatch = 0
            nxt = next(batches)
            done = False
            while not done:
                batch = nxt
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(batch)
                self.update()
                if isinstance(batch, list):
                    self.update_metric(eval_metric, [b.label for b in batch], pre_sliced=True)
                else:
                    self.update_metric(eval_metric, batch.label)
                try:
                    nxt = next(batches)
                    self.prepare(nxt, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    done = True
                if monitor is not None:
                    monitor.toc_print()
                if done:
                    name_vals = eval_metric.get_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                           locals=locals())
                    for cb in _as_list(batch_end_callback):
                        cb(params)
                nbatch += 1
            for name, val in name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            if epoch_end_callback is not None:
                for cb in _as_list(epoch_end_callback):
                    cb(epoch, self.symbol, arg_params, aux_params)
            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        super().prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self._mod_aux.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
