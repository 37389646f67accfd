"""Symbol: a graph of registry ops, with MXNet 1.x's naming, listing and inference.

A graph is a set of immutable ``_Node`` objects: a variable (``op is None``)
or an op call holding its OpDef, parsed params ``p``, string ``attrs`` (the
given params as MXNet writes them, plus user attributes) and input entries
``(node, output_index)``. A ``Symbol`` is a list of output entries. Everything
else (JSON, CachedOp, executors) walks that structure.
"""
from __future__ import annotations

import ast
import types

import numpy as np

from ..base import GpundaError, NotImplementedForGpunda, NotImplementedForSymbol
from .. import name as _name
from .. import attribute as _attribute
from ..ops.registry import all_names, fill_positional_params, get_op, parse_dtype, to_attr_string

__all__ = ["Symbol", "var", "Variable", "Group", "load", "load_json", "fromjson"]

# MXNet's dtype codes (``__dtype__`` attr, .params files)
DTYPE_TO_CODE = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
                 "int64": 6, "bool": 7, "int16": 8, "uint16": 9, "uint32": 10, "uint64": 11}
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
        if on and len(on) >= n:
            return [f"{self.name}_{s}" for s in list(on)[:n]]
        if n == 1:
            return [f"{self.name}_output"]
        if self.nvis == 1:
            # one visible output (BatchNorm, Dropout): it is "<name>_output" as in MXNet
            return [f"{self.name}_output"] + [f"{self.name}_output{i}" for i in range(1, n)]
        return [f"{self.name}_output{i}" for i in range(n)]

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
        aux = set(self.op.aux_inputs)
        return tuple(i for i, n in enumerate(self.input_names()) if n in aux)

    def __repr__(self):
        return f"<_Node {self.op.name if self.op else 'null'} {self.name}>"


def params_from_attrs(op, attrs, nin, where):
    """Parsed params of ``op`` from string ``attrs`` (keys that are not params are user attrs)."""
    kw = {k: v for k, v in attrs.items() if k in op.param_map}
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


#: Attribute keys MXNet stores as ``__key__`` (c_api_symbolic.cc's kHiddenKeys)
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


def hidden_key(key, where):
    """``key`` as stored on a node: ``lr_mult`` -> ``__lr_mult__``; ``fc1_lr_mult``
    (a parameter's attribute set through its op) is refused as MXNet refuses it."""
    for k in HIDDEN_KEYS:
        if key.startswith(k):
            return f"__{key}__" if key == k else key
        if key.endswith(k) and len(key) > len(k) and not key.startswith("__"):
            raise GpundaError(
                f"{where}: setting variable attributes with {key} is deprecated; use "
                f"w = Variable('{key[:-len(k) - 1]}', {k}=...) and pass w to the operator")
    return key


def is_dunder(key):
    return len(key) > 4 and key.startswith("__") and key.endswith("__")


def _with_plain_keys(attrs):
    """``attrs`` plus, for each hidden ``__key__``, its plain spelling (MXNet lists both)."""
    out = dict(attrs)
    for k in HIDDEN_KEYS:
        v = attrs.get(f"__{k}__")
        if v is not None:
            out[k] = v
    return out


class Symbol:
    """A symbolic graph with one or more outputs (MXNet's ``mx.sym.Symbol``).

    Build with ``sym.var`` and ``sym.<Op>(...)``, combine with arithmetic,
    inspect with ``list_arguments``/``list_outputs``/``infer_shape``, save
    with ``tojson``/``save``, run with ``eval``/``bind`` or ``CachedOp``.
    """

    __slots__ = ("_outputs", "__weakref__")

    def __init__(self, outputs):
        self._outputs = list(outputs)

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
        if isinstance(index, str):
            names = self.list_outputs()
            idx = [i for i, n in enumerate(names) if n == index]
            if not idx:
                raise GpundaError(f"Symbol.__getitem__: no output named {index!r}; outputs are "
                                  f"{names}")
            if len(idx) > 1:
                raise GpundaError(f"Symbol.__getitem__: output name {index!r} is ambiguous")
            index = idx[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise GpundaError(f"Symbol.__getitem__: index {index!r} must be an int or an "
                              f"output name")
        n = len(self._outputs)
        if not -n <= index < n:
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
        """A group of every output of every node (hidden outputs included), in DFS order."""
        outs = []
        for n in self._topo():
            outs.extend((n, i) for i in range(n.nout))
        return Symbol(outs)

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
            return {f"{n.name}${k}": v for n in self._topo()
                    for k, v in _with_plain_keys(n.attrs).items()}
        if len(self._outputs) != 1:
            return {}
        return _with_plain_keys(self._outputs[0][0].attrs)

    def attr_dict(self):
        """``{node name: {key: value}}`` for every node that has attributes."""
        return {n.name: _with_plain_keys(n.attrs) for n in self._topo() if n.attrs}

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

    # -- arithmetic ------------------------------------------------------------------
    # As in MXNet, Symbol operators do not broadcast: ``a + b`` is elemwise_add named
    # ``_plus0`` (use sym.broadcast_add to broadcast); comparisons build symbols.
    def __add__(self, other):
        return _arith(self, other, ("elemwise_add", "_plus"), ("_plus_scalar", "_plusscalar"))

    __radd__ = __add__

    def __sub__(self, other):
        return _arith(self, other, ("elemwise_sub", "_minus"), ("_minus_scalar", "_minusscalar"))

    def __rsub__(self, other):
        return _arith(self, other, None, ("_rminus_scalar", "_rminusscalar"))

    def __mul__(self, other):
        return _arith(self, other, ("elemwise_mul", "_mul"), ("_mul_scalar", "_mulscalar"))

    __rmul__ = __mul__

    def __truediv__(self, other):
        return _arith(self, other, ("elemwise_div", "_div"), ("_div_scalar", "_divscalar"))

    def __rtruediv__(self, other):
        return _arith(self, other, None, ("_rdiv_scalar", "_rdivscalar"))

    __div__, __rdiv__ = __truediv__, __rtruediv__

    def __mod__(self, other):
        return _arith(self, other, ("broadcast_mod", "_mod"), ("_mod_scalar", "_modscalar"))

    def __rmod__(self, other):
        return _arith(self, other, None, ("_rmod_scalar", "_rmodscalar"))

    def __pow__(self, other):
        return _arith(self, other, ("broadcast_power", "_power"),
                      ("_power_scalar", "_powerscalar"))

    def __rpow__(self, other):
        return _arith(self, other, None, ("_rpower_scalar", "_rpower_scalar"))

    def __neg__(self):
        return _arith(self, -1.0, None, ("_mul_scalar", "_mulscalar"))

    def __pos__(self):
        return self

    def __abs__(self):
        return make_node(get_op("abs"), [self], {}, None, None, hint="abs")

    def __eq__(self, other):
        return _arith(self, other, ("broadcast_equal", "_equal"), ("_equal_scalar", None))

    def __ne__(self, other):
        return _arith(self, other, ("broadcast_not_equal", "_not_equal"),
                      ("_not_equal_scalar", None))

    def __gt__(self, other):
        return _arith(self, other, ("broadcast_greater", "_greater"), ("_greater_scalar", None))

    def __ge__(self, other):
        return _arith(self, other, ("broadcast_greater_equal", "_greater_equal"),
                      ("_greater_equal_scalar", None))

    def __lt__(self, other):
        return _arith(self, other, ("broadcast_lesser", "_lesser"), ("_lesser_scalar", None))

    def __le__(self, other):
        return _arith(self, other, ("broadcast_lesser_equal", "_lesser_equal"),
                      ("_lesser_equal_scalar", None))

    # MXNet's Symbol is unhashable (it defines __eq__); gpunda keeps identity hashing so
    # symbols can still key the dicts of code that relied on it
    __hash__ = object.__hash__

    # -- NDArray-only operations (MXNet raises NotImplementedForSymbol) -----------------
    def __bool__(self):
        raise NotImplementedForSymbol(self.__bool__, "bool")

    __nonzero__ = __bool__

    def __iadd__(self, other):
        raise NotImplementedForSymbol(self.__iadd__, "+=", other, 1)

    def __isub__(self, other):
        raise NotImplementedForSymbol(self.__isub__, "-=", other)

    def __imul__(self, other):
        raise NotImplementedForSymbol(self.__imul__, "*=", other)

    def __idiv__(self, other):
        raise NotImplementedForSymbol(self.__idiv__, "/=", other)

    def __itruediv__(self, other):
        raise NotImplementedForSymbol(self.__itruediv__, "/=", other)

    def wait_to_read(self):
        raise NotImplementedForSymbol(self.wait_to_read, None)

    def asnumpy(self):
        raise NotImplementedForSymbol(self.asnumpy, None)

    def asscalar(self):
        raise NotImplementedForSymbol(self.asscalar, None)

    def as_in_context(self, *args, **kwargs):
        raise NotImplementedForSymbol(self.as_in_context, None)

    def detach(self):
        raise NotImplementedForSymbol(self.detach, None)

    def backward(self, *args, **kwargs):
        raise NotImplementedForSymbol(self.backward, None)

    def as_nd_ndarray(self):
        """This symbol (the legacy front end's symbols are already ``nd`` symbols)."""
        return self

    def astype(self, *args, **kwargs):
        """``sym.cast(self, dtype)`` (MXNet's fluent method)."""
        return lookup("cast")(self, *args, **kwargs)

    def softmax(self, *args, **kwargs):
        """``sym.softmax(self, ...)`` (MXNet's fluent method)."""
        return lookup("softmax")(self, *args, **kwargs)

    def log_softmax(self, *args, **kwargs):
        """``sym.log_softmax(self, ...)`` (MXNet's fluent method)."""
        return lookup("log_softmax")(self, *args, **kwargs)

    def as_np_ndarray(self):
        raise NotImplementedForGpunda("Symbol.as_np_ndarray (mx.sym.np) is not supported yet")

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
        from .infer import infer_graph, to_internal, to_public, known
        from ..util import is_np_shape
        np_mode = is_np_shape()
        given = {k: to_internal(v, np_mode)
                 for k, v in self._named(args, kwargs, "infer_shape").items()}
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
        from .infer import infer_graph
        given = {k: parse_dtype(v, "infer_type")
                 for k, v in self._named(args, kwargs, "infer_type").items()}
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
        f = lambda t: None if t is None else t.type  # noqa: E731
        return [f(t) for t in arg_t], [f(t) for t in out_t], [f(t) for t in aux_t]

    # -- serialisation ------------------------------------------------------------------
    def tojson(self, remove_amp_cast=True):
        """The graph in MXNet's symbol JSON format (2-space indent, as MXNet writes it)."""
        from .json_io import to_json
        return to_json(self)

    def save(self, fname, remove_amp_cast=True):
        """Write ``tojson()`` to file ``fname``."""
        with open(fname, "w", encoding="utf-8") as f:
            f.write(self.tojson())

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
        from .executor import Executor
        return Executor(self, ctx, args, args_grad, grad_req, aux_states)

    def simple_bind(self, ctx=None, grad_req="write", type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """An Executor with zero-filled arrays allocated from inferred shapes."""
        from .executor import simple_bind
        return simple_bind(self, ctx, grad_req, type_dict, kwargs)

    def gradient(self, wrt):
        raise GpundaError("Symbol.gradient is not supported (MXNet 1.x does not implement it "
                          "either); use autograd or Executor.backward")


def _arith(sym, other, binop, scalar_op):
    """``sym <op> other``: ``binop``/``scalar_op`` are (operator, name hint) pairs."""
    if isinstance(other, Symbol):
        if binop is None:
            raise GpundaError("Symbol arithmetic: unexpected operand order")
        return make_node(get_op(binop[0]), [sym, other], {}, None, None, hint=binop[1])
    if isinstance(other, (int, float, np.integer, np.floating)) and not isinstance(other, bool):
        return make_node(get_op(scalar_op[0]), [sym], {"scalar": other}, None, None,
                         hint=scalar_op[1] or scalar_op[0])
    raise TypeError(f"type {type(other)} not supported")


def make_node(op, inputs, params, name, attr, named_inputs=None, hint=None):
    """A Symbol for ``op`` applied to Symbols ``inputs`` (positional) and ``named_inputs``.

    Missing inputs of ops with named inputs become variables ``<name>_<input>``
    that carry the node's attributes (as MXNet does).
    """
    named_inputs = named_inputs or {}
    for k, s in list(named_inputs.items()):
        if s is None:
            named_inputs.pop(k)
    params = dict(params)
    key = op.key_var_num_args
    while inputs and inputs[-1] is None:
        inputs = inputs[:-1]
    if op.variadic and key is not None and key not in params and key in op.param_map:
        params[key] = len(inputs) + len(named_inputs)
    # attributes (scope, attr=, lr_mult=...) travel with the params as MXNet's kwargs do:
    # hidden keys become __key__, and __key__ entries are node attributes, not params; an
    # op without parameters keeps every key as an attribute (MXNet parses none for it)
    extra = _attribute.current().get(attr)
    for k, v in extra.items():
        if not isinstance(v, str):
            raise GpundaError(f"Operator {op.name}: attribute {k}={v!r} must be a string")
    attrs = {}
    for k, v in list(extra.items()) + list(params.items()):
        k2 = hidden_key(k, f"Operator {op.name}")
        if is_dunder(k2) or (not op.params and k2 != key):
            attrs[k2] = _attr_str(v)
            params.pop(k, None)
        else:
            params[k2] = v
    p = op.parse_params(params)
    attrs.update({k: _attr_str(v) for k, v in params.items()})
    # automatic names follow the name the op was called by, as MXNet's do (sym.split
    # gives split0, sym.SliceChannel slicechannel0)
    nm = _name.current().get(name, hint or op.name.lower())
    try:
        names = list(op.input_names(p))
    except Exception:
        names = []
    entries = {}
    for i, s in enumerate(inputs):
        key_i = names[i] if i < len(names) else f"arg{i}"
        if s is None:
            continue
        if i >= len(names) and key is None:
            raise GpundaError(f"Operator {op.name}: got {len(inputs)} input symbols but it takes "
                              f"{len(names)} ({', '.join(names) or 'none'})")
        entries[key_i] = _single(op, key_i, s)
    for k, s in named_inputs.items():
        if k not in names:
            raise GpundaError(f"Operator {op.name}: unexpected input {k!r}; inputs are {names}")
        if k in entries:
            raise GpundaError(f"Operator {op.name}: input {k} given twice")
        entries[k] = _single(op, k, s)
    ins = []
    if op.variadic and key is not None:
        ins = [entries[n] for n in names if n in entries]
        if len(ins) != len(names):
            raise GpundaError(f"Operator {op.name}: expects {len(names)} inputs but got {len(ins)}")
    else:
        for n in names:
            e = entries.get(n)
            if e is None:
                vattrs = dict(attrs)
                e = (_Node(None, f"{nm}_{n}", vattrs, [], None), 0)
            ins.append(e)
    node = _Node(op, nm, attrs, ins, p)
    nvis = op.n_visible(p)
    return Symbol([(node, i) for i in range(nvis)])


def _single(op, name, s):
    if not isinstance(s, Symbol):
        raise GpundaError(f"Operator {op.name}: input {name} must be a Symbol, got "
                          f"{type(s).__name__}")
    if len(s._outputs) != 1:
        raise GpundaError(f"Operator {op.name}: input {name} must be a single-output Symbol, "
                          f"got a group of {len(s._outputs)}")
    return s._outputs[0]


def make_function(op, fname):
    """The ``sym.<fname>`` function for OpDef ``op`` (same calling style as ``nd``)."""

    def fn(*args, name=None, attr=None, out=None, **kwargs):
        syms, extra = [], []
        for a in args:
            if isinstance(a, Symbol) and not extra:
                syms.append(a)
            elif a is None and syms and not extra:
                syms.append(None)   # an omitted input: F.FullyConnected(x, w, None, ...)
            elif isinstance(a, (list, tuple)) and a and all(isinstance(v, Symbol) for v in a) \
                    and op.variadic and not extra and not syms:
                syms.extend(a)
            else:
                extra.append(a)
        named = {}
        for k in list(kwargs):
            v = kwargs[k]
            if isinstance(v, Symbol):
                named[k] = kwargs.pop(k)
            elif v is None and k not in op.param_map:
                kwargs.pop(k)       # an input explicitly left out (bias=None)
        if extra:
            fill_positional_params(op, extra, kwargs, len(args))
        return make_node(op, syms, kwargs, name, attr, named, hint=fname.lower())

    fn.__name__ = fname
    fn.__qualname__ = fname
    fn.__doc__ = op.describe()
    fn.__module__ = "gpunda.symbol"
    fn.op = op
    return fn


# ---------------------------------------------------------------------------
# variables and groups

def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
        stype=None, **kwargs):
    """A variable (graph input) named ``name``; shape/dtype/lr_mult/... kept as ``__x__`` attrs."""
    if not isinstance(name, str):
        raise GpundaError(f"var: name must be a string, got {type(name).__name__}")
    attrs = _attribute.current().get(attr)
    if shape is not None:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        attrs["__shape__"] = to_attr_string(shape)
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(DTYPE_TO_CODE[parse_dtype(dtype, "var").name])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else (
            init.dumps() if hasattr(init, "dumps") else str(init))
    if stype is not None:
        if stype not in _STYPE_TO_CODE:
            raise GpundaError(f"var: stype={stype!r} is not one of {list(_STYPE_TO_CODE)}")
        attrs["__storage_type__"] = str(_STYPE_TO_CODE[stype])
    for k, v in kwargs.items():
        if not is_dunder(k):
            raise ValueError(f"var: attribute name={k} is not supported; additional "
                             f"attributes must start and end with double underscores, "
                             f"e.g. __{k}__")
        attrs[k] = str(v)
    for k, v in attrs.items():
        if not isinstance(v, str):
            raise ValueError(f"var: attribute {k}={v!r} must be a string")
    attrs = {hidden_key(k, "var"): v for k, v in attrs.items()}
    return Symbol([(_Node(None, name, attrs, [], None), 0)])


Variable = var


def Group(symbols):
    """One Symbol whose outputs are the outputs of ``symbols`` in order."""
    if not symbols:
        raise GpundaError("Group: needs at least one symbol")
    outs = []
    for i, s in enumerate(symbols):
        if not isinstance(s, Symbol):
            raise GpundaError(f"Group: symbols[{i}] must be a Symbol, got {type(s).__name__}")
        outs.extend(s._outputs)
    return Symbol(outs)


def load_json(json_str):
    """A Symbol from MXNet's JSON text."""
    from .json_io import from_json
    return from_json(json_str)


fromjson = load_json


def load(fname):
    """A Symbol from a ``*-symbol.json`` file."""
    if not isinstance(fname, str):
        raise GpundaError(f"load: fname must be a path string, got {type(fname).__name__}")
    with open(fname, "r", encoding="utf-8") as f:
        return load_json(f.read())


# ---------------------------------------------------------------------------
# shape inference inputs (the passes are in infer.py)

def _var_shape(n, given):
    """A variable's starting shape (internal form): the given one, else its ``__shape__``."""
    from .infer import parse_shape_attr, to_internal
    from ..util import is_np_shape
    if n.name in given:
        return given[n.name]
    if "__shape__" in n.attrs:
        return to_internal(parse_shape_attr(n.attrs["__shape__"]), is_np_shape())
    return None


def _var_dtype(n, given):
    from .infer import _var_dtype as f
    return f(n, given)


# ---------------------------------------------------------------------------
# the generated namespace

op = types.ModuleType("gpunda.symbol.op", "Every registered op as a Symbol function.")
_internal = op
_made = {}


def _populate(namespace):
    for fname, opdef in all_names().items():
        if fname in _made:
            continue
        fn = make_function(opdef, fname)
        _made[fname] = fn
        setattr(op, fname, fn)
        if not fname.startswith("_") and not opdef.hidden and fname not in namespace:
            namespace[fname] = fn
        if fname.startswith("_") or opdef.hidden:
            continue
        meth = opdef.method if opdef.method else (fname if fname.islower() else None)
        if meth and not hasattr(Symbol, meth) and not opdef.variadic and opdef.inputs \
                and not opdef.wants_ctx:
            setattr(Symbol, meth, _as_method(fn))


def _as_method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _reshape_method(self, *shape, **kwargs):
    """Reshape with MXNet's codes (0, -1, -2, -3, -4)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if shape:
        kwargs["shape"] = shape
    return _made["Reshape"](self, **kwargs)


def lookup(fname):
    """The Symbol function for a registered op (ops registered late are picked up)."""
    fn = _made.get(fname)
    if fn is None:
        opdef = get_op(fname)
        fn = _made[fname] = make_function(opdef, fname)
        setattr(op, fname, fn)
    return fn

