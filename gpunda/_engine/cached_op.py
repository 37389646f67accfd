"""CachedOp: a Symbol turned into a plan of op calls (MXNet's ``MXCreateCachedOp``).

A plan lists the graph's op nodes in topological order as *steps* that read
and write numbered *slots* (slot k < num_inputs is input k in ``list_inputs``
order). Three ways to run it:

* plain: every step computes on raw backend arrays; a slot is dropped after
  its last use, so memory behaves like imperative code with less overhead.
* recorded (under ``autograd.record()``): all slots are kept and the call goes
  on the tape as ONE node whose rule (``Node.fn``) walks the steps backwards
  applying each op's gradient rule (see NOTE [CachedOp backward]); per input
  signature that forward and backward are compiled once into a TrainPlan
  (_engine/cached_plan.py, NOTE [Training plan]).
* static (``static_alloc``): per input signature a memory plan is made once
  from the first call; see NOTE [Static memory plan].
* CUDA graphs (``static_alloc`` + ``static_shape`` on a GPU): see NOTE
  [CUDA graphs].
"""
from __future__ import annotations

import ast
import contextlib
import os
import weakref
from collections import OrderedDict

import numpy as np

from gpunda._engine import oom as _oom
from gpunda._engine import autograd as _ag
from gpunda._engine.cached_plan import TrainPlan, compute_step, step_gradient, step_update
from gpunda._engine import fusion as _fusion
from gpunda.base import GpundaError, np_dtype
from gpunda._core import hooks
from gpunda._core import bf16 as _core_bf16
from gpunda._engine.imperative import write_outputs
from gpunda.ops.tensor.creation import open_range, closed_range
from gpunda._core.deferred import DeferredOpError, failed_input, poison_outputs
from gpunda.context import shares_memory_space
from gpunda.ops._util import capture_gemm as _capture_gemm
from gpunda.ops.registry import OpDef

__all__ = ["CachedOp"]

_is_rec = _ag._is_rec

_FLAGS = {"static_alloc": "bool", "static_shape": "bool", "inline_limit": "int",
          "forward_bulk_size": "int", "backward_bulk_size": "int",
          "data_indices": "list", "param_indices": "list"}
_MAX_GRAPHS = 4     # graph entries kept per CachedOp (LRU)


def _flag_value(key, value, nin):
    kind = _FLAGS.get(key)
    if kind is None:
        raise GpundaError(f"CachedOp: unknown flag {key!r}={value!r}; valid flags: "
                          f"{', '.join(_FLAGS)}")
    v = value
    try:
        if kind == "bool":
            if isinstance(v, str):
                if v.strip() not in ("True", "False", "true", "false", "1", "0"):
                    raise ValueError
                return v.strip() in ("True", "true", "1")
            if isinstance(v, (bool, np.bool_)) or (
                    isinstance(v, (int, np.integer)) and v in (0, 1)):
                return bool(v)
            raise ValueError
        if kind == "int":
            if isinstance(v, str):
                v = int(v.strip())
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError
            return int(v)
        if isinstance(v, str):
            v = ast.literal_eval(v.strip())
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            v = [v]
        v = [int(i) if isinstance(i, (int, np.integer)) and not isinstance(i, bool) else None
             for i in v]
        if any(i is None or not 0 <= i < nin for i in v):
            raise ValueError
        return v
    except (ValueError, TypeError, SyntaxError):
        what = {"bool": "a boolean", "int": "a non-negative integer",
                "list": f"a list of input indices in [0, {nin})"}[kind]
        raise GpundaError(f"CachedOp: flag {key}={value!r} must be {what}") from None


def _parse_flags(flags, nin):
    if flags is None:
        flags = ()
    items = flags.items() if isinstance(flags, dict) else flags
    out = {"static_alloc": False, "static_shape": False, "inline_limit": 2,
           "forward_bulk_size": 15, "backward_bulk_size": 15, "data_indices": None,
           "param_indices": None}
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise GpundaError(f"CachedOp: flags must be (name, value) pairs or a dict, got "
                              f"{item!r}")
        k, v = item
        out[k] = _flag_value(k, v, nin)
    if out["static_shape"] and not out["static_alloc"]:
        raise GpundaError("CachedOp: flag static_shape=True requires static_alloc=True")
    return out


# ---------------------------------------------------------------------------
# element-wise ops that can write into a given buffer (``out=``)

_UNARY_UFUNCS = {n: n for n in (
    "negative", "square", "sqrt", "cbrt", "exp", "expm1", "log", "log1p", "log2", "log10",
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "floor", "ceil", "rint", "trunc", "sign", "degrees", "radians",
    "reciprocal")}
_UNARY_UFUNCS["abs"] = "absolute"
_BINARY_UFUNCS = {}
for _p, _u in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("div", "true_divide")):
    _BINARY_UFUNCS["broadcast_" + _p] = _u
    _BINARY_UFUNCS["elemwise_" + _p] = _u
_BINARY_UFUNCS.update({"broadcast_maximum": "maximum", "broadcast_minimum": "minimum",
                       "broadcast_power": "power", "broadcast_hypot": "hypot",
                       "broadcast_mod": "mod"})
# scalar ops: (ufunc, scalar goes first)
_SCALAR_UFUNCS = {"_plus_scalar": ("add", False), "_minus_scalar": ("subtract", False),
                  "_rminus_scalar": ("subtract", True), "_mul_scalar": ("multiply", False),
                  "_div_scalar": ("true_divide", False), "_rdiv_scalar": ("true_divide", True),
                  "_power_scalar": ("power", False), "_rpower_scalar": ("power", True),
                  "_maximum_scalar": ("maximum", False), "_minimum_scalar": ("minimum", False),
                  "_hypot_scalar": ("hypot", False), "_mod_scalar": ("mod", False)}


def _out_writer(op, p, xp, nin):
    """How ``op`` writes its single output into a given array, or None when it cannot.

    Returns ``(ufunc, scalar, scalar_first)`` for a NumPy/CuPy ufunc called as
    ``ufunc(*ins, out=)`` (with ``scalar`` before or after the input), or
    ``(callable, None, None)`` for an OpDef.ufunc callable ``f(xp, p, *ins, out=)``.
    Only used for float data (callers check dtypes).
    """
    u = op.ufunc
    if callable(u) and not isinstance(u, (np.ufunc, type(xp.add))):
        return (lambda *args: u(xp, p, *args[:-1], out=args[-1])), None, False
    if isinstance(u, str):
        return getattr(xp, u), None, False
    name = op.name
    if name == "relu" and nin == 1:
        return xp.maximum, 0, False
    if name in _UNARY_UFUNCS and nin == 1:
        return getattr(xp, _UNARY_UFUNCS[name]), None, False
    if name in _BINARY_UFUNCS and nin == 2:
        return getattr(xp, _BINARY_UFUNCS[name]), None, False
    if name in _SCALAR_UFUNCS and nin == 1:
        uname, first = _SCALAR_UFUNCS[name]
        return getattr(xp, uname), p.scalar, first
    return None


# ---------------------------------------------------------------------------

class _Step:
    __slots__ = ("op", "p", "ins", "outs", "name", "nout", "compute", "wants_ctx", "capturable",
                 "why_not", "gemm", "seq1")

    def __init__(self, node, ins, outs):
        self.op, self.p, self.ins, self.outs, self.name = node.op, node.p, ins, outs, node.name
        self.nout = len(outs)
        self.seq1 = node.op.fixed_nout is None and self.nout == 1
        self.compute = node.op.compute
        self.wants_ctx = node.op.wants_ctx
        op = node.op
        why = None
        # a GEMM op joins a graph when the backend has a capture-safe GEMM (_GraphEntry)
        self.gemm = op.capture == "gemm"
        if self.gemm:
            why = "cuBLAS GEMM, and this backend has no capture-safe GEMM"
        elif op.capture != "ok":
            why = op.capture
        elif op.random:
            why = "random numbers (cuRAND)"
        elif op.mutates:
            why = "mutates its inputs"
        self.capturable = why is None
        self.why_not = why

    @classmethod
    def fused(cls, group, name):
        """The step of a fused group (NOTE [Fused steps] in fusion/group.py)."""
        st = cls.__new__(cls)
        st.op, st.p, st.ins, st.outs, st.name = group.op, group, group.in_slots, \
            group.out_slots, name
        st.nout = len(st.outs)
        st.seq1 = False
        st.compute = group.op.compute
        st.wants_ctx = True
        st.gemm = False
        st.capturable, st.why_not = True, None
        return st


class _Saved:
    """What one recorded call keeps for its backward (``Node.p`` of the tape node)."""

    __slots__ = ("cop", "vals", "req", "ctx", "args", "plan")

    def __init__(self, cop, vals, req, ctx, args=None, plan=None):
        self.cop, self.vals, self.req, self.ctx = cop, vals, req, ctx
        # the call's input NDArrays, whose versions a backward-pass write bumps
        self.args = args
        self.plan = plan        # the TrainPlan that ran the call (NOTE [Training plan])

    def attrs(self):
        return {}


def _no_rule(F, p, ins, outs, ograds):
    raise GpundaError("CachedOp: internal error: the node's rule is Node.fn")


_CACHED_OPDEF = OpDef("_CachedOp", None, inputs=lambda p: (), gradient=_no_rule, save=(),
                      doc="A CachedOp call on the autograd tape.")


class CachedOpCall:
    """The params of a ``_CachedOp`` Symbol node (``autograd.get_symbol`` of a call that
    was not inlined): the CachedOp it runs."""

    __slots__ = ("cop",)

    def __init__(self, cop):
        self.cop = cop

    def attrs(self):
        return {}


def _run_symbol_node(xp, p, *arrays, ctx=None):
    cop = p.cop
    if cop._open_shapes:
        cop._resolve_open_shapes([a.shape for a in arrays], [a.dtype for a in arrays])
    vals = cop._run_plain(xp, ctx, list(arrays), keep=False)
    out = [cop._head_value(vals, h, xp) for h in cop._heads]
    return out[0] if len(out) == 1 else tuple(out)


def _no_symbol_grad(F, p, ins, outs, ograds):
    raise GpundaError("_CachedOp: a get_symbol() node of a CachedOp call is not "
                      "differentiable; differentiate the block's own graph instead")


# the op of a _CachedOp node in a Symbol: runs the CachedOp's plan (forward only)
CACHED_SYMBOL_OPDEF = OpDef(
    "_CachedOp", _run_symbol_node, inputs=lambda p: tuple(p.cop._input_names),
    num_outputs=lambda p: p.cop.num_outputs, gradient=_no_symbol_grad, save=(),
    wants_ctx=True, hidden=True, doc="A CachedOp as one Symbol node (from get_symbol).")


_live = weakref.WeakSet()     # every CachedOp, for refresh_step_computes


def refresh_step_computes(choose):
    """Point every plan step of every live CachedOp at ``choose(op)`` (NOTE [Swapping
    computes] in _engine/imperative.py); captured CUDA graphs replay as recorded."""
    for cop in list(_live):
        for st in cop._steps:
            st.compute = choose(st.op)


def _closed(p, shape):
    """Params ``p`` of an open creation step given the ``shape`` inferred for it (None:
    unchanged): the shape itself, or an open arange's stop."""
    if shape is None:
        return p
    if not hasattr(p, "shape"):
        return closed_range(p, shape[0])
    return p if tuple(shape) == tuple(p.shape) else p.replace(shape=tuple(shape))


def _may_be_open(n):
    """Whether node ``n`` is an input-less op whose ``shape`` parameter may have unknown
    dimensions (0 in legacy shape mode, -1 under np_shape; a sampler's () too)."""
    if n.inputs:
        return False
    if open_range(n):       # arange(infer_range=True) without stop: length from the graph
        return True
    shape = getattr(n.p, "shape", None)
    if not isinstance(shape, tuple):
        return False
    return any(d <= 0 for d in shape) or (not shape and n.op.random)


class CachedOp:
    """A Symbol compiled into a reusable plan (MXNet's ``mx.nd.CachedOp``).

    ``CachedOp(sym, flags=())`` with MXNet's flags (static_alloc, static_shape,
    inline_limit, forward_bulk_size, backward_bulk_size, data_indices,
    param_indices) as (name, value) pairs or a dict. Call it with NDArrays in
    ``sym.list_inputs()`` order; it returns one NDArray or a list.
    """

    def __init__(self, sym, flags=()):
        if not isinstance(sym, hooks.Symbol):
            raise GpundaError(f"CachedOp: sym must be a Symbol, got {type(sym).__name__}")
        self._sym = sym
        _oom.track_cached_op(self)
        order = sym._topo()
        inputs = [n for n in order if n.op is None]
        names = [n.name for n in inputs]
        seen = set()
        for nm in names:
            if nm in seen:
                raise GpundaError(f"CachedOp: duplicate argument name {nm!r}: two different "
                                  f"variables share it, so inputs cannot be told apart")
            seen.add(nm)
        self._flags = _parse_flags(flags, len(inputs))
        self._input_names = names
        self._declared_dtypes = []
        for n in inputs:
            self._declared_dtypes.append(hooks.var_dtype(n, {}))
        slot = {}
        for k, n in enumerate(inputs):
            slot[(id(n), 0)] = k
        nslots = len(inputs)
        steps = []
        open_shapes = []
        for n in order:
            if n.op is None:
                continue
            outs = list(range(nslots, nslots + n.nout))
            for i, s in enumerate(outs):
                slot[(id(n), i)] = s
            nslots += n.nout
            steps.append(_Step(n, [slot[(id(c), i)] for c, i in n.inputs], outs))
            if _may_be_open(n):
                open_shapes.append((steps[-1], n.p, id(n)))
        # creation steps whose shape may hold unknown dimensions (NOTE [Unknown dimensions])
        self._open_shapes = open_shapes
        self._resolved = OrderedDict()    # (np_shape, input shapes) -> params per open step
        _live.add(self)
        self._nslots = nslots
        self._nin = len(inputs)
        self._heads = [slot[(id(n), i)] for n, i in sym._outputs]
        self.num_inputs = self._nin
        self.num_outputs = len(self._heads)
        self._derive(steps)
        # as MXNet: a small graph (at most inline_limit ops) without static_alloc is
        # recorded op by op, so the tape (and get_symbol) shows its ops, not one call
        self._inlining = (not self._flags["static_alloc"]
                          and len(steps) <= self._flags["inline_limit"]
                          and all(h >= self._nin for h in self._heads))
        self._plans = OrderedDict()       # signature -> _StaticPlan
        self._train_plans = OrderedDict()  # (signature, inputs needing grad) -> TrainPlan
        self._first_sig = None
        self._graphs = OrderedDict()      # graph key -> _GraphEntry
        self._graph_backend = None        # set by tests to simulate CUDA graphs on CPU
        self._graph_calls = {}
        self._freed = False
        self._stats = {"calls": 0, "captures": 0, "replays": 0, "fallbacks": [],
                       "segments": 0, "eager_ops": 0, "graph_mode": None}
        self._graphs_enabled = os.environ.get("GPUNDA_CUDA_GRAPHS", "1").strip() not in (
            "0", "false", "False", "no")
        self._fusion_views = {}           # training flag -> fused view (NOTE [Fusion in CachedOp])

    def _derive(self, steps):
        """Everything the plan derives from its step list (slot lifetimes, mutated inputs,
        values kept for the backward)."""
        self._steps = steps
        nslots = self._nslots
        big = len(steps) + 1
        last = [-1] * nslots
        for i, st in enumerate(steps):
            for s in st.ins:
                last[s] = i
        for h in self._heads:
            last[h] = big
        self._last_use = last
        frees = [[] for _ in steps]
        for s in range(self._nin, nslots):
            if 0 <= last[s] < big:
                frees[last[s]].append(s)
        # outputs nobody reads (hidden outputs) die right after their step
        for i, st in enumerate(steps):
            for s in st.outs:
                if last[s] == -1:
                    frees[i].append(s)
        self._frees = frees
        mutated, fwd_mutated = set(), set()
        for st in steps:
            for k in (st.op.mutated(st.p) if st.op.mutates else ()):
                if k < len(st.ins) and st.ins[k] < self._nin:
                    mutated.add(st.ins[k])
                    if st.op.fwd_mutates:
                        fwd_mutated.add(st.ins[k])
        # inputs some step writes, in either pass, and those a forward run writes (NOTE
        # [Mutated inputs and their pass]: BatchNorm's moving stats change in the backward)
        self._mutated_inputs = sorted(mutated)
        self._fwd_mutated_inputs = sorted(fwd_mutated)
        self._has_updates = any(st.op.update is not None for st in steps)
        keep = set()
        for st in steps:
            save = st.op.save or ()
            if "inputs" in save or "broadcast" in save:
                keep.update(st.ins)
            if "outputs" in save or st.nout > 1:
                keep.update(st.outs)
        # slots a recorded call must keep for its backward (what the rules read)
        self._keep_for_grad = keep

    # -- introspection ---------------------------------------------------------------
    @property
    def symbol(self):
        return self._sym

    def stats(self):
        """Counters: calls, captures, replays, fallbacks (reasons), segments and eager ops of
        the last graph call, and why graphs are off (``graph_mode``)."""
        s = dict(self._stats)
        s["fallbacks"] = list(s["fallbacks"])
        return s

    def memory_plan(self):
        """Static memory plan of the most recent signature: planned bytes vs the naive sum."""
        if not self._plans:
            return {"planned_bytes": 0, "naive_bytes": 0, "buffers": 0, "in_place": 0,
                    "out_steps": 0, "compute_steps": 0, "signatures": 0}
        plan = next(reversed(self._plans.values()))
        d = plan.report()
        d["signatures"] = len(self._plans)
        return d

    def free(self):
        """Release static buffers and captured graphs; the CachedOp cannot be called again."""
        for v in self._fusion_views.values():
            if v is not self:
                v.free()
        self._plans.clear()
        self._train_plans.clear()
        for e in self._graphs.values():
            e.release()
        self._graphs.clear()
        self._freed = True

    # -- fusion ---------------------------------------------------------------------------
    _fusion_off = None      # why the last partition was not made (fusion_report)
    _fusion_groups = ()     # a fused view's groups
    # NOTE [Fusion in CachedOp]
    # On a GPU context (and only there: the CPU path does not look at any of this) a call
    # runs the *fused view* of the CachedOp for the current training mode: a shallow copy
    # whose step list has each group of element-wise steps replaced by one fused step
    # (NOTE [Fusion partition], NOTE [Fused steps]), with its own static plans, training
    # plans and CUDA graphs. MXNET_USE_FUSION=0 (read once, at import) turns it off, as in
    # MXNet. Graphs that inline their ops (small, without static_alloc) or are monitored
    # run unfused. Creation steps of unknown shape (NOTE [Unknown dimensions]) are never
    # fused, and the view shares their step objects, so one resolution serves both.
    # ``fusion_report()`` says what fused and why each other op was left out.
    def _fused_view(self, train=None):
        train = _ag._is_train() if train is None else train
        view = self._fusion_views.get(train)
        if view is not None:
            return view
        part = self._partition(train)
        view = self
        if part is not None and (part.groups or part.views):
            view = object.__new__(CachedOp)
            view.__dict__.update(self.__dict__)
            psteps = part.steps     # Dropout split into its mask and a multiply
            groups = [_fusion.FusedGroup([psteps[i] for i in ms],
                                         [part.specs[i] for i in ms],
                                         part.in_slots[g], part.out_slots[g], g)
                      for g, ms in enumerate(part.groups)]
            steps = [psteps[i] if kind == "step" else
                     _Step.fused(groups[i], "_fused%d(%s)" % (i, "+".join(
                         psteps[k].name for k in part.groups[i])))
                     for kind, i in _fusion.fused_order(self._steps, part)]
            view._nslots = part.nslots  # a GEMM split from its bias add makes a slot
            view._derive(steps)
            view._plans, view._train_plans = OrderedDict(), OrderedDict()
            view._graphs, view._graph_calls = OrderedDict(), {}
            view._first_sig = None
            view._fusion_views = {}
            view._fusion_groups = groups
            _live.add(view)
            _oom.track_cached_op(view)
        self._fusion_views[train] = view
        return view

    def _partition(self, train):
        """The fusion partition of this graph in training mode ``train``, or None when the
        graph runs unfused (the reason goes to ``_fusion_off``)."""
        why = None
        if not _fusion.ENABLED:
            why = "MXNET_USE_FUSION=0"
        elif self._inlining:
            why = (f"the graph has at most inline_limit={self._flags['inline_limit']} ops "
                   f"and no static_alloc: its ops run (and record) one by one")
        elif self._monitor is not None:
            why = "an op hook monitors every op's output"
        self._fusion_off = why
        if why is not None:
            return None
        return _fusion.partition(self._steps, self._nin, self._heads, train)

    def fusion_report(self, train=None):
        """What the fusion pass makes of this graph on a GPU, in training mode ``train``
        (default: the current mode): ``{"enabled", "reason", "groups": [{"nodes", "ops",
        "inputs", "outputs"}], "left_out": [{"node", "op", "reason"}], "steps",
        "fused_steps", "views", "split", "fallbacks"}``; ``views``: the nodes run as views
        of their input, no kernel (NOTE [View steps]); ``split``: the Dropout steps split into a
        random mask step and a multiply that fused. ``fallbacks`` counts the calls whose input
        signature ran a group op by op, by reason. The CPU never fuses."""
        train = _ag._is_train() if train is None else bool(train)
        part = self._partition(train)
        rep = {"enabled": _fusion.ENABLED, "reason": self._fusion_off, "groups": [],
               "left_out": [], "steps": len(self._steps), "fused_steps": len(self._steps),
               "views": [], "split": 0, "fallbacks": {}}
        if part is None:
            return rep
        rep["reason"] = part.graph_reason
        psteps = part.steps
        for ms in part.groups:
            rep["groups"].append({"nodes": [psteps[i].name for i in ms],
                                  "ops": [psteps[i].op.name for i in ms],
                                  "inputs": len(part.in_slots[len(rep["groups"])]),
                                  "outputs": len(part.out_slots[len(rep["groups"])])})
        for i, why in sorted(part.reasons.items()):
            st = psteps[i]
            rep["left_out"].append({"node": st.name, "op": st.op.name, "reason": why})
        rep["views"] = [psteps[i].name for i in sorted(part.views)]
        # Dropout steps split into a mask step and a multiply that fused
        rep["split"] = part.splits
        rep["fused_steps"] = len(psteps) - sum(len(ms) - 1 for ms in part.groups)
        view = self._fusion_views.get(train)
        for g in getattr(view, "_fusion_groups", ()):
            for why, n in g.fallbacks.items():
                rep["fallbacks"][why] = rep["fallbacks"].get(why, 0) + n
        return rep

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args, out=None, default_ctx=None):
        if self._freed:
            raise GpundaError("CachedOp: this CachedOp was freed (free()); create a new one")
        NDArray, _new = hooks.NDArray, hooks.new_ndarray
        if len(args) == 1 and isinstance(args[0], (list, tuple)) and self._nin != 1:
            args = tuple(args[0])
        if len(args) != self._nin:
            raise GpundaError(f"CachedOp: expects {self._nin} inputs "
                              f"({', '.join(self._input_names)}) but got {len(args)}")
        ctx = None
        sparse = False
        for k, a in enumerate(args):
            if not isinstance(a, NDArray):
                raise GpundaError(f"CachedOp: input {k} ({self._input_names[k]}) must be an "
                                  f"NDArray, got {type(a).__name__}")
            if ctx is None:
                ctx = a._ctx._plain     # cpu_shared(i)/cpu_pinned(i) inputs give cpu(i) outputs
            elif not shares_memory_space(a._ctx, ctx):   # host memory is one
                raise GpundaError(f"CachedOp: input {k} ({self._input_names[k]}) is on {a._ctx} "
                                  f"but input 0 ({self._input_names[0]}) is on {ctx}")
            if a.stype != "default":
                sparse = True
            # a variable's declared dtype (__dtype__) does not bind the call: as MXNet's,
            # the arrays' dtypes drive the graph (a float32-declared weight loaded as
            # float64 runs as float64); the ops check the dtypes they combine
        if ctx is None:
            from gpunda.context import current_context
            ctx = default_ctx or current_context()
        if out is not None:
            outs_list = [out] if isinstance(out, NDArray) else list(out)
            if len(outs_list) != self.num_outputs:
                raise GpundaError(f"CachedOp expects {self.num_outputs} outputs, but "
                                  f"{len(outs_list)} was given. (out= must hold one NDArray "
                                  f"per output of the symbol)")
        cop = self
        if _fusion.ENABLED and ctx.device_type == "gpu" and not sparse:
            # NOTE [Fusion in CachedOp]: a GPU call runs the fused view of this graph
            cop = self._fusion_views.get(_ag._is_train()) or self._fused_view()
        cop._stats["calls"] += 1
        if cop._open_shapes:
            cop._resolve_open_shapes([a.shape for a in args], [a.dtype for a in args])
        if sparse:
            res = cop._run_imperative(args)
        else:
            req_in = tuple(a._ag is not None for a in args) if _is_rec() else None
            recording = req_in is not None and any(req_in)
            if not recording or cop._inlining:
                req_in = None
            xp = ctx.backend.xp
            arrays = [a._data for a in args]
            with ctx.backend.device_scope() if xp is not np else contextlib.nullcontext():
                try:
                    vals, raw, plan = cop._compute(xp, ctx, arrays, recording, req_in)
                except GpundaError as e:
                    if not _oom.is_oom(e, ctx):
                        raise
                    vals, raw, plan = _oom.retry(
                        lambda: cop._compute(xp, ctx, arrays, recording, req_in),
                        ctx, lambda e2: e2, e)
            for k in cop._fwd_mutated_inputs:
                a = args[k]
                _ag.bump_version(a)
            if recording and cop._inlining:
                recorded = _rerecord(cop, vals, args, ctx)
                res = [recorded[h] for h in cop._heads]
            else:
                res = [_new(r, ctx) for r in raw]
                if recording:
                    cop._record(args, res, vals, ctx, plan)
        if out is not None:
            write_outputs(outs_list, res, "CachedOp")
            return out
        return res[0] if self.num_outputs == 1 else res

    def _compute(self, xp, ctx, arrays, recording, req_in=None):
        """(slot values or None, head values, TrainPlan or None) of one call; a recorded
        call with ``req_in`` (per input, whether it needs a gradient) runs its TrainPlan."""
        if req_in is not None and self._monitor is None:
            plan = self._train_plan(xp, ctx, arrays, req_in)
            vals = plan.forward(arrays, ctx)
            return vals, [self._head_value(vals, h, xp) for h in self._heads], plan
        if recording or self._monitor is not None:
            vals = self._run_plain(xp, ctx, arrays, keep=True)
            if self._monitor is not None:
                from gpunda._engine.op_monitor import report
                report(self._steps, self._monitor, vals, ctx)
            return (vals if recording else None), [self._head_value(vals, h, xp)
                                                    for h in self._heads], None
        return None, self._run_fast(xp, ctx, arrays), None

    def _train_plan(self, xp, ctx, arrays, req_in):
        """The TrainPlan of this signature and pattern of inputs needing gradients."""
        key = (self._signature(arrays, ctx), req_in)
        plan = self._train_plans.get(key)
        if plan is None:
            plan = self._train_plans[key] = TrainPlan(self, req_in, xp)
            if len(self._train_plans) > 8:
                self._train_plans.popitem(last=False)
        else:
            self._train_plans.move_to_end(key)
        return plan

    # -- monitoring ----------------------------------------------------------------------
    _monitor = None

    def _register_op_hook(self, callback, monitor_all=False):
        """Call ``callback(name, op_name, array)`` for every op output of each call (and
        every op input with ``monitor_all``), as MXNet's MXCachedOpRegisterOpHook.

        Names as MXNet's (see ``_engine/op_monitor.py``). Monitored calls run the plain
        plan (no static buffers or CUDA graphs). ``callback=None`` removes the hook.
        """
        if callback is not None and not callable(callback):
            raise GpundaError(f"CachedOp: register_op_hook callback={callback!r} must be "
                              f"callable or None")
        from gpunda._engine.op_monitor import step_names
        self._fusion_views = {}     # a monitored graph runs unfused (every op's output)
        self._monitor = None if callback is None else (callback, bool(monitor_all),
                                                       step_names(self._steps))

    def _release_device_caches(self):
        """Drop static buffers and graphs (rebuilt on the next call); True if any were held."""
        held = bool(self._plans or self._graphs or self._train_plans)
        self._plans.clear()
        self._train_plans.clear()
        for e in self._graphs.values():
            e.release()
        self._graphs.clear()
        self._graph_calls.clear()
        return held

    def _resolve_open_shapes(self, shapes, dtypes):
        """Give each open creation step the shape the graph infers for these input shapes.

        NOTE [Unknown dimensions]: in MXNet's legacy shape semantics a 0 in the ``shape`` of
        ``zeros``/``ones``/``full`` or a sampler inside a graph (and -1 under np_shape)
        means "unknown": shape inference fills it from the ops around (an RNN cell's
        ``begin_state(batch_size=0)`` takes the batch size from the data). When the
        CachedOp runs, the input shapes are known, so the graph's shape inference (the
        Symbol's, done once per input signature) decides those steps' shapes."""
        from gpunda.util import is_np_shape
        key = (is_np_shape(),) + tuple(tuple(s) for s in shapes)
        params = self._resolved.get(key)
        if params is None:
            ids = [i for _, _, i in self._open_shapes]
            names = self._input_names
            got = self._sym._infer_open_shapes(dict(zip(names, map(tuple, shapes))),
                                               dict(zip(names, map(np_dtype, dtypes))), ids)
            params = [_closed(p, got.get(i)) for _, p, i in self._open_shapes]
            self._resolved[key] = params
            if len(self._resolved) > 16:
                self._resolved.popitem(last=False)
        else:
            self._resolved.move_to_end(key)
        for (st, _, _), p in zip(self._open_shapes, params):
            st.p = p

    def _head_value(self, vals, h, xp):
        v = vals[h]
        # an input returned as an output must not alias the caller's array
        return v.copy() if h < self._nin else v

    def _signature(self, arrays, ctx):
        # strides too: whether an op returns a view or a copy can depend on them
        return (ctx, _ag._is_train()) + tuple((a.shape, a.dtype.str, a.strides) for a in arrays)

    def _run_fast(self, xp, ctx, arrays):
        if not self._flags["static_alloc"]:
            vals = self._run_plain(xp, ctx, arrays, keep=False)
            return [self._head_value(vals, h, xp) for h in self._heads]
        sig = self._signature(arrays, ctx)
        if self._flags["static_shape"]:
            if self._first_sig is None:
                self._first_sig = sig
            elif [x[:2] for x in sig[2:]] != [x[:2] for x in self._first_sig[2:]]:
                got = [(a.shape, a.dtype.name) for a in arrays]
                want = [(s, np.dtype(d).name) for s, d, _ in self._first_sig[2:]]
                bad = next(k for k, (g, w) in enumerate(zip(got, want)) if g != w)
                raise GpundaError(
                    f"CachedOp: static_shape=True but input {bad} ({self._input_names[bad]}) "
                    f"has shape {got[bad][0]} and dtype {got[bad][1]}; the first call used "
                    f"{want[bad][0]} and {want[bad][1]}")
            if self._use_graphs(ctx):
                return self._run_graph(xp, ctx, arrays, sig)
        plan = self._plans.get(sig)
        if plan is None:
            vals, meta = self._run_instrumented(xp, ctx, arrays)
            plan = _StaticPlan(self, xp, meta)
            self._plans[sig] = plan
            if len(self._plans) > 8:
                self._plans.popitem(last=False)
            return [self._head_value(vals, h, xp) for h in self._heads]
        self._plans.move_to_end(sig)
        return plan.run(arrays, ctx)

    def _call_step(self, st, xp, ctx, ins):
        try:
            if st.wants_ctx:
                r = st.compute(xp, st.p, *ins, ctx=ctx)
            else:
                r = st.compute(xp, st.p, *ins)
            # ops whose output count depends on params may return a sequence even for
            # one output (SliceChannel with num_outputs=1); imperative.invoke takes both
            return r[0] if st.seq1 and isinstance(r, (tuple, list)) else r
        except DeferredOpError as e:    # as imperative calls: NOTE [Deferred op errors]
            r = poison_outputs(e, ins, lambda a: self._rerun_step(st, xp, ctx, a))
            return r[0] if st.seq1 and isinstance(r, (tuple, list)) else r
        except GpundaError as e:
            # keep a GpundaValueError & co. the Python exception MXNet raises there
            cls = type(e) if isinstance(e, (ValueError, TypeError, IndexError)) else GpundaError
            raise cls(f"CachedOp node {st.name!r}: {e}") from None
        except Exception as e:
            failed = failed_input(ins)
            if failed is not None:      # a library refused a Poisoned input: same as reading it
                r = poison_outputs(failed, ins, lambda a: self._rerun_step(st, xp, ctx, a))
                return r[0] if st.seq1 and isinstance(r, (tuple, list)) else r
            from gpunda._engine.imperative import _op_error
            err = _op_error(st.op, [_Shape(x) for x in ins], st.p, e)
            raise GpundaError(f"CachedOp node {st.name!r}: {err}") from e

    @staticmethod
    def _rerun_step(st, xp, ctx, arrays):
        """Run step ``st`` on stand-in values, never writing the plan's arrays."""
        if st.op.mutates:
            muts = st.op.mutated(st.p)
            arrays = [a.copy() if i in muts else a for i, a in enumerate(arrays)]
        if st.wants_ctx:
            return st.compute(xp, st.p, *arrays, ctx=ctx)
        return st.compute(xp, st.p, *arrays)

    def _run_plain(self, xp, ctx, arrays, keep):
        vals = list(arrays) + [None] * (self._nslots - self._nin)
        frees = self._frees
        call = self._call_step
        for i, st in enumerate(self._steps):
            r = call(st, xp, ctx, [vals[s] for s in st.ins])
            if st.nout == 1:
                vals[st.outs[0]] = r
            else:
                for s, x in zip(st.outs, r):
                    vals[s] = x
            if not keep:
                for s in frees[i]:
                    vals[s] = None
        return vals

    def _vjp(self, xp, ctx, F, arrays, head_grads):
        """Gradients of the inputs at ``arrays`` for ``head_grads``, zeros where an input does
        not reach the outputs (a control-flow op's backward, one body step at a time)."""
        vals = self._run_plain(xp, ctx, list(arrays), keep=True)
        req = [True] * self._nin + [False] * (self._nslots - self._nin)
        for st in self._steps:
            if not st.op.nondiff and any(req[s] for s in st.ins):
                for s in st.outs:
                    req[s] = True
        grads = _cached_backward(F, _Saved(self, vals, req, ctx), list(arrays), None,
                                 list(head_grads))
        return [xp.zeros_like(a) if g is None else g for g, a in zip(grads, arrays)]

    def _run_instrumented(self, xp, ctx, arrays):
        """A plain run that also notes each slot's shape, dtype and whether the step's
        result owns fresh memory (input to the static memory plan)."""
        vals = list(arrays) + [None] * (self._nslots - self._nin)
        meta = [None] * self._nslots
        for k, a in enumerate(arrays):
            meta[k] = (a.shape, a.dtype, False)
        for i, st in enumerate(self._steps):
            r = self._call_step(st, xp, ctx, [vals[s] for s in st.ins])
            rs = [r] if st.nout == 1 else list(r)
            live = {id(_root(v)) for v in vals if v is not None}
            for s, x in zip(st.outs, rs):
                # fresh memory (possibly a view of a temporary) that nothing else reaches
                r = _root(x)
                owned = id(r) not in live and _plain(x)
                meta[s] = (x.shape, x.dtype, owned)
                vals[s] = x
                live.add(id(r))
            for s in self._frees[i]:
                vals[s] = None
        return vals, meta

    def _run_imperative(self, args):
        """Sparse inputs: run each step through the dispatcher (storage fallback and all)."""
        from gpunda._engine.imperative import invoke_parsed
        vals = list(args) + [None] * (self._nslots - self._nin)
        for st in self._steps:
            r = invoke_parsed(st.op, tuple(vals[s] for s in st.ins), st.p)
            rs = [r] if not isinstance(r, list) else r
            for s, x in zip(st.outs, rs):
                vals[s] = x
        return [vals[h] if h >= self._nin else vals[h].copy() for h in self._heads]

    # -- autograd ------------------------------------------------------------------------
    def _record(self, args, res, vals, ctx, plan=None):
        if plan is not None:
            req = plan.req
            for s in plan.drop:
                vals[s] = None      # not read by any gradient rule: free it now
        else:
            req = [False] * self._nslots
            for k, a in enumerate(args):
                req[k] = a._ag is not None
            for st in self._steps:
                if any(req[s] for s in st.ins) and not st.op.nondiff:
                    for s in st.outs:
                        req[s] = True
            keep = self._keep_for_grad
            for s in range(self._nin, self._nslots):
                if s not in keep:
                    vals[s] = None      # not read by any gradient rule: free it now
        saved = _Saved(self, vals, req, ctx, args if self._has_updates else None, plan)
        tape_op = _CACHED_OPDEF
        if self._mutated_inputs:
            # aux inputs (BatchNorm's moving stats) change on every training call; the
            # gradient never reads them, so the tape must not treat that as tampering
            tape_op = self.__dict__.get("_tape_op")
            if tape_op is None:
                tape_op = self._tape_op = OpDef(
                    "_CachedOp", None, inputs=lambda p: (), gradient=_no_rule, save=(),
                    mutates=tuple(self._mutated_inputs), doc=_CACHED_OPDEF.doc)
        _ag.record_node(tape_op, saved, args, res, rule=_cached_backward,
                        save_inputs=True)

    # -- CUDA graphs -------------------------------------------------------------------
    def _use_graphs(self, ctx):
        gb = self._graph_backend
        if gb is None:
            if ctx.device_type != "gpu":
                self._stats["graph_mode"] = "off: not a GPU context"
                return False
            if not getattr(ctx.backend, "supports_graphs", False):
                self._stats["graph_mode"] = "off: the GPU backend cannot capture graphs"
                return False
        if not self._graphs_enabled:
            self._stats["graph_mode"] = "off: GPUNDA_CUDA_GRAPHS=0"
            return False
        return True

    def _direct_inputs(self):
        # read in place by the graph (not copied in): params, and inputs ops mutate
        return sorted(set(self._flags["param_indices"] or []) | set(self._mutated_inputs))

    def _graph_key(self, arrays, sig, gb):
        return sig + tuple(gb.ptr(arrays[k]) for k in self._direct_inputs())

    def _run_graph(self, xp, ctx, arrays, sig):
        gb = self._graph_backend or _CupyGraphs(ctx)
        self._graph_backend = gb
        key = self._graph_key(arrays, sig, gb)
        n = self._graph_calls.get(key, 0)
        if len(self._graph_calls) > 64:
            # keys that never repeat (param arrays reallocated every call) must not pile up
            self._graph_calls.clear()
        self._graph_calls[key] = n + 1
        entry = self._graphs.get(key)
        if entry is None:
            if n == 0:
                # warm-up: an eager run compiles kernels and creates library handles
                self._stats["graph_mode"] = "warm-up"
                vals = self._run_plain(xp, ctx, arrays, keep=False)
                return [self._head_value(vals, h, xp) for h in self._heads]
            entry = _GraphEntry(self, gb, xp, ctx, arrays)
            try:
                res = entry.run(arrays, capture=True)
            except BaseException:
                entry.release()     # a half-built entry must not be replayed
                raise
            self._graphs[key] = entry
            if len(self._graphs) > _MAX_GRAPHS:
                self._graphs.popitem(last=False)[1].release()
            return res
        self._graphs.move_to_end(key)
        return entry.run(arrays, capture=False)


def _plain(x):
    """Contiguous and writable: safe to overwrite in place (no zero strides, no read-only view)."""
    f = getattr(x, "flags", None)
    return f is not None and f.c_contiguous and getattr(f, "writeable", True)


def _raw(x):
    """The backend array of a slot value (an NDArray when the backward is recorded)."""
    return x._data if isinstance(x, hooks.NDArray) else x


def _root(x):
    while getattr(x, "base", None) is not None:
        x = x.base
    return x


class _Shape:
    """Stand-in with shape/dtype for error messages about raw arrays."""

    def __init__(self, x):
        self.shape, self.dtype = getattr(x, "shape", ()), getattr(x, "dtype", np.dtype("float32"))


# NOTE [CachedOp backward]
# The recorded call keeps every slot value of its forward run (``_Saved``).
# A plain backward (F = raw namespace) walks the steps in reverse and applies
# each op's gradient rule to those raw values: the same rules, in the same
# order, as an imperative backward over the same ops, so gradients agree.
# With create_graph=True (F = nd) the steps are re-recorded on the tape over
# the saved values, with no recomputation (so Dropout keeps its mask and
# BatchNorm does not update its moving stats twice), and the rules run on
# those recorded NDArrays: the gradient is itself differentiable.

def _cached_backward(F, p, ins, outs, ograds):
    cop, vals, req, ctx = p.cop, p.vals, p.req, p.ctx
    nd = hooks.nd
    create = F is nd
    if not create and p.plan is not None:
        return p.plan.backward(F, p, ograds)     # NOTE [Training plan]
    steps = cop._steps
    if create:
        vals = _rerecord(cop, vals, ins, ctx)
    g = [None] * cop._nslots
    for h, og in zip(cop._heads, ograds):
        if og is not None:
            g[h] = og if g[h] is None else g[h] + og
    xp = ctx.backend.xp
    # steps whose backward writes their inputs (BatchNorm's moving stats; NOTE [Mutated
    # inputs and their pass] in ops/registry.py), as MXNet's backward graph does; their
    # rules run in the backward's train_mode, the others in the call's (see _ag._bwd_train)
    bwd_train = _ag.updates_enabled()
    update = cop._has_updates and bwd_train
    nin = cop._nin
    for st in reversed(steps):
        ogs = [g[s] for s in st.outs]
        if all(x is None for x in ogs) or not any(req[s] for s in st.ins):
            continue
        op = st.op
        if op.nondiff:
            continue
        if op.gradient is None:
            raise GpundaError(f"Operator {op.name} (CachedOp node {st.name!r}) has no gradient "
                              f"rule; it cannot be differentiated")
        o_vals = [vals[s] for s in st.outs]
        if any(x is None for x in ogs):
            ogs = [x if x is not None else (nd.zeros_like(v) if create else xp.zeros_like(v))
                   for x, v in zip(ogs, o_vals)]
        save = op.save
        i_vals = [vals[s] for s in st.ins] if "inputs" in save or "broadcast" in save else None
        grads = step_gradient(F, st, i_vals, o_vals if "outputs" in save else None, ogs,
                              tuple(bool(req[s]) for s in st.ins) if op.grad_need else None,
                              bwd_train)
        if update and op.update is not None:
            step_update(st, xp, [_raw(vals[s]) for s in st.ins], [_raw(v) for v in o_vals],
                        p.args, nin)
        for s, gr in zip(st.ins, grads):
            if gr is None or not req[s]:
                continue
            g[s] = gr if g[s] is None else g[s] + gr
    return [g[k] if req[k] else None for k in range(cop._nin)]


def _cached_reads_ograd(p, i):
    """Whether the cached backward reads output ``i``'s head gradient: not when the step
    producing it has a rule that never reads its output gradients (autograd then
    accepts a head gradient of any size for it, as MXNet does)."""
    h = p.cop._heads[i]
    for st in p.cop._steps:
        if h in st.outs:
            reads = getattr(st.op.gradient, "reads_ograds", True)
            return reads if isinstance(reads, bool) else True
    return True


_cached_backward.reads_ograds = _cached_reads_ograd


def _rerecord(cop, vals, ins, ctx):
    """Recorded NDArrays for every slot: the steps put on the tape over the saved values."""
    _new = hooks.new_ndarray
    nd_vals = list(ins) + [None] * (cop._nslots - cop._nin)
    for st in cop._steps:
        inputs = tuple(nd_vals[s] for s in st.ins)
        # slots dropped after the forward are wrapped as None: their consumers save neither
        # them nor their shapes, only their autograd entries are needed to link the tape
        outs = [_new(vals[s], ctx) for s in st.outs]
        if _is_rec() and not st.op.nondiff:
            _ag._record(st.op, st.p, inputs, outs)
        for s, o in zip(st.outs, outs):
            nd_vals[s] = o
    return nd_vals


# NOTE [Static memory plan]
# Made once per input signature from an instrumented first call, which gives
# every slot's shape and dtype and whether a step's result owns fresh memory.
# Element-wise float steps (the ufunc table above, or OpDef.ufunc) write with
# ``out=``: in place into an input that dies at that step and whose storage
# nothing else references, else into a persistent buffer taken from a free
# list (buffers are recycled once every slot using them is dead). Other
# steps keep computing fresh results: copying them into a planned buffer
# costs an extra pass over the data and, measured on NumPy (bench/bench_cachedop.py),
# is slower than letting the allocator recycle the block; their results then
# serve as in-place targets for later element-wise steps, which is what keeps
# the peak at or below imperative execution. Graph outputs are fresh arrays
# every call (a caller may keep them); an output that views a persistent
# buffer is copied.

class _StaticPlan:
    def __init__(self, cop, xp, meta):
        self.cop = cop
        steps = cop._steps
        last = cop._last_use
        heads = set(cop._heads)
        nin = cop._nin
        stor = [frozenset()] * cop._nslots
        refc = {}
        for k in range(nin):
            stor[k] = frozenset([("in", k)])
        free = []           # (nbytes, buffer id)
        buf_sizes = []
        # per step: None | ("fresh",) | ("buf", bid) | ("alias", slot)
        self.targets = [None] * len(steps)
        self.writers = [None] * len(steps)
        self.views = {}
        donor = 0
        naive = 0
        n_inplace = 0
        for i, st in enumerate(steps):
            o = st.outs[0]
            shp, dt, owned = meta[o]
            for s in st.outs:
                naive += int(np.prod(meta[s][0], dtype=np.int64)) * meta[s][1].itemsize
            w = None
            if st.nout == 1 and dt.kind == "f" and all(meta[s][1] == dt for s in st.ins):
                w = _out_writer(st.op, st.p, xp, len(st.ins))
                if w is not None and w[1] is not None:
                    # the scalar in the data's dtype: what NEP 50 does with a Python float,
                    # without the per-call conversion
                    w = (w[0], dt.type(w[1]), w[2])
            if w is not None:
                if o in heads:
                    tgt = ("fresh",)
                    stor[o] = frozenset([("out", o)])
                else:
                    tgt = None
                    for s in st.ins:
                        if s < nin or s in heads or last[s] != i or meta[s][:2] != (shp, dt):
                            continue
                        if len(stor[s]) == 1:
                            sid = next(iter(stor[s]))
                            if sid[0] in ("buf", "donor") and refc.get(sid, 0) == 1:
                                tgt = ("alias", s)
                                stor[o] = stor[s]
                                n_inplace += 1
                                break
                    if tgt is None:
                        need = int(np.prod(shp, dtype=np.int64)) * dt.itemsize
                        cands = [f for f in free if f[0] >= need]
                        if cands:
                            best = min(cands)
                            free.remove(best)
                            bid = best[1]
                        else:
                            bid = len(buf_sizes)
                            buf_sizes.append(need)
                        tgt = ("buf", bid)
                        stor[o] = frozenset([("buf", bid)])
                        self.views[o] = (bid, shp, dt)
                self.targets[i] = tgt
                self.writers[i] = w
            else:
                for s in st.outs:
                    if meta[s][2]:
                        donor += 1
                        stor[s] = frozenset([("donor", donor)])
                    else:
                        # a view (or the input itself): keeps the inputs' storage alive
                        u = set()
                        for x in st.ins:
                            u |= stor[x]
                        stor[s] = frozenset(u)
            for s in st.outs:
                for sid in stor[s]:
                    refc[sid] = refc.get(sid, 0) + 1
            dying = list(cop._frees[i])
            for s in dying:
                for sid in stor[s]:
                    refc[sid] -= 1
                    if refc[sid] == 0 and sid[0] == "buf":
                        free.append((buf_sizes[sid[1]], sid[1]))
        self.buffers = [xp.empty(n, dtype=np.uint8) for n in buf_sizes]
        self.view_arrays = {}
        for o, (bid, shp, dt) in self.views.items():
            nbytes = int(np.prod(shp, dtype=np.int64)) * dt.itemsize
            self.view_arrays[o] = self.buffers[bid][:nbytes].view(dt).reshape(shp)
        self.copy_heads = [h < nin or any(sid[0] == "buf" for sid in stor[h]) for h in cop._heads]
        self.meta = meta
        self.xp = xp
        self.naive = naive
        self.n_inplace = n_inplace
        self._compile()

    def _compile(self):
        """One closure per step, bound to its slots, so a call is a flat loop."""
        cop = self.cop
        xp = self.xp
        fns = []
        for i, st in enumerate(cop._steps):
            w, tgt = self.writers[i], self.targets[i]
            ins = tuple(st.ins)
            o = st.outs[0]
            if w is not None:
                kind = tgt[0]
                if kind == "buf":
                    fns.append(_writer_step(w, ins, o, ("buf", self.view_arrays[o])))
                elif kind == "alias":
                    fns.append(_writer_step(w, ins, o, ("alias", tgt[1])))
                else:
                    shp, dt = self.meta[o][:2]
                    fns.append(_writer_step(w, ins, o, ("fresh", (shp, dt, xp))))
            else:
                fns.append(compute_step(cop, st, xp))
        # slots to drop after each step; buffer-backed ones need no drop (the plan keeps
        # the buffer), fresh results do, so that memory is returned as early as imperative
        self.fns = [(f, tuple(s for s in fr if s not in self.views) or None)
                    for f, fr in zip(fns, cop._frees)]

    def report(self):
        planned = sum(int(b.nbytes) for b in self.buffers)
        return {"planned_bytes": planned, "naive_bytes": int(self.naive),
                "buffers": len(self.buffers), "in_place": self.n_inplace,
                "out_steps": sum(w is not None for w in self.writers),
                "compute_steps": sum(w is None for w in self.writers)}

    def run(self, arrays, ctx):
        cop = self.cop
        vals = list(arrays) + [None] * (cop._nslots - cop._nin)
        for f, fr in self.fns:
            f(vals, ctx)
            if fr:
                for s in fr:
                    vals[s] = None
        return [vals[h].copy() if c else vals[h] for h, c in zip(cop._heads, self.copy_heads)]


def _writer_step(w, ins, o, target):
    """A closure running one element-wise step into ``target``: ("buf", array),
    ("alias", slot) or ("fresh", (shape, dtype, xp))."""
    u, sc, first = w
    if getattr(u, "__name__", "") in ("maximum", "minimum"):
        # NumPy deprecates a positional output for these two
        u0 = u
        u = lambda *a: u0(*a[:-1], out=a[-1])  # noqa: E731
    kind, t = target
    # outputs are passed positionally: NumPy and CuPy ufuncs parse that faster than out=
    n = len(ins)
    if kind == "buf":
        if n == 1 and sc is None:
            a, = ins

            def f(vals, ctx):
                vals[o] = u(vals[a], t)
        elif n == 1 and first:
            a, = ins

            def f(vals, ctx):
                vals[o] = u(sc, vals[a], t)
        elif n == 1:
            a, = ins

            def f(vals, ctx):
                vals[o] = u(vals[a], sc, t)
        elif n == 2:
            a, b = ins

            def f(vals, ctx):
                vals[o] = u(vals[a], vals[b], t)
        else:
            def f(vals, ctx):
                vals[o] = u(*[vals[s] for s in ins], t)
        return f
    if kind == "alias":
        src = t
        if n == 1 and sc is None:
            a, = ins

            def f(vals, ctx):
                vals[o] = u(vals[a], vals[src])
        elif n == 1 and first:
            a, = ins

            def f(vals, ctx):
                vals[o] = u(sc, vals[a], vals[src])
        elif n == 1:
            a, = ins

            def f(vals, ctx):
                vals[o] = u(vals[a], sc, vals[src])
        elif n == 2:
            a, b = ins

            def f(vals, ctx):
                vals[o] = u(vals[a], vals[b], vals[src])
        else:
            def f(vals, ctx):
                vals[o] = u(*[vals[s] for s in ins], vals[src])
        return f
    shp, dt, xp = t
    empty = xp.empty
    pre = (sc,) if sc is not None and first else ()
    post = (sc,) if sc is not None and not first else ()

    def f(vals, ctx):
        vals[o] = u(*pre, *[vals[s] for s in ins], *post, empty(shp, dt))
    return f


# NOTE [CUDA graphs]
# With static_alloc + static_shape on a GPU, a signature's first call runs
# eagerly (warm-up: kernel compilation, library handles), the second call
# captures and later calls replay. The plan is cut into *pieces*: maximal runs
# of capture-safe steps (OpDef.capture == "ok", not random, not mutating an
# input) become captured segments; every other step runs eagerly between them
# (cuBLAS/cuRAND/cuSPARSE calls raise inside a CuPy capture). Values crossing
# a piece boundary live in fixed arrays allocated from a private
# cupy.cuda.MemoryPool, so their addresses stay valid for the graph's life;
# segments write them with a captured copy, eager steps with an eager copy.
# Data inputs are copied into fixed arrays before each replay; inputs listed in
# param_indices are read in place and their addresses are part of the graph
# key (a new address means a new capture). A segment whose capture raises is
# rerun eagerly (nothing ran during the failed capture) and stays eager; the
# reason is kept in stats()["fallbacks"]. Captures happen on a private
# non-blocking stream that waits for, and is waited on by, the caller's stream.
# GEMM ops (OpDef.capture == "gemm": FullyConnected, dot, batch_dot, the
# convolutions) join segments when the backend has a capture-safe GEMM: during
# a capture they multiply through it (NOTE [Capture-safe GEMM]), so an MLP
# forward is one segment.

@contextlib.contextmanager
def _gemm_override(fn):
    """Route this thread's GEMM ops through ``fn`` (NOTE [Capture-safe GEMM])."""
    if fn is None:
        yield
        return
    prev = _capture_gemm.fn
    _capture_gemm.fn = fn
    try:
        yield
    finally:
        _capture_gemm.fn = prev


class _CupyGraphs:
    """CUDA-graph primitives over CuPy (GPU only)."""

    def __init__(self, ctx):
        from gpunda.backends import _cuda_gemm
        cupy = self.cp = ctx.backend.xp     # cupy (or the test stand-in's module)
        with ctx.backend.device_scope():
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self.gemm = _cuda_gemm.matmul
        self.prepare_gemm = lambda dtypes: _cuda_gemm.prepare(dtypes, cupy)

    def new_pool(self):
        return self.cp.cuda.MemoryPool()

    def alloc_scope(self, pool):
        return self.cp.cuda.using_allocator(pool.malloc)

    @contextlib.contextmanager
    def on_stream(self):
        prev = self.cp.cuda.get_current_stream()
        self.stream.wait_event(prev.record())
        with self.stream:
            yield
        prev.wait_event(self.stream.record())

    def capture(self, fn):
        s = self.stream
        s.begin_capture()
        graph = None
        try:
            fn()
        finally:
            try:
                graph = s.end_capture()
            except Exception:
                if graph is None:
                    try:
                        if s.is_capturing():
                            s.end_capture()
                    except Exception:
                        pass
                raise
        return graph

    def launch(self, graph):
        graph.launch(self.stream)

    def ptr(self, a):
        return a.data.ptr


class _GraphEntry:
    """Captured segments, fixed arrays and private pool for one graph key."""

    def __init__(self, cop, gb, xp, ctx, arrays):
        self.cop, self.gb, self.xp, self.ctx = cop, gb, xp, ctx
        steps = cop._steps
        nin = cop._nin
        self.gemm = getattr(gb, "gemm", None)
        pieces = []
        cur = None
        for i, st in enumerate(steps):
            if st.capturable or (st.gemm and self.gemm is not None):
                if cur is None:
                    cur = ["seg", []]
                    pieces.append(cur)
                cur[1].append(i)
            else:
                cur = None
                pieces.append(["eager", [i]])
        producer = {}
        for pi, (_, idxs) in enumerate(pieces):
            for i in idxs:
                for s in steps[i].outs:
                    producer[s] = pi
        boundary = set(cop._heads)
        for pi, (_, idxs) in enumerate(pieces):
            for i in idxs:
                for s in steps[i].ins:
                    if s >= nin and producer[s] != pi:
                        boundary.add(s)
        self.pieces = pieces
        self.boundary = boundary
        direct = set(cop._direct_inputs())
        self.data_inputs = [k for k in range(nin) if k not in direct]
        self.pool = gb.new_pool()
        self.graphs = {}
        self.fixed = {}
        self.static_in = {}
        self.meta = {}
        self.eager_segments = set()

    def release(self):
        self.graphs.clear()
        self.fixed.clear()
        self.static_in.clear()
        pool = self.pool
        self.pool = None
        if pool is not None and hasattr(pool, "free_all_blocks"):
            pool.free_all_blocks()

    def _run_piece(self, idxs, vals):
        cop, xp, ctx = self.cop, self.xp, self.ctx
        steps = cop._steps
        local = {}
        get = lambda s: local[s] if s in local else vals[s]  # noqa: E731
        for i in idxs:
            st = steps[i]
            r = cop._call_step(st, xp, ctx, [get(s) for s in st.ins])
            rs = [r] if st.nout == 1 else list(r)
            for s, x in zip(st.outs, rs):
                local[s] = x
        for s, x in local.items():
            if s in self.boundary:
                xp.copyto(self.fixed[s], x)

    def run(self, arrays, capture):
        cop, gb, xp = self.cop, self.gb, self.xp
        stats = cop._stats
        nin = cop._nin
        with gb.on_stream():
            if capture:
                # shapes of boundary values from a plain run (already warm)
                vals = cop._run_plain(xp, self.ctx, arrays, keep=True)
                if self.gemm is not None:
                    # compile the GEMM kernels now: a capture should only launch them
                    gb.prepare_gemm({vals[s].dtype for st in cop._steps if st.gemm
                                     for s in st.ins})
                with gb.alloc_scope(self.pool):
                    for s in self.boundary:
                        if s >= nin:
                            self.fixed[s] = xp.empty(vals[s].shape, vals[s].dtype)
                    for k in self.data_inputs:
                        self.static_in[k] = xp.empty(arrays[k].shape, arrays[k].dtype)
                del vals
            vals = {}
            for k in range(nin):
                if k in self.static_in:
                    xp.copyto(self.static_in[k], arrays[k])
                    vals[k] = self.static_in[k]
                else:
                    vals[k] = arrays[k]
            vals.update(self.fixed)
            nseg = neager = 0
            for pi, (kind, idxs) in enumerate(self.pieces):
                if kind == "eager" or pi in self.eager_segments:
                    self._run_piece(idxs, vals)
                    neager += len(idxs)
                    continue
                if capture:
                    try:
                        with gb.alloc_scope(self.pool), _gemm_override(self.gemm):
                            g = gb.capture(lambda idxs=idxs: self._run_piece(idxs, vals))
                    except Exception as e:
                        names = ", ".join(cop._steps[i].name for i in idxs[:3])
                        stats["fallbacks"].append(
                            f"segment {pi} ({names}{', ...' if len(idxs) > 3 else ''}): capture "
                            f"failed: {type(e).__name__}: {e}; runs eagerly")
                        self.eager_segments.add(pi)
                        self._run_piece(idxs, vals)
                        neager += len(idxs)
                        continue
                    self.graphs[pi] = g
                    stats["captures"] += 1
                gb.launch(self.graphs[pi])
                nseg += 1
            for pi, (kind, idxs) in enumerate(self.pieces):
                if kind == "eager":
                    why = cop._steps[idxs[0]].why_not
                    msg = f"node {cop._steps[idxs[0]].name!r} ({cop._steps[idxs[0]].op.name}) " \
                          f"runs eagerly: {why}"
                    if capture and msg not in stats["fallbacks"]:
                        stats["fallbacks"].append(msg)
            if not capture and nseg:
                stats["replays"] += 1
            stats["segments"] = nseg
            stats["eager_ops"] = neager
            stats["graph_mode"] = "capture" if capture else "replay"
            res = []
            for h in cop._heads:
                v = vals[h]
                res.append(v.copy())
        return res


hooks.CachedOp = CachedOp     # control-flow ops run their subgraphs as CachedOps


def _bf16_named():
    """bfloat16 was first named: wrap every op's compute for it (NOTE [bfloat16 compute] in
    gpunda/ops/_bf16.py) and point the fast paths and live plans at the wrapped computes."""
    from gpunda.ops import _bf16 as _ops_bf16
    from gpunda._engine import imperative
    _ops_bf16.install()
    imperative.refresh_fast_paths()
    refresh_step_computes(lambda op: op.compute)


_core_bf16.on_load(_bf16_named)
