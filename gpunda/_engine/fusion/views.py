"""View steps: shape-only ops that launch no kernel in a fused plan.

NOTE [View steps]
Reshape, Flatten, expand_dims, squeeze, an equal split (SliceChannel), slice_axis and a
lone identity/_copy change only how memory is read. Imperative calls copy (MXNet's view
rule, DESIGN.md "Views"), but inside a CachedOp plan an intermediate value is never seen
by the user, so the fused plan (NOTE [Fusion in CachedOp]) runs such a step through the
op's ``ViewRule``: its outputs are views of its input where the array library can make
them, which on a GPU launches no kernel (CuPy, as NumPy, copies only when the strides
cannot express the result: a reshape of a non-contiguous array). Consumers read views
through their strides: a fused group's kernel bakes each input's element strides (a split
along the last axis costs index arithmetic), other ops take any layout as they do
imperatively. A reshape-like step's gradient is the output gradient reshaped back, a view
too; a split's and a slice's gradients are the ops' own rules (a concatenation, a
scatter: kernels).

What keeps this correct: a step whose output is a graph head stays a copy (a caller may
keep and write an output, and it must not alias an input or another output), as does one
whose output an op writes (BatchNorm's moving stats in its backward); the static
memory plan sees that a view owns no fresh memory and counts it as a reference to its
source's storage, so nothing writes in place into memory a live view reads (NOTE [Static
memory plan]); graphs whose ops write their inputs in the forward are not touched (NOTE
[Fusion partition]). The element-wise steps fused into groups never write their inputs.
"""
from __future__ import annotations

import copy

import numpy as np

from gpunda.ops.raw import RawF

__all__ = ["apply_views", "count_view_kernels"]

_ops = {}       # id of the op -> its view OpDef


def apply_views(res, heads, derive):
    """Replace the steps of partition ``res`` (outside its groups) that may run as views
    by view steps, noting them in ``res.views`` and ``res.reasons``; ``derive(st, op, ins,
    outs, suffix)`` copies a plan step with another op (partition._derived)."""
    steps = res.steps
    grouped = {i for ms in res.groups for i in ms}
    fixed = set(heads)      # slots that must not be views: heads, and slots an op writes
    readers = {}
    for i, st in enumerate(steps):
        for s in st.ins:
            readers.setdefault(s, []).append(i)
        if st.op.mutates:   # BatchNorm's moving stats (its backward writes them)
            fixed.update(st.ins[k] for k in st.op.mutated(st.p) if k < len(st.ins))

    def candidate(st):
        rule = st.op.view
        return rule is not None and not st.op.fwd_mutates and \
            not any(s in fixed for s in st.outs)

    def strided_ok(s):      # every reader reads any strides: a fused group or a reshape view
        return all(r in grouped or (candidate(steps[r]) and steps[r].op.view.reshape_grad)
                   for r in readers.get(s, ()))
    for i, st in enumerate(steps):
        if i in grouped or not candidate(st):
            continue
        # a split or slice may be strided: only kernels that read through strides see it
        if st.op.view.reshape_grad or all(strided_ok(s) for s in st.outs):
            steps[i] = derive(st, _view_op(st.op), st.ins, st.outs, "")
            res.views.add(i)
            res.reasons[i] = "a view of its input (no kernel where the layout allows)"


def _view_op(op):
    got = _ops.get(id(op))
    if got is not None:
        return got
    rule = op.view
    vop = copy.copy(op)
    if rule.reshape_grad:
        def compute(xp, p, *ins):
            r = rule.compute(xp, p, *ins)
            # every op reads a reshape's result: it is C-contiguous, a view when the input
            # allows (a reshape of a strided split part copies, as the count charges)
            return r if r.flags.c_contiguous else xp.ascontiguousarray(r)
        vop.compute = compute
    else:
        vop.compute = lambda xp, p, *ins: rule.compute(xp, p, *ins)
    vop.wants_ctx = False
    if rule.reshape_grad:
        base = op.gradient
        vop.save = tuple(set(op.save or ()) | {"inputs"})

        def gradient(F, p, ins, outs, ograds, **kw):
            if isinstance(F, RawF):     # plain arrays: the gradient reshaped back, a view
                return [ograds[0].reshape(ins[0].shape)] + [None] * (len(ins) - 1)
            return base(F, p, ins, outs, ograds, **kw)
        vop.gradient = gradient
    vop.fusion_view = True
    _ops[id(op)] = vop
    return vop


def _contiguous_view(op_name, p, shape):
    """Whether a view op on a C-contiguous input of ``shape`` gives C-contiguous output
    (so a later reshape of it is a view as well)."""
    if op_name not in ("SliceChannel", "slice_axis"):
        return True
    ax = p.axis % len(shape)
    # a block along ``ax`` is contiguous when every axis before it has extent 1
    return all(d == 1 for d in shape[:ax])


def count_view_kernels(steps, slot_shape, views, grouped):
    """Kernels the forward launches for the view steps ``views`` (indices into ``steps``)
    given the slots' shapes, graph inputs taken C-contiguous (``grouped``: indices of the
    steps fused into groups). A view of a contiguous input launches nothing; a reshape of
    a non-contiguous value copies (one kernel, a contiguous result); a non-contiguous view
    (a split or slice along an inner axis) is free only when every reader is a fused group
    (strided loads) or another view, else it counts one kernel, the copy its reader makes.
    Returns {view index: kernels}."""
    readers = {}
    for i, st in enumerate(steps):
        for s in st.ins:
            readers.setdefault(s, []).append(i)
    contig = {}
    launched = {}
    for i in sorted(views):
        st = steps[i]
        src = st.ins[0]
        c = contig.get(src, True)
        name = st.op.name
        shape = tuple(slot_shape.get(src) or ())
        if name not in ("SliceChannel", "slice_axis", "_copy") and not c and \
                int(np.prod(shape, dtype=np.int64)) > 1:
            launched[i] = 1         # a reshape the strides cannot express: a copy
            for s in st.outs:
                contig[s] = True
            continue
        out_c = c and _contiguous_view(name, st.p, shape)
        launched[i] = 0
        for s in st.outs:
            contig[s] = out_c
        if not out_c and any(r not in grouped and r not in views
                             for s in st.outs for r in readers.get(s, ())):
            launched[i] = 1         # a reader that is not a fused kernel copies it
    return launched
