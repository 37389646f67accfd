"""Kernels per training step, fused against unfused, and every generated source of a graph.

Counted from the plan, on the CPU: the unfused plan launches one kernel per op in the
forward and one per op gradient in the backward (plus one sum per input a broadcast_ op
broadcast, its gradient's reduction), which is what the issue's "one kernel per op"
means, except that a GEMM op (FullyConnected, Convolution, dot, batch_dot) is charged
the launches its body makes: its GEMM plus its bias add forward, one GEMM (or the bias
sum) per input whose gradient is asked backward; a fused group is one kernel forward and
one backward, plus one sum per group input it broadcast that needs a gradient (a split
bias add's bias, LayerNorm's gamma and beta) unless the backward kernel makes the sums
itself (NOTE [Column sums] in group.py: inputs broadcast over leading axes); a view step (NOTE [View steps]) is no
kernel where its input is C-contiguous (graph inputs are taken so) and one (a copy)
where it reshapes a strided value; a reshape-like view's gradient is a view, no kernel.
Other op bodies that launch several CuPy kernels (LayerNorm, softmax) count once on both
sides, so the ratio understates fusion's effect on real launches where element-wise work
hides inside such ops. ``by_kind`` gives the fused plan's kernels per op kind.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from gpunda._core import hooks
from gpunda._engine.fusion.codegen import contiguous_strides, kernel_source
from gpunda._engine.fusion.group import FusedGroup, Layout, column_sums, store_once
from gpunda._engine.fusion.partition import partition
from gpunda._engine.fusion.views import count_view_kernels

__all__ = ["graph_sources", "count_kernels"]


def _plan(symbol, shapes, dtypes, train):
    from gpunda._engine.cached_op import CachedOp      # same layer; a cycle at import time
    cop = CachedOp(symbol)
    order = symbol._topo()
    given_t = {k: np.dtype(v) for k, v in (dtypes or {}).items()}
    names = [n.name for n in order if n.op is None]
    for n in names:
        given_t.setdefault(n, np.dtype("float32"))
    sh, dt = hooks.infer_graph(symbol, {k: tuple(v) for k, v in shapes.items()}, given_t,
                               hooks.var_shape)
    slot_shape, slot_dtype = {}, {}
    k = 0
    for n in order:
        if n.op is None:
            slot_shape[k], slot_dtype[k] = sh.get((id(n), 0)), dt.get((id(n), 0))
            k += 1
    for n in order:
        if n.op is not None:
            for i in range(n.nout):
                slot_shape[k], slot_dtype[k] = sh.get((id(n), i)), dt.get((id(n), i))
                k += 1
    part = partition(cop._steps, cop._nin, cop._heads, train)
    for t, s in part.like.items():      # a GEMM's result before its bias add
        slot_shape[t], slot_dtype[t] = slot_shape[s], slot_dtype[s]
    groups = [FusedGroup([part.steps[i] for i in ms], [part.specs[i] for i in ms],
                         part.in_slots[g], part.out_slots[g], g)
              for g, ms in enumerate(part.groups)]
    return cop, part, groups, slot_shape, slot_dtype


def _row_op(st, train):
    from gpunda._engine.fusion.expr import parse
    from gpunda._engine.fusion.group import _has_row
    spec = st.op.pointwise.spec(st.p, train)
    return not isinstance(spec, str) and any(_has_row(parse(e)) for e in spec[0])


def _layout(g, slot_shape, slot_dtype):
    shapes = [tuple(slot_shape[s]) for s in g.in_slots]
    return Layout(g, shapes, [np.dtype(slot_dtype[s]) for s in g.in_slots],
                  [contiguous_strides(s) for s in shapes])


def graph_sources(symbol, shapes, dtypes=None, train=False, backward=True):
    """See ``fusion.sources_for``."""
    _, _, groups, ss, sd = _plan(symbol, shapes, dtypes, train)
    out = {}
    for g in groups:
        lay = _layout(g, ss, sd)
        if lay.reason is not None:
            continue
        in_dt = [lay.slot_dtype[s] for s in g.in_slots]
        out_dt = [lay.slot_dtype[s] for s in g.out_slots]
        name, src = kernel_source(g.forward_program(lay), in_dt, out_dt, lay.shape,
                                  lay.strides)
        out[name] = src
        if backward:
            need = [True] * len(g.in_slots)
            have = [True] * len(g.out_slots)
            prog = g.backward_program(lay, need, have)
            red = lay.reduced
            gdt = [np.dtype(np.float64 if d == np.float64 else np.float32) if r else d
                   for d, r in zip(in_dt, red)]
            C = column_sums(lay, red, lay.in_shapes, g.row)
            cols = (C, tuple(red)) if C is not None else None
            if cols is None:
                prog, gdt, _ = store_once(prog, red, gdt)     # as FusedGroup.run_backward
            strides = list(lay.strides) + [contiguous_strides(lay.shape)] * len(out_dt)
            name, src = kernel_source(prog, in_dt + out_dt, gdt, lay.shape, strides, cols)
            out[name] = src
    return list(out.items())


def count_kernels(symbol, shapes, dtypes=None, train=True, grad_inputs=None):
    """``{"forward": (unfused, fused), "backward": (unfused, fused), "step": (unfused,
    fused), "groups": n}`` for one training step of ``symbol``; ``grad_inputs``: the
    input names that need gradients (default: all but those given in ``shapes``, i.e.
    the parameters)."""
    cop, part, groups, ss, sd = _plan(symbol, shapes, dtypes, train)
    names = cop._input_names
    if grad_inputs is None:
        grad_inputs = [n for n in names if n not in shapes]

    def graded(steps, nslots):      # which steps run a gradient, and which slots need one
        req = [False] * nslots
        for k, n in enumerate(names):
            req[k] = n in grad_inputs
        for st in steps:
            if not st.op.nondiff and any(req[s] for s in st.ins):
                for s in st.outs:
                    req[s] = True
        reach = [False] * nslots
        for h in cop._heads:
            reach[h] = True
        has_grad = [False] * len(steps)
        for i in range(len(steps) - 1, -1, -1):
            st = steps[i]
            if st.op.nondiff or not any(reach[s] for s in st.outs) or \
                    not any(req[s] for s in st.ins):
                continue
            has_grad[i] = True
            for s in st.ins:
                if req[s]:
                    reach[s] = True
        return req, has_grad

    def gemm_fwd(st):       # a GEMM op's bias add is a launch of its own
        return 2 if st.op.capture == "gemm" and len(st.ins) > 2 else 1

    def gemm_bwd(st, req):  # a GEMM op's gradient: a GEMM (or bias sum) per input asked
        return max(1, sum(1 for s in st.ins if req[s])) if st.op.capture == "gemm" else 1

    def reductions(st, req):
        rec = st.op.pointwise
        if rec is None or rec.broadcast != "numpy" or _row_op(st, train):
            return 0        # (a row op alone, LayerNorm, makes its vectors' gradients)
        osh = ss.get(st.outs[0])
        return sum(1 for s in st.ins if req[s] and ss.get(s) != osh)

    steps = cop._steps
    req, has_grad = graded(steps, cop._nslots)
    fwd_u = sum(gemm_fwd(st) for st in steps)
    bwd_u = sum(gemm_bwd(st, req) + reductions(st, req)
                for i, st in enumerate(steps) if has_grad[i])
    # the fused plan: part.steps (Dropout split into its mask and a multiply)
    psteps = part.steps
    req, has_grad = graded(psteps, part.nslots)
    in_group = {i for ms in part.groups for i in ms}
    # view steps (NOTE [View steps]): a kernel only where a copy is still needed; a
    # reshape-like view's gradient is a view as well
    views = count_view_kernels(psteps, ss, part.views, in_group)
    fwd_k, bwd_k = Counter(), Counter()     # the fused plan's kernels by kind
    for i, st in enumerate(psteps):
        if i in in_group:
            continue
        fwd_k[st.op.name] += views[i] if i in views else gemm_fwd(st)
        if has_grad[i] and not (i in views and st.op.view.reshape_grad):
            bwd_k[st.op.name] += gemm_bwd(st, req) + reductions(st, req)
    for g, ms in zip(groups, part.groups):
        fwd_k["fused group"] += 1
        if any(has_grad[i] for i in ms):
            lay = _layout(g, ss, sd)
            graded_in = {s for m in g.members for s, t in zip(m.st.ins, m.grads)
                         if t is not None}
            bwd_k["fused group"] += 1
            if lay.reason is None:      # FusedGroup.run_backward's sums, unless the
                need = [bool(req[s]) for s in g.in_slots]   # kernel makes them
                red = [r for r, n in zip(lay.reduced, need) if n]
                shs = [sh for sh, n in zip(lay.in_shapes, need) if n]
                if column_sums(lay, red, shs, g.row) is None:
                    bwd_k["fused group input sum"] += sum(
                        1 for s, r in zip(g.in_slots, lay.reduced)
                        if r and req[s] and s in graded_in)
    fwd_f, bwd_f = sum(fwd_k.values()), sum(bwd_k.values())
    return {"forward": (fwd_u, fwd_f), "backward": (bwd_u, bwd_f),
            "step": (fwd_u + bwd_u, fwd_f + bwd_f), "groups": len(part.groups),
            "split": part.splits, "epilogues": part.epilogues, "views": len(views),
            "view_copies": sum(views.values()),
            "by_kind": {"forward": {k: v for k, v in fwd_k.most_common() if v},
                        "backward": {k: v for k, v in bwd_k.most_common() if v}}}
