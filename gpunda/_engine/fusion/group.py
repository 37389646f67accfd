"""One fused group: the step that replaces its ops in a CachedOp plan on a GPU.

NOTE [Fused steps]
A group of a CachedOp's element-wise steps runs as one step whose op is a ``_FusedOp``
OpDef made for the group (the group object is its params): its compute launches one
generated kernel (NOTE [Fusion kernels]) computing the group's outputs, the values read
outside the group, from its inputs; its gradient rule launches one more kernel that
recomputes the group's values from the saved inputs and applies the members' gradient
expressions in reverse (NOTE [Fusion IR]), giving each input that needs it its gradient
(an input broadcast inside the group then gets its gradient summed over its broadcast
axes: by the backward kernel itself where every such input broadcasts over leading axes,
NOTE [Column sums], otherwise one sum per input after the kernel; every gradient comes
back in its input's shape: a vector that spans the iteration shape, a
Dense's bias on one row, is reshaped, not summed: ``Layout.reduced``). So the
plan machinery (static buffers, CUDA graphs, TrainPlan, the tape) runs fused steps as it
runs any op. Kernels are made per input signature (shapes, dtypes, strides); when a
signature does not fit the kernel model (an integer dtype, unequal shapes where an
elemwise_ op needs equal ones, an output smaller than the group's iteration shape), the
step runs its members one by one as the unfused plan would (their own errors included)
and ``fallbacks`` counts why. A create_graph backward runs the members' own rules on
NDArrays, so higher-order gradients are those of the unfused graph. A group with a row
reduction (softmax, LayerNorm: NOTE [Fusion IR]) launches row kernels (``row``), a block
per row of the iteration shape's last axis.
"""
from __future__ import annotations

import numpy as np

from gpunda._core import hooks
from gpunda._engine import autograd as _ag
from gpunda._engine.cached_plan import step_gradient
from gpunda._engine.fusion.codegen import COLUMNS_PER_THREAD, PTR_TYPES, THREADS, \
    column_launch_dims, kernel_source, launch_dims, row_launch_dims
from gpunda._engine.fusion.expr import ROW_FUNCS, Program, ctype_of, parse
from gpunda._engine.fusion.reference import make_emulation
from gpunda.ops.raw import RawF
from gpunda.ops.registry import OpDef

__all__ = ["FusedGroup", "Layout", "column_sums"]

_modules = {}       # (id of the cupy module, kernel name) -> compiled function


class _Member:
    __slots__ = ("st", "fwd", "grads", "rec", "names")

    def __init__(self, st, spec):
        self.st = st
        self.rec = st.op.pointwise
        self.fwd = tuple(parse(e) for e in spec[0])
        self.grads = tuple(None if e is None else parse(e) for e in spec[1])
        self.names = st.op.input_names(st.p)


class Layout:
    """What one input signature makes of a group: shapes and dtypes of every slot, the
    iteration shape and each input's element strides; ``reason`` when it does not fit."""

    __slots__ = ("slot_shape", "slot_dtype", "shape", "strides", "reason", "n", "eff", "key",
                 "in_shapes", "reduced")

    def __init__(self, group, shapes, dtypes, strides):
        self.reason = None
        ss = dict(zip(group.in_slots, shapes))
        sd = dict(zip(group.in_slots, dtypes))
        self.slot_shape, self.slot_dtype = ss, sd
        # inputs read along one axis of a "channel" member (BatchNorm's vectors): the shape
        # and element strides they broadcast as
        eff = self.eff = {}
        used = {}
        for m in group.members:
            for s in m.st.ins:
                used[s] = used.get(s, 0) + 1
        for m in group.members:
            st, rec = m.st, m.rec
            if rec.broadcast == "channel":
                why = _channel_inputs(st, ss, group.in_slots, used, eff)
                if why:
                    self.reason = f"{st.name}: {why}"
                    return
                ish = [ss[st.ins[0]]]
            else:
                ish = [ss[s] for s in st.ins]
            idt = [sd[s] for s in st.ins]
            bad = [d for d in idt if d.name not in PTR_TYPES]
            if bad:
                self.reason = f"{st.name}: dtype {bad[0].name} (kernels fuse float types)"
                return
            same = rec.same_dtype if rec.same_dtype is not None else range(len(idt))
            if len({idt[k] for k in same}) > 1:
                self.reason = f"{st.name}: mixed input dtypes"
                return
            if rec.broadcast == "same" and len(set(ish)) > 1:
                self.reason = f"{st.name}: input shapes differ"
                return
            try:
                osh = tuple(np.broadcast_shapes(*ish)) if ish else ()
            except ValueError:
                self.reason = f"{st.name}: shapes do not broadcast"
                return
            odt = rec.out_dtype(st.p, idt) if rec.out_dtype else idt[next(iter(same))]
            odt = np.dtype(odt)
            if odt.name not in PTR_TYPES:
                self.reason = f"{st.name}: output dtype {odt.name}"
                return
            for s in st.outs:
                ss[s], sd[s] = osh, odt
        try:
            it = tuple(np.broadcast_shapes(*(ss[s] for m in group.members for s in m.st.outs)))
        except ValueError:
            self.reason = "member shapes do not broadcast"
            return
        for s in group.out_slots:
            if ss[s] != it:
                self.reason = f"an output of shape {ss[s]} is smaller than the group's {it}"
                return
        if group.row:       # rows along the iteration shape's last axis: each reducing
            for m in group.members:     # member's data must span the whole shape
                if any(_has_row(t) for t in m.fwd) and (not it or ss[m.st.ins[0]] != it):
                    self.reason = (f"{m.st.name}: reduces rows of {ss[m.st.ins[0]]}, the "
                                   f"group iterates over {it}")
                    return
                # its vectors (LayerNorm's gamma, beta) run along the row; another shape
                # runs the op itself, which raises its error
                if any(_has_row(t) for t in m.fwd) and \
                        any(tuple(ss[s]) != it[-1:] for s in m.st.ins[1:]):
                    self.reason = f"{m.st.name}: a vector input is not of the row's length"
                    return
        self.shape = it
        self.n = int(np.prod(it, dtype=np.int64)) if it else 1
        # the shape each input broadcasts as, and whether its gradient sums over broadcast
        # axes; one that spans the iteration shape (a Dense's bias on a single row: (C,)
        # read as (1, C)) takes the kernel's gradient reshaped to its own shape, no sum
        self.in_shapes = [tuple(eff[s][0]) if s in eff else tuple(ss[s])
                          for s in group.in_slots]
        self.reduced = [(1,) * (len(it) - len(sh)) + sh != it for sh in self.in_shapes]
        st_list = []
        for s, sh, sv in zip(group.in_slots, shapes, strides):
            if s in eff:        # a vector along one axis: its one stride on that axis
                sh, mask = eff[s]
                sv = tuple(sv[0] if k else 0 for k in mask)
            pad = len(it) - len(sh)
            row = []
            for ax, d in enumerate(it):
                k = ax - pad
                row.append(0 if k < 0 or sh[k] != d or d == 1 else sv[k])
            st_list.append(tuple(row))
        self.strides = st_list


def _has_row(tree):
    """Whether expression tree ``tree`` reduces along rows."""
    kind = tree[0]
    if kind in ("num", "name"):
        return False
    if kind == "call":
        return tree[1] in ROW_FUNCS or any(_has_row(a) for a in tree[2])
    if kind == "cmp":
        return _has_row(tree[2]) or _has_row(tree[3])
    return any(_has_row(a) for a in tree[1:])


def _channel_inputs(st, ss, in_slots, used, eff):
    """Give BatchNorm-like step ``st``'s vector inputs their broadcast shape along the
    data's axis (``eff``: slot -> (shape, element strides)); a reason when they are not
    group inputs of the channel count read by this step alone."""
    from gpunda.ops._util import norm_axis
    dshape = ss[st.ins[0]]
    try:
        ax = norm_axis(st.p.axis, len(dshape), st.op.name)
    except Exception:       # the op's own check raises, member by member
        return "axis out of range"
    C = dshape[ax]
    for s in st.ins[1:]:
        if s not in in_slots or used[s] != 1:
            return "a channel vector computed in, or shared across, the group"
        if tuple(ss[s]) != (C,):
            return f"a channel vector of shape {ss[s]} for {C} channels"
        shape = tuple(C if i == ax else 1 for i in range(len(dshape)))
        eff[s] = (shape, tuple(1 if i == ax else 0 for i in range(len(dshape))))
    return None


class FusedGroup:
    """A fused group of CachedOp steps (NOTE [Fused steps]); the params of its step."""

    def __init__(self, members, specs, in_slots, out_slots, index):
        self.members = [_Member(st, sp) for st, sp in zip(members, specs)]
        self.in_slots = list(in_slots)
        self.out_slots = list(out_slots)
        self.index = index
        self._layouts = {}
        self._kernels = {}
        self._stored = {}       # backward kernel key -> the stored buffer of each gradient
        self._counters = {}     # (xp, device) -> the column-sum kernels' block counter
        self._columns = {}      # backward kernel key -> its column sums (C, flags) or None
        self.fallbacks = {}
        self.launches = 0
        # members whose backward reads the backward's training mode (BatchNorm's rule uses
        # batch statistics in a training backward even after a predict-mode forward)
        self.mode_sensitive = any(m.st.op.update is not None for m in self.members)
        # a member reducing along rows (softmax, LayerNorm) makes every kernel a row kernel
        self.row = any(_has_row(t) for m in self.members for t in m.fwd + m.grads
                       if t is not None)
        names = tuple(f"in{k}" for k in range(len(in_slots)))
        self.op = OpDef("_FusedOp", _compute, inputs=names, num_outputs=len(out_slots),
                        gradient=_gradient, save=("inputs",), grad_need=True, wants_ctx=True,
                        hidden=True, family="fusion",
                        doc="A fused group of element-wise ops (one generated kernel).")

    _given = {}

    def attrs(self):
        return {}

    def describe(self):
        """The report entry of this group."""
        return {"nodes": [m.st.name for m in self.members],
                "ops": [m.st.op.name for m in self.members],
                "inputs": len(self.in_slots), "outputs": len(self.out_slots)}

    # -- layouts and programs -------------------------------------------------------------
    def layout(self, arrays):
        key = tuple((a.shape, a.dtype.str, a.strides) for a in arrays)
        lay = self._layouts.get(key)
        if lay is None:
            lay = Layout(self, [tuple(a.shape) for a in arrays], [a.dtype for a in arrays],
                         [tuple(s // a.itemsize for s in a.strides) for a in arrays])
            if len(self._layouts) > 16:     # kernels are keyed by layout: all go
                self._layouts.clear()
                self._kernels.clear()
                self._columns.clear()
            lay.key = key
            self._layouts[key] = lay
        return lay

    def _forward_env(self, prog, lay):
        env = {s: prog.load(k) for k, s in enumerate(self.in_slots)}
        for m in self.members:
            st = m.st
            same = m.rec.same_dtype if m.rec.same_dtype is not None else range(len(st.ins))
            idt = lay.slot_dtype[st.ins[next(iter(same))]] if st.ins else np.dtype("float32")
            ct = ctype_of(idt)
            local = {n: env[s] for n, s in zip(m.names, st.ins)}
            for tree, s in zip(m.fwd, st.outs):
                v = prog.emit(tree, local, st.p, ct)
                odt = lay.slot_dtype[s]
                v = prog.convert(v, ctype_of(odt))
                if odt == np.float16 and idt != np.float16:
                    v = prog.add("round16", v, "float")
                env[s] = v
        return env

    def forward_program(self, lay):
        """The Program computing the group's outputs from its inputs."""
        prog = Program([ctype_of(lay.slot_dtype[s]) for s in self.in_slots])
        env = self._forward_env(prog, lay)
        prog.outputs = [env[s] for s in self.out_slots]
        return prog.pruned()

    def backward_program(self, lay, need, have):
        """The Program of the gradients of the inputs flagged in ``need`` from the
        gradients of the outputs flagged in ``have`` (kernel inputs: the group's inputs,
        then those output gradients)."""
        cts = [ctype_of(lay.slot_dtype[s]) for s in self.in_slots]
        cts += [ctype_of(lay.slot_dtype[s]) for s, h in zip(self.out_slots, have) if h]
        prog = Program(cts)
        env = self._forward_env(prog, lay)
        adj = {}
        k = len(self.in_slots)
        for s, h in zip(self.out_slots, have):
            if h:
                adj[s] = prog.load(k)
                k += 1
        for m in reversed(self.members):
            st = m.st
            a = adj.get(st.outs[0])
            if a is None:
                continue
            ct = prog.ct(env[st.ins[0]]) if st.ins else "float"
            same = m.rec.same_dtype
            if same is not None:
                ct = prog.ct(env[st.ins[same[0]]])
            local = {n: env[s] for n, s in zip(m.names, st.ins)}
            local["out"] = env[st.outs[0]]
            if len(st.outs) > 1:
                local["out1"] = env[st.outs[1]]
            local["g"] = prog.convert(a, ct)
            for s, tree in zip(st.ins, m.grads):
                if tree is not None:
                    v = prog.emit(tree, local, st.p, ct)
                    adj[s] = prog.accumulate(adj.get(s), prog.convert(v, prog.ct(env[s])))
        outs = []
        for s, n in zip(self.in_slots, need):
            if n:
                v = adj.get(s)
                outs.append(v if v is not None else prog.const(0.0, ctype_of(lay.slot_dtype[s])))
        prog.outputs = outs
        return prog.pruned()

    # -- kernels --------------------------------------------------------------------------
    def _kernel(self, xp, key, make):
        got = self._kernels.get(key)
        if got is None:
            prog, lay, in_dtypes, out_dtypes, in_strides, cols = make()
            if xp is np:        # the CPU runs the NumPy evaluator of the same Program
                emu = make_emulation(prog, lay.shape, in_strides, out_dtypes, cols)
                got = self._kernels[key] = (emu, out_dtypes)
                return got
            name, src = kernel_source(prog, in_dtypes, out_dtypes, lay.shape, in_strides,
                                      cols)
            mkey = (id(xp), name)
            fn = _modules.get(mkey)
            if fn is None:
                emus = getattr(xp.RawModule, "emulations", None)
                if isinstance(emus, dict):      # the test stand-in runs the NumPy evaluator
                    emus[name] = make_emulation(prog, lay.shape, in_strides, out_dtypes,
                                                cols)
                fn = _modules[mkey] = xp.RawModule(code=src).get_function(name)
            got = self._kernels[key] = (fn, out_dtypes)
        return got

    def _launch(self, xp, fn, lay, arrays, out_dtypes, cols=None):
        if cols is not None:        # NOTE [Column sums]
            C, flags = cols
            outs = [(xp.zeros if not lay.n else xp.empty)((C,) if f else lay.shape, d)
                    for d, f in zip(out_dtypes, flags)]
            if lay.n:
                grid, block = column_launch_dims(lay.n, C, self.row)
                ws = tuple(xp.empty((grid[0], C), d) for d, f in zip(out_dtypes, flags) if f)
                fn(grid, block, tuple(arrays) + tuple(outs) + ws + (self._counter(xp),
                                                                   np.int64(lay.n)))
            self.launches += 1
            return outs
        outs = [xp.empty(lay.shape, d) for d in out_dtypes]
        if lay.n:
            grid, block = row_launch_dims(lay.n, lay.shape[-1]) if self.row else \
                launch_dims(lay.n)
            fn(grid, block, tuple(arrays) + tuple(outs) + (np.int64(lay.n),))
        self.launches += 1
        return outs

    def _counter(self, xp):
        """The column-sum kernels' block counter on the current device: zero between
        launches (the last block resets it), so it is made once."""
        dev = getattr(getattr(xp, "cuda", None), "Device", None)
        key = (id(xp), dev().id if dev is not None else 0)
        c = self._counters.get(key)
        if c is None:
            c = self._counters[key] = xp.zeros((1,), np.uint32)
        return c

    def run_forward(self, xp, arrays, ctx):
        lay = self.layout(arrays)
        if lay.reason is not None:
            self.fallbacks[lay.reason] = self.fallbacks.get(lay.reason, 0) + 1
            vals = self._members_forward(xp, arrays, ctx)
            outs = [vals[s] for s in self.out_slots]
        else:
            def make():
                in_dt = [lay.slot_dtype[s] for s in self.in_slots]
                out_dt = [lay.slot_dtype[s] for s in self.out_slots]
                return self.forward_program(lay), lay, in_dt, out_dt, lay.strides, None
            fn, out_dt = self._kernel(xp, ("f", lay.key), make)
            outs = self._launch(xp, fn, lay, arrays, out_dt)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run_backward(self, xp, arrays, ograds, need, ctx):
        lay = self.layout(arrays)
        if lay.reason is not None:
            return None
        have = tuple(g is not None for g in ograds)
        reduce = lay.reduced

        def make():
            in_dt = [lay.slot_dtype[s] for s in self.in_slots]
            in_dt += [lay.slot_dtype[s] for s, h in zip(self.out_slots, have) if h]
            out_dt = []
            for s, n, r in zip(self.in_slots, need, reduce):
                if n:
                    d = lay.slot_dtype[s]
                    out_dt.append(np.dtype(np.float64 if d == np.float64 else np.float32)
                                  if r else d)
            strides = list(lay.strides)
            for g, s in zip(ograds, self.out_slots):
                if g is not None:
                    strides.append(tuple(x // g.itemsize for x in g.strides))
            prog = self.backward_program(lay, need, have)
            if cols is not None:    # the sums are the kernel's: every output stays
                self._stored[key] = list(range(len(out_dt)))
                return prog, lay, in_dt, out_dt, strides, cols
            prog, out_dt, self._stored[key] = store_once(prog, red, out_dt)
            return prog, lay, in_dt, out_dt, strides, None
        ogs = [g for g in ograds if g is not None]
        if any(g.shape != lay.shape or g.dtype != lay.slot_dtype[s]
               for g, s in zip(ograds, self.out_slots) if g is not None):
            return None
        key = ("b", lay.key, tuple(need), have, tuple(g.strides for g in ogs))
        red = [r for r, n in zip(reduce, need) if n]
        cols = self._columns.get(key, False)
        if cols is False:
            C = column_sums(lay, red, [sh for sh, n in zip(lay.in_shapes, need) if n],
                            self.row)
            cols = self._columns[key] = (C, tuple(red)) if C is not None else None
        fn, out_dt = self._kernel(xp, key, make)
        stored = self._launch(xp, fn, lay, list(arrays) + ogs, out_dt, cols)
        outs = iter([stored[k] for k in self._stored[key]])
        res = []
        for a, n, r, sh in zip(arrays, need, reduce, lay.in_shapes):
            if not n:
                res.append(None)
                continue
            g = next(outs)
            if r:
                g = (g if cols is not None else _sum_to(g, sh)).astype(a.dtype, copy=False)
            res.append(g.reshape(a.shape))     # (a view: the kernel's buffer is fresh)
        return res

    # -- the members one by one -----------------------------------------------------------
    def _members_forward(self, xp, arrays, ctx):
        vals = dict(zip(self.in_slots, arrays))
        for m in self.members:
            st = m.st
            ins = [vals[s] for s in st.ins]
            r = st.op.compute(xp, st.p, *ins, ctx=ctx) if st.op.wants_ctx else \
                st.op.compute(xp, st.p, *ins)
            rs = [r] if len(st.outs) == 1 and not isinstance(r, (tuple, list)) else list(r)
            for s, x in zip(st.outs, rs):
                vals[s] = x
        return vals

    def members_backward(self, F, arrays, ograds, need, ctx, bwd_train=None):
        """The members' own gradient rules, newest first (fallback and create_graph)."""
        nd = not isinstance(F, RawF)
        if nd:
            vals = dict(zip(self.in_slots, arrays))
            for m in self.members:
                st = m.st
                r = hooks.invoke_parsed(st.op, tuple(vals[s] for s in st.ins), st.p)
                rs = list(r) if isinstance(r, (list, tuple)) else [r]
                if len(rs) < len(st.outs):      # hidden outputs (Dropout's mask of ones)
                    rs += [hooks.nd.ones_like(rs[0])] * (len(st.outs) - len(rs))
                for s, x in zip(st.outs, rs):
                    vals[s] = x
        else:
            vals = self._members_forward(F._xp, arrays, ctx)
        g = dict(zip(self.out_slots, ograds))
        for m in reversed(self.members):
            st = m.st
            ogs = [g.get(s) for s in st.outs]
            if ogs[0] is None:
                continue
            ogs = [x if x is not None else ogs[0] * 0 for x in ogs]
            ins = [vals[s] for s in st.ins]
            outs = [vals[s] for s in st.outs]
            rneed = tuple(True for _ in ins) if st.op.grad_need else None
            grads = step_gradient(F, st, ins, outs, ogs, rneed, bwd_train)
            for s, gr in zip(st.ins, grads):
                if gr is not None:
                    g[s] = gr if g.get(s) is None else g[s] + gr
        return [g.get(s) if n else None for s, n in zip(self.in_slots, need)]


def column_sums(lay, reduced, shapes, row):
    """NOTE [Column sums]
    A group's backward sums the gradient of every input it broadcast (a bias, LayerNorm's
    gamma and beta) over the broadcast axes. Where every such input broadcasts over
    leading axes only (its shape, ones padded, is ones then the iteration shape's
    trailing axes: the C trailing elements, the same C for all), the backward kernel makes
    the sums itself, in the same launch: rows of C elements, a block per chunk of rows
    (at most ``COLUMN_BLOCKS``), each thread holding the running sums of its columns in
    registers, the rows in order (rows narrower than the block share it: an element-wise
    kernel's block takes ``THREADS // C`` rows at once, lanes whose sums it adds in lane
    order through shared memory); each block writes its partial sums to a workspace and
    the last block to finish (a ticket from one atomic counter, reset by that block)
    adds the partials in block order. The order of every addition is fixed by the launch
    shape, so the sums are deterministic (MXNET_ENFORCE_DETERMINISM needs no fallback);
    no atomic add touches a value. A row group (softmax, LayerNorm) qualifies when C is
    its row. Otherwise (a convolution's bias along axis 1, more than
    ``COLUMNS_PER_THREAD * THREADS`` columns) each input keeps a sum of its own, a launch
    after the kernel. The NumPy evaluator sums the same rows (``make_emulation``).

    Returns C, or None where the sums stay separate. ``reduced`` flags the gradients
    asked, ``shapes`` their inputs' broadcast shapes."""
    if not any(reduced):
        return None
    it = lay.shape
    C = None
    for r, sh in zip(reduced, shapes):
        if not r:
            continue
        pad = (1,) * (len(it) - len(sh)) + tuple(sh)
        lead = next((m for m in range(len(it) + 1)
                     if all(d == 1 for d in pad[:m]) and pad[m:] == it[m:]), None)
        if lead is None:
            return None
        c = int(np.prod(it[lead:], dtype=np.int64))
        if C is not None and c != C:
            return None
        C = c
    if C < 1 or C > COLUMNS_PER_THREAD * THREADS or (row and (not it or C != it[-1])):
        return None
    return C


def store_once(prog, reduced, out_dtypes):
    """Backward Program ``prog`` without the outputs that would store again, at full
    size, a value another output of the same dtype stores (a bias add's gradient "g" is
    its data's: the bias sum reads that buffer); ``reduced`` flags the outputs summed
    afterwards. Returns (program, its output dtypes, for each original output the index
    of the buffer holding it)."""
    full = {}
    for k, (v, r, d) in enumerate(zip(prog.outputs, reduced, out_dtypes)):
        if not r:
            full.setdefault((v, d), k)
    keep, src = [], []
    for k, (v, r, d) in enumerate(zip(prog.outputs, reduced, out_dtypes)):
        j = full.get((v, d)) if r else None
        src.append(k if j is None else j)
        if j is None:
            keep.append(k)
    if len(keep) == len(src):
        return prog, list(out_dtypes), src
    pos = {k: n for n, k in enumerate(keep)}
    prog.outputs = [prog.outputs[k] for k in keep]
    return prog.pruned(), [out_dtypes[k] for k in keep], [pos[k] for k in src]


def _sum_to(g, shape):
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                      if d == 1 and g.shape[i + lead] != 1)
    r = g.sum(axis=axes) if axes else g
    return r.reshape(shape)


def _compute(xp, p, *arrays, ctx=None):
    return p.run_forward(xp, arrays, ctx)


def _gradient(F, p, ins, outs, ograds, need=None):
    need = tuple(need) if need is not None else (True,) * len(ins)
    if p.mode_sensitive:
        bwd_train = _ag.updates_enabled()
        if bwd_train:       # the members' rules, each in the backward's mode, as unfused
            return p.members_backward(F, ins, list(ograds), need, None, bwd_train)
    if isinstance(F, RawF):
        r = p.run_backward(F._xp, ins, list(ograds), need, F._ctx)
        if r is not None:
            return r
    return p.members_backward(F, ins, list(ograds), need, None)
