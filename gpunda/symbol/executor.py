"""Executor (MXNet's ``Symbol.bind`` / ``simple_bind`` result), built on CachedOp.

The graph that runs is the bound symbol after ``optimize.py``'s rewrites. As in
MXNet, the output arrays exist from bind on and every ``forward`` writes into
them, so references taken early see later results. ``forward(is_train)`` runs
the CachedOp over the bound arrays; with ``is_train=True`` and some
``grad_req`` other than 'null' the call is recorded, and ``backward(out_grads)``
writes (or adds) the gradients into the bound gradient arrays. A ``backward``
after an unrecorded forward first runs the forward again under recording
(MXNet's executor keeps every forward's values for a backward).
"""
from __future__ import annotations

import os

import numpy as np

from gpunda.base import GpundaError, GpundaTypeError, GpundaValueError, np_dtype
from gpunda._core.deferred import Poisoned as _Poisoned

__all__ = ["Executor", "simple_bind"]

_REQS = ("write", "add", "null")


def _as_dict(values, names, where, allow_missing=False, extra_ok=()):
    from gpunda.ndarray.ndarray import NDArray
    if values is None:
        values = {}
    if isinstance(values, dict):
        # as MXNet: the names the graph has are taken, other keys are ignored
        out = {k: v for k, v in values.items() if k in names or k in extra_ok}
    else:
        values = list(values)
        if len(values) != len(names):
            raise ValueError(f"{where}: got {len(values)} arrays for {len(names)} names {names}")
        out = dict(zip(names, values))
    for k, v in out.items():
        if v is not None and not isinstance(v, NDArray):
            raise GpundaTypeError(f"{where}: {k} must be an NDArray, got {type(v).__name__} "
                                  f"(only a list of NDArrays or a dict of str to NDArray)")
    if not allow_missing:
        missing = [n for n in names if out.get(n) is None]
        if missing:
            raise ValueError(f"{where}: no array given for {missing}")
    return out


def _monitor_callback_wrapper(callback):
    """MXNet's adapter from a monitor callback ``callback(name, array)`` to the
    three-argument form the engine calls (the third, an opaque user pointer, is dropped)."""
    def callback_handle(name, array, _):
        callback(name, array)
    return callback_handle


class Executor:
    """Bound arrays plus a CachedOp: ``forward``, ``backward``, ``outputs``, ``*_dict``."""

    def __init__(self, sym, ctx, args, args_grad=None, grad_req="write", aux_states=None,
                 _cached_op=None, _outputs=None):
        from gpunda.context import current_context, Context
        from gpunda._engine.cached_op import CachedOp
        from gpunda.symbol.optimize import optimize, concretize_shapes, bound_dtypes_win
        self._symbol = sym
        self._ctx = Context(ctx) if ctx is not None else current_context()
        self._arg_names = sym.list_arguments()
        self._aux_names = sym.list_auxiliary_states()
        aux_in_args = {}
        if isinstance(args, dict):
            aux_in_args = {k: v for k, v in args.items() if k in self._aux_names}
            args = {k: v for k, v in args.items() if k not in self._aux_names}
        self.arg_dict = _as_dict(args, self._arg_names, "bind: args")
        if aux_states is None and aux_in_args:
            aux_states = aux_in_args
        self.aux_dict = _as_dict(aux_states, self._aux_names, "bind: aux_states")
        grads = _as_dict(args_grad, self._arg_names, "bind: args_grad", allow_missing=True)
        if isinstance(grad_req, str):
            reqs = {n: grad_req for n in self._arg_names}
        elif isinstance(grad_req, dict):
            reqs = {n: grad_req.get(n, "null") for n in self._arg_names}
        else:
            grad_req = list(grad_req)
            if len(grad_req) != len(self._arg_names):
                raise GpundaError(f"bind: {len(grad_req)} grad_req values for "
                                  f"{len(self._arg_names)} arguments")
            reqs = dict(zip(self._arg_names, grad_req))
        for n, r in reqs.items():
            if r not in _REQS:
                raise GpundaValueError(f"bind: grad_req for {n} is {r!r}; valid: "
                                       f"{list(_REQS)}")
            if grads.get(n) is None:
                reqs[n] = "null"
        self._grad_req = reqs
        if any(r != "null" for r in reqs.values()):
            _check_differentiable(sym, reqs)
        # as MXNet's: every argument is a key, None where it gets no gradient
        self.grad_dict = {n: grads.get(n) for n in self._arg_names}
        # the graph that runs: partitioned when MXNET_SUBGRAPH_BACKEND names a subgraph
        # backend ("NONE": off; NOTE [Subgraph partitioning] in _frontend/subgraph.py),
        # common subexpressions merged unless MXNET_ELIMINATE_COMMON_EXPR=0 (MXNet's
        # default is to merge)
        run = sym
        backend = os.environ.get("MXNET_SUBGRAPH_BACKEND", "")
        if backend and backend != "NONE":
            from gpunda._frontend.subgraph import partition_for_executor
            run = partition_for_executor(sym, backend)
        self._optimized = concretize_shapes(bound_dtypes_win(optimize(run)), {
            k: tuple(v.shape) for k, v in list(self.arg_dict.items()) + list(self.aux_dict.items())
            if v is not None})
        # reshape() shares the CachedOp: its plans are kept per input signature
        # never inlined (MXNet's Executor is no CachedOp): backward reaches every output
        self._cop = _cached_op if _cached_op is not None else CachedOp(
            self._optimized, flags=[("inline_limit", 0)])
        # outputs exist from bind on, and forward writes into them (as MXNet's do)
        self.outputs = _outputs if _outputs is not None else self._alloc_outputs()
        self._recorded = None
        self._last_train = False
        self._monitor = None

    def _alloc_outputs(self):
        from gpunda import ndarray as nd
        from gpunda.symbol.infer import infer_graph, known
        from gpunda.symbol.symbol import _var_shape
        bound = list(self.arg_dict.items()) + list(self.aux_dict.items())
        shapes = {k: v.shape for k, v in bound}
        types = {k: v.dtype for k, v in bound}
        # shapes and dtypes together: with the shapes known every op's output dtype is
        # the one its compute gives (shape_array's int64)
        s_map, t_map = infer_graph(self._symbol, shapes,
                                   {k: np_dtype(v) for k, v in types.items()}, _var_shape)
        keys = [(id(n), i) for n, i in self._symbol._outputs]
        if not all(known(s_map.get(k)) for k in keys):
            return []       # shapes known only once computed: the first forward allocates
        # an inferred () is a real scalar (a np op's output in a legacy graph), which MXNet
        # allocates whatever the shape mode; only a user's () reads as unknown
        from gpunda.util import np_shape
        with np_shape(True):
            return [nd.zeros(s_map[k], ctx=self._ctx, dtype=t_map.get(k) or np.float32)
                    for k in keys]

    def set_monitor_callback(self, callback, monitor_all=False):
        """Call ``callback(name, array)`` after each forward for every op output (and, with
        ``monitor_all``, every op input, named ``<node>_<input>``), in graph order.

        As MXNet's C callback gives them, ``name`` is bytes and ``array`` is usable as an
        ``NDArrayHandle`` (``NDArray(ctypes.cast(array, NDArrayHandle))``); here it is
        also the NDArray itself."""
        if not callable(callback):
            raise TypeError(f"set_monitor_callback: callback must be callable, got "
                            f"{type(callback).__name__}")
        self._monitor = (callback, bool(monitor_all), None)

    def _run_monitor(self, is_train):
        from gpunda._engine import autograd
        from gpunda._engine.cached_op import CachedOp
        callback, monitor_all, cop = self._monitor
        sym = self._optimized
        internals = sym._all_internals()     # hidden outputs too, as MXNet's monitor
        if cop is None:      # evaluating every entry is a second run, made only when asked
            cop = CachedOp(internals)
            self._monitor = (callback, monitor_all, cop)
        names = sym.list_inputs()
        arrays = [self.arg_dict[n] if n in self.arg_dict else self.aux_dict[n] for n in names]
        with autograd.pause(train_mode=is_train):
            vals = cop(*arrays)
        vals = [vals] if not isinstance(vals, (list, tuple)) else list(vals)
        entry = {}
        k = 0
        for n in sym._topo():
            for i in range(n.nout):
                entry[(id(n), i)] = vals[k]
                k += 1
        for n in sym._topo():
            if n.op is None:
                continue
            if monitor_all:
                for name, (c, i) in zip(_monitor_input_names(n), n.inputs):
                    if c.op is None:
                        callback(c.name.encode(), entry[(id(c), i)])
                    callback(f"{n.name}_{name}".encode(), entry[(id(c), i)])
            for i, out_name in enumerate(n.output_names()):
                callback(out_name.encode(), entry[(id(n), i)])

    def get_optimized_symbol(self):
        """The graph this executor runs (after common-subexpression elimination)."""
        return self._optimized

    def debug_str(self):
        """The executed graph, one node per block, and the memory its plan allocates."""
        from gpunda.symbol.debug import executor_debug_str
        return executor_debug_str(self)

    @property
    def arg_arrays(self):
        return [self.arg_dict[n] for n in self._arg_names]

    @property
    def grad_arrays(self):
        return [self.grad_dict.get(n) for n in self._arg_names]

    @property
    def aux_arrays(self):
        return [self.aux_dict[n] for n in self._aux_names]

    @property
    def output_dict(self):
        return dict(zip(self._symbol.list_outputs(), self.outputs))

    def forward(self, is_train=False, **kwargs):
        """Run the graph; keyword arrays are first copied into the bound arguments."""
        from gpunda.ndarray.ndarray import NDArray
        for k, v in kwargs.items():
            if k not in self.arg_dict:
                raise TypeError(f"Executor.forward: unknown argument {k!r}; arguments are "
                                f"{self._arg_names}")
            dst = self.arg_dict[k]
            if tuple(v.shape) != tuple(dst.shape):
                raise ValueError(f"Executor.forward: shape of {k} must be {dst.shape}, got "
                                 f"{tuple(v.shape)}")
            if isinstance(v, NDArray):
                v.copyto(dst)
            else:
                dst[:] = v
        self._last_train = bool(is_train)
        train_grads = is_train and any(r != "null" for r in self._grad_req.values())
        self._run(is_train, record=train_grads)
        if self._monitor is not None:
            self._run_monitor(is_train)
        return self.outputs

    def _run(self, is_train, record):
        from gpunda._engine import autograd
        from gpunda.ndarray.ndarray import NDArray
        inputs = []
        names = self.__dict__.get("_input_names")
        if names is None:       # a graph walk per step shows in a Module's training loop
            names = self._input_names = self._optimized.list_inputs()
        for n in names:
            a = self.arg_dict.get(n)
            if a is None:
                inputs.append(self.aux_dict[n])
                continue
            if record and self._grad_req[n] != "null":
                a = self._variable(n, a)
            inputs.append(a)
        if record:
            with autograd.record(train_mode=is_train):
                out = self._cop(*inputs)
        else:
            with autograd.pause(train_mode=is_train):
                out = self._cop(*inputs)
        res = [out] if isinstance(out, NDArray) else list(out)
        with autograd.pause():
            if len(self.outputs) != len(res):
                self.outputs = [r.copy() for r in res]
            for k, (dst, r) in enumerate(zip(self.outputs, res)):
                if type(r._data) is _Poisoned or type(dst._data) is _Poisoned:
                    # a deferred op error travels into the output, raised at its first
                    # read as MXNet's engine does (NOTE [Deferred op errors])
                    dst._data = r._data if type(r._data) is _Poisoned else r._data.copy()
                elif dst.shape == r.shape and dst.dtype == r.dtype:
                    r.copyto(dst)
                else:       # inferred ahead wrongly (a data-dependent shape): take the result
                    self.outputs[k] = r.copy()
        self._recorded = res if record else None

    def _variable(self, name, a):
        """The private handle on ``a``'s memory that carries its gradient buffer.

        It is made and marked once and reused while the argument, its memory, its
        gradient buffer and grad_req stay the same (as a Gluon parameter is marked
        once): marking afresh every step shows in a Module's training loop.
        """
        grad, req = self.grad_dict[name], self._grad_req[name]
        marked = self.__dict__.setdefault("_marked", {})
        hit = marked.get(name)
        if hit is not None and hit[0] is a and hit[1] is grad and hit[2] == req \
                and hit[3]._data is a._data:
            return hit[3]
        from gpunda._engine import autograd
        from gpunda.ndarray.ndarray import NDArray, _new
        if type(a) is NDArray:
            w = _new(a._data, a._ctx)
        else:       # csr / row_sparse keep their class (the dispatcher routes by it)
            from gpunda.ndarray.sparse import _wrap
            w = _wrap(a._data, a._ctx)
        autograd.mark_variables([w], [grad], req)
        marked[name] = (a, grad, req, w)
        return w

    def backward(self, out_grads=None, is_train=True):
        """Gradients of the outputs (times ``out_grads``) into ``grad_dict``.

        As in MXNet, a backward may follow a forward with ``is_train=False`` (or no
        forward at all): the forward is then run again under recording first.
        """
        from gpunda._engine import autograd
        from gpunda.ndarray.ndarray import NDArray
        if not any(r != "null" for r in self._grad_req.values()):
            return
        if out_grads is None:
            out_grads = None
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        elif isinstance(out_grads, dict):
            out_grads = [out_grads[k] for k in self._symbol.list_outputs()]
        else:
            out_grads = list(out_grads)
        if out_grads is not None:
            for g in out_grads:
                if not isinstance(g, NDArray):
                    raise TypeError(f"Executor.backward: out_grads must be NDArrays, got "
                                    f"{type(g).__name__}")
            if not out_grads:
                out_grads = None
        if self._recorded is None:
            self._run(self._last_train, record=True)
        heads = self._recorded
        if out_grads is not None and len(out_grads) > len(heads):
            out_grads = out_grads[:len(heads)]      # MXNet reads one per output, no more
        if out_grads is not None:
            # MXNet copies out_grads into head-gradient buffers of the outputs' dtype
            out_grads = [g.astype(o.dtype) if g.dtype != o.dtype else g
                         for g, o in zip(out_grads, heads)]
            # ... and on the outputs' context (ctx_group placement may put them elsewhere)
            out_grads = [g.as_in_context(o.context) if g.context != o.context else g
                         for g, o in zip(out_grads, heads)]
        self._recorded = None
        autograd.backward(heads, out_grads, train_mode=is_train)
        if self._monitor is not None:
            from gpunda.symbol._monitor_grads import report_gradients
            report_gradients(self, self._monitor[0], out_grads, is_train)

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy values from dicts of NDArrays into the bound arguments and aux states."""
        for src, dst, what in ((arg_params, self.arg_dict, "arg"),
                               (aux_params or {}, self.aux_dict, "aux")):
            for k, v in src.items():
                if k in dst:
                    v.copyto(dst[k])
                elif not allow_extra_params:
                    raise GpundaError(f"copy_params_from: {what} {k!r} is not in the executor")

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new Executor for new input shapes that shares memory with this one (MXNet's).

        ``kwargs`` give new shapes by argument name; the other shapes are inferred.
        An array whose shape stays is shared; one that shrinks becomes a view on the
        start of the old memory; one that grows gets new memory only with
        ``allow_up_sizing=True``. An argument not named whose inferred shape changes
        (a weight that follows the data) needs ``partial_shaping=True``. The two
        executors share memory, so use one at a time.
        """
        where = "Executor.reshape"
        for k, v in kwargs.items():
            if k not in self._arg_names:
                raise GpundaError(f"{where}: {k!r} is not an argument; arguments are "
                                  f"{self._arg_names}")
            if not isinstance(v, (tuple, list)) or not all(
                    isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in v):
                raise GpundaError(f"{where}: the shape for {k} must be a tuple of "
                                  f"non-negative ints, got {v!r}")
        try:
            arg_s, _, aux_s = self._symbol.infer_shape(**{k: tuple(v) for k, v in kwargs.items()})
        except GpundaError as e:
            raise GpundaError(f"{where}: the new shapes {kwargs} do not fit the graph: {e}") \
                from None
        if arg_s is None:
            raise GpundaError(f"{where}: cannot infer every shape from {kwargs}; give more")

        def fit(name, arr, shape, named, what):
            shape = tuple(shape)
            if arr is None or arr.shape == shape:
                return arr
            if not named and not partial_shaping:
                raise GpundaError(
                    f"{where}: the shape of {what} {name} would change from {arr.shape} to "
                    f"{shape}; pass its new shape or partial_shaping=True")
            size = int(np.prod(shape, dtype=np.int64))
            if size > arr.size:
                if not allow_up_sizing:
                    raise GpundaError(
                        f"{where}: {what} {name} would grow from {arr.shape} to {shape}; pass "
                        f"allow_up_sizing=True (binding the largest shape first and reshaping "
                        f"down to smaller ones shares memory instead)")
                return nd.zeros(shape, ctx=arr.context, dtype=arr.dtype)
            return arr.reshape((-1,))[:size].reshape(shape)

        from gpunda import ndarray as nd
        import numpy as np
        args = {n: fit(n, self.arg_dict[n], s, n in kwargs, "argument")
                for n, s in zip(self._arg_names, arg_s)}
        grads = {n: fit(n, self.grad_dict.get(n), s, n in kwargs, "gradient of")
                 for n, s in zip(self._arg_names, arg_s)}
        aux = {n: fit(n, self.aux_dict[n], s, False, "auxiliary state")
               for n, s in zip(self._aux_names, aux_s)}
        _, out_s, _ = self._symbol.infer_shape(**{n: a.shape for n, a in args.items()})
        outs = [fit(f"output {i}", o, sh, True, "output")
                for i, (o, sh) in enumerate(zip(self.outputs, out_s))]
        if any(o.shape != tuple(sh) for o, sh in zip(outs, out_s)):
            outs = None
        new = Executor(self._symbol, self._ctx, args, grads, dict(self._grad_req), aux,
                       _cached_op=self._cop, _outputs=outs)
        if self._monitor is not None:   # MXNet's reshaped executor keeps the callback
            new._monitor = self._monitor[:2] + (None,)
        return new


def _check_differentiable(sym, reqs):
    """Refuse to bind for gradients through an op without a gradient rule, as MXNet's
    bind does: an op whose output a head's gradient reaches (not cut by BlockGrad or a
    nondiff op) and whose inputs depend on an argument that wants a gradient."""
    wants = {n for n, r in reqs.items() if r != "null"}
    order = sym._topo()
    active = set()
    for n in order:
        if n.op is None:
            if n.name in wants:
                active.add(id(n))
        elif not n.op.nondiff and n.op.name != "BlockGrad" and \
                any(id(c) in active for c, _ in n.inputs):
            active.add(id(n))
    reached = {id(n) for n, _ in sym._outputs}
    for n in reversed(order):
        if n.op is None or id(n) not in reached or n.op.nondiff or n.op.name == "BlockGrad":
            continue
        if n.op.gradient is None and id(n) in active:
            raise GpundaError(f"Operator {n.op.name} is non-differentiable because it didn't "
                              f"register FGradient attribute (node {n.name!r}); bind it with "
                              f"grad_req='null' for the arguments it depends on")
        reached.update(id(c) for c, _ in n.inputs)


def input_contexts(sym, ctx, group2ctx):
    """{input name: Context} under ``group2ctx`` (MXNet's device placement by ``ctx_group``):
    an input takes the context of its own ``ctx_group`` attribute (``mx.AttrScope``), else
    that of the first op with a group that reads it, else ``ctx``."""
    from gpunda.context import Context
    if not group2ctx:
        return {}
    if not isinstance(group2ctx, dict):
        raise GpundaError(f"bind: group2ctx must be a dict of ctx_group name -> Context, got "
                          f"{type(group2ctx).__name__}")
    groups = {}
    order = sym._topo()
    for n in order:
        if n.op is None and n.attrs.get("__ctx_group__") is not None:
            groups[n.name] = n.attrs["__ctx_group__"]
    for n in order:
        g = n.attrs.get("__ctx_group__") if n.op is not None else None
        if g is None:
            continue
        for c, _ in n.inputs:
            if c.op is None:
                groups.setdefault(c.name, g)
    out = {}
    for name, g in groups.items():
        if g in group2ctx:
            c = group2ctx[g]
            out[name] = c if isinstance(c, Context) else Context(c)
    return out


def check_simple_bind_args(grad_req, type_dict, stype_dict, shared_arg_names, shared_buffer):
    """MXNet's Python-side checks of simple_bind's arguments, with its exception classes."""
    from gpunda.symbol.symbol import DTYPE_TO_CODE, _STYPE_TO_CODE
    from gpunda.ops.registry import parse_dtype
    if isinstance(grad_req, (list, tuple)) and not grad_req:
        raise GpundaError("simple_bind: grad_req cannot be an empty list")
    if isinstance(grad_req, dict) and not grad_req:
        raise GpundaError("simple_bind: grad_req cannot be an empty dict")
    for k, v in (type_dict or {}).items():
        try:
            name = parse_dtype(v, "simple_bind").name
        except GpundaError:
            name = None
        if name not in DTYPE_TO_CODE:
            raise GpundaTypeError(f"simple_bind: type_dict[{k!r}]={v!r} is not a MXNet type")
    for k, v in (stype_dict or {}).items():
        if v not in _STYPE_TO_CODE:
            # a RuntimeError in MXNet (GpundaError is one)
            raise GpundaError(f"simple_bind: stype_dict[{k!r}]={v!r} is not a MXNet "
                              f"storage type")
    if shared_arg_names is not None and not isinstance(shared_arg_names, list):
        raise GpundaValueError("simple_bind: shared_arg_names must be a list or None")
    if shared_buffer is not None and not isinstance(shared_buffer, dict):
        raise GpundaValueError("simple_bind: shared_buffer must be a dict or None")


def simple_bind(sym, ctx, grad_req, type_dict, shapes, group2ctx=None):
    """An Executor with zero arrays for every input, shapes/dtypes inferred from ``shapes``;
    with ``group2ctx`` each input's arrays are made on the context of its ctx_group."""
    from gpunda import ndarray as nd
    from gpunda.context import current_context, Context
    import numpy as np
    ctx = Context(ctx) if ctx is not None else current_context()
    where = input_contexts(sym, ctx, group2ctx)
    # MXNet reads only tuple values as shapes and ignores other keyword arguments
    shapes = {k: v for k, v in shapes.items() if isinstance(v, tuple)}
    arg_s, _, aux_s = sym._infer_shape_impl((), shapes, partial=False)   # no warning: it raises
    if arg_s is None:
        arg_p, _, aux_p = sym.infer_shape_partial(**shapes)
        unknown = [n for n, s in zip(sym.list_arguments() + sym.list_auxiliary_states(),
                                     arg_p + aux_p) if not s or 0 in s]
        raise GpundaError(f"simple_bind: cannot infer the shapes of {unknown}; pass them as "
                          f"keyword arguments")
    types = dict(type_dict or {})
    arg_t, _, aux_t = sym.infer_type_partial(**types)
    args = {}
    for n, s, t in zip(sym.list_arguments(), arg_s, arg_t):
        args[n] = nd.zeros(s, ctx=where.get(n, ctx), dtype=t or np.float32)
    aux = {n: nd.zeros(s, ctx=where.get(n, ctx), dtype=t or np.float32)
           for n, s, t in zip(sym.list_auxiliary_states(), aux_s, aux_t)}
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in args}
    elif isinstance(grad_req, dict):
        reqs = {n: grad_req.get(n, "null") for n in args}
    else:
        reqs = dict(zip(args, grad_req))
    grads = {n: nd.zeros(a.shape, ctx=a.context, dtype=a.dtype) for n, a in args.items()
             if reqs.get(n, "null") != "null"}
    return Executor(sym, ctx, args, grads, reqs, aux)


# Single-input ops that MXNet 1.9.1 registers with FListInputNames (or as legacy
# OperatorProperty ops): the monitor names their input by its name. Every other
# single-input op (Activation, relu, sum, Reshape, ...) is named "input0" there
# (GraphExecutor::ExecuteMonInputCallback); ops with several inputs keep their names.
_MONITOR_NAMED_SINGLE = frozenset((
    "Dropout", "GridGenerator", "L2Normalization", "LRN", "MakeLoss", "Pad", "Pooling",
    "SliceChannel", "SwapAxis", "_contrib_dgl_adjacency", "_contrib_fft", "_contrib_ifft",
    "_contrib_index_array", "_contrib_interleaved_matmul_selfatt_qk", "_contrib_quadratic",
    "_contrib_quantize_v2", "_image_normalize", "_image_to_tensor", "_linalg_det",
    "_linalg_extractdiag", "_linalg_extracttrian", "_linalg_gelqf", "_linalg_inverse",
    "_linalg_makediag", "_linalg_maketrian", "_linalg_potrf", "_linalg_potri",
    "_linalg_slogdet", "_linalg_sumlogdiag", "_linalg_syevd", "_linalg_syrk",
    "_ravel_multi_index", "_split_v2", "_unravel_index", "all_finite", "col2im",
    "depth_to_space", "diag", "im2col", "moments", "one_hot", "repeat", "reverse",
    "space_to_depth", "squeeze", "tile", "BatchNorm_v1", "IdentityAttachKLSparseReg",
    "SequenceLast", "SequenceMask", "SequenceReverse", "ROIPooling", "Crop",
    "InstanceNorm", "SVMOutput", "SpatialTransformer", "BilinearSampler"))


def _monitor_input_names(node):
    names = node.input_names()
    if len(names) == 1 and not node.op.variadic and node.op.name not in _MONITOR_NAMED_SINGLE:
        return ["input0"]
    return names
