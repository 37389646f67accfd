"""The training plan of a CachedOp: its recorded calls, forward and backward, compiled.

NOTE [Training plan]
A call under ``autograd.record()`` keeps the values its backward reads and goes on
the tape as one node (NOTE [CachedOp backward] in cached_op.py). What that call and
its backward decide is the same on every call with the same input signature (shapes,
dtypes, strides, training flag) and the same inputs needing gradients, so a
``TrainPlan`` decides it once:

* which slots need a gradient (``req``) and which values the backward never reads
  (dropped as soon as the forward ends);
* the backward as a flat list of the steps a gradient can reach, newest first, each
  with its rule, the values it reads and its ``need`` mask fixed; steps that no
  gradient reaches or that need none are left out;
* element-wise epilogues done in place: an ``Activation(relu)`` that is the only
  reader of a fresh array whose producer's rule never reads it (a GEMM's, a
  convolution's, a BatchNorm's output) overwrites that array instead of allocating
  its own (``np.maximum`` against a zero array the plan keeps: NumPy's ufunc loop
  with a scalar operand runs several times slower than with an array). Its
  gradient is the rule's product, written into the output gradient where nothing
  else holds it (NOTE [Gradients in place] in plan_inplace.py), else into the 0/1
  mask's own array;
* an element-wise step whose rule reads none of its inputs (a residual sum), with every
  operand of the output's shape and float dtype, writes with its ufunc into an input
  that the conditions above let it overwrite (as the static plan's writers do);
* the backward's gradient sums write into an operand nothing else holds (same NOTE);
* a 2x2, stride-2 max pooling whose input needs a gradient gathers its input's
  cell planes once (``max_2x2_planes``) and keeps them for its gradient, which
  otherwise gathers them again (NOTE [2x2 pooling in cell planes]).

Whether an array is fresh comes from the plan's first call
  (instrumented as the static memory plan's, NOTE [Static memory plan]): whether an
  op returns a view or a copy depends only on the signature.

Values and results are those of the generic path: the same kernels run in the same
order; relu in place computes the same maximum; the mask product is the rule's.
A create_graph backward (differentiable gradients) still takes the generic path.
"""
from __future__ import annotations

import threading

import numpy as np

from gpunda._core.deferred import Poisoned
from gpunda._engine import autograd as _ag
from gpunda._engine.plan_inplace import accumulate, relu_grad
from gpunda.base import GpundaError
from gpunda.ops.kernels import pool as _pool

__all__ = ["TrainPlan"]

# ops whose gradient rules read only some of their outputs (the others may then be
# overwritten by an in-place epilogue); an op missing here reads all of them when its
# ``save`` names "outputs". BatchNorm's rule reads the batch mean and 1/std only.
_OUTPUTS_READ = {"BatchNorm": (1, 2), "BatchNorm_v1": (1, 2)}


def _reads_output(op, k):
    if "outputs" not in (op.save or ()):
        return False
    read = _OUTPUTS_READ.get(op.name)
    return True if read is None else k in read


def _is_relu(st):
    return st.op.name == "Activation" and st.p.act_type == "relu" and st.nout == 1 \
        and len(st.ins) == 1


def _root(x):
    while getattr(x, "base", None) is not None:
        x = x.base
    return x


class TrainPlan:
    """Recorded calls of ``cop`` for one input signature and one pattern ``req_in``
    (per input, whether it carries an autograd entry); NOTE [Training plan]."""

    def __init__(self, cop, req_in, xp):
        self.cop, self.xp = cop, xp
        steps = cop._steps
        nin, nslots = cop._nin, cop._nslots
        req = [False] * nslots
        req[:nin] = req_in
        for st in steps:
            if not st.op.nondiff and any(req[s] for s in st.ins):
                for s in st.outs:
                    req[s] = True
        self.req = req
        keep = cop._keep_for_grad
        self.drop = tuple(s for s in range(nin, nslots) if s not in keep)
        self.fns = None             # compiled forward, after the first (instrumented) call
        self.inplace = {}           # relu step index -> input slot it overwrites
        self.planes = {}            # max-pooling step index -> slot keeping its cell planes
        self.nvals = cop._nslots    # slots, then the plan's own saved values
        self._local = threading.local()     # per thread: the ReLU rule's mask buffers
        self._backward_entries()

    # -- forward -------------------------------------------------------------------------
    def forward(self, arrays, ctx):
        """Every slot's value of one recorded call (the caller drops ``drop`` once it has
        taken the outputs)."""
        if self.fns is None:
            return self._first(arrays, ctx)
        vals = list(arrays) + [None] * (self.nvals - self.cop._nin)
        for f in self.fns:
            f(vals, ctx)
        return vals

    def _first(self, arrays, ctx):
        """The generic run, noting which step results own fresh memory; then compile."""
        cop, xp = self.cop, self.xp
        vals = list(arrays) + [None] * (cop._nslots - cop._nin)
        owned = [False] * cop._nslots
        live = {id(_root(a)) for a in arrays}
        poisoned = False
        for st in cop._steps:
            r = cop._call_step(st, xp, ctx, [vals[s] for s in st.ins])
            rs = [r] if st.nout == 1 else list(r)
            for s, x in zip(st.outs, rs):
                vals[s] = x
                if type(x) is Poisoned:     # a deferred op error: its payload is not read
                    poisoned = True
                    continue
                rt = _root(x)
                f = getattr(x, "flags", None)
                # (CuPy's flags have no ``writeable``: its arrays always are)
                owned[s] = (id(rt) not in live and f is not None and f.c_contiguous
                            and getattr(f, "writeable", True))
                live.add(id(rt))
        if not poisoned:        # compile from a run whose values are all real arrays
            self._compile(owned, vals)
        return vals

    def _compile(self, owned, vals):
        cop, xp = self.cop, self.xp
        steps = cop._steps
        nin = cop._nin
        heads = set(cop._heads)
        readers = [0] * cop._nslots
        mutated = set()
        for st in steps:
            for s in st.ins:
                readers[s] += 1
            if st.op.mutates:
                mutated.update(st.ins[k] for k in st.op.mutated(st.p) if k < len(st.ins))
        producer = {}
        for st in steps:
            for k, s in enumerate(st.outs):
                producer[s] = (st.op, k)
        def free_to_write(s, o):
            # ``s`` may be overwritten by the step making ``o``: a fresh float array that
            # this step alone reads, that no rule reads back and that no caller sees
            return (s >= nin and owned[s] and readers[s] == 1 and s not in heads
                    and o not in heads and s not in mutated and o not in mutated
                    and vals[s].dtype.kind == "f" and not _reads_output(*producer[s]))

        fns = []
        for i, st in enumerate(steps):
            s = st.ins[0] if st.ins else None
            w = _writes_into(st, vals, xp) if xp is np else None
            if xp is np and _is_relu(st) and free_to_write(s, st.outs[0]):
                self.inplace[i] = s
                fns.append(_relu_in_place(s, st.outs[0], np.zeros(vals[s].shape,
                                                                  vals[s].dtype)))
            elif w is not None and any(free_to_write(a, st.outs[0]) for a in st.ins):
                # an element-wise step whose rule reads no input (a residual addition):
                # into its dying input, as the static plan's writers (NOTE [Static memory
                # plan]); the same ufunc, so the same values
                from gpunda._engine.cached_op import _writer_step
                a = next(a for a in st.ins if free_to_write(a, st.outs[0]))
                self.inplace[i] = a
                fns.append(_writer_step(w, tuple(st.ins), st.outs[0], ("alias", a)))
            elif xp is np and s is not None and self.req[s] and _planar_pool(st, vals[s]):
                self.planes[i] = k = self.nvals
                self.nvals += 1
                fns.append(_pool_planes(s, st.outs[0], k))
            else:
                fns.append(compute_step(cop, st, xp))
        self.fns = fns

    # -- backward ------------------------------------------------------------------------
    def _backward_entries(self):
        cop, req = self.cop, self.req
        steps = cop._steps
        reach = [False] * cop._nslots       # may receive a gradient
        for h in cop._heads:
            reach[h] = True
        entries = []
        for i in range(len(steps) - 1, -1, -1):
            st = steps[i]
            op = st.op
            if op.nondiff or not any(reach[s] for s in st.outs) \
                    or not any(req[s] for s in st.ins):
                continue
            for s in st.ins:
                if req[s]:
                    reach[s] = True
            save = op.save or ()
            ins_read = "inputs" in save or "broadcast" in save
            need = tuple(bool(req[s]) for s in st.ins) if op.grad_need else None
            targets = tuple((k, s) for k, s in enumerate(st.ins) if req[s])
            kind = 0 if op.gradient is None else 1 if _is_relu(st) else \
                2 if op.name == "Pooling" and len(st.ins) == 1 else 0
            entries.append((st, tuple(st.outs), tuple(st.ins), ins_read, "outputs" in save,
                            need, targets, kind, i))
        self.entries = entries

    def _scratch(self, shape, dtype):
        """This thread's mask buffer of ``shape`` and ``dtype`` (a backward runs one rule at
        a time, so its ReLU steps of one shape share it; two threads' backwards may not)."""
        masks = getattr(self._local, "masks", None)
        if masks is None:
            masks = self._local.masks = {}
        key = (shape, dtype)
        m = masks.get(key)
        if m is None:
            m = masks[key] = np.empty(shape, dtype)
        return m

    def backward(self, F, saved, ograds):
        """The plain backward (raw arrays) of one recorded call: NOTE [CachedOp backward]."""
        cop = self.cop
        vals = saved.vals
        xp = saved.ctx.backend.xp
        g = [None] * cop._nslots
        for h, og in zip(cop._heads, ograds):
            if og is not None:
                g[h] = og if g[h] is None else g[h] + og
        planes = self.planes
        # backward-pass writers (BatchNorm's moving stats), as _cached_backward runs them
        bwd_train = _ag.updates_enabled()
        update = cop._has_updates and bwd_train
        nin = cop._nin
        scratch = self._scratch
        for st, outs, ins, ins_read, outs_read, need, targets, kind, i in self.entries:
            if len(outs) == 1:
                og = g[outs[0]]
                if og is None:
                    continue
                # this step is the slot's gradient's last reader: dropping it here lets
                # the rules below write into it (NOTE [Gradients in place])
                g[outs[0]] = None
                ogs = [og]
            else:
                ogs = [g[s] for s in outs]
                if all(x is None for x in ogs):
                    continue
                ogs = [x if x is not None else xp.zeros(vals[s].shape, vals[s].dtype)
                       for x, s in zip(ogs, outs)]
                og = None
            op = st.op
            gr = None
            if kind == 1 and og is not None and og.dtype == vals[ins[0]].dtype \
                    and og.dtype.kind == "f":
                # Activation(relu)'s rule, g * (x > 0), into g or the mask's own array
                ogs = None
                gr = relu_grad(xp, vals[ins[0]], og, scratch)
            elif kind == 2 and i in planes and planes[i] < len(vals):
                # the max-pooling rule's planar route on the planes the forward kept
                # (None where that route does not apply: the rule decides then)
                gr = _pool.route_max_2x2(vals[ins[0]], ogs[0], vals[planes[i]])
            if gr is not None:
                og = ogs = None
                s = ins[0]
                prev = g[s]
                g[s] = gr if prev is None else None
                if prev is not None:
                    g[s] = accumulate(xp, prev, gr)
                continue
            if op.gradient is None:
                raise GpundaError(f"Operator {op.name} (CachedOp node {st.name!r}) has no "
                                  f"gradient rule; it cannot be differentiated")
            i_vals = [vals[s] for s in ins] if ins_read else None
            o_vals = [vals[s] for s in outs] if outs_read else None
            grads = list(step_gradient(F, st, i_vals, o_vals, ogs, need, bwd_train))
            og = ogs = None
            if update and op.update is not None:
                step_update(st, xp, [vals[s] for s in ins], [vals[s] for s in outs],
                            saved.args, nin)
            for k, s in targets:
                gr = grads[k]
                if gr is not None:
                    grads[k] = None
                    prev = g[s]
                    g[s] = gr if prev is None else None
                    if prev is not None:
                        g[s] = accumulate(xp, prev, gr)
            gr = prev = None
        return [g[k] if self.req[k] else None for k in range(cop._nin)]


def step_gradient(F, st, i_vals, o_vals, ogs, need=None, bwd_train=None):
    """Step ``st``'s gradient rule on the values its backward reads (``need``: which inputs
    want a gradient, for rules that take it); a failure names the op and the node. A step
    with a backward-pass write (BatchNorm) runs its rule in the backward's train_mode
    ``bwd_train``, the others in the call's (see autograd._bwd_train), as MXNet's kernels."""
    op = st.op
    fwd_train = _ag._is_train()
    switch = op.update is not None and bwd_train is not None and fwd_train is not bwd_train
    if switch:
        _ag._set_train(bwd_train)
    try:
        if need is not None:
            return op.gradient(F, st.p, i_vals, o_vals, ogs, need=need)
        return op.gradient(F, st.p, i_vals, o_vals, ogs)
    except GpundaError:
        raise
    except Exception as e:
        raise GpundaError(f"Operator {op.name} (CachedOp node {st.name!r}): gradient "
                          f"failed: {e}") from e
    finally:
        if switch:
            _ag._set_train(fwd_train)


def step_update(st, xp, ins, outs, args, nin):
    """Step ``st``'s backward-pass write (BatchNorm's moving stats) on its raw input and
    output values; ``args`` (the call's input NDArrays, or None) get their versions bumped."""
    _ag.run_update(st.op, st.p, xp, ins, outs,
                   None if args is None else [args[s] if s < nin else None for s in st.ins])


def compute_step(cop, st, xp):
    """A closure running step ``st`` on the slot list ``vals`` (its inputs read from, its
    outputs written to their slots): the plain step of a compiled plan."""
    call = cop._call_step
    ins = st.ins
    outs = st.outs
    if st.nout == 1:
        o = outs[0]
        if len(ins) == 1:
            a = ins[0]

            def f(vals, ctx):
                vals[o] = call(st, xp, ctx, [vals[a]])
        else:
            def f(vals, ctx):
                vals[o] = call(st, xp, ctx, [vals[s] for s in ins])
    else:
        def f(vals, ctx):
            r = call(st, xp, ctx, [vals[s] for s in ins])
            for s, x in zip(outs, r):
                vals[s] = x
    return f


def _planar_pool(st, x):
    """Whether Pooling step ``st`` on ``x`` is a max pooling whose gradient takes the
    planar 2x2 route (NOTE [2x2 pooling in cell planes]); decided as the op's own
    compute and rule decide it."""
    from gpunda.ops.nn.conv import _channels_last, _pool_geo, _pool_type
    if st.op.name != "Pooling" or len(st.ins) != 1 or st.nout != 1:
        return False
    p = st.p
    if getattr(x, "ndim", 0) != 4 or _channels_last(p, 4) or _pool_type(p) != "max":
        return False
    kernel, stride, pad, _, extra = _pool_geo(p, x.shape)
    return _pool.applies(kernel, stride, pad, extra, x.shape) and _pool.planar(x)


def _pool_planes(s, o, k):
    planes = _pool.max_2x2_planes

    def f(vals, ctx):
        vals[o], vals[k] = planes(vals[s])
    return f


def _writes_into(st, vals, xp):
    """How element-wise step ``st`` writes its output into a given array (the static
    plan's ``_out_writer``) where its rule reads none of its inputs and every operand has
    the output's shape and float dtype; else None."""
    if st.nout != 1 or "inputs" in (st.op.save or ()) or _is_relu(st):
        return None
    o = vals[st.outs[0]]
    if getattr(o, "dtype", None) is None or o.dtype.kind != "f" or any(
            getattr(vals[a], "shape", None) != o.shape or vals[a].dtype != o.dtype
            for a in st.ins):
        return None
    from gpunda._engine.cached_op import _out_writer
    w = _out_writer(st.op, st.p, xp, len(st.ins))
    if w is not None and w[1] is not None:
        w = (w[0], o.dtype.type(w[1]), w[2])     # the scalar in the data's dtype
    return w


def _relu_in_place(s, o, zeros):
    maximum = np.maximum

    def f(vals, ctx):
        x = vals[s]
        vals[o] = maximum(x, zeros, out=x)
    return f
