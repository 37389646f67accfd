"""The autograd engine: the tape of recorded calls, backward and grad (the public module
``gpunda.autograd`` re-exports it with MXNet's names).

Each recorded call becomes a ``Node`` holding its op, params, the autograd
entries of its inputs and what its gradient rule needs. An NDArray produced
under ``record()`` carries ``_ag = (node, output_index)``; a variable (after
``attach_grad``) carries ``(Leaf, 0)``. Nodes are numbered in recording order,
and an op's inputs are always recorded before it, so ``backward`` collects the
nodes reachable from the heads, sorts them by number (newest first) and applies
each op's gradient rule in that order (see NOTE [Gradient rules] in
ops/registry.py).

In-place safety: every in-place write stamps the written array's root with
the next number of the counter that also numbers the nodes, so backward
refuses a saved array whose stamp is newer than the node that saved it (NOTE
[In-place writes]). While recording, a write into an array still in a recorded
graph is refused before it happens, as MXNet does (``check_writable``). The
plain backward (``_walk_raw``) runs the rules on raw backend arrays;
``create_graph=True`` (``_walk_nd``) runs them on recorded NDArrays so the
result can be differentiated again.
"""
from __future__ import annotations

import itertools
import weakref
from operator import attrgetter

import numpy as np

from gpunda.base import GpundaError
from gpunda._core import deferred as _deferred
from gpunda._core import hooks
from gpunda._core import bf16 as _core_bf16
_dt = _core_bf16.np_dtype     # np.dtype of an NDArray.dtype (bfloat16's record included)
from gpunda.context import shares_memory_space
from gpunda.ops.raw import RawF as _RawF, raw_namespace as _raw_namespace

from gpunda._core.modes import (  # noqa: F401  (re-exported: the public API)
    _recording, _training, _is_rec, _is_train, _set_rec, _set_train, is_recording,
    is_training, set_recording, set_training, _Scope, record, pause, train_mode,
    predict_mode)


# ---------------------------------------------------------------------------
# the tape

_GRAD_REQS = ("write", "add", "null")


class Leaf:
    """A variable: where gradients land (``x.grad``) and how (``grad_req``)."""

    __slots__ = ("grad", "grad_req", "_g", "__weakref__", "var", "fresh", "freed")
    nout = 1
    is_leaf = True
    inputs = ()
    seq = -1            # sorts after every node
    op = None

    def __init__(self, grad, grad_req, var=None):
        self.grad, self.grad_req, self._g = grad, grad_req, None
        self.var = weakref.ref(var) if var is not None else None
        # MXNet's fresh_out_grad (``x._fresh_grad``): set when a backward writes .grad
        self.fresh = False
        # a 'null' variable is dropped from the graph by a backward that frees it, as
        # MXNet's AGInfo::Clear does; afterwards it may be written inside record()
        self.freed = False


class Node:
    """One recorded op call.

    ``inputs``: the inputs' autograd entries (None for constants); ``saved_in``:
    the input NDArrays when the rule needs them; ``out_data``: raw outputs when
    the rule needs them, with ``out_refs`` (weakref, version) to detect in-place
    writes; ``seq``: its number on the tape, which also orders it against
    in-place writes (NOTE [In-place writes]); -1 once backward freed it.

    A plain Node has one output and its op's rule; ``_FullNode`` adds ``nout``,
    ``out_meta`` ((shape, dtype) per output, to make zero gradients) and ``fn``
    (a rule for this node alone: autograd.Function, CachedOp). Keeping those out
    of the common node saves three stores on every recorded op.
    """

    __slots__ = ("op", "p", "inputs", "saved_in", "out_data", "out_refs", "training", "_g",
                 "ctx", "seq", "fresh", "__weakref__")
    is_leaf = False
    nout = 1
    fn = None
    out_meta = None

    @property
    def freed(self):
        """Whether an earlier backward released this node (no retain_graph)."""
        return self.seq < 0


class _FullNode(Node):
    """A node with several outputs or its own rule (see Node)."""

    __slots__ = ("nout", "fn", "out_meta")

    def __init__(self, op, p, inputs, saved_in, out_data, out_refs, nout,
                 training, ctx, fn=None, out_meta=None):
        self.op = op
        self.p = p
        self.inputs = inputs
        self.saved_in = saved_in
        self.out_data = out_data
        self.out_refs = out_refs
        self.out_meta = out_meta
        self.nout = nout
        self.training = training
        self._g = None
        self.ctx = ctx
        self.fn = fn
        self.seq = _next_seq()


# NOTE [In-place writes]
# One counter numbers both recorded nodes (``seq``) and in-place writes. Every
# in-place write to an array goes through bump_version, which takes the next
# number, stores it in ``_last_write`` and as the root array's ``_version``. An
# array a node saved was written after the node was recorded exactly when its
# root's version is above the node's seq, so nodes keep no versions of their
# inputs, and backward looks at them only for nodes older than the last write.
# (Outputs moved by ``out=`` keep an explicit version in ``out_refs``.)
# Concurrent writes from another thread to an array being recorded are a data
# race this does not try to catch.
_next_seq = itertools.count().__next__
_last_write = [-1]


def bump_version(x):
    """Note an in-place write to NDArray ``x`` (see NOTE [In-place writes])."""
    _last_write[0] = n = _next_seq()
    (x._base if x._base is not None else x)._version = n


# the train_mode of the backward being run (NOTE [Mutated inputs and their pass] in
# ops/registry.py). A rule runs under its node's forward mode (Dropout's mask is the
# forward's), except an op whose backward writes its inputs (``OpDef.update``: the
# BatchNorm family): MXNet's BatchNormBackward reads the backward's ctx.is_train alone,
# for its formula (batch statistics saved by the forward, or the moving statistics as
# they are now) and for writing the moving statistics.
_bwd_train = [True]


def updates_enabled():
    """Whether a backward-pass writer (``OpDef.update``) runs, and in which mode its op's
    rule runs: the backward's train_mode, whatever the forward's was (see above)."""
    return _bwd_train[0]


def run_update(op, p, xp, ins, outs, arrays=None):
    """Apply ``op.update`` to the raw ``ins``/``outs`` a node kept, then note the write on
    the NDArrays ``arrays`` (the node's inputs, when known) it mutated."""
    op.update(xp, p, ins, outs)
    if arrays is not None:
        for i in op.mutated(p):
            x = arrays[i]
            if x is not None:
                bump_version(x)


_weakref = weakref.ref
_alloc = object.__new__


def _record(op, p, inputs, outs):
    """Put one op call on the tape (invoke's general path; the element-wise fast
    paths use _record1/_record2)."""
    n = len(inputs)
    if n == 2:
        a, b = inputs
        entries = (a._ag, b._ag)
    else:
        entries = tuple([x._ag for x in inputs])
    if entries.count(None) == n:
        return      # no input depends on a variable: nothing to differentiate
    save_in = op.save_in
    if save_in and (save_in == 1 or n != 2 or a.shape != b.shape):
        saved_in = inputs
    else:
        saved_in = None
    nout = len(outs)
    if op.save_out:
        out_data = tuple([o._data for o in outs])
        out_refs = tuple([(_weakref(o), 0) for o in outs])
    else:
        out_data = out_refs = None
    node = _FullNode(op, p, entries, saved_in, out_data, out_refs, nout, _is_train(),
                     outs[0]._ctx)
    if nout == 1:
        outs[0]._ag = (node, 0)
    else:
        node.out_meta = tuple([(o.shape, _dt(o.dtype)) for o in outs])
        for i, o in enumerate(outs):
            o._ag = (node, i)


def _record1(op, p, a, o):
    """``_record`` for one input and one output, with ``a._ag`` known to be set.

    The fast paths of invoke call this for most element-wise ops, so it spells
    everything out (slot stores instead of ``__init__``'s argument passing).
    """
    node = _alloc(Node)
    node.saved_in = (a,) if op.save_in else None
    if op.save_out:
        node.out_data = (o._data,)
        node.out_refs = ((_weakref(o), 0),)
    else:
        node.out_data = node.out_refs = None
    node.op = op
    node.p = p
    node.inputs = (a._ag,)
    node.training = _is_train()
    node._g = None
    node.ctx = o._ctx
    node.seq = _next_seq()
    o._ag = (node, 0)


def _record2(op, p, a, b, o):
    """``_record`` for two inputs and one output (binary element-wise ops)."""
    ea, eb = a._ag, b._ag
    if ea is None and eb is None:
        return
    node = _alloc(Node)
    save_in = op.save_in
    # save_in 2 ("broadcast"): inputs are needed only when the shapes differ
    if save_in and (save_in == 1 or a._data.shape != b._data.shape):
        node.saved_in = (a, b)
    else:
        node.saved_in = None
    if op.save_out:
        node.out_data = (o._data,)
        node.out_refs = ((_weakref(o), 0),)
    else:
        node.out_data = node.out_refs = None
    node.op = op
    node.p = p
    node.inputs = (ea, eb)
    node.training = _is_train()
    node._g = None
    node.ctx = o._ctx
    node.seq = _next_seq()
    o._ag = (node, 0)


def record_node(op, p, inputs, outs, rule=None, save_inputs=False, save_outputs=False):
    """Record ``outs`` as computed from NDArray ``inputs`` by one node, whatever ran.

    For calls that are not a single registry op (``autograd.Function``,
    CachedOp): ``op`` names the node (an ``OpDef``; its ``gradient`` is used
    unless ``rule`` is given), ``rule(F, p, ins, outs, ograds)`` follows NOTE
    [Gradient rules]. Returns the node, or None when no input depends on a
    variable (nothing is recorded then).
    """
    entries = tuple(x._ag for x in inputs)
    if all(e is None for e in entries):
        return None
    saved_in = tuple(inputs) if save_inputs else None
    if save_outputs:
        out_data = tuple(o._data for o in outs)
        out_refs = tuple((weakref.ref(o), (o._base if o._base is not None else o)._version)
                         for o in outs)
    else:
        out_data = out_refs = None
    node = _FullNode(op, p, entries, saved_in, out_data, out_refs, len(outs),
                     _is_train(), outs[0]._ctx, fn=rule,
                     out_meta=tuple((o.shape, _dt(o.dtype)) for o in outs))
    for i, o in enumerate(outs):
        o._ag = (node, i)
    return node


def _retarget_output(node, i, target):
    """``out=`` moved output ``i`` of ``node`` into ``target``: track that array instead."""
    root = target._base if target._base is not None else target
    target._ag = (node, i)
    if node.out_refs is not None:
        refs = list(node.out_refs)
        refs[i] = (weakref.ref(root), root._version)
        node.out_refs = tuple(refs)


def check_writable(target, where):
    """Refuse, while recording, to write into an array that is part of a recorded graph.

    As MXNet's RecordOp: a variable or the output of a recorded op that no backward
    has freed yet may not be overwritten inside ``record()`` (the graph would
    silently describe values the array no longer holds). Called before the write.
    """
    e = target._ag
    if e is not None and _is_rec() and not e[0].freed:
        raise GpundaError(
            f"{where}: Assigning to NDArrays that are already in a computational graph "
            f"will cause undefined behavior when evaluating gradients. Please call backward "
            f"first to clear the graph or do this outside of a record section. In-place "
            f"operations (+=, *=, relu(x, out=x), y[idx]=x, ...) on such arrays are not "
            f"possible inside a record section either")


def check_not_inplace(targets, inputs, where):
    """Refuse a recorded op whose ``out=`` is one of its own inputs (``x += y`` with y
    depending on a variable), as MXNet does; only called for recorded ``out=`` calls."""
    for t in targets:
        for x in inputs:
            if t is x:
                raise GpundaError(
                    f"{where}: Inplace operations (+=, -=, x[:]=, etc) are not supported when "
                    f"recording with autograd: out= is also an input of the op; write "
                    f"the result to a new array instead")


def record_assign(target, key, value):
    """``target[key] = value`` while recording, with ``value`` depending on a variable.

    As MXNet: a key that selects the whole array is a recorded copy, so ``target``
    takes the value's place in the graph; any other key would be an in-place
    slice assignment, which cannot be recorded and raises.
    """
    from gpunda._engine.imperative import write_outputs
    keys = key if isinstance(key, tuple) else (key,)
    whole = False
    if all(isinstance(k, (slice, int, np.integer, type(None), type(Ellipsis))) for k in keys):
        # new axes (None) select nothing: a[None] = v assigns the whole array too
        view = target._data[tuple(k for k in keys if k is not None)]
        whole = view.shape == target.shape and view.strides == target._data.strides
    if not whole:
        check_not_inplace([target], [target], "__setitem__")
    if value.shape == target.shape:
        r = hooks.nd._copy(value)
    elif value.ndim > target.ndim and value.size == target.size:
        r = value.reshape(target.shape)       # a[None] = v with v of shape a[None].shape
    else:   # NumPy's broadcasting rule: missing leading axes first, then stretch
        if value.ndim < target.ndim:
            value = value.reshape((1,) * (target.ndim - value.ndim) + value.shape)
        r = value.broadcast_to(target.shape)
    write_outputs([target], [r], "__setitem__")


def _check_versions(node):
    """Raise, naming the op and the array, when an array ``node`` kept for its rule was
    written in place after the node was recorded (NOTE [In-place writes])."""
    op = node.op
    if node.saved_in is not None:
        muts = op.mutated(node.p) if op.mutates else ()
        for i, x in enumerate(node.saved_in):
            # an op's own mutated inputs (BatchNorm's moving stats) are not read by its rule
            if i in muts:
                continue
            if (x._base if x._base is not None else x)._version > node.seq:
                raise GpundaError(
                    f"Operator {op.name}: input {i} was modified in place after it was used "
                    f"in a recorded computation, so its gradient would be wrong; copy it "
                    f"before modifying it, or compute the gradient first")
    if node.out_refs is not None:
        for i, (r, v) in enumerate(node.out_refs):
            o = r()
            if o is not None and (o._base if o._base is not None else o)._version != v:
                raise GpundaError(
                    f"Operator {op.name}: output {i} was modified in place after it was "
                    f"recorded, so its gradient would be wrong; copy it before modifying it")


_by_seq = attrgetter("seq")


def _collect(head_nodes):
    """The nodes reachable from ``head_nodes``, newest first, and the leaves reached.

    Marks each by giving it a gradient slot list (``_g``); the caller resets them.
    """
    nodes, leaves = [], []
    for n in head_nodes:
        if n._g is None:
            n._g = [None] * n.nout
            (leaves if n.is_leaf else nodes).append(n)
    add, add_leaf = nodes.append, leaves.append
    i = 0
    # ``nodes`` doubles as the work queue: everything appended is visited once
    while i < len(nodes):
        ins = nodes[i].inputs
        i += 1
        for e in ins:
            if e is not None:
                m = e[0]
                if m._g is None:
                    if m.nout == 1:
                        m._g = [None]
                        if m.is_leaf:
                            add_leaf(m)
                            continue
                    else:
                        m._g = [None] * m.nout
                    add(m)
    nodes.sort(key=_by_seq, reverse=True)
    return nodes, leaves


def _as_list(x, where, what):
    NDArray = hooks.NDArray
    if isinstance(x, NDArray):
        return [x], True
    try:
        return list(x), False
    except TypeError:
        raise GpundaError(f"{where}: {what} must be an NDArray or a list of NDArrays, got "
                          f"{type(x).__name__}") from None


def _parse_head(heads, head_grads, where="backward"):
    """MXNet's normalisation of ``heads`` and ``head_grads``: a single NDArray becomes a
    one-element list; returns ``(heads, head_grads)`` with head_grads a list of the same
    length (None entries: ones) or None."""
    head_list, _ = _as_list(heads, where, "heads")
    if head_grads is None:
        return head_list, None
    hg_list, _ = _as_list(head_grads, where, "head_grads")
    if len(hg_list) != len(head_list):
        raise GpundaError(f"{where}: got {len(hg_list)} head_grads for "
                          f"{len(head_list)} heads; heads and head_grads must be lists of "
                          f"the same length")
    return head_list, hg_list


def _check_heads(heads, head_grads, where):
    NDArray = hooks.NDArray
    head_list, hg_list = _parse_head(heads, head_grads, where)
    if not head_list:
        raise GpundaError(f"{where}: heads is empty")
    if hg_list is None:
        hg_list = [None] * len(head_list)
    for i, h in enumerate(head_list):
        if not isinstance(h, NDArray):
            raise GpundaError(f"{where}: heads[{i}] must be an NDArray, got {type(h).__name__}")
        if h._ag is None:
            raise GpundaError(
                f"{where}: heads[{i}] (shape {h.shape}) was not recorded or is not connected to "
                f"any variable; call attach_grad() on the inputs and compute it inside "
                f"autograd.record()")
        dt = _dt(h.dtype)
        if dt.kind not in "fciub" and not _core_bf16.is_bf16(dt):   # integer/bool heads too
            raise GpundaError(f"{where}: heads[{i}] has dtype {dt.name}; only numeric "
                              f"arrays can be differentiated")
        node = h._ag[0]
        if node.freed and not node.is_leaf:
            raise GpundaError(
                f"{where}: heads[{i}] comes from {node.op.name} whose graph was already freed "
                f"by an earlier backward; pass retain_graph=True to the first backward to "
                f"run backward through it again")
    for i, (h, g) in enumerate(zip(head_list, hg_list)):
        if g is None:
            continue
        if not isinstance(g, NDArray):
            raise GpundaError(f"{where}: head_grads[{i}] must be an NDArray or None, got "
                              f"{type(g).__name__}")
        if g.shape != h.shape and g.size < h.size:
            # MXNet does not check and reads the buffer as the head's shape, past its
            # end when it is smaller; an equal or larger element count is well defined
            # (a larger buffer gives its leading h.size elements). A rule that never
            # reads its output gradients (reads_ograds = False: MXNet's backward declares
            # no dependency on them) takes any buffer; its seed is never read.
            node, idx = h._ag
            rule = getattr(node, "fn", None) or getattr(node.op, "gradient", None)
            reads = getattr(rule, "reads_ograds", True)
            if not (reads(node.p, idx) if callable(reads) else reads):
                hg_list[i] = None
                continue
            raise GpundaError(f"{where}: head_grads[{i}] has shape {g.shape} but heads[{i}] "
                              f"has shape {h.shape}")
        if g._ctx != h._ctx:
            raise GpundaError(f"{where}: head_grads[{i}] is on {g._ctx} but heads[{i}] is on "
                              f"{h._ctx}")
        if g.dtype != h.dtype:      # MXNet refuses the mismatch too (TBlob type check)
            raise GpundaError(f"{where}: head_grads[{i}] has dtype {_dt(g.dtype).name} "
                              f"but heads[{i}] has dtype {_dt(h.dtype).name}")
        if g.stype != "default":
            # a sparse head gradient seeds the walk as its dense values, as MXNet's
            # storage fallback computes it
            with _Scope(False, None):
                hg_list[i] = g = g.tostype("default")
        if g.shape != h.shape:
            from gpunda._engine.imperative import invoke
            with _Scope(False, None):     # exact shapes: zero dims are sizes, not copy codes
                flat = invoke("_reshape_exact", [g], shape=(g.size,))
                if g.size != h.size:
                    flat = flat[:h.size]
                hg_list[i] = invoke("_reshape_exact", [flat], shape=h.shape)
    return head_list, hg_list


def _run_backward(heads, head_grads, variables, retain_graph, create_graph, train_mode, where):
    """Core of backward/grad. Returns gradients for ``variables`` (or None for backward)."""
    NDArray = hooks.NDArray
    head_list, hg_list = _check_heads(heads, head_grads, where)
    var_entries = None
    if variables is not None:
        var_entries = []
        for i, v in enumerate(variables):
            if (not isinstance(v, NDArray) or v._ag is None or not v._ag[0].is_leaf
                    or v._ag[0].freed):
                raise GpundaError(f"{where}: variables[{i}] is not marked for gradients; "
                                  f"call attach_grad() or mark_variables() first")
            var_entries.append(v._ag)
    heads_e = [h._ag for h in head_list]
    ctx0 = head_list[0]._ctx
    if ctx0._xp is np:
        return _backward_body(head_list, hg_list, heads_e, variables, var_entries,
                              retain_graph, create_graph, train_mode, where)
    # on a GPU, work on the heads' device (rules of nodes on other devices switch)
    with ctx0.backend.device_scope():
        return _backward_body(head_list, hg_list, heads_e, variables, var_entries,
                              retain_graph, create_graph, train_mode, where)


def _backward_body(head_list, hg_list, heads_e, variables, var_entries, retain_graph,
                   create_graph, train_mode, where):
    _new = hooks.new_ndarray
    nodes, leaves = _collect([e[0] for e in heads_e])
    if not leaves:
        # parts freed by an earlier backward are constants (MXNet records nothing on them);
        # a graph that reaches no variable except through them cannot be differentiated
        freed = next((n for n in nodes if n.seq < 0), None)
        if freed is not None:
            for n in nodes:
                n._g = None
            raise _freed_error(freed)
    if var_entries is None and not any(leaf.grad_req != "null" for leaf in leaves):
        # MXNet's Imperative::Backward differentiates with respect to the variables whose
        # grad_req is not 'null' and refuses a graph that has none (nothing is freed)
        for n in nodes:
            n._g = None
        for n in leaves:
            n._g = None
        raise GpundaError(f"{where}: there are no inputs in the computation graph that "
                          f"require gradients (every variable reached has grad_req='null')")
    try:
        if var_entries is not None:
            for i, (leaf, _) in enumerate(var_entries):
                if leaf._g is None:
                    raise GpundaError(f"{where}: variables[{i}] (shape {variables[i].shape}) "
                                      f"is not part of the graph that computed the heads")
        # seeds: head gradients (ones by default)
        for h, g, (node, idx) in zip(head_list, hg_list, heads_e):
            if g is None:
                xp = h._ctx.backend.xp
                g = xp.ones(h.shape, _dt(h.dtype))
                if create_graph:
                    g = _new(g, h._ctx)
            elif not create_graph:
                g = g._data
            cur = node._g[idx]
            node._g[idx] = g if cur is None else cur + g
        prev_rec, prev_train, prev_bwd = _is_rec(), _is_train(), _bwd_train[0]
        _set_rec(bool(create_graph))
        _bwd_train[0] = bool(train_mode)
        try:
            if create_graph:
                _walk_nd_mixing(nodes, bool(train_mode))
            else:
                _walk_raw(nodes, bool(train_mode))
        finally:
            _set_rec(prev_rec)
            _set_train(prev_train)
            _bwd_train[0] = prev_bwd
        if var_entries is not None:
            result = _gather(variables, var_entries, create_graph, head_list, hg_list)
        else:
            _write_grads(leaves, where)
            result = None
    except BaseException:
        for n in nodes:
            n._g = None
        for n in leaves:
            n._g = None
        raise
    for n in leaves:
        n._g = None
        if not retain_graph and n.grad_req == "null":
            n.freed = True
    if retain_graph:
        for n in nodes:
            n._g = None
    else:
        for n in nodes:
            n._g = n.saved_in = n.out_data = None
            n.seq = -1      # freed
            n.inputs = ()
            if n.fn is not None:
                n.fn = None
    return result


def _freed_error(node):
    return GpundaError(
        f"backward: the graph through {node.op.name} was already freed by an earlier "
        f"backward; pass retain_graph=True to the first backward to run backward through "
        f"it again")


def _no_rule_error(node):
    return GpundaError(f"Operator {node.op.name} has no gradient rule; it cannot be "
                       f"differentiated")


def _rule_failed(node, err):
    name = node.op.name if node is not None and node.op is not None else "?"
    from gpunda._engine import oom as _oom
    ctx = getattr(node, "ctx", None) if node is not None else None
    if _oom.is_oom(err, ctx):
        _oom.free_caches(ctx)
        return _oom.oom_error(f"Operator {name}: gradient failed", ctx or "the device", err,
                              retried=False)
    return GpundaError(f"Operator {name}: gradient failed: {type(err).__name__}: {err}")


def _walk_raw(nodes, train_mode):
    """Apply the gradient rules of ``nodes`` (newest first) to backend arrays, accumulating
    into the inputs' slots; the plain backward, where nothing is recorded.

    It runs once per node of every training step, so the common case (one output, rule
    from the registry, same context and training flag as the previous node) is kept to
    a few attribute reads.
    """
    _set_train(train_mode)
    cur_train = train_mode
    F = ctx = scope = node = None
    try:
        for node in nodes:
            gs = node._g
            if node.nout == 1:
                if gs[0] is None:
                    continue    # no gradient reached this node
            elif all(g is None for g in gs):
                continue
            # a freed node has seq -1; otherwise a write since the node was recorded
            # may have hit an array it kept for its rule
            if node.seq < _last_write[0]:
                if node.seq < 0:
                    continue    # freed by an earlier backward: a constant now, as in MXNet
                _check_versions(node)     # raises, naming the op and the array
            op = node.op
            if op.update is None:
                if node.training is not cur_train:
                    cur_train = node.training
                    _set_train(cur_train)
            elif cur_train is not train_mode:
                cur_train = train_mode      # the backward's mode (see _bwd_train)
                _set_train(cur_train)
            if node.ctx is not ctx:
                ctx = node.ctx
                F = _raw_namespace(ctx)
                if scope is not None:
                    scope.__exit__(None, None, None)
                    scope = None
                if ctx._xp is not np:
                    scope = ctx.backend.device_scope()
                    scope.__enter__()
            saved = node.saved_in
            if saved is None:
                ins = None
            elif len(saved) == 2:
                ins = [saved[0]._data, saved[1]._data]
            elif len(saved) == 1:
                ins = [saved[0]._data]
            else:
                ins = [x._data for x in saved]
            if node.nout > 1:
                gs = [g if g is not None else _zeros(node, i, False) for i, g in enumerate(gs)]
            inputs = node.inputs
            fn = node.fn
            if fn is not None:
                grads = fn(F, node.p, ins, node.out_data, gs)
            else:
                rule = op.gradient
                if rule is None:
                    raise _no_rule_error(node)
                if op.grad_need:    # the entries double as the mask: None where no gradient
                    grads = rule(F, node.p, ins, node.out_data, gs, inputs)
                else:
                    grads = rule(F, node.p, ins, node.out_data, gs)
            if op.update is not None and train_mode:
                # BatchNorm's moving stats: written when its backward runs (NOTE [Mutated
                # inputs and their pass] in ops/registry.py)
                run_update(node.op, node.p, F._xp, ins, node.out_data, saved)
            if len(inputs) == 1:
                e = inputs[0]
                g = grads[0]
                if e is not None and g is not None:
                    tg = e[0]._g
                    c = tg[e[1]]
                    tg[e[1]] = g if c is None else c + g
            elif len(inputs) == 2:
                e, f = inputs
                g, h = grads
                if e is not None and g is not None:
                    tg = e[0]._g
                    c = tg[e[1]]
                    tg[e[1]] = g if c is None else c + g
                if f is not None and h is not None:
                    tg = f[0]._g
                    c = tg[f[1]]
                    tg[f[1]] = h if c is None else c + h
            else:
                _accumulate(inputs, grads)
    except GpundaError:
        raise
    except Exception as err:
        raise _rule_failed(node, err) from err
    finally:
        if scope is not None:
            scope.__exit__(None, None, None)


def _walk_nd(nodes, train_mode):
    """``_walk_raw`` for ``create_graph=True``: rules run on NDArrays through the nd
    namespace while recording, so the gradients are themselves differentiable."""
    F = hooks.nd
    _new = hooks.new_ndarray
    _set_train(train_mode)
    cur_train = train_mode
    node = None
    try:
        for node in nodes:
            gs = node._g
            if all(g is None for g in gs):
                continue
            if node.freed:
                continue        # freed by an earlier backward: a constant now, as in MXNet
            _check_versions(node)
            want = node.training if node.op.update is None else train_mode
            if want is not cur_train:
                cur_train = want
                _set_train(cur_train)
            saved = node.saved_in
            ins = list(saved) if saved is not None else None
            if node.out_data is not None:
                outs = []
                for i, d in enumerate(node.out_data):
                    o = _new(d, node.ctx)
                    o._ag = (node, i)
                    outs.append(o)
            else:
                outs = None
            if node.nout > 1:
                gs = [g if g is not None else _zeros(node, i, True) for i, g in enumerate(gs)]
            if node.fn is not None:
                grads = node.fn(F, node.p, ins, outs, gs)
            else:
                rule = node.op.gradient
                if rule is None:
                    raise _no_rule_error(node)
                if node.op.grad_need:
                    grads = rule(F, node.p, ins, outs, gs, node.inputs)
                else:
                    grads = rule(F, node.p, ins, outs, gs)
            if node.op.update is not None and train_mode:
                run_update(node.op, node.p, node.ctx.backend.xp, [x._data for x in saved],
                           list(node.out_data), saved)
            _accumulate(node.inputs, grads)
    except GpundaError:
        raise
    except Exception as err:
        raise _rule_failed(node, err) from err


def _accumulate(inputs, grads):
    """Add each input's gradient into the slot of the node (or leaf) that produced it.

    _walk_raw spells out the one- and two-input cases, the common ones."""
    for e, g in zip(inputs, grads):
        if g is not None and e is not None:
            tg = e[0]._g
            k = e[1]
            c = tg[k]
            tg[k] = g if c is None else c + g


def _walk_nd_mixing(nodes, train_mode):
    """``_walk_nd``, where rules may meet mx.np outputs with legacy seeds (NOTE: both are
    dense NDArrays; only user calls must not mix the two flavours)."""
    from gpunda._engine.imperative import _mixing
    prev = _mixing.allowed
    _mixing.allowed = True
    try:
        _walk_nd(nodes, train_mode)
    finally:
        _mixing.allowed = prev


def _zeros(node, i, as_nd):
    """A zero gradient for output ``i`` of a multi-output node that got none."""
    shape, dtype = node.out_meta[i]
    xp = node.ctx.backend.xp
    z = xp.zeros(shape, dtype)
    if as_nd:
        _new = hooks.new_ndarray
        return _new(z, node.ctx)
    return z


def _gather(variables, var_entries, create_graph, head_list, hg_list):
    """The gradients ``grad()`` returns, as fresh NDArrays."""
    _new = hooks.new_ndarray
    # never hand back the caller's own head gradient buffer, nor one buffer twice
    # (x + y passes the same gradient array to both)
    seeds = {id(h._data) for h in head_list}
    seeds.update(id(g._data) for g in hg_list if g is not None)
    result = []
    for v, (leaf, idx) in zip(variables, var_entries):
        g = leaf._g[idx]
        xp = v._ctx.backend.xp
        if create_graph:
            if g is None:
                g = _new(xp.zeros(v.shape, _dt(v.dtype)), v._ctx)
            elif g.shape != v.shape:
                g = g.broadcast_to(v.shape)
            if g._ag is None:
                # a gradient that does not depend on any variable (relu's mask times
                # ones) still belongs to the graph, with derivative zero
                g = _new(g._data, g._ctx)
                record_node(_constant_op(), None, [v], [g], rule=_no_grad_rule)
            result.append(g)
            continue
        if g is None:
            result.append(_new(xp.zeros(v.shape, _dt(v.dtype)), v._ctx))
            continue
        if g.shape != v.shape:
            g = xp.broadcast_to(g, v.shape).copy()
        elif id(g) in seeds:
            g = g.copy()
        seeds.add(id(g))
        wrap = getattr(g, "_gpunda_wrap", None)     # sparse storage -> its NDArray class
        result.append(wrap(v._ctx) if wrap is not None else _new(g, v._ctx))
    return result


_const = []


def _constant_op():
    if not _const:
        from gpunda.ops.registry import OpDef
        _const.append(OpDef("_constant_gradient", None, save=(), doc="A gradient value that "
                            "does not depend on the variables (its derivative is zero)."))
    return _const[0]


def _no_grad_rule(F, p, ins, outs, ograds):
    return [None]


def _write_grads(leaves, where):
    """Write (or add) the leaves' gradients into their ``.grad``; all checked first."""
    todo = []
    for leaf in leaves:
        if leaf.grad_req == "null" or leaf.grad is None:
            continue
        g = leaf._g[0]
        buf = leaf.grad
        if g is not None and tuple(g.shape) != buf.shape:
            try:
                g = buf._ctx.backend.xp.broadcast_to(g, buf.shape)
            except ValueError:
                raise GpundaError(f"{where}: gradient of shape {tuple(g.shape)} does not fit "
                                  f"the gradient buffer of shape {buf.shape}") from None
        todo.append((leaf, buf, g))
    for leaf, buf, g in todo:
        leaf.fresh = True
        if type(g) is _deferred.Poisoned:
            # the gradient depends on a failed op: the buffer carries the failure, which
            # its next read (or waitall) reports (NOTE [Deferred op errors])
            old = buf._data
            buf._data = _deferred.Poisoned(old.fill if type(old) is _deferred.Poisoned else old,
                                           g.failure)
            bump_version(buf)
            continue
        if buf.stype != "default":
            _write_sparse(leaf, buf, g)
            continue
        if leaf.grad_req == "add":
            if g is None:
                continue
            buf._data += g if g.dtype == buf._data.dtype else g.astype(buf._data.dtype)
        elif g is None:
            buf._data[...] = 0
        else:
            buf._data[...] = g
        bump_version(buf)


def _write_sparse(leaf, buf, g):
    """A dense gradient into a sparse gradient buffer (``attach_grad(stype=...)``)."""
    _new = hooks.new_ndarray
    xp = buf._ctx.backend.xp
    dense = _new(xp.zeros(buf.shape, buf.dtype) if g is None else g.astype(buf.dtype), buf._ctx)
    if leaf.grad_req == "add":
        dense = dense + buf.tostype("default")
    buf._assign_from(dense.tostype(buf.stype))


# ---------------------------------------------------------------------------
# public entry points

def mark_variables(variables, gradients, grad_reqs="write"):
    """Mark arrays as variables whose gradients go into ``gradients``.

    ``grad_reqs`` is 'write', 'add' or 'null', one value or one per variable.
    Everything is checked before any variable is marked.
    """
    NDArray = hooks.NDArray
    where = "mark_variables"
    vs, _ = _as_list(variables, where, "variables")
    gs, _ = _as_list(gradients, where, "gradients")
    if len(vs) != len(gs):
        raise GpundaError(f"{where}: {len(vs)} variables but {len(gs)} gradients")
    if isinstance(grad_reqs, str):
        reqs = [grad_reqs] * len(vs)
    else:
        reqs, _ = _as_list(grad_reqs, where, "grad_reqs")
    if len(reqs) != len(vs):
        raise GpundaError(f"{where}: {len(vs)} variables but {len(reqs)} grad_reqs")
    for i, (v, g, r) in enumerate(zip(vs, gs, reqs)):
        if not isinstance(r, str) or r not in _GRAD_REQS:
            raise GpundaError(f"{where}: grad_reqs[{i}]={r!r} is not one of {list(_GRAD_REQS)}")
        if not isinstance(v, NDArray):
            raise GpundaError(f"{where}: variables[{i}] must be an NDArray, got "
                              f"{type(v).__name__}")
        if not isinstance(g, NDArray):
            raise GpundaError(f"{where}: gradients[{i}] must be an NDArray, got "
                              f"{type(g).__name__}")
        if g.shape != v.shape:
            raise GpundaError(f"{where}: gradients[{i}] has shape {g.shape} but "
                              f"variables[{i}] has shape {v.shape}")
        if not shares_memory_space(g._ctx, v._ctx):    # host contexts are one, as in MXNet
            raise GpundaError(f"{where}: gradients[{i}] is on {g._ctx} but variables[{i}] is "
                              f"on {v._ctx}")
    for v, g, r in zip(vs, gs, reqs):
        v._ag = (Leaf(g, r, v), 0)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Compute gradients of ``heads`` into the ``.grad`` of every variable reached.

    ``head_grads`` default to ones. Unless ``retain_graph``, the graph is freed
    and a second backward through it raises.
    """
    _run_backward(heads, head_grads, None, retain_graph, False, train_mode, "backward")


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Gradients of ``heads`` with respect to ``variables``, without touching ``.grad``.

    With ``create_graph=True`` the computation of the gradients is recorded, so
    they can be differentiated again; ``retain_graph`` defaults to
    ``create_graph``. Returns a list of NDArrays, one per variable, also when
    ``variables`` is a single NDArray (as MXNet 1.x does).
    """
    vs, _ = _as_list(variables, "grad", "variables")
    if not vs:
        raise GpundaError("grad: variables is empty")
    if retain_graph is None:
        retain_graph = create_graph
    return _run_backward(heads, head_grads, vs, retain_graph, create_graph, train_mode, "grad")
