"""Symbol: a graph of registry ops, with MXNet 1.x's naming, listing and inference.

A graph is a set of immutable ``_Node`` objects: a variable (``op is None``)
or an op call holding its OpDef, parsed params ``p``, string ``attrs`` (the
given params as MXNet writes them, plus user attributes) and input entries
``(node, output_index)``. A ``Symbol`` is a list of output entries. Everything
else (JSON, CachedOp, executors) walks that structure.
"""
from __future__ import annotations

import ctypes

import numpy as np

from gpunda.base import (GpundaDeprecationWarning, GpundaError, GpundaIndexError,
                         GpundaTypeError, GpundaValueError, NotImplementedForSymbol)
from gpunda.ops.registry import parse_dtype, to_attr_string
from gpunda._core import bf16 as _bf16
from gpunda.symbol.attrs import HIDDEN_KEYS, hidden_key, with_plain_keys
from gpunda.symbol.operators import SymbolOperators

__all__ = ["Symbol", "var", "Variable", "Group", "load", "load_json", "fromjson"]

# MXNet's dtype codes (``__dtype__`` attr, .params files)
DTYPE_TO_CODE = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
                 "int64": 6, "bool": 7, "int16": 8, "uint16": 9, "uint32": 10, "uint64": 11,
                 "bfloat16": 12}     # read a name back with gpunda.base.np_dtype (bfloat16)
CODE_TO_DTYPE = {v: k for k, v in DTYPE_TO_CODE.items()}
_STYPE_TO_CODE = {"default": 0, "row_sparse": 1, "csr": 2}


class _Node:
    """One graph node: a variable (``op is None``) or one op call."""

    __slots__ = ("op", "name", "attrs", "inputs", "p", "__weakref__")

    def __init__(self, op, name, attrs, inputs, p):
        self.op, self.name, self.attrs, self.inputs, self.p = op, name, attrs, inputs, p

    @property
    def is_var(self):
        return self.op is None

    @property
    def nout(self):
        """All outputs, hidden ones included."""
        return 1 if self.op is None else self.op.n_outputs(self.p)

    @property
    def nvis(self):
        return 1 if self.op is None else self.op.n_visible(self.p)

    def output_names(self):
        """Names of all outputs as MXNet lists them (``fc1_output``, ``bn_mean``)."""
        if self.op is None:
            return [self.name]
        n = self.nout
        on = self.op.output_names
        if callable(on):
            on = on(self.p)
        on = list(on or ())
        # nnvm's ListOutputNames: the op's own name for the output where it lists one,
        # else "output" for an op with one output in all and "output<i>" for one with
        # several, hidden ones counted (sort's one visible output is "output0")
        return [f"{self.name}_{on[i]}" if i < len(on) else
                f"{self.name}_output" if n == 1 else f"{self.name}_output{i}"
                for i in range(n)]

    def input_names(self):
        if self.op is None:
            return []
        try:
            names = list(self.op.input_names(self.p))
        except Exception:
            names = []
        while len(names) < len(self.inputs):
            names.append(f"arg{len(names)}")
        return names

    def aux_positions(self):
        """Input positions that hold auxiliary states (BatchNorm's moving stats)."""
        if self.op is None or not self.op.aux_inputs:
            return ()
        aux = set(self.op.aux_names(self.p))
        return tuple(i for i, n in enumerate(self.input_names()) if n in aux)

    def __repr__(self):
        return f"<_Node {self.op.name if self.op else 'null'} {self.name}>"


def params_from_attrs(op, attrs, nin, where):
    """Parsed params of ``op`` from string ``attrs`` (keys that are not params are user attrs)."""
    kw = {k: v for k, v in attrs.items() if k in op.param_map or
          (op.extra_params and not (k.startswith("__") and k.endswith("__")))}
    key = op.key_var_num_args
    if key and key not in kw and key in op.param_map:
        kw[key] = nin
    try:
        return op.parse_params(kw)
    except GpundaError as e:
        raise GpundaError(f"{where}: {e}") from None


def topo_order(heads):
    """Nodes reachable from head entries in MXNet's DFS post-order; GpundaError on a cycle."""
    order, done, onstack = [], set(), set()
    for h in heads:
        root = h[0]
        if id(root) in done:
            continue
        stack = [(root, iter(root.inputs))]
        onstack.add(id(root))
        while stack:
            node, it = stack[-1]
            for e in it:
                c = e[0]
                if id(c) in onstack:
                    raise GpundaError(f"Symbol: the graph has a cycle through node {c.name!r}")
                if id(c) not in done:
                    onstack.add(id(c))
                    stack.append((c, iter(c.inputs)))
                    break
            else:
                stack.pop()
                onstack.discard(id(node))
                done.add(id(node))
                order.append(node)
    return order


def _attr_str(v):
    return v if isinstance(v, str) else to_attr_string(v)


class Symbol(SymbolOperators):
    """A symbolic graph with one or more outputs (MXNet's ``mx.sym.Symbol``).

    Build with ``sym.var`` and ``sym.<Op>(...)``, combine with arithmetic,
    inspect with ``list_arguments``/``list_outputs``/``infer_shape``, save
    with ``tojson``/``save``, run with ``eval``/``bind`` or ``CachedOp``.
    """

    __slots__ = ("_outputs", "__weakref__")

    def __init__(self, outputs):
        if isinstance(outputs, ctypes.c_void_p):
            # MXNet's Symbol(handle): a SymbolHandle from a _LIB call (MXBuildSubgraphByOpNames)
            from gpunda._core.capi import take_handle
            src = take_handle(outputs, "Symbol")
            if not isinstance(src, Symbol):
                raise GpundaError(f"Symbol: handle {outputs!r} names a {type(src).__name__}, "
                                  f"not a Symbol")
            outputs = src._outputs
        self._outputs = list(outputs)

    @property
    def handle(self):
        """What MXNet's ``SymbolHandle`` is for ``_LIB`` calls: here the Symbol itself."""
        return self

    # -- structure ----------------------------------------------------------
    def _topo(self):
        return topo_order(self._outputs)

    def _input_nodes(self):
        return [n for n in self._topo() if n.op is None]

    def _aux_ids(self, order=None):
        aux = set()
        for n in order if order is not None else self._topo():
            for i in n.aux_positions():
                if i < len(n.inputs) and n.inputs[i][0].op is None:
                    aux.add(id(n.inputs[i][0]))
        return aux

    @property
    def name(self):
        """The name of the (single) output's node; None for a group."""
        if len(self._outputs) != 1:
            return None
        return self._outputs[0][0].name

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index):
        # the exception classes are MXNet's (ValueError for a name, TypeError for a
        # key of another type, IndexError past the end, which ends iteration)
        if isinstance(index, str):
            names = self.list_outputs()
            idx = [i for i, n in enumerate(names) if n == index]
            if not idx:
                raise GpundaValueError(f"Symbol.__getitem__: cannot find output that matches "
                                       f"name {index!r}; outputs are {names}")
            if len(idx) > 1:
                raise GpundaValueError(f"Symbol.__getitem__: there are multiple outputs with "
                                       f"name {index!r}")
            index = idx[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise GpundaTypeError(f"Symbol.__getitem__: index {index!r} must be an int or "
                                  f"an output name")
        n = len(self._outputs)
        if index >= n:
            raise GpundaIndexError(f"Symbol.__getitem__: index {index} out of range for "
                                   f"{n} output(s)")
        if index < -n:
            raise GpundaError(f"Symbol.__getitem__: index {index} out of range for "
                              f"{n} output(s)")
        return Symbol([self._outputs[index]])

    def __repr__(self):
        if len(self._outputs) == 1:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(self.list_outputs())}]>"

    def __copy__(self):
        return self._rebuild({})

    def __deepcopy__(self, memo):
        return self._rebuild({})

    def copy(self):
        # MXNet's Symbol.copy is the NDArray method refused; copy.copy() copies
        raise NotImplementedForSymbol(self.copy, None)

    def __reduce__(self):
        return (load_json, (self.tojson(),))

    def _rebuild(self, replace):
        """Copy of the graph; ``replace`` maps id(variable node) -> replacement entry."""
        memo = {}
        for n in self._topo():
            if n.op is None:
                if id(n) in replace:
                    memo[id(n)] = replace[id(n)]
                else:
                    memo[id(n)] = (_Node(None, n.name, dict(n.attrs), [], None), 0)
                continue
            ins = []
            for c, i in n.inputs:
                r = memo[id(c)]
                ins.append((r[0], r[1] + i) if c.op is None else (r[0], i))
            memo[id(n)] = (_Node(n.op, n.name, dict(n.attrs), ins, n.p), 0)
        out = []
        for node, i in self._outputs:
            r = memo[id(node)]
            out.append(r if node.op is None else (r[0], i))
        return Symbol(out)

    # -- listing --------------------------------------------------------------
    def list_arguments(self):
        """Names of the inputs that are not auxiliary states, in DFS order."""
        order = self._topo()
        aux = self._aux_ids(order)
        return [n.name for n in order if n.op is None and id(n) not in aux]

    def list_auxiliary_states(self):
        """Names of auxiliary-state inputs (BatchNorm's moving_mean/moving_var)."""
        order = self._topo()
        aux = self._aux_ids(order)
        return [n.name for n in order if n.op is None and id(n) in aux]

    def list_inputs(self):
        """Names of every variable (arguments and auxiliary states), in DFS order."""
        return [n.name for n in self._topo() if n.op is None]

    def list_outputs(self):
        """Output names: ``<name>_output`` for ops, the name itself for variables."""
        return [n.output_names()[i] for n, i in self._outputs]

    def get_internals(self):
        """A group of every visible output of every node, in DFS order (MXNet's
        GetInternals: BatchNorm's mean and var, Dropout's mask are not listed)."""
        outs = []
        for n in self._topo():
            outs.extend((n, i) for i in range(n.nvis))
        return Symbol(outs)

    def _all_internals(self):
        """Every output of every node, hidden ones included (what an executor's monitor
        sees: MXNet's graph executor reports each output array of each op)."""
        outs = []
        for n in self._topo():
            outs.extend((n, i) for i in range(n.nout))
        return Symbol(outs)

    def _gen_atomic_symbol(self):
        """The output node's operator alone, with the same attributes and fresh input
        variables named after its inputs (MXNet's MXGenAtomicSymbolFromSymbol)."""
        n = self._outputs[0][0]
        if n.op is None:
            return Symbol([(_Node(None, n.name, dict(n.attrs), [], None), 0)])
        ins = [(_Node(None, name, {}, [], None), 0) for name in n.input_names()]
        node = _Node(n.op, n.name, dict(n.attrs), ins, n.p)
        return Symbol([(node, i) for i in range(n.nvis)])

    def get_children(self):
        """A group of the inputs of the output node(s); None for a variable."""
        ins, seen = [], set()
        for n, _ in self._outputs:
            if id(n) not in seen:      # a multi-output node's inputs are listed once
                seen.add(id(n))
                ins.extend(n.inputs)
        if not ins:
            return None
        return Symbol(ins)

    # -- attributes -------------------------------------------------------------
    def attr(self, key):
        """The string attribute ``key`` of this (single-output) symbol's node, or None.

        ``lr_mult`` and the other hidden keys are stored as ``__lr_mult__``; either
        spelling finds them (MXNet's MXSymbolGetAttr).
        """
        if len(self._outputs) != 1:
            return None
        attrs = self._outputs[0][0].attrs
        v = attrs.get(key)
        if v is None and key in HIDDEN_KEYS:
            v = attrs.get(f"__{key}__")
        return v

    def list_attr(self, recursive=False):
        """The attributes of this symbol's node (``recursive``: of every node, keyed
        ``<node>$<key>``); hidden keys are listed in both spellings."""
        if recursive:
            # MXNet raises (not warns) this DeprecationWarning
            raise GpundaDeprecationWarning("Symbol.list_attr with recursive=True has been "
                                           "deprecated. Please use attr_dict instead.")
        if len(self._outputs) != 1:
            return {}
        return with_plain_keys(self._outputs[0][0].attrs)

    def attr_dict(self):
        """``{node name: {key: value}}`` for every node that has attributes."""
        return {n.name: with_plain_keys(n.attrs) for n in self._topo() if n.attrs}

    def _set_attr(self, **kwargs):
        """Set string attributes on this symbol's node(s) (hidden keys become ``__k__``)."""
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise ValueError(f"Symbol._set_attr: attribute {k}={v!r} must be a string")
        attrs = {hidden_key(k, "_set_attr"): v for k, v in kwargs.items()}
        for n, _ in self._outputs:
            n.attrs.update(attrs)

    # -- composition --------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """Compose: replace variables (positionally by list_arguments, or by name) with symbols."""
        kwargs.pop("name", None)
        args_names = self.list_arguments()
        if len(args) > len(args_names):
            raise GpundaError(f"Symbol.__call__: {len(args)} positional symbols but only "
                              f"{len(args_names)} arguments {args_names}")
        by_name = dict(zip(args_names, args))
        for k, v in kwargs.items():
            if k in by_name:
                raise GpundaError(f"Symbol.__call__: argument {k} given twice")
            by_name[k] = v
        for s in list(args) + list(kwargs.values()):
            if not isinstance(s, Symbol):
                raise GpundaTypeError(f"Symbol.__call__: compose expects Symbols as arguments, "
                                      f"got {type(s).__name__}")
        replace = {}
        known = {n.name: n for n in self._input_nodes()}
        for k, s in by_name.items():
            if not isinstance(s, Symbol) or len(s._outputs) != 1:
                raise GpundaError(f"Symbol.__call__: argument {k} must be a single-output Symbol")
            if k not in known:
                raise GpundaError(f"Symbol.__call__: {k!r} is not an input of this symbol; "
                                  f"inputs are {list(known)}")
            replace[id(known[k])] = s._outputs[0]
        return self._rebuild(replace)

    def _compose(self, *args, **kwargs):
        """Compose in place (MXNet's ``Symbol._compose``): this symbol becomes ``self(*args,
        **kwargs)``."""
        self._outputs = self(*args, **kwargs)._outputs

    # -- inference ---------------------------------------------------------------------
    def infer_shape(self, *args, **kwargs):
        """(arg_shapes, out_shapes, aux_shapes) from known input shapes; all None when
        some shape cannot be inferred."""
        res = self._infer_shape_impl(args, kwargs, partial=False)
        if res[1] is None:
            import warnings
            arg_s = self._infer_shape_impl(args, kwargs, partial=True)[0]
            unknown = [f"{n}: {s}" for n, s in zip(self.list_arguments(), arg_s)
                       if s is None or not s or any(d <= 0 for d in s)]
            warnings.warn("Cannot decide shape for the following arguments (0s in shape means "
                          "unknown dimensions). Consider providing them as input:\n\t" +
                          "\n\t".join(unknown[:10] + (["..."] if len(unknown) > 10 else [])),
                          stacklevel=2)
        return res

    def infer_shape_partial(self, *args, **kwargs):
        """Like ``infer_shape`` but unknown shapes come back as ``()``."""
        return self._infer_shape_impl(args, kwargs, partial=True)

    def _named(self, args, kwargs, where):
        if args and kwargs:
            raise GpundaValueError(f"{where}: can only specify known arguments either "
                                   f"positionally or by keyword, not both")
        names = self.list_arguments()
        if len(args) > len(names):
            raise GpundaError(f"{where}: {len(args)} positional values but only "
                              f"{len(names)} arguments {names}")
        known = dict(zip(names, args))
        inputs = set(self.list_inputs())
        for k, v in kwargs.items():
            if k not in inputs:
                raise GpundaError(f"{where}: {k!r} is not an input of this symbol; inputs are "
                                  f"{sorted(inputs)}")
            known[k] = v
        return {k: v for k, v in known.items() if v is not None}

    def _infer_shape_impl(self, args, kwargs, partial):
        from gpunda.symbol.infer import infer_graph, to_internal, to_public, known
        from gpunda.util import is_np_shape
        np_mode = is_np_shape()
        named = self._named(args, kwargs, "infer_shape")
        for k, v in named.items():
            if not isinstance(v, (tuple, list)):
                raise GpundaTypeError(f"infer_shape: arguments need to be shapes (tuple), "
                                      f"but {k!r} is {type(v).__name__}")
        given = {k: to_internal(v, np_mode) for k, v in named.items()}
        shapes, _ = infer_graph(self, given, {}, _var_shape)
        order = self._topo()
        aux = self._aux_ids(order)
        arg_s, aux_s = [], []
        for n in order:
            if n.op is None:
                (aux_s if id(n) in aux else arg_s).append(shapes.get((id(n), 0)))
        out_s = [shapes.get((id(n), i)) for n, i in self._outputs]
        if not partial and not all(known(shapes.get((id(n), i)))
                                   for n in order for i in range(n.nout)):
            return None, None, None
        f = lambda s: to_public(s, np_mode)  # noqa: E731
        return [f(s) for s in arg_s], [f(s) for s in out_s], [f(s) for s in aux_s]

    def infer_type(self, *args, **kwargs):
        """(arg_types, out_types, aux_types) as NumPy types from known input dtypes."""
        return self._infer_type_impl(args, kwargs, partial=False)

    def infer_type_partial(self, *args, **kwargs):
        """Like ``infer_type`` but unknown types come back as None."""
        return self._infer_type_impl(args, kwargs, partial=True)

    def _infer_type_impl(self, args, kwargs, partial):
        from gpunda.symbol.infer import infer_graph
        given = {}
        for k, v in self._named(args, kwargs, "infer_type").items():
            try:
                given[k] = parse_dtype(v, "infer_type")
            except GpundaError as e:      # a TypeError in MXNet (not one of its dtypes)
                raise GpundaTypeError(f"infer_type: argument {k!r}: {e}") from None
        _, dtypes = infer_graph(self, {}, given, _var_shape)
        order = self._topo()
        aux = self._aux_ids(order)
        arg_t, aux_t = [], []
        for n in order:
            if n.op is None:
                (aux_t if id(n) in aux else arg_t).append(dtypes.get((id(n), 0)))
        out_t = [dtypes.get((id(n), i)) for n, i in self._outputs]
        if not partial and any(t is None for t in arg_t + out_t + aux_t):
            return None, None, None
        f = lambda t: None if t is None else _bf16.public(t.type)  # noqa: E731
        return [f(t) for t in arg_t], [f(t) for t in out_t], [f(t) for t in aux_t]

    # -- serialisation ------------------------------------------------------------------
    def tojson(self, remove_amp_cast=True):
        """The graph in MXNet's symbol JSON format (2-space indent, as MXNet writes it);
        ``remove_amp_cast``: without the amp_cast/amp_multicast nodes that feed other nodes."""
        from gpunda.symbol.json_io import to_json
        return to_json(self._without_amp_cast() if remove_amp_cast else self)

    def save(self, fname, remove_amp_cast=True):
        """Write ``tojson(remove_amp_cast)`` to file ``fname``."""
        if not isinstance(fname, str):
            raise GpundaTypeError(f"Symbol.save: fname need to be string, got "
                                  f"{type(fname).__name__}")
        with open(fname, "w", encoding="utf-8") as f:
            f.write(self.tojson(remove_amp_cast))

    def _without_amp_cast(self):
        """This graph with every input that comes from an amp_cast (amp_multicast) node
        taken from that node's (matching) input instead, as MXNet's RemoveAmpCast pass; the
        heads stay as they are. ``self`` when there is no such node."""
        order = self._topo()
        if not any(n.op is not None and n.op.name in ("amp_cast", "amp_multicast")
                   for n in order):
            return self
        memo = {}           # id(old node) -> new node

        def source(c, i):
            # follow casts back to the entry they cast
            while c.op is not None and c.op.name in ("amp_cast", "amp_multicast"):
                c, i = c.inputs[0] if c.op.name == "amp_cast" else c.inputs[i]
            return memo[id(c)], i

        for n in order:
            if n.op is None:
                memo[id(n)] = _Node(None, n.name, dict(n.attrs), [], None)
            else:
                memo[id(n)] = _Node(n.op, n.name, dict(n.attrs),
                                    [source(c, i) for c, i in n.inputs], n.p)
        return Symbol([(memo[id(n)], i) for n, i in self._outputs])

    def debug_str(self):
        lines = []
        for n in self._topo():
            if n.op is None:
                lines.append(f"Variable:{n.name}")
            else:
                ins = ", ".join(f"{c.name}[{i}]" for c, i in n.inputs)
                lines.append(f"Op:{n.op.name}, Name={n.name} Inputs: {ins} Attrs: {n.attrs}")
        return "\n".join(lines)

    # -- execution -------------------------------------------------------------------
    def eval(self, ctx=None, **kwargs):
        """Evaluate with NDArrays given by input name; returns the list of outputs."""
        ex = self.bind(ctx, kwargs)
        return ex.forward()

    def bind(self, ctx=None, args=None, args_grad=None, grad_req="write", aux_states=None,
             group2ctx=None, shared_exec=None):
        """An Executor over given argument (and gradient / auxiliary) arrays."""
        from gpunda.context import Context
        from gpunda.symbol.executor import Executor
        if ctx is not None and not isinstance(ctx, Context):
            raise GpundaTypeError(f"bind: Context type error: ctx={ctx!r}")
        return Executor(self, ctx, args, args_grad, grad_req, aux_states)

    def simple_bind(self, ctx=None, grad_req="write", type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """An Executor with zero-filled arrays allocated from inferred shapes."""
        from gpunda.symbol.executor import simple_bind, check_simple_bind_args
        check_simple_bind_args(grad_req, type_dict, stype_dict, shared_arg_names,
                               shared_buffer)
        return simple_bind(self, ctx, grad_req, type_dict, kwargs, group2ctx)

    def _infer_open_shapes(self, shapes, dtypes, ids):
        """For a CachedOp run (NOTE [Unknown dimensions] in cached_op.py): the inferred
        output shape of each node in ``ids`` given every input's actual shape and dtype."""
        from gpunda.symbol.infer import open_shapes
        return open_shapes(self, shapes, dtypes, ids, _var_shape)

    def gradient(self, wrt):
        raise GpundaError("Symbol.gradient is not supported (MXNet 1.x does not implement it "
                          "either); use autograd or Executor.backward")


# ---------------------------------------------------------------------------
# shape inference inputs (the passes are in infer.py)

def _var_shape(n, given):
    """A variable's starting shape (internal form): the given one, else its ``__shape__``."""
    from gpunda.symbol.infer import parse_shape_attr, to_internal
    from gpunda.util import is_np_shape
    if n.name in given:
        return given[n.name]
    if "__shape__" in n.attrs:
        return to_internal(parse_shape_attr(n.attrs["__shape__"]), is_np_shape())
    return None


def _var_dtype(n, given):
    from gpunda.symbol.infer import _var_dtype as f
    return f(n, given)


# the creation functions live in creation.py; MXNet users reach them here too
from gpunda.symbol.creation import (make_node, make_function, var, Variable, Group, load,  # noqa: E402,F401
                       load_json, fromjson, op, _internal, lookup, _populate, _reshape_method)


# MXNet's symbol.py defines these functions of mx.sym; gpunda's live in the package
# (gpunda.symbol imports this module), served from there on first access
_SIGNED_INT32_UPPER_LIMIT = 2 ** 31 - 1      # MXNet's value
from gpunda._core.reexports import forwarding_getattr as _forwarding_getattr  # noqa: E402

__getattr__ = _forwarding_getattr(__name__, (
    "arange", "eye", "full", "histogram", "hypot", "linspace", "maximum", "minimum", "ones",
    "pow", "power", "split_v2", "zeros"), "gpunda.symbol")
