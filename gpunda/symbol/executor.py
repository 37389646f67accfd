"""Executor (MXNet's ``Symbol.bind`` / ``simple_bind`` result), built on CachedOp.

``forward(is_train)`` runs the CachedOp over the bound arrays; with
``is_train=True`` and some ``grad_req`` other than 'null' the call is
recorded, and ``backward(out_grads)`` writes (or adds) the gradients into the
bound gradient arrays.
"""
from __future__ import annotations

from ..base import GpundaError

__all__ = ["Executor", "simple_bind"]

_REQS = ("write", "add", "null")


def _as_dict(values, names, where, allow_missing=False, extra_ok=()):
    from ..ndarray.ndarray import NDArray
    if values is None:
        values = {}
    if isinstance(values, dict):
        out = {}
        for k, v in values.items():
            if k not in names and k not in extra_ok:
                raise GpundaError(f"{where}: {k!r} is not one of {names}")
            out[k] = v
    else:
        values = list(values)
        if len(values) != len(names):
            raise GpundaError(f"{where}: got {len(values)} arrays for {len(names)} names {names}")
        out = dict(zip(names, values))
    for k, v in out.items():
        if v is not None and not isinstance(v, NDArray):
            raise GpundaError(f"{where}: {k} must be an NDArray, got {type(v).__name__}")
    if not allow_missing:
        missing = [n for n in names if out.get(n) is None]
        if missing:
            raise GpundaError(f"{where}: no array given for {missing}")
    return out


class Executor:
    """Bound arrays plus a CachedOp: ``forward``, ``backward``, ``outputs``, ``*_dict``."""

    def __init__(self, sym, ctx, args, args_grad=None, grad_req="write", aux_states=None,
                 _cached_op=None):
        from ..context import current_context, Context
        from ..cached_op import CachedOp
        self._symbol = sym
        self._ctx = Context(ctx) if ctx is not None else current_context()
        self._arg_names = sym.list_arguments()
        self._aux_names = sym.list_auxiliary_states()
        self._input_names = sym.list_inputs()
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
                raise GpundaError(f"bind: grad_req for {n} is {r!r}; valid: {list(_REQS)}")
            if grads.get(n) is None:
                reqs[n] = "null"
        self._grad_req = reqs
        self.grad_dict = {n: g for n, g in grads.items() if g is not None}
        # reshape() shares the CachedOp: its plans are kept per input signature
        self._cop = _cached_op if _cached_op is not None else CachedOp(sym)
        self.outputs = []
        self._recorded = None

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
        from .. import autograd
        from ..ndarray.ndarray import NDArray, _new
        for k, v in kwargs.items():
            if k not in self.arg_dict:
                raise GpundaError(f"Executor.forward: {k!r} is not an argument; arguments are "
                                  f"{self._arg_names}")
            dst = self.arg_dict[k]
            if isinstance(v, NDArray):
                v.copyto(dst)
            else:
                dst[:] = v
        train_grads = is_train and any(r != "null" for r in self._grad_req.values())
        inputs = []
        for n in self._input_names:
            a = self.arg_dict.get(n)
            if a is None:
                inputs.append(self.aux_dict[n])
                continue
            if train_grads and self._grad_req[n] != "null":
                # a private handle on the same memory carries the gradient buffer
                w = _new(a._data, a._ctx)
                autograd.mark_variables([w], [self.grad_dict[n]], self._grad_req[n])
                a = w
            inputs.append(a)
        if train_grads:
            with autograd.record(train_mode=True):
                out = self._cop(*inputs)
        else:
            with autograd.pause(train_mode=is_train):
                out = self._cop(*inputs)
        self.outputs = [out] if isinstance(out, NDArray) else list(out)
        self._recorded = self.outputs if train_grads else None
        return self.outputs

    def backward(self, out_grads=None, is_train=True):
        """Gradients of the outputs (times ``out_grads``) into ``grad_dict``."""
        from .. import autograd
        from ..ndarray.ndarray import NDArray
        if self._recorded is None:
            raise GpundaError("Executor.backward: call forward(is_train=True) first (with some "
                              "grad_req other than 'null')")
        if out_grads is not None and isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        if out_grads is not None:
            # MXNet copies out_grads into head-gradient buffers of the outputs' dtype
            out_grads = [g.astype(o.dtype) if isinstance(g, NDArray) and g.dtype != o.dtype
                         else g for g, o in zip(out_grads, self._recorded)] \
                + list(out_grads[len(self._recorded):])
        autograd.backward(self._recorded, out_grads, train_mode=is_train)

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

        from .. import ndarray as nd
        import numpy as np
        args = {n: fit(n, self.arg_dict[n], s, n in kwargs, "argument")
                for n, s in zip(self._arg_names, arg_s)}
        grads = {n: fit(n, self.grad_dict.get(n), s, n in kwargs, "gradient of")
                 for n, s in zip(self._arg_names, arg_s)}
        aux = {n: fit(n, self.aux_dict[n], s, False, "auxiliary state")
               for n, s in zip(self._aux_names, aux_s)}
        return Executor(self._symbol, self._ctx, args, grads, dict(self._grad_req), aux,
                        _cached_op=self._cop)


def simple_bind(sym, ctx, grad_req, type_dict, shapes):
    """An Executor with zero arrays for every input, shapes/dtypes inferred from ``shapes``."""
    from .. import ndarray as nd
    from ..context import current_context, Context
    import numpy as np
    ctx = Context(ctx) if ctx is not None else current_context()
    arg_s, _, aux_s = sym.infer_shape(**shapes)
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
        args[n] = nd.zeros(s, ctx=ctx, dtype=t or np.float32)
    aux = {n: nd.zeros(s, ctx=ctx, dtype=t or np.float32)
           for n, s, t in zip(sym.list_auxiliary_states(), aux_s, aux_t)}
    if isinstance(grad_req, str):
        reqs = {n: grad_req for n in args}
    elif isinstance(grad_req, dict):
        reqs = {n: grad_req.get(n, "null") for n in args}
    else:
        reqs = dict(zip(args, grad_req))
    grads = {n: nd.zeros(a.shape, ctx=ctx, dtype=a.dtype) for n, a in args.items()
             if reqs.get(n, "null") != "null"}
    return Executor(sym, ctx, args, grads, reqs, aux)
