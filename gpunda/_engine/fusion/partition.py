"""The fusion partitioner: maximal groups of element-wise steps of a CachedOp plan.

NOTE [Fusion partition]
Steps are visited in the plan's topological order. A step is a candidate when its op
has a ``Pointwise`` record whose rule accepts its parameters in this training mode
(Dropout only while it does not drop), it writes no input and all its outputs are
described. A candidate joins the group of one of its candidate producers unless that
would make a cycle: a path leaving the group and coming back (the group reaches one of
the step's other producers). Otherwise it starts a group. Groups of one step stay
ordinary steps (one kernel either way). A group's outputs are the values a step outside
it reads, or the graph's heads; its inputs, the values its members read that it does not
make. A graph whose ops write their inputs in the forward pass is left alone (moving
steps could move a read past a write). The fused plan lists every group as one step at
a topological position (steps keep their relative order where they can). Shapes are not
needed: a signature whose shapes or dtypes do not fit a group's kernel runs that group
member by member (NOTE [Fused steps]). Every step left out gets its reason.

A step whose record refuses it but names a ``split`` (Dropout while it drops) becomes two
steps on the same slots: a producer of its last output (Dropout's mask: one random kernel,
the same draws from the same generator) and a pointwise op making the others (data *
mask), which is a candidate. A split whose pointwise half finds no group is undone (the
op stays one kernel). Steps that draw random numbers keep their relative order: each
depends on the one before it (an edge in the cycle check and in ``fused_order``), so
the fused plan draws the random stream in the unfused plan's order and every mask is
the unfused one. The mask step needs the data's shape and dtype only: it reads the
earliest slot sure to have them (back through element-wise, channel and row steps that
keep their first input's shape and dtype), so a multiply can join the group making its
data (softmax's). ``Partition.steps`` is the step list the indices refer to.

NOTE [GEMM epilogues]
A GEMM op whose OpDef has an ``epilogue`` rule (FullyConnected, Convolution with a bias)
is split the same way: the GEMM without its bias into a fresh slot (``Partition.nslots``
counts it, ``Partition.like`` gives its shape and dtype: the op's output's), then a
pointwise bias add (``_bias_add``: the bias a "channel" vector along the output's last
axis, a convolution's axis 1) making the op's output, a candidate. The split is kept
only where the add joins a group (the GELU or tanh after a Dense, the Dropout multiply
and residual add after a projection, an LSTM's gate sum, an inference BatchNorm after a
convolution): the add, a launch of its own inside the op, then costs nothing, and its
gradient, the bias sum, is the group's sum over that broadcast input, as the op's own
gradient sums it (made by the group's backward kernel itself where the bias runs along
the trailing axis: NOTE [Column sums] in group.py). A mask step after the op reads the GEMM's slot for its shape, so the
Dropout multiply can join the add's group. A bias of another shape (FullyConnected's
(H, 1)) or one read twice in a group runs that group member by member (NOTE [Fused
steps]).
The split adds no rounding to the op's. The GEMM half is the op's compute without the
bias, in the op's dtype; a float16 op rounds its GEMM to float16 before its bias add as
well, and the group then computes the add as any float16 member (in float, NOTE [Fusion
IR]). A bfloat16 op computes on float32 copies and rounds once at the end (NOTE
[bfloat16 compute] in ops/_bf16.py), so its GEMM half keeps the float32 result
(``_gemm_half``: ``Partition.like``'s dtype is then not the slot's) and ``_bias_add``,
whose type rule gives the bias's type, rounds once; a bfloat16 group runs its ops one by
one (kernels fuse float16/32/64), so its values and gradients are the unfused ones, bit
for bit. A Dropout mask reading that float32 slot is float32, as a bfloat16 Dropout's
own mask is.
"""
from __future__ import annotations

import copy
import heapq

__all__ = ["partition", "Partition"]


class Partition:
    """The result: ``groups`` (lists of step indices), ``specs`` (per step index: the
    record's expressions), ``reasons`` (step index -> why it is not in a group),
    ``in_slots``/``out_slots`` per group."""

    def __init__(self):
        self.groups, self.specs, self.reasons = [], {}, {}
        self.in_slots, self.out_slots = [], []
        self.graph_reason = None
        self.steps = None       # the step list (splits applied) the indices refer to
        self.random = []        # indices of the steps that draw random numbers, in order
        self.splits = 0         # steps split (Dropout while it drops)
        self.views = set()      # indices of the steps run as views (NOTE [View steps])
        self.epilogues = 0      # GEMM bias adds split off into groups (NOTE [GEMM epilogues])
        self.nslots = None      # slot count of ``steps`` (a split GEMM adds a slot)
        self.like = {}          # a new slot -> the slot whose shape and dtype it has


def _splittable(st, train):
    rec = st.op.pointwise
    if rec is None or rec.split is None or st.op.fwd_mutates or len(st.outs) < 2:
        return False
    return isinstance(rec.spec(st.p, train), str)


def _derived(st, op, ins, outs, suffix):
    """A copy of CachedOp step ``st`` running ``op`` (same params) on slots ins/outs."""
    new = object.__new__(type(st))
    for k in type(st).__slots__:
        setattr(new, k, getattr(st, k))
    new.op, new.ins, new.outs, new.name = op, tuple(ins), tuple(outs), st.name + suffix
    new.nout = len(outs)
    new.seq1 = False
    new.compute, new.wants_ctx = op.compute, op.wants_ctx
    why = op.capture if op.capture != "ok" else None
    if op.capture == "gemm":    # as _Step: a graph takes it when its backend has a safe GEMM
        why = "cuBLAS GEMM, and this backend has no capture-safe GEMM"
    new.capturable, new.why_not = why is None, why
    new.gemm = op.capture == "gemm"
    return new


def _shape_source(steps, producer, d, train, gemm_of=None):
    """The earliest slot sure to have slot ``d``'s shape and dtype: back through the
    candidate steps whose first output has their first input's shape and dtype (equal
    shapes, a channel op, a row op; no dtype of their own). A split producer that needs
    only its data's shape reads it, so it does not wait for (nor close a cycle through) a
    group making ``d`` (``gemm_of``: a split GEMM's output slot -> its GEMM's slot)."""
    from gpunda._engine.fusion.expr import parse
    from gpunda._engine.fusion.group import _has_row
    while True:
        if gemm_of and d in gemm_of:    # a split GEMM's output: its result before the bias
            return gemm_of[d]
        j = producer.get(d)
        if j is None:
            return d
        st = steps[j]
        rec = st.op.pointwise
        if rec is None or not st.ins or st.outs[0] != d or rec.out_dtype is not None or \
                (rec.same_dtype is not None and 0 not in rec.same_dtype):
            return d
        spec = rec.spec(st.p, train)
        if isinstance(spec, str):
            return d
        if rec.broadcast == "numpy" and not _has_row(parse(spec[0][0])):
            return d
        d = st.ins[0]


def _epilogue(st):
    """(GEMM params, pointwise op) when step ``st`` is a GEMM whose bias add may split off
    (NOTE [GEMM epilogues]), else None."""
    rule = st.op.epilogue
    return None if rule is None or st.op.fwd_mutates else rule(st.p)


_gemm_ops = {}       # id of a GEMM op -> its OpDef as the GEMM half of a split


def _gemm_half(op):
    """GEMM op ``op`` as the first half of its split (NOTE [GEMM epilogues]): the same
    op, except that its result for bfloat16 inputs stays float32."""
    got = _gemm_ops.get(id(op))
    if got is None:
        from gpunda.ops._bf16 import float32_result
        got = copy.copy(op)
        got.compute = float32_result(op)

        def gradient(*args, **kw):      # the op's rule as it is at the call (bfloat16's
            return op.gradient(*args, **kw)     # wrapper comes when the type is named)
        if hasattr(op.gradient, "reads_ograds"):
            gradient.reads_ograds = op.gradient.reads_ograds
        got.gradient = gradient
        _gemm_ops[id(op)] = got
    return got


def _split_steps(steps, train, which, nslots):
    """``steps`` with the splittable steps and GEMM epilogues whose index is in ``which``
    (None: all) split, new slots numbered from ``nslots``; returns (steps, original index
    -> index of the pointwise half, the new slot count, new slot -> the slot whose shape
    and dtype it has)."""
    from gpunda.ops.registry import get_op
    out, half, like, gemm_of = [], {}, {}, {}
    producer = {s: i for i, st in enumerate(steps) for s in st.outs}
    for i, st in enumerate(steps):
        ep = _epilogue(st) if which is None or i in which else None
        if (which is None or i in which) and _splittable(st, train):
            prod, pw = (get_op(n) for n in st.op.pointwise.split)
            src = (_shape_source(steps, producer, st.ins[0], train, gemm_of),) + \
                tuple(st.ins[1:])
            out.append(_derived(st, prod, src, st.outs[-1:], "_mask"))
            half[i] = len(out)
            out.append(_derived(st, pw, tuple(st.ins) + (st.outs[-1],), st.outs[:-1], ""))
        elif ep is not None:
            # the GEMM into a fresh slot, then its bias added by a pointwise step
            gp, pw, pw_kw = ep
            t = nslots
            nslots += 1
            like[t] = st.outs[0]
            gemm_of[st.outs[0]] = t
            gemm = _derived(st, _gemm_half(st.op), st.ins[:2], (t,), "_gemm")
            gemm.p = gp
            out.append(gemm)
            half[i] = len(out)
            pop = get_op(pw)
            add = _derived(st, pop, (t, st.ins[2]), st.outs, "_bias")
            add.p = pop.parse_params(pw_kw)
            out.append(add)
        else:
            out.append(st)
    return out, half, nslots, like


def _candidate(st, train):
    op = st.op
    rec = op.pointwise
    if rec is None:
        if op.random:
            return None, f"{op.name}: random numbers (a kernel of its own)"
        if op.capture == "gemm":
            return None, "not element-wise (GEMM)"
        return None, f"{op.name} has no pointwise record"
    if op.fwd_mutates:
        return None, "writes its inputs"
    spec = rec.spec(st.p, train)
    if isinstance(spec, str):
        return None, spec
    if len(spec[0]) != len(st.outs):
        return None, f"{len(st.outs)} outputs, the record describes {len(spec[0])}"
    if len(spec[1]) != len(st.ins):
        return None, "the record's gradients do not match the inputs"
    return spec, None


def partition(steps, nin, heads, train):
    """Partition ``steps`` (a CachedOp's ``_Step`` list; slots < ``nin`` are inputs) for
    training mode ``train`` (NOTE [Fusion partition]); shape-only steps outside the groups
    become view steps (NOTE [View steps])."""
    res = _partition_groups(steps, nin, heads, train)
    if res.graph_reason is None:
        from gpunda._engine.fusion.views import apply_views
        apply_views(res, heads, _derived)
    return res


def _partition_groups(steps, nin, heads, train):
    if any(st.op.fwd_mutates for st in steps):
        res = Partition()
        res.steps = list(steps)
        res.graph_reason = "the graph has ops that write their inputs in the forward pass"
        res.nslots = max([nin] + [s + 1 for st in steps for s in st.outs])
        for i in range(len(steps)):
            res.reasons[i] = res.graph_reason
        return res
    nslots = max([nin] + [s + 1 for st in steps for s in st.outs])
    if not any(_splittable(st, train) or _epilogue(st) for st in steps):
        res = _partition(list(steps), nin, heads, train)
        res.nslots = nslots
        return res
    # split every candidate, keep the splits whose pointwise half joined a group
    split, half, n, like = _split_steps(steps, train, None, nslots)
    first = _partition(split, nin, heads, train)
    grouped = {i for ms in first.groups for i in ms}
    keep = {i for i, j in half.items() if j in grouped}
    if len(keep) == len(half):
        res = first
    else:
        split, _, n, like = _split_steps(steps, train, keep, nslots)
        res = _partition(split, nin, heads, train)
    res.splits = sum(1 for i in keep if _epilogue(steps[i]) is None)
    res.epilogues = len(keep) - res.splits
    res.nslots, res.like = n, like
    return res


def _partition(steps, nin, heads, train):
    res = Partition()
    res.steps = steps
    producer = {}
    for i, st in enumerate(steps):
        for s in st.outs:
            producer[s] = i
    group_of = [-1] * len(steps)
    members = []
    parent = []                           # union-find over group ids (merged groups)
    anc = [frozenset()] * len(steps)      # groups a step depends on (its own included)
    specs = {}

    def find(g):
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    def depends(k, gid):        # step k depends on group gid (or is in it)
        return any(find(x) == gid for x in anc[k])

    last_random = -1
    for i, st in enumerate(steps):
        deps = set()
        preds = [producer[s] for s in st.ins if s in producer]
        for j in preds:
            deps |= anc[j]
        spec, why = _candidate(st, train)
        if spec is None:
            res.reasons[i] = why
            if st.op.random:    # draws in the unfused order: after the previous draw
                if last_random >= 0:
                    deps |= anc[last_random]
                res.random.append(i)
                last_random = i
            anc[i] = frozenset(deps)
            continue
        specs[i] = spec
        ok = []
        for j in preds:
            gid = find(group_of[j]) if group_of[j] >= 0 else -1
            if gid < 0 or gid in ok:
                continue
            # a cycle: another producer outside the group depends on the group
            if any((group_of[k] < 0 or find(group_of[k]) != gid) and depends(k, gid)
                   for k in preds):
                continue
            # two producer groups merge only when neither depends on the other
            if ok and any(depends(k, ok[0]) for k in members[gid]) or \
                    ok and any(depends(k, gid) for k in members[ok[0]]):
                continue
            ok.append(gid)
        if ok:
            chosen = ok[0]
            for h in ok[1:]:
                parent[h] = chosen
                members[chosen].extend(members[h])
                members[h] = []
        else:
            chosen = len(members)
            members.append([])
            parent.append(chosen)
        members[chosen].append(i)
        group_of[i] = chosen
        deps.add(chosen)
        anc[i] = frozenset(deps)
    members = [sorted(ms) for ms in members if ms]
    readers = {}
    for i, st in enumerate(steps):
        for s in st.ins:
            readers.setdefault(s, set()).add(i)
    head_set = set(heads)
    for gid, ms in enumerate(members):
        if len(ms) < 2:
            res.reasons[ms[0]] = "no element-wise neighbour to fuse with"
            continue
        mset = set(ms)
        made, ins, outs = set(), [], []
        for i in ms:
            for s in steps[i].ins:
                if s not in made and s not in ins:
                    ins.append(s)
            made.update(steps[i].outs)
        for i in ms:
            for s in steps[i].outs:
                if s in head_set or any(r not in mset for r in readers.get(s, ())):
                    outs.append(s)
        res.groups.append(ms)
        res.in_slots.append(ins)
        res.out_slots.append(outs)
        for i in ms:
            res.specs[i] = specs[i]
    return res


def fused_order(steps, part):
    """Units in a topological order: ("step", i) or ("group", g), each unit placed as
    early as its inputs allow, ties broken by the original position; ``i`` indexes
    ``part.steps`` (``steps`` split as the partition split them)."""
    steps = part.steps
    unit_of = {}
    units = []
    for g, ms in enumerate(part.groups):
        for i in ms:
            unit_of[i] = len(units)
        units.append(("group", g, ms[0]))
    for i in range(len(steps)):
        if i not in unit_of:
            unit_of[i] = len(units)
            units.append(("step", i, i))
    producer = {}
    for i, st in enumerate(steps):
        for s in st.outs:
            producer[s] = unit_of[i]
    deps = [set() for _ in units]
    for i, st in enumerate(steps):
        u = unit_of[i]
        for s in st.ins:
            p = producer.get(s)
            if p is not None and p != u:
                deps[u].add(p)
    for a, b in zip(part.random, part.random[1:]):     # the random stream's order
        deps[unit_of[b]].add(unit_of[a])
    users = [[] for _ in units]
    for u, ds in enumerate(deps):
        for p in ds:
            users[p].append(u)
    left = [len(ds) for ds in deps]
    heap = [(units[u][2], u) for u in range(len(units)) if left[u] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, u = heapq.heappop(heap)
        order.append(units[u][:2])
        for v in users[u]:
            left[v] -= 1
            if left[v] == 0:
                heapq.heappush(heap, (units[v][2], v))
    assert len(order) == len(units), "fusion partition made a cycle"
    return order
