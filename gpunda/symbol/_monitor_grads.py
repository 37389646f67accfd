"""The backward half of an executor's monitor: each op's input gradients, by name.

MXNet's executor calls the monitor callback for the outputs of its backward
nodes too (``fc1_backward_output0`` ... one per input of ``fc1``; a node with
one input gives ``act1_backward_output``). gpunda's executor runs backward as
one cached plan with no per-node results, so, only while a monitor is
installed, this replays the graph node by node: each node runs on detached
copies of its inputs (so aux states such as BatchNorm's moving stats are not
updated twice), then, newest node first, its outputs' accumulated gradients
flow through it to those copies. A random op (Dropout) draws a new mask here,
so its monitored gradients are those of another sample of the same op.
"""
from __future__ import annotations

__all__ = ["report_gradients"]


def _backward_names(node):
    n = len(node.inputs)
    if n == 1:
        return [f"{node.name}_backward_output"]
    return [f"{node.name}_backward_output{i}" for i in range(n)]


def report_gradients(executor, callback, out_grads, is_train):
    """Call ``callback(name, grad)`` for every input gradient of every op of the graph."""
    from gpunda import autograd
    from gpunda import ndarray as nd
    from gpunda._engine.imperative import invoke_parsed
    sym = executor._optimized
    order = sym._topo()
    values, leaves, outs = {}, {}, {}
    for n in order:
        if n.op is None:
            values[(id(n), 0)] = (executor.arg_dict.get(n.name) if n.name in executor.arg_dict
                                  else executor.aux_dict[n.name])
            continue
        with autograd.pause():
            ins = [values[(id(c), i)].copy() for c, i in n.inputs]
        for x in ins:
            x.attach_grad()
        with autograd.record(train_mode=is_train):
            r = invoke_parsed(n.op, tuple(ins), n.p)
        rs = list(r) if isinstance(r, (list, tuple)) else [r]
        leaves[id(n)], outs[id(n)] = ins, rs
        for i, x in enumerate(rs):
            values[(id(n), i)] = x
    grads = {}
    for k, (n, i) in enumerate(sym._outputs):
        g = out_grads[k] if out_grads is not None and k < len(out_grads) else None
        grads[(id(n), i)] = g if g is not None else nd.ones_like(values[(id(n), i)])
    for n in reversed(order):
        if n.op is None:
            continue
        rs = outs[id(n)]
        heads = [grads.get((id(n), i)) for i in range(len(rs))]
        if all(h is None for h in heads):
            continue        # nothing downstream needs this node's gradient
        heads = [h if h is not None else nd.zeros_like(x) for h, x in zip(heads, rs)]
        autograd.backward(rs, heads, train_mode=is_train)
        for name, (c, i), x in zip(_backward_names(n), n.inputs, leaves[id(n)]):
            g = x.grad
            callback(name, g)
            key = (id(c), i)
            grads[key] = g.copy() if key not in grads else grads[key] + g
