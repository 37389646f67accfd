"""``autograd.get_symbol``: the recorded history of an NDArray as a Symbol.

Walks ``Node.inputs`` from ``x._ag``: a variable (``attach_grad``) or an
unrecorded input becomes a Symbol variable, named by the array's ``name``
attribute when it has a string one, else ``var0``, ``var1``, ...; each
recorded op call becomes a node with its params (``p.attrs()``). A recorded
CachedOp call is one ``_CachedOp`` node, as in MXNet (a CachedOp of at most
``inline_limit`` ops records its ops one by one instead, so they appear here).
"""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda.symbol.symbol import Symbol, _Node

__all__ = ["symbol_from_tape"]


def symbol_from_tape(x):
    """A Symbol computing ``x`` (an NDArray or list of them) from its recorded inputs."""
    from gpunda.ndarray.ndarray import NDArray
    from gpunda._engine.cached_op import CACHED_SYMBOL_OPDEF, CachedOpCall
    heads = [x] if isinstance(x, NDArray) else list(x)
    for i, h in enumerate(heads):
        if not isinstance(h, NDArray):
            raise GpundaError(f"get_symbol: head {i} must be an NDArray, got {type(h).__name__}")
        if h._ag is None:
            raise GpundaError(f"get_symbol: head {i} (shape {h.shape}) was not recorded; compute "
                              f"it inside autograd.record() from arrays with attach_grad()")
    memo = {}          # id(tape node) -> list of entries (one per output)
    counter = [0]
    used = set()

    def fresh_name(arr):
        nm = getattr(arr, "name", None) if arr is not None else None
        if isinstance(nm, str) and nm and nm not in used:
            used.add(nm)
            return nm
        while True:
            nm = f"var{counter[0]}"
            counter[0] += 1
            if nm not in used:
                used.add(nm)
                return nm

    def new_var(arr):
        return (_Node(None, fresh_name(arr), {}, [], None), 0)

    # iterative post-order over the tape
    order = []
    seen = set()
    for h in heads:
        stack = [(h._ag[0], False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for e in reversed(node.inputs):
                if e is not None and id(e[0]) not in seen:
                    stack.append((e[0], False))
    for node in order:
        if node.is_leaf:
            var = node.var() if node.var is not None else None
            memo[id(node)] = [new_var(var)]
            continue
        ins = []
        for k, e in enumerate(node.inputs):
            if e is None:
                arr = node.saved_in[k] if node.saved_in is not None else None
                ins.append(new_var(arr))
            else:
                ins.append(memo[id(e[0])][e[1]])
        op = node.op
        if op.name == "_CachedOp" and op.compute is None:
            from gpunda import name as _name
            call = CachedOpCall(node.p.cop)
            sn = _Node(CACHED_SYMBOL_OPDEF, _name.current().get(None, "_cachedop"), {}, ins,
                       call)
            memo[id(node)] = [(sn, i) for i in range(sn.nout)]
            continue
        if getattr(op, "compute", None) is None or not hasattr(node.p, "attrs"):
            raise GpundaError(f"get_symbol: the recorded call of {op.name} cannot be expressed "
                              f"as a Symbol")
        from gpunda import name as _name
        nm = _name.current().get(None, op.name.lower())
        sn = _Node(op, nm, node.p.attrs(), ins, node.p)
        memo[id(node)] = [(sn, i) for i in range(node.nout)]
    return Symbol([memo[id(h._ag[0])][h._ag[1]] for h in heads])
