"""The operator registry: one declarative record per op.

An ``OpDef`` carries everything gpunda knows about an operator: its MXNet name
and aliases, the parameter schema (parsing MXNet's string forms), input names,
all/visible output counts, shape/dtype inference for Symbol, the compute body
(written once against ``xp``), optional sparse kernels, the gradient rule and
the inputs it mutates. ``nd.*``, ``sym.*`` and NDArray methods are generated
from these records.

# NOTE [Gradient rules]
A rule is ``gradient(F, p, ins, outs, ograds) -> list`` (one entry per input,
``None`` where there is no gradient). ``F`` is a namespace of registry ops and
``ins``/``outs``/``ograds`` are arrays of the same kind: during a plain backward
``F`` runs op bodies directly on raw backend arrays (fast, nothing recorded);
with ``create_graph=True`` ``F`` is ``gpunda.nd`` and the arrays are recorded
NDArrays, so the gradient is itself differentiable. Rules therefore use only
``F.<op>(...)``, arithmetic operators and ``.shape``/``.ndim``/``.dtype``.

``OpDef.save`` says what a recorded call keeps for its rule: "inputs",
"outputs", both, or "broadcast" for rules that read the inputs only to sum a
gradient over broadcast axes (add, sub): the inputs are then kept only when
their shapes differ, and otherwise the rule gets ``ins=None`` and passes the
output gradient through.

# NOTE [Mutated inputs and their pass]
``OpDef.mutates`` lists the inputs an op writes in place; ``mutates_in`` says in
which pass MXNet writes them. "forward" (optimizer updates, ``_copyto``-like ops):
the compute body writes them and the dispatcher bumps their versions. "backward"
(BatchNorm's moving statistics; MXNet's BatchNormBackward writes them): the
compute body must leave them alone and ``update(xp, p, ins, outs)`` writes them
from the raw inputs and outputs the node kept, when the engine runs that node's
backward (imperative tape, CachedOp backward, Executor backward) in training mode
after a training-mode forward, once per backward that reaches it. A forward
that no backward follows, or a node no gradient reaches (a BatchNorm over data
nothing differentiates), leaves them untouched, as in MXNet. An op whose own
gradient rule writes them (IdentityAttachKLSparseReg) declares "backward" with no
``update``.
"""
from __future__ import annotations

import ast
from typing import Any, Callable

import numpy as np

from gpunda._core import bf16 as _bf16
from gpunda.base import GpundaError, GpundaTypeError, np_dtype

__all__ = ["Param", "OpDef", "register", "get_op", "all_ops", "REQUIRED", "parse_dtype",
           "Params", "fill_positional_params", "Pointwise", "declare_pointwise", "ViewRule", "declare_view"]


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()

_DTYPE_ALIASES = {"float": "float32", "double": "float64", "half": "float16",
                  "bool_": "bool", "int": "int32", "long": "int64"}
_MX_DTYPES = ("float32", "float64", "float16", "uint8", "int8", "int32", "int64", "bool",
              "int16", "uint16", "uint32", "uint64")


def parse_dtype(value, where="dtype"):
    """A NumPy dtype from a name, NumPy type or dtype; GpundaError otherwise. bfloat16 (the
    name, MXNet's record dtype or ml_dtypes' type) is ml_dtypes' dtype (gpunda/_core/bf16.py)."""
    if isinstance(value, np.dtype):
        return _bf16.dtype() if value == _bf16.MX_RECORD else value
    if isinstance(value, str):
        name = _DTYPE_ALIASES.get(value, value)
        if name in _MX_DTYPES:
            return np.dtype(name)
        if name.strip() == _bf16.NAME:
            return _bf16.dtype()
        # a TypeError too, as numpy.dtype(name) raises in MXNet's Python front end
        raise GpundaTypeError(f"{where}: dtype={value!r} is not a dtype gpunda knows; "
                              f"valid: {', '.join(_MX_DTYPES)}, bfloat16")
    try:
        dt = np_dtype(value)
    except (TypeError, ValueError):
        raise GpundaTypeError(f"{where}: dtype={value!r} is not a dtype") from None
    if dt.name not in _MX_DTYPES and not _bf16.is_bf16(dt):
        raise GpundaError(f"{where}: dtype={dt.name!r} is not supported; valid: "
                          f"{', '.join(_MX_DTYPES)}, bfloat16")
    return dt


def _literal(s):
    s = s.strip()
    if s in ("None", "none", ""):
        return None
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError):
        return s


def _as_int(v, where):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return int(v)
    if isinstance(v, str):
        lit = _literal(v)
        if isinstance(lit, (int, float)) and not isinstance(lit, bool):
            return _as_int(lit, where)
        if v.strip() in ("True", "False"):
            return int(v.strip() == "True")
    raise ValueError(f"expects an integer")


def _as_float(v, where):
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        s = v.strip()
        if s.lower() in ("inf", "+inf", "infinity"):
            return float("inf")
        if s.lower() in ("-inf", "-infinity"):
            return float("-inf")
        if s.lower() == "nan":
            return float("nan")
        try:
            return float(s)
        except ValueError:
            pass
    raise ValueError("expects a number")


def _as_bool(v, where):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip() in ("True", "False", "true", "false", "1", "0"):
        return v.strip() in ("True", "true", "1")
    raise ValueError("expects a boolean (True/False/1/0)")


def _as_tuple(v, where, allow_none_items=False):
    if isinstance(v, str):
        lit = _literal(v)
        if lit is None or isinstance(lit, str):
            raise ValueError("expects a tuple of integers such as (3, 3)")
        v = lit
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, (tuple, list)):
        out = []
        for item in v:
            if item is None and allow_none_items:
                out.append(None)
            elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
                out.append(int(item))
            else:
                raise ValueError("expects a tuple of integers such as (3, 3)")
        return tuple(out)
    if hasattr(v, "__iter__"):
        return _as_tuple(list(v), where, allow_none_items)
    raise ValueError("expects a tuple of integers such as (3, 3)")


class Param:
    """One op parameter: name, kind, default, choices, description.

    kinds: int, float, bool, str, enum, shape, shape_none (items may be None),
    dtype (bfloat16 included, as ml_dtypes' dtype), axis (None, int or
    tuple), floats/ints (tuples), any. ``optional=True`` accepts None/"None".
    """

    __slots__ = ("name", "kind", "default", "choices", "doc", "optional")

    def __init__(self, name, kind, default=REQUIRED, doc="", choices=None, optional=False):
        self.name, self.kind, self.default, self.doc = name, kind, default, doc
        self.choices = tuple(choices) if choices is not None else None
        self.optional = optional or default is None

    def parse(self, value, opname):
        where = f"Operator {opname}"
        try:
            if value is None or (isinstance(value, str) and value.strip() == "None"):
                if self.optional:
                    return None
                raise ValueError("cannot be None")
            k = self.kind
            if k == "int":
                return _as_int(value, where)
            if k == "float":
                return _as_float(value, where)
            if k == "bool":
                return _as_bool(value, where)
            if k == "shape":
                return _as_tuple(value, where)
            if k == "shape_none":
                return _as_tuple(value, where, allow_none_items=True)
            if k == "axis":
                if isinstance(value, str):
                    value = _literal(value)
                    if value is None:
                        return None
                if isinstance(value, (tuple, list)):
                    return _as_tuple(value, where)
                return _as_int(value, where)
            if k in ("dtype", "dtype_bf16"):      # dtype_bf16: amp_cast's, kept as a name
                d = parse_dtype(value, where)
                # choices: the dtypes MXNet's parameter enum lists (parsed once per call
                # signature; the op caches its parsed params)
                if self.choices is not None and d is not None and d.name not in self.choices:
                    raise ValueError(f"is not one of {list(self.choices)}")
                return d
            if k == "enum":
                s = value if isinstance(value, str) else str(value)
                s = s.strip().strip("'\"")
                if s not in self.choices:
                    raise ValueError(f"is not one of {list(self.choices)}")
                return s
            if k == "str":
                return str(value)
            if k == "float_or_tuple":
                if isinstance(value, str):
                    value = _literal(value)
                if isinstance(value, (tuple, list)):
                    return tuple(_as_float(x, where) for x in value)
                return _as_float(value, where)
            if k in ("floats", "ints"):     # mxnet::Tuple<float|int>; a scalar is a 1-tuple
                if isinstance(value, str):
                    value = _literal(value)
                conv = _as_float if k == "floats" else _as_int
                if isinstance(value, (tuple, list)) or hasattr(value, "tolist"):
                    return tuple(conv(x, where) for x in (value.tolist() if hasattr(
                        value, "tolist") else value))
                return (conv(value, where),)
            return value
        except ValueError as e:
            raise GpundaError(f"Operator {opname}: parameter {self.name}={value!r} "
                              f"{e}") from None
        except GpundaError as e:
            raise GpundaError(f"Operator {opname}: parameter {self.name}: {e}") from None


def to_attr_string(value):
    """A parameter value as MXNet writes it in symbol JSON attrs."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, np.dtype):
        return "bfloat16" if value == _bf16.MX_RECORD else value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, (tuple, list)):
        # MXNet writes str(value): a list keeps its brackets
        inner = ", ".join("None" if v is None else to_attr_string(v) for v in value)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if value is None:
        return "None"
    if isinstance(value, np.floating):   # before float: np.float64 is one
        return str(value)               # str(np.float32(0.3)) is '0.3', as MXNet writes it
    if isinstance(value, np.integer):
        return repr(value.item())
    if isinstance(value, float):
        return repr(value)
    return str(value)


class Params:
    """Parsed parameters of one call; attribute access by name. Immutable by convention.

    ``_given`` keeps the parameters the caller set (for symbol attrs).
    """

    __slots__ = ("__dict__",)

    def __init__(self, values, given):
        self.__dict__.update(values)
        self.__dict__["_given"] = given

    def __repr__(self):
        items = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if k != "_given")
        return f"Params({items})"

    def attrs(self):
        """The given parameters as MXNet's string attrs."""
        return {k: to_attr_string(v) for k, v in self._given.items()}

    def replace(self, **kw):
        values = {k: v for k, v in self.__dict__.items() if k != "_given"}
        values.update(kw)
        given = dict(self._given)
        given.update(kw)
        return Params(values, given)


def _one(x):
    return 1


def fill_positional_params(op, extra, kwargs, nargs):
    """Give parameters passed positionally after the inputs (MXNet allows
    ``nd.sum(x, 1)``) to ``op``'s parameters not already in ``kwargs``, in schema
    order; ``nargs`` is the call's positional count, for the error."""
    free = [s.name for s in op.params if s.name not in kwargs]
    if op.key_var_num_args in free:
        free.remove(op.key_var_num_args)
    if len(extra) > len(free):
        raise GpundaError(f"Operator {op.name}: too many positional arguments ({nargs}); "
                          f"pass parameters by name")
    kwargs.update(zip(free, extra))


class OpDef:
    """The declaration of one operator. See the module docstring."""

    out_ctx = None      # callable(p) -> Context when outputs live on another context (_copyto)
    pointwise = None    # a Pointwise record (NOTE [Pointwise records]) for fusable ops
    view = None         # a ViewRule (NOTE [View steps] in _engine/fusion/views.py)
    # callable(p) -> (params of the op without its bias, the pointwise bias-add op's name,
    # its params as a dict) or None:
    # how the fusion pass may split a GEMM's bias add off (NOTE [GEMM epilogues])
    epilogue = None

    def __init__(self, name, compute, *, params=(), inputs=("data",), num_outputs=1,
                 num_visible=None, gradient=None, nondiff=False, aliases=(),
                 infer_shape=None, infer_type=None, mutates=(), wants_ctx=False,
                 random=False, doc="", family="", save=("inputs", "outputs"),
                 output_names=None, key_var_num_args=None, sparse=None, capture="ok",
                 check=None, aux_inputs=(), no_grad_inputs=(), ufunc=None,
                 method=None, hidden=False, grad_need=False, sparse_out=False,
                 extra_params=False, mutates_in="forward", update=None):
        self.name = name
        self.compute = compute
        self.params = tuple(params)
        self.param_map = {p.name: p for p in self.params}
        self.inputs = inputs          # tuple of names, or callable(p) -> names (variadic)
        self.num_outputs = num_outputs  # int or callable(p)
        self.num_visible = num_visible if num_visible is not None else num_outputs
        self.gradient = gradient
        self.nondiff = nondiff
        self.aliases = tuple(aliases)
        self.infer_shape = infer_shape
        self.infer_type = infer_type
        # input indices the op writes in place: a tuple, or for variadic ops
        # callable(p) -> indices; either way falsy only when it mutates nothing, so
        # the dispatcher's ``if op.mutates`` stays the one test ops without state pay
        self.mutates = mutates if callable(mutates) else tuple(mutates)
        # NOTE [Mutated inputs and their pass]: fwd_mutates is what the dispatcher tests
        # after a compute (falsy for ops that write nothing, or write in their backward);
        # update is the backward's writer, None unless mutates_in == "backward"
        if mutates_in not in ("forward", "backward"):
            raise GpundaError(f"OpDef {name}: mutates_in={mutates_in!r} must be 'forward' "
                              f"or 'backward'")
        if update is not None and (mutates_in != "backward" or not self.mutates):
            raise GpundaError(f"OpDef {name}: update= needs mutates= and "
                              f"mutates_in='backward'")
        self.mutates_in = mutates_in
        self.fwd_mutates = self.mutates if mutates_in == "forward" else ()
        self.update = update
        self.wants_ctx = wants_ctx
        self.random = random
        self.doc = doc
        self.family = family
        self.save = save
        # what a recorded call keeps, read by autograd on every record: save_in is
        # 0 (nothing), 1 (the inputs) or 2 ("broadcast": only when shapes differ)
        self.save_in = 2 if "broadcast" in (save or ()) else int("inputs" in (save or ()))
        self.save_out = "outputs" in (save or ())
        self.output_names = output_names
        self.key_var_num_args = key_var_num_args
        self.sparse = sparse or {}
        self.capture = capture        # "ok" or a reason it cannot join a CUDA graph
        self.check = check
        # input names that are auxiliary states, or callable(p) -> names (see aux_names)
        self.aux_inputs = aux_inputs if callable(aux_inputs) else tuple(aux_inputs)
        # keyword arguments outside the schema are kept, as strings, in p._extra (Custom)
        self.extra_params = extra_params
        self.no_grad_inputs = tuple(no_grad_inputs)
        self.ufunc = ufunc
        self.method = method          # NDArray method name, when it differs
        self.hidden = hidden          # internal op, not exported as nd.<name>
        # the rule takes need= (need[i] truthy when input i wants a gradient) and may skip
        # gradients nobody asked for
        self.grad_need = grad_need
        # may return sparse storage from dense inputs (cast_storage): invoke always
        # dispatches it through the storage-type path, which wraps the right class
        self.sparse_out = sparse_out
        self.fixed_nout = num_outputs if isinstance(num_outputs, int) else None
        self.fixed_nvis = self.num_visible if isinstance(self.num_visible, int) else None
        self._cache = {}
        self._scalar_cache = {}
        self.variadic = callable(inputs)
        self.required = tuple(p.name for p in self.params if p.default is REQUIRED)
        self.default_params = None if self.required else self._build({})

    # -- parameters ---------------------------------------------------------
    def _build(self, kwargs):
        values = {}
        given = {}
        extra = {}
        pm = self.param_map
        for k, v in kwargs.items():
            spec = pm.get(k)
            if spec is None and self.extra_params:
                extra[k] = given[k] = v if isinstance(v, str) else str(v)
                continue
            if spec is None and not pm:
                continue      # MXNet ignores keyword arguments of ops without a parameter struct
            if spec is None:
                valid = ", ".join(p.name for p in self.params) or "none"
                raise GpundaError(f"Operator {self.name}: unknown parameter {k}={v!r}; "
                                  f"valid parameters: {valid}")
            values[k] = given[k] = spec.parse(v, self.name)
        for spec in self.params:
            if spec.name not in values:
                if spec.default is REQUIRED:
                    raise GpundaError(f"Operator {self.name}: required parameter "
                                      f"{spec.name} is missing")
                values[spec.name] = spec.default
        if self.extra_params:
            values["_extra"] = extra
        p = Params(values, given)
        if self.check is not None:
            self.check(p)
        return p

    def parse_params(self, kwargs):
        """Parsed ``Params`` for keyword arguments (cached per distinct call)."""
        if not kwargs:
            p = self.default_params
            if p is None:
                return self._build(kwargs)
            return p
        try:
            key = tuple(kwargs.items())
            p = self._cache.get(key)
        except TypeError:      # an unhashable value: a list of numbers (lrs=[...]) still caches
            key = self._list_key(kwargs)
            if key is None:
                return self._build(kwargs)
            p = self._cache.get(key)
        if p is None:
            p = self._build(kwargs)
            if len(self._cache) < 4096:
                self._cache[key] = p
        return p

    _TUPLE_KINDS = frozenset(("floats", "ints", "shape", "shape_none", "axis"))

    def _list_key(self, kwargs):
        """A cache key for kwargs whose unhashable values are lists of numbers given to
        parameters parsed into tuples (the multi-tensor optimizers' ``lrs``/``wds``), so
        the parsed Params never holds the caller's list; None otherwise."""
        items = []
        for k, v in kwargs.items():
            if type(v) is list:
                spec = self.param_map.get(k)
                if spec is None or spec.kind not in self._TUPLE_KINDS:
                    return None
                v = ("__list__",) + tuple(v)
            items.append((k, v))
        try:
            key = tuple(items)
            hash(key)
        except TypeError:
            return None
        return key

    # -- structure ------------------------------------------------------------
    def input_names(self, p, n=None):
        """Input names for params ``p`` (ops whose inputs depend on params compute them)."""
        if self.variadic:
            return tuple(self.inputs(p))
        return self.inputs

    def mutated(self, p):
        """Indices of the inputs the call with params ``p`` writes in place."""
        m = self.mutates
        return tuple(m(p)) if callable(m) else m

    def aux_names(self, p):
        """Names of the inputs that are auxiliary states for params ``p``."""
        aux = self.aux_inputs
        return tuple(aux(p)) if callable(aux) else aux

    def n_outputs(self, p):
        n = self.fixed_nout
        return n if n is not None else self.num_outputs(p)

    def n_visible(self, p):
        n = self.fixed_nvis
        return n if n is not None else self.num_visible(p)

    _described = None

    def describe(self):
        """A docstring listing inputs and params (made once: nd and sym, and every alias,
        share it)."""
        if self._described is None:
            self._described = self._describe()
        return self._described

    def _describe(self):
        lines = [self.doc.strip() or f"The {self.name} operator.", ""]
        if not self.variadic:
            lines.append("Inputs: " + (", ".join(self.inputs) or "none"))
        else:
            lines.append("Inputs: variable number")
        if self.params:
            lines.append("Parameters:")
            for s in self.params:
                d = "required" if s.default is REQUIRED else f"default {s.default!r}"
                ch = f", one of {list(s.choices)}" if s.choices else ""
                lines.append(f"    {s.name} ({s.kind}, {d}{ch}){': ' + s.doc if s.doc else ''}")
        if self.aliases:
            lines.append("Aliases: " + ", ".join(self.aliases))
        return "\n".join(lines)

    def __repr__(self):
        return f"<OpDef {self.name}>"


# NOTE [Pointwise records]
# An element-wise op declares, once, beside its OpDef, what one output element is as a
# scalar expression of the same element of its inputs, and each input's gradient as an
# expression of the inputs, the output and the output gradient. The fusion pass
# (_engine/fusion/) reads these records to generate one CUDA kernel per group of such ops
# and a NumPy evaluator of the same expression; nothing else restates the ops' semantics.
# The language is Python's expression syntax: names are the op's input names (``data``,
# ``lhs``, ``rhs``, ...), its parameters (``scalar``, ``slope``: baked in as constants),
# ``out`` (output 0; ``out1`` for a second output) and ``g`` (output 0's gradient);
# numbers; + - * / and unary -; comparisons (1 or 0); and the functions listed in
# _engine/fusion/expr.py (exp, log, log1p, expm1, sqrt, rsqrt, tanh, sigmoid, erf, abs,
# sign, floor, sin, cos, max, min, pow, where(c, a, b)). Arithmetic runs in the compute type (float for
# float16 and float32, double for float64).
class Pointwise:
    """How one element-wise op computes one element (NOTE [Pointwise records]).

    ``fwd``: one expression per output (a str for one output), or ``callable(p)``
    returning a tuple of them, or a str reason when these params are not element-wise.
    ``grads``: one expression (or None: no gradient) per input, or ``callable(p)``.
    ``when``: ``callable(p, train)`` -> None when fusable, else a reason (Dropout while
    training draws random numbers). ``broadcast``: "same" (inputs of one shape, the
    elemwise_ ops), "numpy" (NumPy broadcasting, the broadcast_ ops), "channel" (input 0 is
    the data, the others vectors along its axis ``p.axis``: BatchNorm). ``same_dtype``:
    indices of the inputs that must share a dtype (None: all); ``out_dtype``:
    ``callable(p, in_dtypes)`` (None: the first same-dtype input's, as MXNet infers).
    ``split``: ``(producer op, pointwise op)`` names for a call ``when`` refuses (Dropout
    while it drops): the producer makes the op's last output from its inputs (one kernel
    the pass does not fuse), the pointwise op, with the same params, makes the other
    outputs from the inputs and that output, and can fuse (NOTE [Fusion partition]).
    """

    __slots__ = ("fwd", "grads", "when", "broadcast", "same_dtype", "out_dtype", "split")

    def __init__(self, fwd, grads=(), *, when=None, broadcast="same", same_dtype=None,
                 out_dtype=None, split=None):
        if broadcast not in ("same", "numpy", "channel"):
            raise GpundaError(f"Pointwise: broadcast={broadcast!r} must be 'same', 'numpy' "
                              f"or 'channel'")
        self.fwd, self.grads, self.when = fwd, grads, when
        self.broadcast, self.same_dtype, self.out_dtype = broadcast, same_dtype, out_dtype
        self.split = split

    def spec(self, p, train):
        """``(fwd expressions, grad expressions)`` for params ``p`` in training mode
        ``train``, or a str saying why this call is not element-wise."""
        if self.when is not None:
            why = self.when(p, train)
            if why:
                return why
        if callable(self.fwd):
            fwd = self.fwd(p)       # a tuple of expressions, or a str reason
            if fwd is None or isinstance(fwd, str):
                return fwd or "no element-wise form for these parameters"
        else:
            fwd = (self.fwd,) if isinstance(self.fwd, str) else self.fwd
        grads = self.grads(p) if callable(self.grads) else self.grads
        return tuple(fwd), tuple(grads)


def declare_pointwise(names, fwd, grads=(), **kw):
    """Attach one ``Pointwise`` record to each op in ``names`` (a name or a list); the
    ops' family module calls this beside their OpDefs."""
    rec = Pointwise(fwd, grads, **kw)
    for n in ([names] if isinstance(names, str) else names):
        get_op(n).pointwise = rec
    return rec


class ViewRule:
    """How an op's result can share its input's memory (NOTE [View steps] in
    _engine/fusion/views.py): ``compute(xp, p, *ins)`` returns the op's outputs as views
    of input 0 where the array library can make them (it copies otherwise) and raises the
    op's own errors; ``reshape_grad``: the gradient of input 0 is the output gradient
    reshaped to input 0's shape (a view too), else the op's own rule makes it."""

    __slots__ = ("compute", "reshape_grad")

    def __init__(self, compute, reshape_grad=False):
        self.compute, self.reshape_grad = compute, reshape_grad


def declare_view(names, compute, reshape_grad=False):
    """Attach a ``ViewRule`` to each op in ``names``; beside the ops' OpDefs, as
    ``declare_pointwise``."""
    rule = ViewRule(compute, reshape_grad)
    for n in ([names] if isinstance(names, str) else names):
        get_op(n).view = rule
    return rule


_REGISTRY: dict[str, OpDef] = {}
_CANONICAL: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    """Add ``op`` under its name and aliases; a duplicate name is a bug."""
    for n in (op.name,) + op.aliases:
        if n in _REGISTRY and _REGISTRY[n] is not op:
            raise GpundaError(f"op {n!r} registered twice")
        _REGISTRY[n] = op
    _CANONICAL[op.name] = op
    if on_register is not None:     # bfloat16 in use: wrap the new op too (ops/_bf16.py)
        on_register(op)
    return op


on_register = None      # set by gpunda.ops._bf16.install


def add_alias(alias, name):
    """Register ``alias`` as another name of the op registered as ``name``."""
    op = get_op(name)
    have = _REGISTRY.get(alias)
    if have is op:
        return op
    if have is not None:
        raise GpundaError(f"op alias {alias!r} of {op.name!r} is already {have.name!r}")
    op.aliases = op.aliases + (alias,)
    _REGISTRY[alias] = op
    return op


def get_op(name) -> OpDef:
    """The OpDef registered as ``name`` (or alias); GpundaError for an unknown name."""
    op = _REGISTRY.get(name)
    if op is None:
        raise GpundaError(f"unknown operator {name!r}")
    return op


def all_ops():
    """Every registered op once (canonical names)."""
    return dict(_CANONICAL)


def all_names():
    return dict(_REGISTRY)
