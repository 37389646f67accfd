"""``_CachedOp`` as a registry op: a whole graph run as one node (MXNet 1.9.1 registers it
in ``src/imperative/cached_op.cc``). The graph is the ``subgraph`` parameter, symbol JSON
(``make_subgraph`` in MXNet's tests builds it with ``mx.sym._internal._CachedOp(*inputs,
subgraph=json)``), or else the node's own subgraph (the node's "subgraphs" in JSON, as
the partitioning pass makes it: NOTE [Subgraph partitioning] in _frontend/subgraph.py).

The node's inputs are the subgraph's inputs in ``list_inputs()`` order and carry their
names; those that are auxiliary states inside the subgraph (BatchNorm's moving
statistics) are auxiliary states of the node too, written in place when the subgraph
updates them. Its outputs are the subgraph's outputs. Shapes and dtypes are inferred
inside the subgraph. The body runs as a CachedOp of the subgraph (hooks.CachedOp, as the
control-flow bodies: NOTE [Control-flow bodies] in loops.py); its gradient, the op
``_backward_CachedOp``, re-runs the body on copies of the auxiliary states (they are
updated once per forward, as in MXNet) and applies the body's own rules. It is
once-differentiable.

(A CachedOp call recorded by ``autograd.get_symbol`` is a different node of the same
name, built by the engine; see ``_engine/cached_op.py``.)
"""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda._core import hooks
from gpunda.ops._util import not_differentiable
from gpunda.ops.raw import raw_namespace
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops.control_flow.loops import _back_types, _gradient as _via, _infer_sub

_NAME = "_CachedOp"


class _Body:
    """What one subgraph JSON text gives: the Symbol, its CachedOp and its input roles."""

    __slots__ = ("sym", "cop", "inputs", "aux", "mutated", "outputs")

    def __init__(self, text=None, sym=None):
        if sym is None:
            if hooks.symbol_from_json is None:
                raise hooks.missing("symbol_from_json", f"Operator {_NAME}")
            try:
                sym = hooks.symbol_from_json(text)
            except GpundaError as e:
                raise GpundaError(f"Operator {_NAME}: subgraph is not a valid symbol JSON: "
                                  f"{e}") from None
        self.sym = sym
        self.inputs = tuple(sym.list_inputs())
        aux = set(sym.list_auxiliary_states())
        self.aux = tuple(n for n in self.inputs if n in aux)
        self.mutated = tuple(i for i, n in enumerate(self.inputs) if n in aux)
        self.outputs = _output_names(sym)
        self.cop = None


def _output_names(sym):
    """The subgraph's output names as MXNet's CachedOp lists them: an entry that is an
    output again is given through a ``_copy`` node, ``<node>_copy0``; the common-expression
    pass merges the further copies into that one, and its repeats become
    ``<node>_copy0_<k>_copy`` (cached_op.h CreateForwardGraph, then EliminateCommonExpr)."""
    names, repeats = [], {}
    for (node, i), name in zip(sym._outputs, sym.list_outputs()):
        k = repeats.get((id(node), i))
        repeats[(id(node), i)] = 0 if k is None else k + 1
        if k is None:
            names.append(name)
        elif k == 0:
            names.append(f"{node.name}_copy0_output")
        else:
            names.append(f"{node.name}_copy0_{k - 1}_copy_output")
    return tuple(names)


_bodies = {}       # subgraph text -> _Body (the text is the node's identity)


def _body(p):
    b = p.__dict__.get("_body")
    if not p.subgraph:
        subs = p.__dict__.get("_subgraphs")
        if not subs:
            raise GpundaError(f"Operator {_NAME}: no subgraph: give the graph as "
                              f"subgraph=<symbol JSON> (sym.tojson())")
        if b is None or b.sym is not subs[0]:   # (params copied from another node's)
            b = p.__dict__["_body"] = _Body(sym=subs[0])
    elif b is None:
        b = _bodies.get(p.subgraph)
        if b is None:
            if len(_bodies) > 64:
                _bodies.pop(next(iter(_bodies)))
            b = _bodies[p.subgraph] = _Body(p.subgraph)
        p.__dict__["_body"] = b
        # the shared inference helpers read the subgraph from here (as control-flow nodes)
        p.__dict__["_subgraphs"] = [b.sym]
    return b


def _cop(p):
    b = _body(p)
    if b.cop is None:
        b.cop = hooks.CachedOp(b.sym)
    return b.cop


def subgraph_symbol(p):
    """The graph a ``_CachedOp`` node with params ``p`` runs."""
    return _body(p).sym


def _check(p):
    # no text: the graph comes with the node (its "subgraphs", attached after parsing)
    if p.subgraph == "":
        return
    if not isinstance(p.subgraph, str) or not p.subgraph.strip():
        raise GpundaError(f"Operator {_NAME}: subgraph must be the JSON text of a Symbol "
                          f"(sym.tojson()), got {p.subgraph!r}")
    _body(p)


def _forward(xp, p, *arrays, ctx=None):
    b = _body(p)
    if len(arrays) != len(b.inputs):
        raise GpundaError(f"Operator {_NAME}: the subgraph has {len(b.inputs)} inputs "
                          f"({', '.join(b.inputs)}) but {len(arrays)} were given")
    res = _cop(p)._compute(xp, ctx, list(arrays), False)[1]
    return tuple(res) if len(res) > 1 else res[0]


def _backward(xp, p, *arrays, ctx=None):
    b = _body(p)
    n = len(b.outputs)
    ograds, ins = arrays[:n], arrays[n:]
    cop = _cop(p)
    # the re-run forward must not write again what the forward wrote: those inputs are
    # copied; BatchNorm's moving stats are written by the backward itself (NOTE [Mutated
    # inputs and their pass] in ops/registry.py), into the caller's arrays
    again = cop._fwd_mutated_inputs
    ins = [a.copy() if i in again else a for i, a in enumerate(ins)]
    return tuple(cop._vjp(xp, ctx, raw_namespace(ctx), ins, list(ograds)))


def _gradient(rule):
    def wrapped(F, p, ins, outs, ograds):
        muts = _body(p).mutated
        return [None if i in muts else g for i, g in enumerate(rule(F, p, ins, outs, ograds))]
    return wrapped


def _infer_shape(p, in_shapes):
    shapes = [None if s is None else tuple(s) for s in in_shapes]
    sub_in, sub_out, _, _ = _infer_sub(p, 0, shapes)
    return [s if s is not None else t for s, t in zip(shapes, sub_in)], sub_out


def _infer_type(p, in_types):
    values = list(in_types)
    _, _, sub_t, out_t = _infer_sub(p, 0, [None] * len(values), values)
    return _back_types(values, sub_t, list(range(len(values)))), out_t


_PARAMS = [
    Param("subgraph", "str", "", doc="the graph to run, as symbol JSON (sym.tojson()); "
          "empty: the node's own subgraph"),
    # MXNet's CachedOp flags: accepted; the node runs its plain plan
    Param("static_alloc", "bool", False), Param("static_shape", "bool", False),
    Param("is_dynamic", "bool", False), Param("inline_limit", "int", 2),
    Param("forward_bulk_size", "int", 15), Param("backward_bulk_size", "int", 15),
    Param("data_indices", "shape", ()), Param("param_indices", "shape", ())]

_GRAD = register(OpDef(
    "_backward_CachedOp", _backward, wants_ctx=True, check=_check, params=_PARAMS,
    inputs=lambda p: tuple(f"ograd{i}" for i in range(len(_body(p).outputs))) + _body(p).inputs,
    num_outputs=lambda p: len(_body(p).inputs),
    gradient=not_differentiable("_backward_CachedOp"), save=(),
    capture="a subgraph node runs its own plan", hidden=True, family="control_flow",
    doc="_CachedOp's gradients wrt its inputs."))
register(OpDef(
    _NAME, _forward, wants_ctx=True, check=_check,
    params=_PARAMS,
    inputs=lambda p: _body(p).inputs,
    aux_inputs=lambda p: _body(p).aux,
    mutates=lambda p: _body(p).mutated,
    num_outputs=lambda p: len(_body(p).outputs),
    output_names=lambda p: _body(p).outputs,
    infer_shape=_infer_shape, infer_type=_infer_type,
    gradient=_gradient(_via(_GRAD)), save=("inputs", "outputs"),
    capture="a subgraph node runs its own plan", hidden=True, family="control_flow",
    doc="Runs a graph given as symbol JSON as one node (MXNet's _CachedOp)."))
