"""Graph rewrites an Executor applies before running a Symbol (MXNet's graph passes).

Common-subexpression elimination (MXNet's ``MXNET_ELIMINATE_COMMON_EXPR``, on by
default): two op nodes with the same operator, the same attributes and the same
inputs compute the same values, so one of them is kept. Ops that draw random
numbers, use the context or write into their inputs are never merged. When
merging leaves two graph outputs on one entry, a ``_copy`` keeps the outputs
distinct arrays, as MXNet's pass does.
"""
from __future__ import annotations

import os

from gpunda.ops.registry import get_op
from gpunda.symbol.symbol import Symbol, _Node

__all__ = ["optimize", "eliminate_common_expr", "concretize_shapes", "bound_dtypes_win"]


def optimize(sym):
    """``sym`` as an Executor runs it (CSE unless MXNET_ELIMINATE_COMMON_EXPR=0)."""
    if os.environ.get("MXNET_ELIMINATE_COMMON_EXPR", "1").strip() in ("0", "false", "False"):
        return sym
    return eliminate_common_expr(sym)


def _mergeable(op):
    return not (op.random or op.wants_ctx or op.mutates or op.name == "Dropout")


def eliminate_common_expr(sym):
    """A Symbol computing the same outputs with duplicate op nodes merged."""
    canon = {}      # id(node) -> node that replaces it
    seen = {}       # signature -> node
    for n in sym._topo():
        if n.op is None:
            canon[id(n)] = n
            continue
        ins = [(canon[id(c)], i) for c, i in n.inputs]
        key = None
        if _mergeable(n.op):
            key = (n.op.name, tuple(sorted(n.attrs.items())),
                   tuple((id(c), i) for c, i in ins))
            hit = seen.get(key)
            if hit is not None:
                canon[id(n)] = hit
                continue
        same = all(c is o for (c, _), (o, _) in zip(ins, n.inputs))
        node = n if same else _Node(n.op, n.name, dict(n.attrs), ins, n.p)
        canon[id(n)] = node
        if key is not None:
            seen[key] = node
    outs, used = [], set()
    copy_op = get_op("_copy")
    for n, i in sym._outputs:
        e = (canon[id(n)], i)
        if (id(e[0]), i) in used:
            # two outputs on one entry would be one array: isolate it with a copy
            cp = _Node(copy_op, f"{e[0].name}_copy{len(outs)}", {}, [e],
                       copy_op.parse_params({}))
            e = (cp, 0)
        used.add((id(e[0]), e[1]))
        outs.append(e)
    return Symbol(outs)


def concretize_shapes(sym, shapes):
    """``sym`` with creation ops whose ``shape`` has unknown (-1) entries given the shapes
    inferred from the bound arrays ``shapes`` (name -> shape): their compute needs them."""
    order = sym._topo()
    from gpunda.util import is_np_shape
    unknown_at = -1 if is_np_shape() else 0   # legacy shapes: a 0 dimension is unknown too

    from gpunda.ops.tensor.creation import open_range, closed_range

    def open_shape(n):
        if open_range(n):       # arange(infer_range=True): its length comes from the graph
            return True
        shape = getattr(n.p, "shape", None)
        if shape is None or n.inputs:
            return False
        # a sampler's legacy shape=() is unknown as a whole
        return any(d <= unknown_at for d in shape) or (
            not shape and unknown_at == 0 and n.op.random)
    if not any(n.op is not None and open_shape(n) for n in order):
        return sym
    from gpunda.symbol.infer import infer_graph, known
    from gpunda.symbol.symbol import _var_shape
    inferred, _ = infer_graph(sym, shapes, {}, _var_shape)
    canon = {}
    for n in order:
        if n.op is None:
            canon[id(n)] = n
            continue
        ins = [(canon[id(c)], i) for c, i in n.inputs]
        node = n
        if open_shape(n):
            s = inferred.get((id(n), 0))
            if known(s) and open_range(n):
                p = closed_range(n.p, s[0])
                node = _Node(n.op, n.name, dict(n.attrs, stop=repr(p.stop)), [], p)
            elif known(s):
                attrs = dict(n.attrs, shape=str(tuple(s)))
                node = _Node(n.op, n.name, attrs, [], n.p.replace(shape=tuple(s)))
        elif any(c is not o for (c, _), (o, _) in zip(ins, n.inputs)):
            node = _Node(n.op, n.name, dict(n.attrs), ins, n.p)
        canon[id(n)] = node
    return Symbol([(canon[id(n)], i) for n, i in sym._outputs])


def bound_dtypes_win(sym):
    """``sym`` without the variables' ``__dtype__`` hints: an executor's bound arrays
    decide the dtypes (MXNet's type inference starts from them and reads the hints only
    for what is still unknown)."""
    order = sym._topo()
    if not any(n.op is None and "__dtype__" in n.attrs for n in order):
        return sym
    canon = {}
    for n in order:
        if n.op is None:
            attrs = {k: v for k, v in n.attrs.items() if k != "__dtype__"}
            canon[id(n)] = _Node(None, n.name, attrs, [], None) if len(attrs) != len(n.attrs) \
                else n
            continue
        ins = [(canon[id(c)], i) for c, i in n.inputs]
        same = all(c is o for (c, _), (o, _) in zip(ins, n.inputs))
        canon[id(n)] = n if same else _Node(n.op, n.name, dict(n.attrs), ins, n.p)
    return Symbol([(canon[id(n)], i) for n, i in sym._outputs])
