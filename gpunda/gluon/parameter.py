"""Gluon parameters (MXNet 1.x): ``Parameter``, ``Constant``, ``ParameterDict``.

A Parameter holds one copy of its value per context plus a gradient buffer per
copy (marked for autograd). A shape with 0 in it means "not known yet": with
``allow_deferred_init`` the value is created on the first forward, once the
layer has seen its input (``_finish_deferred_init``).
"""
from __future__ import annotations

import re
import warnings
from collections import OrderedDict

import numpy as np

from gpunda import autograd
from gpunda._engine import autograd as _engine_autograd
from gpunda.gluon import _np_mode
from gpunda import initializer
from gpunda.base import (GpundaAssertionError, GpundaError, GpundaKeyError, GpundaTypeError,
                         GpundaValueError, np_dtype)
from gpunda.context import Context, cpu, current_context

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict",
           "tensor_types"]


class DeferredInitializationError(GpundaError):
    """A parameter's value was asked for before its deferred initialisation ran."""


def _shape_known(shape):
    return shape is not None and len(shape) > 0 and all(d > 0 for d in shape)


def _nd():
    from gpunda import ndarray
    return ndarray


def __getattr__(name):
    # ``tensor_types`` is MXNet's tuple (Symbol, NDArray); built on first use so that
    # importing gluon does not import the symbol package
    if name == "tensor_types":
        from gpunda.ndarray import NDArray
        from gpunda.symbol import Symbol
        return (Symbol, NDArray)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")



def _memory_key(ctx):
    """The memory a context names, as MXNet's Parameter finds its copies: cpu(i),
    cpu_pinned(i) and cpu_shared(i) are one (the host; device_typeid 1, 3, 5), gpu(i) another."""
    return ctx.device_typeid & 1, ctx.device_id


class Parameter:
    """A weight of a Block: value and gradient on one or more contexts.

    Parameters mirror MXNet 1.x: ``name``, ``grad_req`` ('write', 'add',
    'null'), ``shape`` (0 = unknown until the first forward), ``dtype``,
    ``lr_mult``/``wd_mult`` (scales applied by the optimizer), ``init`` (an
    Initializer or its name), ``allow_deferred_init``, ``differentiable``,
    ``stype``/``grad_stype``.
    """

    def __init__(self, name, grad_req="write", shape=None, dtype=np.float32, lr_mult=1.0,
                 wd_mult=1.0, init=None, allow_deferred_init=False, differentiable=True,
                 stype="default", grad_stype="default"):
        self._var = None
        self._data = None
        self._grad = None
        self._ctx_list = None
        self._ctx_map = None
        self._trainer = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        self._seen = None       # per-context grad version already used by an update
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        self._shape = tuple(0 if d == -1 else d for d in shape) if shape is not None else None
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        for what, st in (("stype", stype), ("grad_stype", grad_stype)):
            if st not in ("default", "row_sparse", "csr"):
                # MXNet checks these with assert, so callers catch AssertionError
                raise AssertionError(f"Parameter {name!r}: {what}={st!r} is not one of "
                                     f"['default', 'row_sparse', 'csr']")
        self._stype = stype
        self._grad_stype = grad_stype

    def __repr__(self):
        # MXNet formats the dtype as it was given: np.float32 (the default) prints as
        # "<class 'numpy.float32'>", 'float16' as float16
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    # -- attributes -------------------------------------------------------------
    @property
    def grad_req(self):
        """How backward writes the gradient: 'write', 'add' or 'null' (no gradient)."""
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in ("write", "add", "null"):
            raise GpundaError(f"Parameter {self.name!r}: grad_req={req!r} must be one of "
                              f"'write', 'add' or 'null'")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and self._grad is not None:
            self._grad = None
            self._data = [d.detach() for d in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        """The element type (a NumPy type)."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self.cast(dtype)

    @property
    def shape(self):
        """The shape; unknown dimensions are 0 (-1 with NumPy shape semantics, as MXNet's)
        until the first forward fills them."""
        if self._shape is not None and 0 in self._shape and _np_mode.is_np_shape():
            return tuple(d if d != 0 else -1 for d in self._shape)
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        if new_shape is None:
            self._shape = None
            return
        new_shape = tuple(0 if int(d) == -1 else int(d) for d in new_shape)  # -1: unknown
        self._var = None
        if self._shape is None:
            self._shape = new_shape
            return
        ok = len(self._shape) == len(new_shape) and all(
            a == 0 or b == 0 or a == b for a, b in zip(self._shape, new_shape))
        if not ok:
            raise GpundaError(f"Parameter {self.name!r}: expected shape {self._shape} is "
                              f"incompatible with given shape {new_shape}")
        self._shape = tuple(b if b != 0 else a for a, b in zip(self._shape, new_shape))

    @property
    def stype(self):
        """Storage type of the value."""
        return self._stype

    def _set_trainer(self, trainer):
        """Attach ``trainer`` (None detaches). A sparse Parameter accepts one Trainer only:
        its rows are pulled by that trainer's kvstore (MXNet raises RuntimeError too)."""
        if self._stype != "default" and self._trainer is not None and trainer is not None \
                and self._trainer is not trainer:
            raise RuntimeError(f"Failed to set the trainer for Parameter {self.name!r}: it "
                               f"already has one, and a {self._stype} Parameter supports only "
                               f"one Trainer")
        self._trainer = trainer

    @property
    def grad_stype(self):
        """Storage type of the gradient ('row_sparse' for sparse Embedding gradients)."""
        return self._grad_stype

    # -- access to values --------------------------------------------------------
    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            idx = self._ctx_map.get(_memory_key(Context(ctx)))
            if idx is not None:
                return arr_list[idx]
            raise GpundaError(
                f"Parameter {self.name!r} was not initialized on context {ctx}; it was only "
                f"initialized on {self._ctx_list}. Move the data with as_in_context() or "
                f"initialize/reset_ctx the parameters on {ctx}")
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter {self.name!r} has not been initialized yet because initialization "
                f"was deferred. Actual initialization happens during the first forward pass. "
                f"Pass one batch of data through the network before accessing Parameters, or "
                f"give in_units, in_channels, etc. to the layers to avoid deferring")
        raise GpundaError(
            f"Parameter {self.name!r} has not been initialized. Call initialize() first (and "
            f"create the Trainer with Block.collect_params(), which includes the Parameters "
            f"of nested child Blocks, instead of Block.params)")

    def data(self, ctx=None):
        """The value on ``ctx`` (the only copy when ``ctx`` is None and there is one).

        A row_sparse Parameter has no whole value here: use ``row_sparse_data``.
        """
        if self._stype != "default":
            raise RuntimeError(f"Cannot return a copy of Parameter {self.name!r} on ctx {ctx} "
                               f"via data() because its storage type is {self._stype}. "
                               f"Please use row_sparse_data() instead.")
        return self._check_and_get(self._data, ctx)

    def list_data(self):
        """The values on every context, in the order of ``list_ctx()``."""
        if self._stype != "default":
            raise RuntimeError(f"Cannot return copies of Parameter {self.name!r} on all "
                               f"contexts via list_data() because its storage type is "
                               f"{self._stype}. Please use row_sparse_data() instead.")
        return self._check_and_get(self._data, list)

    def grad(self, ctx=None):
        """The gradient buffer on ``ctx``."""
        if self._data is not None and self._grad is None:
            raise GpundaError(f"Parameter {self.name!r}: it has no gradient because "
                              f"grad_req='null'")
        return self._check_and_get(self._grad, ctx)

    def list_grad(self):
        """The gradient buffers on every context."""
        if self._data is not None and self._grad is None:
            raise GpundaError(f"Parameter {self.name!r}: it has no gradient because "
                              f"grad_req='null'")
        return self._check_and_get(self._grad, list)

    def list_ctx(self):
        """The contexts this parameter lives on."""
        if self._data is None:
            if self._deferred_init:
                return list(self._deferred_init[1])
            raise GpundaError(f"Parameter {self.name!r} has not been initialized")
        return list(self._ctx_list)

    def row_sparse_data(self, row_id):
        """The rows ``row_id`` of a row_sparse Parameter, on ``row_id``'s context (pulled
        from its Trainer's kvstore, which holds the up-to-date weight)."""
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return a copy of Parameter {self.name!r} via "
                               f"row_sparse_data() because its storage type is {self._stype}. "
                               f"Please use data() instead.")
        return self._get_row_sparse(self._data, getattr(row_id, "context", None), row_id)

    def list_row_sparse_data(self, row_id):
        """The rows ``row_id`` of a row_sparse Parameter on every context."""
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return copies of Parameter {self.name!r} on all "
                               f"contexts via list_row_sparse_data() because its storage type "
                               f"is {self._stype}. Please use data() instead.")
        return self._get_row_sparse(self._data, list, row_id)

    def _get_row_sparse(self, arr_list, ctx, row_id):
        from gpunda.ndarray import NDArray
        if not isinstance(row_id, NDArray):
            raise TypeError(f"row_id must have NDArray type, but {type(row_id)} is given")
        if not self._trainer:
            raise RuntimeError(f"Cannot get row_sparse data for Parameter {self.name!r} when "
                               f"no Trainer is created with it.")
        results = self._check_and_get(arr_list, ctx)
        self._trainer._row_sparse_pull(self, results, row_id)
        return results

    # -- initialisation ----------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False):
        """Create the value on ``ctx`` (a Context or list; default: the current one).

        ``init`` overrides the parameter's own initializer, which overrides
        ``default_init`` (Uniform() when not given). With an unknown shape and
        ``allow_deferred_init`` the work waits for the first forward.
        """
        if default_init is None:
            default_init = initializer.Uniform()
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter {self.name!r} is already initialized, ignoring. Set "
                          f"force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = self._grad = None
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, (Context, str)):
            ctx = [ctx]
        ctx = [Context(c) for c in ctx]
        if not ctx:
            raise GpundaError(f"Parameter {self.name!r}: ctx is an empty list")
        if init is None:
            init = default_init if self.init is None else self.init
        # resolve names now so a bad name fails at initialize(), not at the first forward
        init = initializer.create(init) if not isinstance(init, (initializer.Mixed,
                                                                  initializer.Load)) else init
        if not _shape_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise GpundaValueError(f"Parameter {self.name!r}: cannot initialize it because it "
                                   f"has invalid shape {self.shape}")
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self):
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        if not _shape_known(self.shape):
            raise GpundaError(f"Parameter {self.name!r}: cannot initialize it because it has "
                              f"invalid shape {self.shape}; give in_units, in_channels, etc. "
                              f"to the layer")
        self._deferred_init = ()
        nd = _nd()
        with autograd.pause():
            if data is None:
                data = nd.zeros(self.shape, ctx=cpu(), dtype=self.dtype)
                if _np_mode.is_np_array():  # MXNet fills an mx.np.zeros array under set_np
                    data = data.as_np_ndarray()
                desc = initializer.InitDesc(self.name, {"__init__": init})
                if isinstance(init, (initializer.Mixed, initializer.Load)):
                    init(initializer.InitDesc(self.name), data)
                else:
                    initializer.create(default_init)(desc, data)
            self._init_impl(data, ctx)

    def _init_impl(self, data, ctx_list):
        self._ctx_list = list(ctx_list)
        self._ctx_map = {}
        for i, c in enumerate(self._ctx_list):
            self._ctx_map.setdefault(_memory_key(c), i)
        nd = _nd()
        with autograd.pause():
            if getattr(data, "stype", "default") != "default":
                data = data.tostype("default")
            # the value keeps the dtype of ``data`` (MXNet copies it with copyto): a
            # deferred parameter given float64 arrays by set_data becomes float64,
            # while ``self.dtype`` stays what it was, as in MXNet
            dtype = getattr(data, "dtype", None) or self.dtype
            self._data = [nd.array(data, ctx=c, dtype=dtype) for c in self._ctx_list]
            if self._stype != "default":
                self._data = [d.tostype(self._stype) for d in self._data]
        if _np_mode.is_np_array():     # parameters made in NumPy mode hold mx.np.ndarray
            _np_mode.to_np(self._data)
        self._init_grad()

    def _init_grad(self):
        if self.grad_req == "null":
            self._grad = None
            return
        nd = _nd()
        stype = None if self._grad_stype == "default" else self._grad_stype
        self._grad = [nd.zeros(d.shape, ctx=d.context, dtype=d.dtype, stype=stype)
                      for d in self._data]
        if stype is None and _np_mode.is_np_input(self._data[0]):
            _np_mode.to_np(self._grad)
        autograd.mark_variables(self._data, self._grad, self.grad_req)
        self._seen = [g._version for g in self._grad]

    def _fresh_grad(self, i):
        """Whether backward wrote gradient copy ``i`` since the last update."""
        g = self._grad[i]
        return (g._base if g._base is not None else g)._version != self._seen[i]

    def _mark_grad_used(self, i):
        g = self._grad[i]
        self._seen[i] = (g._base if g._base is not None else g)._version

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source="current"):
        """Take the value ``data`` loaded from a file (fills unknown shape dims)."""
        if cast_dtype and dtype_source not in ("current", "saved"):
            # checked first, as MXNet's assert, whether or not the dtypes differ
            raise GpundaAssertionError(f"Parameter {self.name!r}: dtype_source="
                                       f"{dtype_source!r} must be 'current' or 'saved'")
        if self.shape:
            ok = len(self.shape) == len(data.shape) and all(
                a in (0, b) for a, b in zip(self._shape, data.shape))
            if not ok:
                raise GpundaAssertionError(
                    f"Parameter {self.name!r}: failed loading, its shape is {self.shape} but "
                    f"the loaded array has shape {data.shape}")
            self._shape = tuple(b if a == 0 else a for a, b in zip(self._shape, data.shape))
        else:
            self._shape = tuple(data.shape)
        if self.dtype is not None and np_dtype(self.dtype) != np_dtype(data.dtype):
            if cast_dtype:
                if dtype_source == "current":
                    data = data.astype(self.dtype)
                else:
                    self.cast(data.dtype)   # MXNet's dtype setter, which casts the value
            else:
                # an AssertionError too, as MXNet's (code loading checkpoints catches it)
                raise GpundaAssertionError(
                    f"Parameter {self.name!r}: failed loading, its dtype is "
                    f"{np_dtype(self.dtype).name} but the loaded array is "
                    f"{np_dtype(data.dtype).name}; pass cast_dtype=True to convert")
        if isinstance(ctx, (Context, str)):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                if ctx is None or set(map(Context, ctx)) == set(self._deferred_init[1]):
                    ctx = self._deferred_init[1]
                else:
                    ctx = [Context(c) for c in ctx]
            elif ctx is None:
                # MXNet's cpu() here is its default device; gpunda's may be a GPU
                # (GPUNDA_DEFAULT_DEVICE), and the data the model meets is made there
                ctx = [current_context()]
            else:
                ctx = [Context(c) for c in ctx]
            self._init_impl(data, ctx)
        else:
            if ctx is not None and set(map(Context, ctx)) != set(self._ctx_list):
                raise GpundaError(f"Parameter {self.name!r}: failed loading, it is on "
                                  f"{self._ctx_list} but ctx={list(ctx)} was given")
            self.set_data(data)
        self._deferred_init = ()

    def _reduce(self):
        """One copy of the value on the CPU (the mean over contexts; a row_sparse one: every
        row, from the Trainer's kvstore)."""
        nd = _nd()
        if self._stype != "default":
            rows = nd.arange(0, self.shape[0], dtype="int64", ctx=cpu())
            data = nd.zeros(self.shape, stype="row_sparse", ctx=cpu(), dtype=self.dtype)
            if self._trainer is None:
                return self._data[0].copyto(cpu())
            self._trainer._row_sparse_pull(self, data, rows, full_idx=True)
            return data
        block = self.list_data()
        if len(block) == 1:
            return block[0].copyto(cpu())
        host = sum(d.asnumpy().astype(np.float64) for d in block) / len(block)
        dtype = block[0].dtype      # the value's dtype, which may differ from self.dtype
        return nd.array(host.astype(np_dtype(dtype)), ctx=cpu(), dtype=dtype)

    def set_data(self, data):
        """Write ``data`` (NDArray or NumPy array) into every copy of the value."""
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise GpundaError(f"Parameter {self.name!r} has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        trainer = self._trainer
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore \
                and self not in trainer._params_to_init:
            # the kvstore holds the weights it updates: it must take the new value again
            trainer._reset_kvstore()
        nd = _nd()
        for arr in self._data:
            src = data.as_in_context(arr.context) if isinstance(data, nd.NDArray) else np.asarray(data)
            if arr.stype != "default":
                src = nd.array(src).tostype(arr.stype) if not isinstance(src, nd.NDArray) \
                    else src.tostype(arr.stype)
                with autograd.pause():
                    src.copyto(arr)
                continue
            with autograd.pause():
                arr[:] = src

    def reset_ctx(self, ctx):
        """Move the value (and gradient) to other contexts."""
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, (Context, str)):
            ctx = [ctx]
        ctx = [Context(c) for c in ctx]
        if self._data is not None:
            data = self._reduce()
            with autograd.pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            # a ValueError, as MXNet's: callers (GluonCV's model builders) catch it to
            # skip parameters that initialize() or load_parameters() will place later
            raise GpundaValueError(f"Cannot reset context for Parameter {self.name!r} because "
                                   f"it has not been initialized. Call initialize(ctx=...) "
                                   f"first; a deferred one then takes the new context")

    def zero_grad(self):
        """Set the gradient buffers to 0 (does not count as a fresh gradient)."""
        if self._grad is None:
            return
        if self._grad_stype != "default":
            self._init_grad()       # a fresh empty sparse gradient
            return
        for i, g in enumerate(self._grad):
            with g.context.backend.device_scope():
                g._data[...] = 0
            _engine_autograd.bump_version(g)
            self._mark_grad_used(i)

    def var(self):
        """The symbol variable for this parameter (used when hybridizing)."""
        if self._var is None:
            from gpunda import symbol
            init = self.init
            if isinstance(init, initializer.Initializer):
                init = init.dumps()
            # MXNet always passes stype, so every parameter variable carries
            # __storage_type__ (0 for default) in exported JSON and list_attr()
            self._var = symbol.var(self.name, shape=self.shape, dtype=self.dtype,
                                   lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=init,
                                   stype=self._stype)
        return self._var

    def cast(self, dtype):
        """Convert value and gradient to ``dtype``."""
        from gpunda.ops.registry import parse_dtype
        to = parse_dtype(dtype, f"Parameter {self.name!r}: cast").type
        self._dtype = dtype         # kept as given ('float16' stays a string), as MXNet's
        self._var = None
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(to) for d in self._data]
            if self._grad is None:
                return
            self._grad = [g.astype(to) for g in self._grad]    # flavour kept
            autograd.mark_variables(self._data, self._grad, self.grad_req)
            self._seen = [g._version for g in self._grad]


class Constant(Parameter):
    """A Parameter that never changes (grad_req 'null'), initialised to ``value``."""

    def __init__(self, name, value):
        nd = _nd()
        if not isinstance(value, nd.NDArray):
            value = nd.array(value)
            if _np_mode.is_np_array():       # NumPy semantics: an mx.np value, as MXNet's
                value = value.as_np_ndarray()
        self.value = value

        class _Init(initializer.Initializer):
            def _init_weight(self2, _, arr):
                arr[:] = value.asnumpy()

            def dumps(self2):
                return f"[\"constant\", {{\"value\": {value.asnumpy().tolist()}}}]"

        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype,
                         init=_Init())

    def __repr__(self):
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"

    @Parameter.grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warnings.warn(f"Constant parameter {self.name!r} does not support grad_req other "
                          f"than 'null'; {req!r} ignored")
        self._grad_req = "null"


class ParameterDict:
    """An ordered name -> Parameter mapping with a common ``prefix``.

    ``get('weight', shape=...)`` returns the existing ``prefix + 'weight'`` or
    creates it (also looking in the ``shared`` dict, which is how blocks share
    weights).
    """

    def __init__(self, prefix="", shared=None):
        if shared is not None and not isinstance(shared, ParameterDict):
            # (MXNet fails later with AttributeError: 'dict' object has no attribute '_params')
            raise GpundaTypeError(
                f"ParameterDict: shared (a block's params=) must be a ParameterDict whose "
                f"Parameters are shared, e.g. another block's collect_params(), got "
                f"{type(shared).__name__}; to load arrays such as load_checkpoint's arg_params "
                f"use collect_params().load_dict(arrays)")
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        body = "\n".join(f"  {v!r}" for v in self._params.values())
        return f"{self._prefix} (\n{body}\n)"

    def __getitem__(self, key):
        try:
            return self._params[key]
        except KeyError:
            raise KeyError(f"ParameterDict {self._prefix!r}: no parameter {key!r}; it has "
                           f"{list(self._params)}") from None

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        """(name, Parameter) pairs in creation order."""
        return self._params.items()

    def keys(self):
        """Parameter names in creation order."""
        return self._params.keys()

    def values(self):
        """Parameters in creation order."""
        return self._params.values()

    @property
    def prefix(self):
        """The prefix every name created by ``get`` starts with."""
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """The Parameter ``prefix + name``, created with ``kwargs`` if it does not exist.

        For an existing one the given attributes must agree (a 0 in a shape
        matches anything).
        """
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            param = Parameter(full, **kwargs)
            self._params[full] = param
            return param
        for k, v in kwargs.items():
            existing = getattr(param, k, None)
            if existing is None:
                if v is not None:
                    setattr(param, k, v)
                continue
            if k == "shape":
                v = (v,) if isinstance(v, int) else tuple(v)
                if len(v) == len(existing) and all(a == b or a * b == 0 for a, b in zip(v, existing)):
                    param._shape = tuple(a if a else b for a, b in zip(v, existing))
                    continue
            elif k == "dtype":
                try:
                    if np_dtype(v) == np_dtype(existing):
                        continue
                except TypeError:
                    pass
            elif k == "init" and v is None:
                continue
            if v is not None and v != existing:
                raise GpundaError(f"ParameterDict: cannot retrieve Parameter {full!r} because "
                                  f"the desired attribute {k}={v!r} does not match the stored "
                                  f"{existing!r}")
        return param

    def get_constant(self, name, value=None):
        """The Constant ``prefix + name`` (created from ``value`` if new)."""
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            if value is None:
                raise GpundaKeyError(f"ParameterDict: no constant {full!r} and no value given "
                                     f"to create it")
            param = Constant(full, value)
            self._params[full] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise GpundaAssertionError(f"ParameterDict: {full!r} exists and is not a "
                                           f"Constant")
        return param

    def update(self, other):
        """Add the parameters of ``other``; the same name must be the same Parameter."""
        for k, v in other.items():
            if k in self._params:
                if self._params[k] is not v:
                    raise GpundaError(f"ParameterDict: cannot update with another Parameter "
                                      f"named {k!r}")
            else:
                self._params[k] = v

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialize every parameter (``init`` is the default for those without their own)."""
        if init is None:
            init = initializer.Uniform()
        init = initializer.create(init) if not isinstance(init, (initializer.Mixed,
                                                                  initializer.Load)) else init
        if verbose and hasattr(init, "set_verbosity"):
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Zero every gradient buffer."""
        for v in self.values():
            v.zero_grad()

    def reset_ctx(self, ctx):
        """Move every parameter to ``ctx``."""
        for v in self.values():
            v.reset_ctx(ctx)

    def list_ctx(self):
        """The contexts the parameters live on (union, in first-seen order)."""
        out = []
        for v in self.values():
            for c in v.list_ctx():
                if c not in out:
                    out.append(c)
        return out

    def setattr(self, name, value):
        """Set attribute ``name`` (e.g. 'grad_req', 'lr_mult') on every parameter."""
        for v in self.values():
            setattr(v, name, value)

    def save(self, filename, strip_prefix=""):
        """Save the values with nd.save, names with ``strip_prefix`` removed."""
        nd = _nd()
        arg_dict = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise GpundaError(f"ParameterDict.save: strip_prefix={strip_prefix!r} but "
                                  f"Parameter {param.name!r} does not start with it")
            arg_dict[param.name[len(strip_prefix):]] = param._reduce()
        nd.save(filename, arg_dict)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix="", cast_dtype=False, dtype_source="current"):
        """Load values saved by ``save`` (or an MXNet .params file)."""
        if restore_prefix:
            for name in self.keys():
                if not name.startswith(restore_prefix):
                    raise GpundaError(f"ParameterDict.load: restore_prefix={restore_prefix!r} "
                                      f"but Parameter {name!r} does not start with it")
        loaded = _nd().load(filename)
        if isinstance(loaded, list) and not loaded:
            # nd.save of an empty dict writes what an empty list does; MXNet loads it as
            # no parameters (an exported block without any)
            loaded = {}
        if not isinstance(loaded, dict):
            raise GpundaError(f"ParameterDict.load: {filename!r} holds a list of arrays, not "
                              f"a name -> array dict")
        self.load_dict(loaded, ctx, allow_missing, ignore_extra, restore_prefix, filename,
                       cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False,
                  restore_prefix="", filename=None, cast_dtype=False, dtype_source="current"):
        """Load values from a name -> NDArray dict ('arg:'/'aux:' prefixes are dropped)."""
        src = f"file {filename!r}" if filename else "the dict"
        arg_dict = {}
        for k, v in param_dict.items():
            if k.startswith(("arg:", "aux:")):
                k = k[4:]
            arg_dict[restore_prefix + k] = v
        _check_names(list(self.keys()), list(arg_dict), src, allow_missing, ignore_extra,
                     "Please make sure source and target networks have the same prefix.")
        for name, v in arg_dict.items():
            if name in self._params:
                self._params[name]._load_init(v, ctx, cast_dtype, dtype_source)


def _check_names(expected, loaded, src, allow_missing, ignore_extra, hint=""):
    """Raise one error listing every missing and/or extra parameter name."""
    missing = [n for n in expected if n not in loaded] if not allow_missing else []
    extra = [n for n in loaded if n not in expected] if not ignore_extra else []
    if not missing and not extra:
        return
    parts = []
    if missing:
        parts.append(f"Parameters {missing} are missing in {src}, which contains "
                     f"{sorted(loaded)}; set allow_missing=True to ignore missing parameters")
    if extra:
        parts.append(f"Parameters {extra} loaded from {src} are not present in the model, "
                     f"which has {list(expected)}; set ignore_extra=True to ignore them")
    # MXNet asserts here (load_parameters, ParameterDict.load)
    raise GpundaAssertionError(". ".join(parts) + (". " + hint if hint else ""))


def _select(params, select):
    if not select:
        return params
    pattern = re.compile(select)
    return OrderedDict((k, v) for k, v in params.items() if pattern.match(k))
