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
keep and write an output, and it must not alias an input or another output); the static
memory plan sees that a view owns no fresh memory and counts it as a reference to its
source's storage, so nothing writes in place into memory a live view reads (NOTE [Static
memory plan]); graphs whose ops write their inputs in the forward are not touched (NOTE
[Fusion partition]). The element-wise steps fused into groups never write their inputs.
"""
from __future__ import annotations

import copy

import numpy as np

from gpunda.ops.raw import RawF

__all__ = ["view_step", "viewable", "count_view_kernels"]

_ops = {}       # id of the op -> its view OpDef


def viewable(st, heads):
    """Whether CachedOp step ``st`` runs as a view in the fused plan (``heads``: the
    graph's head slots)."""
    rule = st.op.view
    return rule is not None and not st.op.fwd_mutates and rule.compute is not None and \
        not any(s in heads for s in st.outs)


def _view_op(op):
    got = _ops.get(id(op))
    if got is not None:
        return got
    rule = op.view
    vop = copy.copy(op)
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


def view_step(st, derive):
    """The step running ``st`` through its op's ViewRule; ``derive(st, op, ins, outs,
    suffix)`` copies a plan step with another op (partition._derived)."""
    return derive(st, _view_op(st.op), st.ins, st.outs, "")


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
