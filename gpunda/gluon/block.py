"""Gluon blocks (MXNet 1.x): ``Block``, ``HybridBlock``, ``SymbolBlock``.

Naming follows MXNet 1.x: a block created at top level takes the next global
name for its class (``dense0_``); a block created inside ``with
parent.name_scope():`` gets the parent's prefix plus a per-parent count
(``model_dense0_``). Parameter names are the block prefix plus the local name
(``dense0_weight``).

A hybridized HybridBlock runs through a CachedOp: ``hybrid_forward`` is called
once with ``F = gpunda.symbol`` on ``symbol.var`` inputs (``data`` or
``data0, data1, ...``) and the parameters' variables; the resulting Symbol
becomes a ``CachedOp`` fed with the inputs of ``list_inputs()`` in order (data
and parameter values). Without a CachedOp in this build, hybridized blocks run
imperatively.
"""
from __future__ import annotations

import copy
import re
import threading
import warnings

import numpy as np
from collections import OrderedDict

from gpunda import name as _name
from gpunda.base import GpundaError
from gpunda.context import Context
from gpunda.gluon.parameter import Parameter, ParameterDict, DeferredInitializationError, _check_names
from gpunda.gluon import _np_mode
from gpunda.gluon.utils import HookHandle, _indent
from gpunda.symbol.infer import parse_shape_attr

__all__ = ["Block", "HybridBlock", "SymbolBlock"]


def _nd():
    from gpunda import ndarray
    return ndarray


def _sym():
    from gpunda import symbol
    return symbol


def _nd_module():
    global _ND_MODULE
    if _ND_MODULE is None:
        from gpunda import ndarray
        _ND_MODULE = ndarray
    return _ND_MODULE


_ND_MODULE = None


def _is_nd(x):
    global _NDArray
    if _NDArray is None:
        from gpunda.ndarray import NDArray as _N
        _NDArray = _N
    return isinstance(x, _NDArray)


_NDArray = None


def _is_sym(x):
    global _Symbol
    if _Symbol is None:
        from gpunda.symbol import Symbol as _S
        _Symbol = _S
    return isinstance(x, _Symbol)


_Symbol = None


class _BlockScope:
    """The name scope of a Block: hands out child prefixes and shares the parent's params."""

    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """(prefix, ParameterDict) for a new block of kind ``hint``."""
        current = getattr(_BlockScope._current, "value", None)
        if current is None:
            if prefix is None:
                prefix = _name.current().get(None, hint) + "_"
            params = ParameterDict(prefix) if params is None else ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f"{hint}{count}_"
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, ptype, value, trace):
        if self._block._empty_prefix:
            return False
        self._name_scope.__exit__(ptype, value, trace)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope
        return False


def _flatten(args, inout_str):
    """Nested lists of arrays -> (flat list, format) as MXNet's gluon does."""
    if _is_nd(args):
        return [args], 0
    if _is_sym(args):
        n = len(args.list_outputs())
        return [args], (n if n > 1 else 0)
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise ValueError(f"When hybridized, the {inout_str} of a HybridBlock must be (nested) "
                         f"lists of Symbol or NDArray, but got {args!r} of type "
                         f"{type(args).__name__}")
    flat, fmts = [], []
    for a in args:
        f, fmt = _flatten(a, inout_str)
        flat.extend(f)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    if isinstance(fmt, int):
        if fmt == 0:
            return args[0], args[1:]
        if fmt == -1:
            if args[0] is not None:
                raise ValueError(f"A hybridized HybridBlock that first received None for an "
                                 f"input accepts only None there, got {args[0]!r}")
            return None, args[1:]
        return args[:fmt], args[fmt:]
    ret = []
    for f in fmt:
        res, args = _regroup(args, f)
        ret.append(res)
    return ret, args


def _gather_type_ctx_info(args):
    """(has_symbol, has_ndarray, set of contexts, first context) of nested ``args``."""
    if _is_nd(args):
        return False, True, {args.context}, args.context
    if _is_sym(args):
        return True, False, set(), None
    has_sym = has_nd = False
    ctxs, first = set(), None
    if isinstance(args, (list, tuple)):
        for a in args:
            s, n, c, f = _gather_type_ctx_info(a)
            has_sym, has_nd = has_sym or s, has_nd or n
            ctxs |= c
            if first is None:
                first = f
            if has_sym and has_nd:
                break
    return has_sym, has_nd, ctxs, first


def _formats_compatible(stored, given):
    """MXNet accepts a changed input structure only when the difference is trailing Nones."""
    if stored == given:
        return True
    if not isinstance(stored, list) or not isinstance(given, list) or len(stored) == len(given):
        return False
    short, long_ = (stored, given) if len(stored) < len(given) else (given, stored)
    return long_[:len(short)] == short and all(f == -1 for f in long_[len(short):])


class Block:
    """Base class of every layer and model (MXNet 1.x ``gluon.Block``).

    Subclasses create children and parameters inside ``with self.name_scope():``
    and define ``forward``. Assigning a Block or Parameter to an attribute
    registers it.
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = _BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        mods = "\n".join(f"  ({key}): {_indent(repr(block), 2)}"
                         for key, block in self._children.items())
        return f"{type(self).__name__}(\n{mods}\n)"

    def __setattr__(self, name, value):
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(f"Block {self.name}: changing attribute {name!r} from "
                                f"{type(existing).__name__} to {type(value).__name__} is "
                                f"not allowed")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params and self._reg_params[name] is not value:
                raise GpundaError(f"Block {self.name}: overriding Parameter attribute {name!r} "
                                  f"is not allowed; set the values with set_data()")
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _alias(self):
        return type(self).__name__.lower()

    @property
    def prefix(self):
        """Prefix of this block's names (``dense0_``)."""
        return self._prefix

    @property
    def name(self):
        """The block's name (its prefix without the trailing ``_``)."""
        return self._name

    def name_scope(self):
        """Scope in which child blocks and symbols get this block's prefix."""
        return self._scope

    @property
    def params(self):
        """This block's own ParameterDict (not the children's: see ``collect_params``)."""
        return self._params

    def collect_params(self, select=None):
        """A ParameterDict of this block's and every descendant's parameters.

        ``select`` is a regex the full names must match (``'.*weight|.*bias'``).
        """
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({n: p for n, p in self.params.items() if pattern.match(n)})
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _check_container_with_block(self):
        """Warn (as MXNet) about Blocks kept in list/tuple/dict attributes: they are not children."""
        children = set(map(id, self._children.values()))

        def unregistered(data):
            if isinstance(data, (list, tuple)):
                return any(unregistered(d) for d in data)
            if isinstance(data, dict):
                return any(unregistered(d) for d in data.values())
            return isinstance(data, Block) and id(data) not in children

        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not (k.startswith("__") or k == "_children") \
                    and unregistered(v):
                warnings.warn(f'"{type(self).__name__}.{k}" is an unregistered container with '
                              f"Blocks; Blocks inside a list, tuple or dict are not registered "
                              f"automatically: register them with register_child() or use "
                              f"nn.Sequential/nn.HybridSequential", stacklevel=3)

    def _collect_params_with_prefix(self, prefix=""):
        if prefix:
            prefix += "."
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def register_child(self, block, name=None):
        """Register ``block`` as a child (named ``name`` or its index)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """Call ``hook(block, inputs)`` before each forward; returns a handle."""
        h = HookHandle()
        h.attach(self._forward_pre_hooks, hook)
        return h

    def register_forward_hook(self, hook):
        """Call ``hook(block, inputs, outputs)`` after each forward; returns a handle."""
        h = HookHandle()
        h.attach(self._forward_hooks, hook)
        return h

    def register_op_hook(self, callback, monitor_all=False):
        """Install ``callback(name, op_name, array)`` on the hybridized descendants (see
        ``HybridBlock.register_op_hook``)."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def apply(self, fn):
        """Call ``fn(block)`` on every descendant and then on this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialize every parameter (``init`` defaults to ``Uniform()``)."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active=True, **kwargs):
        """Hybridize the HybridBlock descendants (a plain Block itself stays imperative)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Convert every parameter to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for p in self.params.values():
            p.cast(dtype)

    def zero_grad(self):
        """Zero the gradients of every parameter."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx):
        """Move every parameter to ``ctx``."""
        self.collect_params().reset_ctx(ctx)

    # -- saving and loading ----------------------------------------------------------
    def save_parameters(self, filename, deduplicate=False):
        """Save parameter values keyed by structural names (``0.weight``), MXNet's .params format."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            first = {}
            for k, v in params.items():
                first.setdefault(id(v), k)
            params = {k: v for k, v in params.items() if first[id(v)] == k}
        arg_dict = {key: val._reduce() for key, val in params.items()}
        _nd().save(filename, arg_dict)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        """Load values saved by ``save_parameters`` (or by ``collect_params().save``).

        Parameters not initialized yet go to ``ctx``, else to the current context
        (cpu(0), MXNet's default, unless GPUNDA_DEFAULT_DEVICE or ``with ctx:`` says
        otherwise). Missing names (unless ``allow_missing``) and names the model does not
        have (unless ``ignore_extra``) raise one error listing all of them.
        """
        loaded = _nd().load(filename)
        if not isinstance(loaded, dict):
            raise GpundaError(f"Block {self.name}: load_parameters: {filename!r} holds a list "
                              f"of arrays, not a name -> array dict")
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in k for k in loaded):
            # a file from save_params()/collect_params().save(strip_prefix=...): names
            # without this block's prefix; an export() file (arg:/aux: keys) has the
            # full names, which are taken as they are
            full = self.collect_params()
            bare = [k[4:] if k.startswith(("arg:", "aux:")) else k for k in loaded]
            prefix = "" if any(k in full for k in bare) else self.prefix
            full.load_dict(loaded, ctx, allow_missing, ignore_extra, prefix, filename,
                           cast_dtype, dtype_source)
            return
        # a deduplicated file (save_parameters(deduplicate=True)) stores a shared
        # Parameter under only one of its structural names: any of them counts
        names_of = {}
        for k, v in params.items():
            names_of.setdefault(id(v), []).append(k)
        # names to check: a shared Parameter found under another name is not missing
        expected = [k for k, v in params.items()
                    if k in loaded or not any(n in loaded for n in names_of[id(v)])]
        _check_names(expected, list(loaded), f"file {filename!r}", allow_missing, ignore_extra)
        for name, value in loaded.items():
            if name in params:
                params[name]._load_init(value, ctx, cast_dtype, dtype_source)

    def save(self, prefix):
        """Save the structure, cached graphs and parameters as ``prefix-model.json``/``.params``.

        ``load`` reads them back into a model created the same way (see ``block_save``).
        """
        from gpunda.gluon.block_save import save_model
        save_model(self, prefix)

    def load(self, prefix):
        """Load a model saved by ``save`` into this identically built model."""
        from gpunda.gluon.block_save import load_model
        load_model(self, prefix)

    def save_params(self, filename):
        """Deprecated MXNet API: save with full names minus this block's prefix."""
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Deprecated MXNet API: ``load_parameters``."""
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    # -- running -----------------------------------------------------------------------
    def __call__(self, *args):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        try:
            out = self.forward(*args)
        except GpundaError as e:
            raise _tagged(e, self) from None
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        if _np_mode.is_np_array():
            _np_mode.check_all_np(out)
        return out

    def forward(self, *args):
        """Override to define the computation."""
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def summary(self, *inputs):
        """Print each layer's output shape and parameter count for one forward of ``inputs``."""
        rows = []

        def hook(block, _in, out):
            outs = out if isinstance(out, (list, tuple)) else [out]
            n = sum(int(_prod(p.shape)) for p in block._reg_params.values() if p.shape)
            rows.append((f"{type(block).__name__}-{len(rows) + 1}",
                         ", ".join(str(getattr(o, "shape", "?")) for o in outs), n))

        def check(block):
            # as MXNet: a hybridized block runs no per-layer hooks, so there is nothing to list
            if isinstance(block, HybridBlock) and block._active:
                raise AssertionError(f'"{block.name}" must not be hybridized to print summary')

        self.apply(check)
        handles = []
        self.apply(lambda b: handles.append(b.register_forward_hook(hook)))
        try:
            self(*inputs)
        finally:
            for h in handles:
                h.detach()
        width = max([len(r[0]) for r in rows] + [12])
        print(f"{'Layer (type)':<{width}}  {'Output Shape':<30}  Param #")
        for r in rows:
            print(f"{r[0]:<{width}}  {r[1]:<30}  {r[2]}")
        total = sum(int(_prod(p.shape)) for p in self.collect_params().values() if p.shape)
        print(f"Parameters in total: {total}")


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _tagged(e, block):
    """The error ``e`` with the innermost block that raised it named (once)."""
    if getattr(e, "_gluon_block", None) is not None:
        return e
    new = type(e)(f"Block {block.name} ({type(block).__name__}): {e}")
    new._gluon_block = block.name
    new.__cause__ = e.__cause__
    return new


class HybridBlock(Block):
    """A Block whose computation is ``hybrid_forward(F, x, *args, **params)``.

    ``F`` is ``gpunda.ndarray`` when run imperatively and ``gpunda.symbol`` when
    the block builds its graph; ``params`` are this block's registered
    parameters by attribute name. After ``hybridize()`` calls go through a
    CachedOp.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = None
        self._out_format = None
        self._in_format = None
        self._active = False
        self._flags = []
        self._np_out = False
        self._callback = None
        self._monitor_all = False
        self._backend = None
        self._backend_opts = {}

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise GpundaError(
                f"HybridBlock {self.name}: children of a HybridBlock must also be HybridBlocks, "
                f"but {block.name} has type {type(block).__name__}; with Sequential use "
                f"HybridSequential instead")
        super().register_child(block, name)
        self._clear_cached_op()

    def _clear_cached_op(self):
        self._cached_graph = ()
        self._cached_op = None
        self._cached_op_args = None

    def fusion_report(self, train=None):
        """What the pointwise fusion pass makes of this block's graph on a GPU context
        (``CachedOp.fusion_report``: the fused groups and why each other op was left out,
        in training mode ``train``, default the current one); None until a hybridized
        call has built the CachedOp. gpunda's, not MXNet's (MXNet logs nothing)."""
        return None if self._cached_op is None else self._cached_op.fusion_report(train)

    def register_op_hook(self, callback, monitor_all=False):
        """Call ``callback(name, op_name, array)`` for each op output (and input with
        ``monitor_all``) when this block runs hybridized, as MXNet's op hook.

        It is set on this block and its direct children (as MXNet); it takes effect in
        the block's CachedOp, so a hybridized child of a hybridized parent reports
        through the parent's graph. Non-hybridized calls report nothing.
        """
        self._callback = callback
        self._monitor_all = monitor_all
        for child in self._children.values():
            child._callback = callback
            child._monitor_all = monitor_all
        if self._cached_op is not None:
            self._cached_op._register_op_hook(callback, monitor_all)

    def hybridize(self, active=True, backend=None, clear=True, static_alloc=False,
                  static_shape=False, inline_limit=2, forward_bulk_size=None,
                  backward_bulk_size=None, **kwargs):
        """Run through a CachedOp from the next call on (``active=False`` undoes it).

        ``static_alloc``/``static_shape`` go to the CachedOp (buffers kept
        between calls; on a GPU with both, replay through CUDA graphs); a graph of
        at most ``inline_limit`` ops is recorded op by op under autograd.
        ``backend`` names a subgraph backend that partitions the graph when the
        CachedOp is built (``Symbol.optimize_for``; ``kwargs`` are its options); it
        applies to this block, not to its children, as in MXNet.
        """
        _check_backend(self, "hybridize", backend)
        if kwargs:
            self._backend_opts = kwargs
        self._backend = backend
        self._active = bool(active)
        flags = [("static_alloc", bool(static_alloc)), ("static_shape", bool(static_shape)),
                 ("inline_limit", inline_limit)]
        if forward_bulk_size is not None:
            flags.append(("forward_bulk_size", forward_bulk_size))
        if backward_bulk_size is not None:
            flags.append(("backward_bulk_size", backward_bulk_size))
        self._flags = flags
        if clear:
            self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f"{self.name} is being hybridized while it still has forward hooks; "
                          f"if it is a child of a HybridBlock they will not run", stacklevel=2)
        for child in self._children.values():
            child.hybridize(active, static_alloc=static_alloc, static_shape=static_shape,
                            inline_limit=inline_limit, forward_bulk_size=forward_bulk_size,
                            backward_bulk_size=backward_bulk_size, clear=clear, **kwargs)

    def optimize_for(self, x, *args, backend=None, clear=False, static_alloc=False,
                     static_shape=False, inline_limit=2, forward_bulk_size=None,
                     backward_bulk_size=None, **kwargs):
        """MXNet's partition-for-a-backend API: hybridize with subgraph ``backend`` and
        build the (partitioned) CachedOp for the inputs ``x, *args`` without running it.

        ``backend`` is required (ValueError without one, as MXNet); a name that is not a
        registered subgraph backend raises GpundaError naming it.
        """
        if kwargs:
            self._backend_opts = kwargs
        if not backend:
            raise ValueError('Must specify "backend" to optimize_for')
        self.hybridize(True, backend, clear, static_alloc, static_shape, inline_limit,
                       forward_bulk_size, backward_bulk_size)
        has_sym, has_nd, ctxs, ctx = _gather_type_ctx_info([x] + list(args))
        if not has_sym and not has_nd:
            raise ValueError(f"HybridBlock {self.name}: optimize_for needs at least one "
                             f"NDArray or Symbol input")
        if ctxs is not None and len(ctxs) > 1:
            raise ValueError(f"HybridBlock {self.name}: a hybridized block takes inputs on "
                             f"one context, got {sorted(map(str, ctxs))}")
        if not has_nd:      # Symbols: the graph is partitioned from their declared shapes
            self._build_cache(x, *args)
            return
        with ctx:
            self._init_deferred(x, *args)
            self._build_cache(x, *args)

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    # -- graph building -------------------------------------------------------------
    def _get_graph(self, *args):
        if not self._cached_graph:
            sym = _sym()
            flat, self._in_format = _flatten(args, "input")
            real = sum(a is not None for a in flat)
            if real == 0:
                raise ValueError(f"HybridBlock {self.name}: all inputs are None, which is not "
                                 f"supported; got {args!r}")
            names = iter(["data"] if real == 1 else [f"data{i}" for i in range(real)])
            inputs = [None if a is None else _np_mode.np_var(sym.var(next(names)))
                      if _np_mode.is_np_input(a) else sym.var(next(names)) for a in flat]
            grouped = _regroup(inputs, self._in_format)[0]
            params = self._param_vars()
            with self.name_scope():
                out = self.hybrid_forward(sym, *grouped, **params)
            out, self._out_format = _flatten(out, "output")
            self._np_out = _np_mode.check_same_symbol_type(out)
            self._cached_graph = [i for i in inputs if i is not None], sym.Group(out)
        return self._cached_graph

    def _param_vars(self):
        """The parameters' variables; np Symbols in NumPy mode."""
        if _np_mode.is_np_array():
            return {k: _np_mode.np_var(v.var()) for k, v in self._reg_params.items()}
        return {k: v.var() for k, v in self._reg_params.items()}

    def _partition(self, out, data_names, params, args):
        """``out`` partitioned for ``self._backend`` (MXNet's HybridBlock._build_cache):
        the backend sees the data arrays and parameter values by name and may add inputs
        to the two dicts, which are returned too."""
        flat = [a for a in _flatten(args, "input")[0] if a is not None]
        ctx = next((a.context for a in flat if _is_nd(a)), None)
        arg_dict, aux_dict, shapes = {}, {}, {}
        for names, d in ((out.list_arguments(), arg_dict),
                         (out.list_auxiliary_states(), aux_dict)):
            for name in names:
                if name in data_names and data_names[name] < len(flat):
                    a = flat[data_names[name]]
                    if _is_nd(a):
                        d[name] = a
                    elif _is_sym(a) and parse_shape_attr(a.attr("__shape__") or ""):
                        # "[2, 3]" and "5" are shapes too (var writes str(shape))
                        shapes[name] = parse_shape_attr(a.attr("__shape__"))
                elif name in params:
                    d[name] = params[name].data(ctx)
        out = out.optimize_for(self._backend, arg_dict, aux_dict, ctx, shapes,
                               **self._backend_opts)
        if _np_mode.is_np_array():
            out = out.as_np_ndarray()
        return out, arg_dict, aux_dict

    def _build_cache(self, *args):
        from gpunda._engine.cached_op import CachedOp
        data, out = self._get_graph(*args)
        data_names = {d.name: i for i, d in enumerate(data)}
        params = self.collect_params()
        added = {}
        if self._backend:
            out, arg_dict, aux_dict = self._partition(out, data_names, params, args)
            self._cached_graph = data, out
            # inputs the backend added: parameters holding the values it gave
            for name in out.list_inputs():
                if name not in params and name not in data_names and \
                        (name in arg_dict or name in aux_dict):
                    value = arg_dict.get(name, aux_dict.get(name))
                    added[name] = Parameter(name, dtype=value.dtype)
                    added[name]._load_init(value, value.context)
        input_names = out.list_inputs()
        unknown = [n for n in input_names if n not in params and n not in data_names
                   and n not in added]
        if unknown:
            raise GpundaError(f"HybridBlock {self.name}: the graph has inputs {unknown} that "
                              f"are neither data ({list(data_names)}) nor parameters of the "
                              f"block; create parameters with self.params.get() inside "
                              f"name_scope()")
        self._cached_op_args = [(True, data_names[n]) if n in data_names else
                                (False, added[n] if n in added else params[n])
                                for n in input_names]
        data_indices = [i for i, n in enumerate(input_names) if n in data_names]
        param_indices = [i for i, n in enumerate(input_names) if n not in data_names]
        flags = [("data_indices", data_indices), ("param_indices", param_indices)] + self._flags
        self._cached_op = CachedOp(out, flags)
        if self._callback is not None:
            self._cached_op._register_op_hook(self._callback, self._monitor_all)

    def _call_cached_op(self, *args):
        flat, fmt = _flatten(args, "input")
        if self._cached_op is not None and not _formats_compatible(self._in_format, fmt):
            raise ValueError(f"HybridBlock {self.name}: the argument structure {fmt} does not "
                             f"match the cached version {self._in_format}")
        flat = [a for a in flat if a is not None]
        ctx = flat[0].context
        if self._cached_op is None:
            self._init_deferred(*args)
            self._build_cache(*args)
        cargs = [flat[i] if is_arg else i.data(ctx) for is_arg, i in self._cached_op_args]
        out = self._cached_op(*cargs)
        if _is_nd(out):
            out = [out]
        if self._np_out:
            _np_mode.to_np(out)
        return _regroup(list(out), self._out_format)[0]

    def _init_deferred(self, *args):
        """Initialize the parameters still waiting for their shapes, from ``args``."""
        params = list(self.collect_params().values())
        if any(p._data is None and p._deferred_init for p in params):
            self._deferred_infer_shape(*args)
            for p in params:
                p._finish_deferred_init()

    def _deferred_infer_shape(self, *args):
        """Fill the unknown parameter shapes from the inputs ``args``."""
        hook = getattr(self, "_infer_param_shapes", None)
        if hook is not None:
            hook(*args)
            return
        # as MXNet's: trace hybrid_forward with Symbols once and infer every shape
        # symbolically (the graph is the one a hybridized block then caches)
        try:
            self.infer_shape(*args)
        except GpundaError as e:
            raise GpundaError(f"HybridBlock {self.name}: deferred initialization failed "
                              f"because shape inference failed: {e}") from None

    def infer_shape(self, *args):
        """Set parameter shapes by symbolic shape inference from the inputs."""
        self._infer_attrs("infer_shape", "shape", *args)

    def infer_type(self, *args):
        """Set parameter dtypes by symbolic type inference from the inputs."""
        self._infer_attrs("infer_type", "dtype", *args)

    def _infer_attrs(self, infer_fn, attr, *args):
        inputs, out = self._get_graph(*args)
        flat = [a for a in _flatten(args, "input")[0] if a is not None]
        known = {i.name: getattr(j, attr) for i, j in zip(inputs, flat)}
        arg_attrs, _, aux_attrs = getattr(out, infer_fn)(**known)
        if arg_attrs is None:
            raise GpundaError(f"HybridBlock {self.name}: {infer_fn} could not infer the "
                              f"parameters' {attr} from inputs {known}")
        sdict = dict(zip(out.list_arguments(), arg_attrs))
        sdict.update(zip(out.list_auxiliary_states(), aux_attrs))
        for p in self.collect_params().values():
            if sdict.get(p.name) is not None:
                setattr(p, attr, sdict[p.name])

    def forward(self, x, *args):
        """Run ``hybrid_forward`` on NDArrays (through the CachedOp when hybridized) or Symbols."""
        if not args and _is_nd(x):      # the common call, without the nested walk
            has_sym, has_nd, ctxs, ctx = False, True, None, x.context
        else:
            has_sym, has_nd, ctxs, ctx = _gather_type_ctx_info([x] + list(args))
        if has_sym and has_nd:
            raise ValueError(f"HybridBlock {self.name}: the inputs mix NDArrays and Symbols, "
                             f"which is not supported")
        if not has_sym and not has_nd:
            raise ValueError(f"HybridBlock {self.name}: the inputs must hold at least one "
                             f"NDArray or Symbol")
        if has_nd:
            if self._active and ctxs is not None and len(ctxs) > 1:
                raise ValueError(f"HybridBlock {self.name}: a hybridized block takes inputs on "
                                 f"one context, got {sorted(map(str, ctxs))}")
            with ctx:
                if self._active and _have_cached_op():
                    return self._call_cached_op(x, *args)
                reg = self._reg_params
                try:
                    params = {k: v.data(ctx) for k, v in reg.items()}
                except DeferredInitializationError:
                    self._deferred_infer_shape(x, *args)
                    for p in list(self.params.values()) + list(reg.values()):
                        p._finish_deferred_init()
                    params = {k: v.data(ctx) for k, v in reg.items()}
                return self.hybrid_forward(_nd_module(), x, *args, **params)
        params = self._param_vars()
        with self.name_scope():
            return self.hybrid_forward(_sym(), x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Override to define the computation with ``F`` ops."""
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward()")

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write ``path-symbol.json`` and ``path-%04d.params`` (keys ``arg:``/``aux:``).

        Call after ``hybridize()`` and one forward. Returns None, as MXNet 1.9.1's does
        (MXNet 2 returns the two file names).
        """
        if not self._cached_graph:
            raise GpundaError(f"HybridBlock {self.name}: export: first call hybridize() and "
                              f"then run forward with this block at least once")
        sym = self._cached_graph[1]
        sym_file = f"{path}-symbol.json"
        sym.save(sym_file, remove_amp_cast=remove_amp_cast)
        arg_names = set(sym.list_arguments())
        aux_names = set(sym.list_auxiliary_states())
        arg_dict = {}
        for name, param in self.collect_params().items():
            if name in arg_names:
                arg_dict[f"arg:{name}"] = param._reduce()
            elif name in aux_names:
                arg_dict[f"aux:{name}"] = param._reduce()
        params_file = f"{path}-{epoch:04d}.params"
        _nd().save(params_file, arg_dict)


def _check_backend(block, where, backend):
    """GpundaError naming ``backend`` unless it is None or a registered subgraph backend."""
    if backend is not None:
        from gpunda._frontend.subgraph import get_backend
        get_backend(backend, f"HybridBlock {block.name}: {where}(backend={backend!r})")


def _have_cached_op():
    global _HAVE_CACHED_OP
    if _HAVE_CACHED_OP is None:
        try:
            from gpunda._engine.cached_op import CachedOp  # noqa: F401
            from gpunda import symbol
            _HAVE_CACHED_OP = hasattr(symbol, "var") and hasattr(symbol, "Group")
        except ImportError:
            _HAVE_CACHED_OP = False
    return _HAVE_CACHED_OP


_HAVE_CACHED_OP = None


def _common_prefix(names):
    if not names:
        return ""
    prefix = names[0]
    for n in names:
        i = 0
        while i < len(prefix) and i < len(n) and prefix[i] == n[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


def _infer_param_types(inputs, out):
    """The dtypes of ``out``'s arguments and auxiliary states, inferred (as MXNet does) from
    the dtypes the input variables declare; all float32 when an input declares none or the
    graph does not settle every dtype."""
    n_arg, n_aux = len(out.list_arguments()), len(out.list_auxiliary_states())
    known = {}
    for s in inputs:
        t = s.infer_type()[0]
        if not t:
            break
        known[s.name] = t[0]
    else:
        try:
            arg_types, _, aux_types = out.infer_type(**known)
        except GpundaError:
            arg_types = aux_types = None
        if arg_types is not None and len(arg_types) == n_arg and len(aux_types) == n_aux:
            return arg_types, aux_types
    return [np.float32] * n_arg, [np.float32] * n_aux


class SymbolBlock(HybridBlock):
    """A HybridBlock made from a Symbol: ``outputs`` computed from variables ``inputs``.

    Every other argument and auxiliary state of the graph becomes a Parameter
    named as in the graph. ``SymbolBlock.imports`` loads an exported model.
    """

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """Load ``symbol_file`` (+ ``param_file``) as a SymbolBlock with data ``input_names``."""
        sym = _sym()
        s = sym.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [sym.var(i, dtype="float32") for i in input_names]
        else:
            inputs = [sym.var(i) for i in input_names]
        if _np_mode.is_np_array():     # an np-mode graph: np Symbols in, np arrays out
            s = _np_mode.np_var(s)
            inputs = [_np_mode.np_var(i) for i in inputs]
        ret = SymbolBlock(s, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                      cast_dtype=True, dtype_source="saved")
        return ret

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix="", params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        sym = _sym()
        if _is_sym(inputs) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, "input")
        out, self._out_format = _flatten(outputs, "output")
        self._np_out = _np_mode.check_same_symbol_type(out)
        out = sym.Group(out)
        input_names = set()
        for s in syms:
            if len(s.get_internals().list_outputs()) != 1:
                raise GpundaError(f"SymbolBlock: input symbols must be variables, but {s.name} "
                                  f"is the output of an operator")
            input_names.add(s.name)
        # each Parameter takes the dtype the graph gives it from the inputs' dtypes (a
        # float64 checkpoint's weights are float64), float32 where that cannot be inferred
        arg_types, aux_types = _infer_param_types(syms, out)
        for n, t in zip(out.list_arguments(), arg_types):
            if n not in input_names:
                self.params.get(n, allow_deferred_init=True, dtype=t)
        for n, t in zip(out.list_auxiliary_states(), aux_types):
            if n not in input_names:
                self.params.get(n, grad_req="null", allow_deferred_init=True, dtype=t)
        from gpunda.symbol.symbol import _STYPE_TO_CODE
        rsp = str(_STYPE_TO_CODE["row_sparse"])
        for node in out.get_internals():
            if node.attr("__storage_type__") == rsp:
                raise AssertionError(f"SymbolBlock does not support Parameter {node.name!r} "
                                     f"because its storage type is 'row_sparse'")
        self._cached_graph = syms, out
        cut = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {k[cut:]: v for k, v in self._params.items()}

    def forward(self, x, *args):
        if _is_nd(x):
            with x.context:
                return self._call_cached_op(x, *args)
        flat, fmt = _flatten([x] + list(args), "input")
        if fmt != self._in_format:
            raise GpundaError(f"SymbolBlock: invalid input format {fmt}; expected "
                              f"{self._in_format}")
        ret = copy.copy(self._cached_graph[1])
        ret._compose(**{k.name: v for k, v in zip(self._cached_graph[0], flat)})
        return _regroup(list(ret), self._out_format)[0]

    def _clear_cached_op(self):
        graph = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = graph

    def _deferred_infer_shape(self, *args):
        try:
            self.infer_shape(*args)
        except GpundaError as e:
            raise GpundaError(f"SymbolBlock: deferred initialization failed because shape "
                              f"inference failed: {e}") from None

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError
