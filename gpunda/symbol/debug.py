"""``Executor.debug_str``: the executed graph in MXNet's layout and its memory estimate.

The memory line ("Total N MB allocated") is the size of the buffer pool a
liveness plan needs for the executor's internal arrays: every op output gets a
buffer that returns to the pool after its last reader, and a later array of no
larger size reuses it. Arguments and auxiliary states are the caller's arrays
and are not counted. When the executor computes gradients, the arrays the
backward pass reads stay alive to the end, and the gradient arrays of the
nodes on the way to a gradient-requiring argument are planned the same way in
reverse order; a graph whose gradient is stopped (BlockGrad) needs no more
than its inference plan.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import np_dtype

__all__ = ["executor_debug_str"]


class _Pool:
    def __init__(self):
        self.free, self.total = [], 0

    def take(self, nbytes):
        fits = [b for b in self.free if b >= nbytes]
        if fits:
            b = min(fits)
            self.free.remove(b)
            return b
        self.total += nbytes
        return nbytes

    def give(self, b):
        self.free.append(b)


def _sizes(sym, ex):
    from gpunda.symbol.infer import infer_graph
    from gpunda.symbol.symbol import _var_shape
    given = {k: tuple(v.shape) for k, v in list(ex.arg_dict.items()) + list(ex.aux_dict.items())}
    types = {k: np_dtype(v.dtype) for k, v in list(ex.arg_dict.items()) +
             list(ex.aux_dict.items())}
    shapes, dtypes = infer_graph(sym, given, types, _var_shape)

    def nbytes(key):
        s, t = shapes.get(key), dtypes.get(key)
        if s is None or any(d < 0 for d in s):
            return 0
        return int(np.prod(s, dtype=np.int64)) * (t.itemsize if t is not None else 4)
    return nbytes


def _stops(op):
    return op.nondiff or op.gradient is None or op.name == "BlockGrad"


def _plan_bytes(sym, ex):
    order = sym._topo()
    ops = [n for n in order if n.op is not None]
    nbytes = _sizes(sym, ex)
    wants = {n for n, r in ex._grad_req.items() if r != "null"}
    active = set()          # nodes whose outputs carry a gradient to some argument
    for n in order:
        if n.op is None:
            if n.name in wants:
                active.add(id(n))
        elif not _stops(n.op) and \
                any(id(c) in active for c, _ in n.inputs):
            active.add(id(n))
    # ... and that a head's gradient reaches (BlockGrad stops it)
    reached = {id(n) for n, _ in sym._outputs}
    for n in reversed(ops):
        if id(n) in reached and not _stops(n.op):
            reached.update(id(c) for c, _ in n.inputs)
    active &= reached
    training = any(id(n) in active for n in ops)
    heads = {(id(n), i) for n, i in sym._outputs}
    last = {}
    for k, n in enumerate(ops):
        for c, i in n.inputs:
            last[(id(c), i)] = k
    kept = set()
    if training:
        kept = {(id(c), i) for n in ops if id(n) in active for c, i in n.inputs}
    pool, held = _Pool(), {}
    for k, n in enumerate(ops):
        for i in range(n.nout):
            held[(id(n), i)] = pool.take(nbytes((id(n), i)))
        for c, i in n.inputs:
            key = (id(c), i)
            if key in held and last.get(key) == k and key not in heads and key not in kept:
                pool.give(held.pop(key))
        for i in range(n.nout):     # an output nobody reads (a hidden one) is dropped
            key = (id(n), i)
            if key not in last and key not in heads and key not in kept:
                pool.give(held.pop(key))
    if training:
        grads = {}
        for n in reversed(ops):
            if id(n) not in active:
                continue
            for c, i in n.inputs:
                key = (id(c), i)
                if id(c) in active and c.op is not None and key not in grads:
                    grads[key] = pool.take(nbytes(key))
            for i in range(n.nout):
                b = grads.pop((id(n), i), None)
                if b is not None:
                    pool.give(b)
    return pool.total


def executor_debug_str(ex):
    sym = ex.get_optimized_symbol()
    lines = ["Symbol Outputs:"]
    for k, (n, i) in enumerate(sym._outputs):
        lines.append(f"\toutput[{k}]={n.name}({i})")
    for n in sym._topo():
        if n.op is None:
            lines.append(f"Variable:{n.name}")
            continue
        lines.append("--------------------")
        lines.append(f"Op:{n.op.name}, Name={n.name}")
        lines.append("Inputs:")
        for k, (c, i) in enumerate(n.inputs):
            ver = " version=0" if c.op is None else ""
            lines.append(f"\targ[{k}]={c.name}({i}){ver}")
        params = {k: v for k, v in n.attrs.items() if k in n.op.param_map}
        if params:
            lines.append("Attrs:")
            lines.extend(f"\t{k}={v}" for k, v in params.items())
    mb = _plan_bytes(sym, ex) >> 20
    lines.append(f"Total {mb} MB allocated")
    return "\n".join(lines) + "\n"
