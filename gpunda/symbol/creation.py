"""Building Symbols: ``var``, ``Group``, ``load``, and one ``sym.<op>`` function per
registry op (``make_function`` / ``make_node``), with MXNet's naming and attribute rules."""
from __future__ import annotations

import types

from gpunda.base import GpundaError, GpundaTypeError
from gpunda._core.not_built import stub_function
from gpunda import name as _name
from gpunda import attribute as _attribute
from gpunda.ops.registry import all_names, fill_positional_params, get_op, parse_dtype, to_attr_string
from gpunda.symbol.attrs import hidden_key, is_dunder
from gpunda.symbol.symbol import Symbol, _Node, DTYPE_TO_CODE, _STYPE_TO_CODE, _attr_str

__all__ = ["var", "Variable", "Group", "load", "load_json", "fromjson", "make_node",
           "make_function", "lookup"]


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
    # op without parameters keeps every key as an attribute (MXNet parses none for it).
    # MXNet's creators update kwargs with attr= (so attr wins over a keyword) and store
    # str() of any value, an Initializer object included (GluonCV's SSD passes one)
    extra = {k: v if isinstance(v, str) else str(v)
             for k, v in _attribute.current().get(attr).items()}
    attrs = {}
    for k, v in list(params.items()) + list(extra.items()):
        k2 = hidden_key(k, f"Operator {op.name}")
        if is_dunder(k2) or (not op.params and k2 != key):
            attrs[k2] = _attr_str(v)
            params.pop(k, None)
        else:
            params[k2] = v
    p = op.parse_params(params)
    for k, v in params.items():     # a dtype given as a type or an array is written by name
        spec = op.param_map.get(k)
        attrs[k] = _attr_str(getattr(p, k) if spec is not None and spec.kind == "dtype" and
                             v is not None and not isinstance(v, str) else v)
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
    if not names and not op.variadic:
        # MXNet composes nothing into an op without inputs (the samplers): a Symbol
        # keyword given to one is dropped, and its shape comes from the graph around it
        named_inputs = {}
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
    _set_input_var_inits(op, names, ins)
    node = _Node(op, nm, attrs, ins, p)
    nvis = op.n_visible(p)
    out = Symbol([(node, i) for i in range(nvis)])
    if inputs and _np_symbol_cls is not None and type(inputs[0]) is _np_symbol_cls:
        out.__class__ = _np_symbol_cls     # NOTE [Output flavour follows the first input]
    return out


_np_symbol_cls = None   # symbol.numpy._Symbol, once loaded


# NOTE [Input initializers]: MXNet ops give some input variables their initializer when
# composed (FSetInputVarAttrOnCompose): PReLU's gamma starts at 0.25, BatchNorm's moving
# mean/var at 0/1, whatever the global initializer. A variable's own __init__ wins.
_INPUT_VAR_INIT = {
    "LeakyReLU": {"gamma": '["Constant", {"value": 0.25}]'},
    "BatchNorm": {"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'},
}


def _set_input_var_inits(op, names, ins):
    table = _INPUT_VAR_INIT.get(op.name)
    if not table:
        return
    for name, (node, _) in zip(names, ins):
        if name in table and node.op is None and "__init__" not in node.attrs:
            node.attrs["__init__"] = table[name]


def _single(op, name, s):
    if not isinstance(s, Symbol):
        raise GpundaError(f"Operator {op.name}: input {name} must be a Symbol, got "
                          f"{type(s).__name__}")
    if len(s._outputs) != 1:
        raise GpundaError(f"Operator {op.name}: input {name} must be a single-output Symbol, "
                          f"got a group of {len(s._outputs)}")
    return s._outputs[0]


def make_function(op, fname, hint=None):
    """The ``sym.<fname>`` function for OpDef ``op`` (same calling style as ``nd``); its
    nodes are named ``<hint><n>`` by default (``hint``: the lower-cased ``fname``)."""
    hint = hint or fname.lower()

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
            elif v is None and k not in op.param_map and not op.extra_params:
                kwargs.pop(k)       # an input explicitly left out (bias=None; Custom: 'None')
        if extra:
            fill_positional_params(op, extra, kwargs, len(args))
        return make_node(op, syms, kwargs, name, attr, named, hint=hint)

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
        raise GpundaTypeError(f"var: name must be a string, got {type(name).__name__}")
    attrs = _attribute.current().get(attr)
    if shape is not None:
        # MXNet writes str(shape): an int stays "5", a list keeps its brackets
        if not isinstance(shape, (tuple, list)):
            shape = int(shape) if hasattr(shape, "__index__") else tuple(shape)
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
    # TypeError, as MXNet's: "Expected a list of symbols as input"
    if isinstance(symbols, Symbol) or not hasattr(symbols, "__iter__"):
        raise GpundaTypeError(f"Group: expected a list of symbols, got {symbols!r}")
    symbols = list(symbols)
    if not symbols:
        raise GpundaTypeError("Group: expected a non-empty list of symbols")
    outs = []
    for i, s in enumerate(symbols):
        if not isinstance(s, Symbol):
            raise GpundaTypeError(f"Group: symbols[{i}] must be a Symbol, got "
                                  f"{type(s).__name__}")
        outs.extend(s._outputs)
    return Symbol(outs)


def load_json(json_str):
    """A Symbol from MXNet's JSON text."""
    from gpunda.symbol.json_io import from_json
    if not isinstance(json_str, (str, bytes)):
        raise GpundaTypeError(f"load_json: json_str must be a string, got "
                              f"{type(json_str).__name__}")
    return from_json(json_str)


fromjson = load_json


def load(fname):
    """A Symbol from a ``*-symbol.json`` file."""
    if not isinstance(fname, str):
        raise GpundaTypeError(f"load: fname must be a path string, got {type(fname).__name__}")
    with open(fname, "r", encoding="utf-8") as f:
        return load_json(f.read())


# ---------------------------------------------------------------------------
# the generated namespace

op = types.ModuleType("gpunda.symbol.op", "Every registered op as a Symbol function.")
_internal = op
_made = {}
# mxnet.symbol._internal also holds its ctypes layer's names: SymbolBase, the base of
# every Symbol class (Symbol here), and stubs for the C-level class registration and the
# creation of a Symbol from an op's C handle, which have no meaning in gpunda
op.SymbolBase = Symbol
for _stub_name, _why in (
        ("_set_symbol_class", "it registers the Symbol class with MXNet's C library, which "
                              "gpunda does not have (gpunda's Symbol classes are fixed)"),
        ("_set_np_symbol_class", "it registers the mx.sym.np Symbol class with MXNet's C "
                                 "library, which gpunda does not have (gpunda's Symbol "
                                 "classes are fixed)"),
        ("_symbol_creator", "it makes a Symbol from an op's C-API handle; gpunda's Symbol "
                            "functions build nodes from the op registry (mx.sym.<op>)")):
    setattr(op, _stub_name, stub_function("mxnet.symbol._internal", _stub_name, _why))
del _stub_name, _why


def _populate(namespace):
    for fname, opdef in all_names().items():
        if fname in _made:
            continue
        fn = make_function(opdef, fname)
        _made[fname] = fn
        setattr(op, fname, fn)
        # a public alias of a hidden op is public (MXNet's ``cumsum`` of ``_np_cumsum``)
        public = not opdef.hidden or fname != opdef.name
        if not fname.startswith("_") and public and fname not in namespace:
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


def lookup(fname, hint=None):
    """The Symbol function for a registered op (ops registered late are picked up);
    ``hint`` names its nodes another way (``sym.contrib.box_nms`` makes ``box_nms0``)."""
    if hint is not None:
        fn = _made.get((fname, hint))
        if fn is None:
            fn = _made[(fname, hint)] = make_function(get_op(fname), fname, hint)
        return fn
    fn = _made.get(fname)
    if fn is None:
        opdef = get_op(fname)
        fn = _made[fname] = make_function(opdef, fname)
        setattr(op, fname, fn)
    return fn
