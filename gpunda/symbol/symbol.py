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

from ..base import GpundaError
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
        """A deep copy (new nodes), as MXNet's ``Symbol.__copy__``."""
        return self._rebuild({})

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
        ins = []
        for n, _ in self._outputs:
            ins.extend(n.inputs)
        if not ins:
            return None
        return Symbol(ins)

    # -- attributes -------------------------------------------------------------
    def attr(self, key):
        """The string attribute ``key`` of this (single-output) symbol's node, or None."""
        if len(self._outputs) != 1:
            return None
        return self._outputs[0][0].attrs.get(key)

    def list_attr(self, recursive=False):
        """The attributes of this symbol's node (``recursive``: of every node, keyed
        ``<node>$<key>``)."""
        if recursive:
            return {f"{n.name}${k}": v for n in self._topo() for k, v in n.attrs.items()}
        if len(self._outputs) != 1:
            return {}
        return dict(self._outputs[0][0].attrs)

    def attr_dict(self):
        """``{node name: {key: value}}`` for every node that has attributes."""
        return {n.name: dict(n.attrs) for n in self._topo() if n.attrs}

    def _set_attr(self, **kwargs):
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise GpundaError(f"Symbol._set_attr: attribute {k}={v!r} must be a string")
        for n, _ in self._outputs:
            n.attrs.update(kwargs)

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
    def __add__(self, other):
        return _arith(self, other, "broadcast_add", "_plus_scalar")

    __radd__ = __add__

    def __sub__(self, other):
        return _arith(self, other, "broadcast_sub", "_minus_scalar")

    def __rsub__(self, other):
        return _arith(self, other, None, "_rminus_scalar")

    def __mul__(self, other):
        return _arith(self, other, "broadcast_mul", "_mul_scalar")

    __rmul__ = __mul__

    def __truediv__(self, other):
        return _arith(self, other, "broadcast_div", "_div_scalar")

    def __rtruediv__(self, other):
        return _arith(self, other, None, "_rdiv_scalar")

    __div__, __rdiv__ = __truediv__, __rtruediv__

    def __mod__(self, other):
        return _arith(self, other, "broadcast_mod", "_mod_scalar")

    def __rmod__(self, other):
        return _arith(self, other, None, "_rmod_scalar")

    def __pow__(self, other):
        return _arith(self, other, "broadcast_power", "_power_scalar")

    def __rpow__(self, other):
        return _arith(self, other, None, "_rpower_scalar")

    def __neg__(self):
        return _arith(self, -1.0, None, "_mul_scalar")

    def __pos__(self):
        return self

    def __abs__(self):
        return make_node(get_op("abs"), [self], {}, None, None)

    # -- inference ---------------------------------------------------------------------
    def infer_shape(self, *args, **kwargs):
        """(arg_shapes, out_shapes, aux_shapes) from known input shapes; all None when
        some shape cannot be inferred."""
        res = self._infer_shape_impl(args, kwargs, partial=False)
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
        given = {}
        for k, v in self._named(args, kwargs, "infer_shape").items():
            if isinstance(v, (int, np.integer)):
                v = (int(v),)
            given[k] = tuple(int(d) for d in v)
        shapes, _ = infer_graph(self, given, {})
        order = self._topo()
        aux = self._aux_ids(order)
        arg_s, aux_s = [], []
        for n in order:
            if n.op is None:
                (aux_s if id(n) in aux else arg_s).append(shapes.get((id(n), 0)))
        out_s = [shapes.get((id(n), i)) for n, i in self._outputs]
        if partial:
            f = lambda s: () if s is None else s  # noqa: E731
            return [f(s) for s in arg_s], [f(s) for s in out_s], [f(s) for s in aux_s]
        if any(s is None or 0 in s for s in arg_s + out_s + aux_s):
            return None, None, None
        return arg_s, out_s, aux_s

    def infer_type(self, *args, **kwargs):
        """(arg_types, out_types, aux_types) as NumPy types from known input dtypes."""
        return self._infer_type_impl(args, kwargs, partial=False)

    def infer_type_partial(self, *args, **kwargs):
        return self._infer_type_impl(args, kwargs, partial=True)

    def _infer_type_impl(self, args, kwargs, partial):
        given = {k: parse_dtype(v, "infer_type")
                 for k, v in self._named(args, kwargs, "infer_type").items()}
        _, dtypes = infer_graph(self, {}, given)
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
    if isinstance(other, Symbol):
        if binop is None:
            raise GpundaError("Symbol arithmetic: unexpected operand order")
        return make_node(get_op(binop), [sym, other], {}, None, None)
    if isinstance(other, (int, float, np.integer, np.floating)) and not isinstance(other, bool):
        return make_node(get_op(scalar_op), [sym], {"scalar": other}, None, None)
    return NotImplemented


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
    p = op.parse_params(params)
    attrs = _attribute.current().get(attr)
    for k, v in attrs.items():
        if not isinstance(v, str):
            raise GpundaError(f"Operator {op.name}: attribute {k}={v!r} must be a string")
    param_attrs = {k: _attr_str(v) for k, v in params.items()}
    attrs.update(param_attrs)
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
        if not (k.startswith("__") and k.endswith("__")):
            raise GpundaError(f"var: attribute name={k} is not supported; additional "
                              f"attributes must start and end with double underscores")
        attrs[k] = str(v)
    for k, v in attrs.items():
        if not isinstance(v, str):
            raise GpundaError(f"var: attribute {k}={v!r} must be a string")
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
# shape and dtype inference

def parse_shape_attr(s):
    try:
        v = ast.literal_eval(s)
    except (ValueError, SyntaxError):
        return None
    if isinstance(v, int):
        v = (v,)
    if not isinstance(v, (tuple, list)):
        return None
    return tuple(int(d) for d in v)


def _var_shape(n, given):
    s = given.get(n.name)
    if s is None and "__shape__" in n.attrs:
        s = parse_shape_attr(n.attrs["__shape__"])
    if s is not None and len(s) == 0:
        return None      # legacy semantics: () means unknown
    return s


def _var_dtype(n, given):
    t = given.get(n.name)
    if t is None and "__dtype__" in n.attrs:
        try:
            t = np.dtype(CODE_TO_DTYPE[int(n.attrs["__dtype__"])])
        except (KeyError, ValueError):
            t = None
    return t


def _complete(s):
    return s is not None and 0 not in s


def _dummy(shape, dtype):
    # zero strides: every element aliases one zero, so big shapes cost nothing
    return np.broadcast_to(np.zeros((), dtype), shape)


def _run_dummy(node, in_shapes, in_types):
    from .. import autograd as ag
    from ..context import cpu
    op, p = node.op, node.p
    prev = ag.set_training(False)
    try:
        with np.errstate(all="ignore"):
            for make in (_dummy, lambda s, t: np.zeros(s, t)):
                arrays = [make(s, t) for s, t in zip(in_shapes, in_types)]
                try:
                    if op.wants_ctx:
                        r = op.compute(np, p, *arrays, ctx=cpu())
                    else:
                        r = op.compute(np, p, *arrays)
                    break
                except GpundaError:
                    raise
                except (ValueError, TypeError) as e:
                    if make is not _dummy:
                        raise GpundaError(f"Operator {op.name} (node {node.name!r}): {e} "
                                          f"(input shapes {list(in_shapes)})") from None
    finally:
        ag.set_training(prev)
    rs = [r] if op.n_outputs(p) == 1 else list(r)
    return [tuple(x.shape) for x in rs], [np.dtype(x.dtype) for x in rs]


def infer_graph(sym, given_shapes, given_types):
    """Forward shape/dtype inference: maps (id(node), output) -> shape / dtype (None unknown).

    Ops with ``infer_shape(p, in_shapes) -> (in_shapes, out_shapes)`` fill in
    their parameter shapes; other ops run their compute on zero-stride dummy
    inputs once every input shape is known.
    """
    order = sym._topo()
    shapes, types = {}, {}
    for n in order:
        if n.op is None:
            shapes[(id(n), 0)] = _var_shape(n, given_shapes)
            types[(id(n), 0)] = _var_dtype(n, given_types)
    for _ in range(4):
        changed = False
        for n in order:
            if n.op is None:
                continue
            if all(_complete(shapes.get((id(n), i))) and types.get((id(n), i)) is not None
                   for i in range(n.nout)):
                continue
            keys = [(id(c), i) for c, i in n.inputs]
            in_s = [shapes.get(k) for k in keys]
            in_t = [types.get(k) for k in keys]
            # dtypes: unknown inputs follow the first known one (MXNet's default rule)
            known_t = next((t for t in in_t if t is not None), None)
            if n.op.infer_type is not None:
                try:
                    r = n.op.infer_type(n.p, list(in_t))
                    if r is not None:
                        new_in, out_t = r
                        for k, t in zip(keys, new_in):
                            if t is not None and types.get(k) is None:
                                types[k] = np.dtype(t)
                                changed = True
                        for i, t in enumerate(out_t):
                            if t is not None and types.get((id(n), i)) is None:
                                types[(id(n), i)] = np.dtype(t)
                                changed = True
                except Exception:
                    pass
            elif known_t is not None:
                for k, t in zip(keys, in_t):
                    if t is None and types.get(k) is None:
                        types[k] = known_t
                        changed = True
                dt = n.p.dtype if getattr(n.p, "dtype", None) is not None and \
                    "dtype" in n.p._given else known_t
                for i in range(n.nout):
                    if types.get((id(n), i)) is None:
                        types[(id(n), i)] = np.dtype(dt)
                        changed = True
            if n.op.infer_shape is not None:
                try:
                    r = n.op.infer_shape(n.p, list(in_s))
                except GpundaError as e:
                    if all(_complete(s) for s in in_s):
                        raise GpundaError(f"infer_shape: node {n.name!r}: {e}") from None
                    r = None
                except Exception:
                    r = None
                if r is not None:
                    new_in, out_s = r
                    for k, s in zip(keys, new_in):
                        if s is not None and not _complete(shapes.get(k)) and _complete(tuple(s)):
                            shapes[k] = tuple(s)
                            changed = True
                    for i, s in enumerate(out_s or ()):
                        if s is not None and not _complete(shapes.get((id(n), i))):
                            shapes[(id(n), i)] = tuple(s)
                            changed = True
                    in_s = [shapes.get(k) for k in keys]
            if all(_complete(s) for s in in_s) and not all(
                    _complete(shapes.get((id(n), i))) for i in range(n.nout)) or (
                    all(_complete(s) for s in in_s) and any(
                        types.get((id(n), i)) is None for i in range(n.nout))):
                in_t2 = [t if t is not None else (known_t or np.dtype(np.float32)) for t in in_t]
                if n.op.random and not n.inputs and hasattr(n.p, "shape"):
                    out_s2 = [tuple(n.p.shape)]
                    out_t2 = [np.dtype(getattr(n.p, "dtype", None) or np.float32)]
                else:
                    out_s2, out_t2 = _run_dummy(n, in_s, in_t2)
                for i, (s, t) in enumerate(zip(out_s2, out_t2)):
                    if not _complete(shapes.get((id(n), i))):
                        shapes[(id(n), i)] = s
                        changed = True
                    if types.get((id(n), i)) != t:
                        types[(id(n), i)] = t
                        changed = True
        if not changed:
            break
    return shapes, types


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

