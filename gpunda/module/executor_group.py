"""MXNet's ``DataParallelExecutorGroup``: one Executor per context, the batch split among them.

Each context gets its own Executor (gpunda's Executor runs the symbol as one
CachedOp, the plan a hybridized block runs) over a slice of the batch along each
input's batch axis (the ``N`` of its layout), sized by ``workload``. Parameters,
their gradients and auxiliary states are per context; ``get_params`` averages
them back. A group made with ``shared_group`` reuses that group's parameter,
gradient and auxiliary arrays where names and shapes agree, and its input buffers
(``shared_data_arrays``) where they are large enough: BucketingModule's buckets
train the same weights this way.
"""
from __future__ import annotations

import logging
from collections import OrderedDict

import numpy as np

from gpunda.base import GpundaAssertionError, GpundaError, np_dtype

__all__ = ["DataParallelExecutorGroup", "split_input_slice", "merge_devices"]

_REQS = ("write", "add", "null")


def split_input_slice(batch_size, work_load_list):
    """Slices of ``range(batch_size)``, one per device, sized in proportion to the load."""
    total = sum(work_load_list)
    counts = [round(w * batch_size / total) for w in work_load_list]
    if sum(counts) < batch_size:
        counts[-1] += batch_size - sum(counts)
    slices, end = [], 0
    for n in counts:
        begin = int(min(end, batch_size))
        end = int(min(begin + n, batch_size))
        if begin >= end:
            raise ValueError(f"Too many slices: a batch of {batch_size} split by the work "
                             f"load {list(work_load_list)} leaves some splits empty")
        slices.append(slice(begin, end))
    return slices


def _as_descs(shapes):
    from gpunda.io import DataDesc
    return [x if isinstance(x, DataDesc) else DataDesc(*x) for x in shapes]


def _copy_part(src, dst, sl, axis):
    """Copy the part ``sl`` along ``axis`` of ``src`` (the whole when it fits) into ``dst``."""
    from gpunda import ndarray as nd
    if not isinstance(src, nd.NDArray):
        src = nd.array(src, dtype=dst.dtype)
    if axis >= 0 and (sl.start != 0 or src.shape[axis] != sl.stop):
        if axis == 0:
            src = src[sl.start:sl.stop]
        else:
            src = nd.slice_axis(src, axis=axis, begin=sl.start, end=sl.stop)
    if src.dtype != dst.dtype and src.stype == "default":
        src = src.astype(dst.dtype)
    src.copyto(dst)


def _load(sources, targets, axes):
    """Copy each source array into its per-device targets (``[(slice, array), ...]``)."""
    for src, parts, axis in zip(sources, targets, axes):
        if isinstance(src, (list, tuple)):      # pre-sliced: one source per device
            for s, (_, dst) in zip(src, parts):
                _copy_part(s, dst, slice(0, s.shape[0]), -1)
            continue
        for sl, dst in parts:
            _copy_part(src, dst, sl, axis)


def _load_general(data, targets, major_axis):
    """MXNet's loader: copy each source of ``data`` into its target, which is one NDArray
    (the whole source), a list of arrays (for a source that is a list, one part each) or
    ``[(slice, array), ...]`` (the slice of the source along ``major_axis``; the whole
    source when that axis is negative)."""
    from gpunda.ndarray import NDArray
    for src, dst, axis in zip(data, targets, major_axis):
        if isinstance(dst, NDArray):
            src.copyto(dst)
        elif isinstance(src, (list, tuple)):
            for s, d in zip(src, dst):
                s.copyto(d)
        else:
            for sl, d in dst:
                _copy_part(src, d, sl, axis)


def _load_data(batch, targets, major_axis):
    """Load ``batch.data`` (or, for a list of pre-sliced batches, each one's data) into
    ``targets``."""
    _load_batch_field(batch, "data", targets, major_axis)


def _load_label(batch, targets, major_axis):
    """Load ``batch.label`` (or, for a list of pre-sliced batches, each one's label) into
    ``targets``."""
    _load_batch_field(batch, "label", targets, major_axis)


def _load_batch_field(batch, field, targets, major_axis):
    if isinstance(batch, list):
        sources = [[getattr(b, field)[i] for b in batch] for i in range(len(targets))]
        targets = [[dst for _, dst in parts] for parts in targets]
        _load_general(sources, targets, major_axis)
    else:
        _load_general(getattr(batch, field), targets, major_axis)


def _batch_field(batch, field, n):
    """``batch.data``/``batch.label`` of one DataBatch, or per input a list over a list of them."""
    if isinstance(batch, list):
        return [[getattr(b, field)[i] for b in batch] for i in range(n)]
    return getattr(batch, field)


def merge_devices(outputs, axes):
    """One array per output: the per-device parts joined along the batch axis."""
    from gpunda import ndarray as nd
    merged = []
    for parts, axis in zip(outputs, axes):
        if axis >= 0 and len(parts) > 1:
            ctx = parts[0].context
            merged.append(nd.concat(*[p.as_in_context(ctx) for p in parts], dim=axis))
        else:
            merged.append(parts[0])
    return merged


def _group2ctxs_per_device(group2ctxs, n):
    """``group2ctxs`` as one ``{group: Context}`` dict (or None) per device."""
    from gpunda.context import Context
    if group2ctxs is None:
        return [None] * n
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != n:
            raise GpundaAssertionError(f"group2ctxs: a list needs one dict per context ({n}), "
                                       f"got {len(group2ctxs)}")
        return group2ctxs
    if isinstance(group2ctxs, dict):
        out = [{} for _ in range(n)]
        for group, v in group2ctxs.items():
            if isinstance(v, Context):
                v = [v] * n
            elif len(v) == 1:
                v = list(v) * n
            elif len(v) != n:
                raise GpundaAssertionError(f"group2ctxs[{group!r}]: needs 1 or {n} contexts, "
                                           f"got {len(v)}")
            for i in range(n):
                out[i][group] = v[i]
        return out
    raise GpundaAssertionError(f"group2ctxs must be a dict group -> context(s) or a list of "
                               f"such dicts, got {type(group2ctxs).__name__}")


# MXNet's names for the two helpers above (same arguments, same results)
_merge_multi_context = merge_devices
_prepare_group2ctxs = _group2ctxs_per_device


def _resolve_grad_req(grad_req, arg_names, param_names, fixed, data_names, inputs_need_grad):
    """MXNet's rule: parameters get ``grad_req`` (fixed ones 'null'), data only with
    ``inputs_need_grad``, labels and states never; a dict overrides by name."""
    def default(req):
        out = {}
        for k in arg_names:
            if k in param_names:
                out[k] = "null" if k in fixed else req
            elif k in data_names:
                out[k] = req if inputs_need_grad else "null"
            else:
                out[k] = "null"
        return out

    if isinstance(grad_req, str):
        reqs = default(grad_req)
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(arg_names):
            raise GpundaError(f"bind: grad_req has {len(grad_req)} entries for "
                              f"{len(arg_names)} arguments {arg_names}")
        reqs = dict(zip(arg_names, grad_req))
    elif isinstance(grad_req, dict):
        reqs = default("write")
        reqs.update(grad_req)
    else:
        raise ValueError("grad_req must be one of str, list, tuple, or dict.")
    for k, r in reqs.items():
        if r not in _REQS:
            raise GpundaError(f"bind: grad_req for {k!r} is {r!r}; valid: {list(_REQS)}")
    return reqs


def _infer_inputs(sym, shapes, types):
    """Shapes and dtypes of the arguments and aux states, in one inference pass (a long
    unrolled graph makes each pass cost)."""
    from gpunda.symbol.infer import infer_graph, known, to_internal, to_public
    from gpunda.symbol.symbol import _var_shape
    from gpunda.util import is_np_shape
    np_mode = is_np_shape()
    s_map, t_map = infer_graph(sym, {k: to_internal(v, np_mode) for k, v in shapes.items()},
                               types, _var_shape)
    order = sym._topo()
    aux_ids = sym._aux_ids(order)
    arg_s, arg_t, aux_s, aux_t, unknown = [], [], [], [], []
    for n in order:
        if n.op is not None:
            continue
        shape = s_map.get((id(n), 0))
        if not known(shape):
            unknown.append(n.name)
        is_aux = id(n) in aux_ids
        (aux_s if is_aux else arg_s).append(to_public(shape, np_mode) if known(shape) else None)
        (aux_t if is_aux else arg_t).append(t_map.get((id(n), 0)))
    if unknown:
        raise GpundaError(f"bind: cannot infer the shapes of {unknown} from the input shapes "
                          f"{shapes}")
    return arg_s, arg_t, aux_s, aux_t


class DataParallelExecutorGroup:
    """Executors of ``symbol`` on ``contexts``, each over its part of the batch."""

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req="write", state_names=None, group2ctxs=None):
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = list(contexts)
        self.workload = list(workload)
        if len(self.workload) != len(self.contexts):
            raise GpundaError(f"DataParallelExecutorGroup: workload has {len(self.workload)} "
                              f"entries for {len(self.contexts)} contexts")
        self.group2ctxs = _group2ctxs_per_device(group2ctxs, len(self.contexts))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self._total_exec_bytes = 0
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        data_shapes = _as_descs(data_shapes)
        label_shapes = _as_descs(label_shapes) if label_shapes is not None else None
        self.grad_req = _resolve_grad_req(
            grad_req if for_training else "null", self.arg_names, self.param_names,
            self.fixed_param_names, [d.name for d in data_shapes], inputs_need_grad)
        self.shared_data_arrays = (shared_group.shared_data_arrays if shared_group is not None
                                   else [{} for _ in self.contexts])
        self.batch_size = None
        self.slices = None
        self.execs = []
        self._default_execs = None
        self.data_arrays = self.label_arrays = self.param_arrays = self.state_arrays = None
        self.grad_arrays = self.aux_arrays = self.input_grad_arrays = None
        self.data_shapes = self.label_shapes = None
        self.data_names = self.label_names = None
        self.data_layouts = self.label_layouts = None
        self.output_names = symbol.list_outputs()
        self.num_outputs = len(self.output_names)
        from gpunda.io import DataDesc
        self.output_layouts = [DataDesc.get_batch_axis(symbol[i].attr("__layout__"))
                               for i in range(self.num_outputs)]
        self.bind_exec(data_shapes, label_shapes, shared_group)

    # -- binding ----------------------------------------------------------------------
    def decide_slices(self, data_shapes):
        """Batch axis of each input; sets ``batch_size`` and the per-device ``slices``."""
        from gpunda.io import DataDesc
        axes = [DataDesc.get_batch_axis(d.layout) for d in data_shapes]
        for d, axis in zip(data_shapes, axes):
            if axis == -1:
                continue
            size = d.shape[axis]
            if self.batch_size is None:
                self.batch_size = size
                self.slices = split_input_slice(size, self.workload)
            elif size != self.batch_size:
                raise GpundaError(f"all data must have the same batch size: batch_size = "
                                  f"{self.batch_size}, but {d.name} has shape {d.shape}")
        return axes

    def _sliced_shapes(self, shapes, i, axes):
        from gpunda.io import DataDesc
        out = []
        for d, axis in zip(shapes, axes):
            shape = list(d.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            out.append(DataDesc(d.name, tuple(shape), d.dtype, d.layout))
        return out

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Bind (or, with ``reshape``, re-shape) one executor per context."""
        if not reshape and self.execs:
            raise GpundaError("bind_exec: the executors are already bound; pass reshape=True")
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        if label_shapes is not None:
            self.label_layouts = self.decide_slices(label_shapes)
        for i in range(len(self.contexts)):
            d_i = self._sliced_shapes(data_shapes, i, self.data_layouts)
            l_i = (self._sliced_shapes(label_shapes, i, self.label_layouts)
                   if label_shapes is not None else [])
            if reshape:
                self.execs[i] = self._default_execs[i].reshape(
                    allow_up_sizing=True, **{d.name: tuple(d.shape) for d in d_i + l_i})
            else:
                self.execs.append(self._bind_ith_exec(i, d_i, l_i, shared_group))
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d.name for d in data_shapes]
        if label_shapes is not None:
            self.label_names = [d.name for d in label_shapes]
        self._collect_arrays()

    def reshape(self, data_shapes, label_shapes):
        """Re-shape the executors for new input shapes (their memory is shared)."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def _bind_ith_exec(self, i, data_shapes, label_shapes, shared_group):
        from gpunda import ndarray as nd
        from gpunda.symbol.executor import Executor
        from gpunda.symbol.symbol import CODE_TO_DTYPE
        sym = self.symbol
        ctx = self.contexts[i]
        shared_exec = None if shared_group is None else shared_group.execs[i]
        shared_buf = self.shared_data_arrays[i]
        inputs = list(data_shapes) + list(label_shapes or [])
        shapes = {d.name: tuple(d.shape) for d in inputs}
        types = {d.name: np_dtype(d.dtype) for d in inputs}
        attrs = sym.attr_dict()
        for d in data_shapes:
            code = attrs.get(d.name, {}).get("__dtype__", "-1")
            if code != "-1":    # a variable's own dtype wins over the iterator's (MXNet's)
                types[d.name] = np_dtype(CODE_TO_DTYPE[int(code)])
        arg_s, arg_t, aux_s, aux_t = _infer_inputs(sym, shapes, types)
        groups = self.group2ctxs[i] or {}

        def place(name):
            group = attrs.get(name, {}).get("__ctx_group__")
            return groups.get(group, ctx) if group is not None else ctx

        def new(name, shape, dtype, stype="default"):
            arr = nd.zeros(shape, ctx=place(name), dtype=dtype, stype=stype)
            self._total_exec_bytes += int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            return arr

        def shared(table, name, shape, dtype):
            arr = None if shared_exec is None else table(shared_exec).get(name)
            if arr is not None and arr.shape == tuple(shape) and arr.dtype == np.dtype(dtype):
                return arr
            return None

        from gpunda.symbol.symbol import _STYPE_TO_CODE
        code_to_stype = {str(v): k for k, v in _STYPE_TO_CODE.items()}
        args, grads = {}, {}
        for name, shape, t in zip(self.arg_names, arg_s, arg_t):
            dtype = np.dtype(t or np.float32)
            stype = code_to_stype.get(attrs.get(name, {}).get("__storage_type__", "0"), "default")
            if name in self.param_names:
                arr = shared(lambda e: e.arg_dict, name, shape, dtype)
                args[name] = arr if arr is not None else new(name, shape, dtype, stype)
                if self.grad_req[name] != "null":
                    g = shared(lambda e: e.grad_dict, name, shape, dtype)
                    grads[name] = g if g is not None else new(name, shape, dtype, stype)
                continue
            # inputs: a buffer of the shared group is reused when it is large enough
            size = int(np.prod(shape, dtype=np.int64))
            buf = shared_buf.get(name)
            if (buf is not None and buf.stype == "default" == stype and buf.dtype == dtype
                    and buf.size >= size):
                arr = buf if buf.shape == tuple(shape) else \
                    buf.reshape((-1,))[:size].reshape(shape)
            else:
                arr = new(name, shape, dtype, stype)
                shared_buf[name] = arr
            args[name] = arr
            if self.grad_req[name] != "null":
                grads[name] = new(name, shape, dtype)
        aux = {}
        for name, shape, t in zip(self.aux_names, aux_s, aux_t):
            dtype = np.dtype(t or np.float32)
            arr = shared(lambda e: e.aux_dict, name, shape, dtype)
            aux[name] = arr if arr is not None else new(name, shape, dtype)
        return Executor(sym, ctx, args, grads, dict(self.grad_req), aux)

    def _collect_arrays(self):
        execs = self.execs
        slices = self.slices or [slice(i, i + 1) for i in range(len(execs))]
        self.data_arrays = [[(slices[i], e.arg_dict[d.name]) for i, e in enumerate(execs)]
                            for d in self.data_shapes]
        self.state_arrays = [[e.arg_dict[n] for e in execs] for n in self.state_names]
        self.label_arrays = None if self.label_shapes is None else [
            [(slices[i], e.arg_dict[d.name]) for i, e in enumerate(execs)]
            for d in self.label_shapes]
        params = self.param_names_in_order()
        self.param_arrays = [[e.arg_dict[n] for e in execs] for n in params]
        self.grad_arrays = ([[e.grad_dict[n] for e in execs] for n in params]
                            if self.for_training else None)
        self.input_grad_arrays = None
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_dict[d.name] for e in execs]
                                      for d in self.data_shapes if d.name in self.arg_names]
        self.aux_arrays = [[e.aux_dict[n] for e in execs] for n in self.aux_names]

    # -- parameters -------------------------------------------------------------------
    def param_names_in_order(self):
        """The parameter names in the order of ``param_arrays`` (the symbol's arguments)."""
        return [n for n in self.arg_names if n in self.param_names]

    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copy parameter values into every executor."""
        for e in self.execs:
            e.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Average each parameter over the devices into ``arg_params``/``aux_params``."""
        from gpunda.context import cpu
        for names, blocks, target in ((self.param_names_in_order(), self.param_arrays,
                                       arg_params),
                                      (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                if len(block) == 1:
                    value = block[0]
                else:
                    value = sum(w.copyto(cpu()) for w in block) / len(block)
                dst = target[name]
                if value.dtype != dst.dtype:
                    value = value.astype(dst.dtype)
                if value is not dst:
                    value.copyto(dst)

    # -- running ----------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Load the batch into the executors and run them."""
        _load(_batch_field(data_batch, "data", len(self.data_arrays)), self.data_arrays,
              self.data_layouts)
        if is_train is None:
            is_train = self.for_training
        first = data_batch[0] if isinstance(data_batch, list) else data_batch
        if self.label_arrays is not None and getattr(first, "label", None):
            _load(_batch_field(data_batch, "label", len(self.label_arrays)), self.label_arrays,
                  self.label_layouts)
        for e in self.execs:
            e.forward(is_train=is_train)

    def backward(self, out_grads=None):
        """Backward on every executor, with its slice of ``out_grads``."""
        from gpunda import ndarray as nd
        if not self.for_training:
            raise GpundaError("backward: re-bind with for_training=True to run backward")
        out_grads = [] if out_grads is None else list(out_grads)
        slices = self.slices or [slice(0, None)] * len(self.execs)
        single = len(self.execs) == 1
        for i, (e, sl) in enumerate(zip(self.execs, slices)):
            parts = []
            for g, axis in zip(out_grads, self.output_layouts):
                if single:
                    parts.append(g)
                elif axis >= 0:
                    parts.append(nd.slice_axis(g, axis=axis, begin=sl.start, end=sl.stop)
                                 .as_in_context(self.contexts[i]))
                else:
                    parts.append(g.copyto(self.contexts[i]))
            e.backward(out_grads=parts)

    def get_output_shapes(self):
        """(name, shape) of each output for the whole batch."""
        out = []
        for name, o, axis in zip(self.output_names, self.execs[0].outputs, self.output_layouts):
            shape = list(o.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            out.append((name, tuple(shape)))
        return out

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        """Outputs ``begin:end``; merged over devices, or one list per output."""
        end = self.num_outputs if end is None else end
        outs = [[e.outputs[i] for e in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            return merge_devices(outs, self.output_layouts[begin:end])
        return outs

    def get_states(self, merge_multi_context=True):
        """The state arrays, one list per state (``[[state1_dev1, state1_dev2], ...]``).

        ``merge_multi_context=True`` (the default) raises MXNet 1.9.1's AssertionError with
        its message: MXNet never merged states across devices."""
        if merge_multi_context:
            raise AssertionError("merge_multi_context=True is not supported for get_states yet.")
        return self.state_arrays

    def set_states(self, states=None, value=None):
        """Set the state inputs from per-device ``states`` or to the scalar ``value``."""
        if (states is None) == (value is None):
            raise GpundaError("set_states: give exactly one of states and value")
        if states is not None:
            for src, dsts in zip(states, self.state_arrays):
                for s, d in zip(src, dsts):
                    s.copyto(d)
        else:
            for dsts in self.state_arrays:
                for d in dsts:
                    d[:] = value

    def get_input_grads(self, merge_multi_context=True):
        if not self.inputs_need_grad:
            raise GpundaError("get_input_grads: bind with inputs_need_grad=True first")
        if merge_multi_context:
            if any(g is None for block in self.input_grad_arrays for g in block):
                return [block[0] for block in self.input_grad_arrays]
            return merge_devices(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def update_metric(self, eval_metric, labels, pre_sliced):
        """Update ``eval_metric`` with each executor's outputs and its slice of ``labels``."""
        from gpunda import ndarray as nd
        slices = self.slices or [slice(0, None)] * len(self.execs)
        single = len(self.execs) == 1
        for k, (e, sl) in enumerate(zip(self.execs, slices)):
            if pre_sliced:
                part = labels[k]
            elif single:
                part = labels
            else:
                part = []
                for lab, axis in zip(labels, self.label_layouts):
                    if axis == 0:
                        part.append(lab[sl])
                    elif axis > 0:
                        part.append(nd.slice_axis(lab, axis=axis, begin=sl.start, end=sl.stop))
                    else:
                        part.append(lab)
            eval_metric.update_dict(OrderedDict(zip(self.label_names or [], part)),
                                    OrderedDict(zip(self.output_names, e.outputs)))

    def install_monitor(self, mon):
        """Install monitor ``mon`` on every executor."""
        for e in self.execs:
            mon.install(e)
