"""The optimizer step as one pass over memory: flat parameter buffers (NOTE [Flat buffers]).

``flat_update(trainer, dev, updater)`` is called by ``gluon.Trainer`` for each
context before its per-parameter loop; it updates every parameter it can through
flat buffers and returns their indices, which the loop then skips.
"""
from __future__ import annotations

import math
import os

import numpy as np

from gpunda._engine import autograd as _ag
from gpunda.ops.optimizer import flat as K
from gpunda.ops.optimizer import flat_cuda as KC
from gpunda.optimizer._more import LAMB
from gpunda.optimizer.optimizer import NAG, SGD, AdaGrad, Adam, RMSProp

# NOTE [Flat buffers]
# The dense parameters of one Trainer that share a context and a dtype (and have a
# gradient) are packed, at the first Trainer.step that updates on the workers, into
# one flat buffer each for the weights, the gradients and every optimizer state
# (momentum; Adam's/LAMB's mean and var). Each Parameter keeps its NDArrays; only
# their payload (``NDArray._data``) becomes a reshaped view of its segment, so
# autograd's in-place gradient writes, set_data, load_parameters (in-place copies),
# zero_grad and save/load of trainer states all read and write the buffers. Before
# every step the group checks, by identity, that each weight, gradient and state
# payload is still its view: one that was replaced with the same shape and dtype
# (``_init_grad``, ``reset_ctx`` to the same context, ``load_states``) is copied into
# its segment and re-bound; a change of membership, shape, dtype or context
# (``cast``, ``reset_ctx`` elsewhere, grad_req 'null') rebuilds the group from the
# current values. Segments are ordered by (lr_mult, wd_mult, index), so parameters
# with equal hyper-parameters form one run, and one run is updated by a few
# vectorized calls per cache-sized chunk (ops/optimizer/flat.py) instead of
# one Python-level update per parameter. Update counts, learning rates (schedulers
# included) and weight decays are still taken per index, in index order, exactly
# as the per-parameter path takes them; a skipped (stale) parameter only splits a
# run. Sparse weights or gradients, multi_precision float16 weights on the CPU (and
# with LAMB, whose multi-precision formula is its own), other optimizers and
# subclasses that override the update keep the per-parameter path.
# GPUNDA_FLAT_OPTIMIZER=0 turns the flat path off. On a GPU context a group's step is one
# CUDA kernel launch over the whole buffer (two for LAMB), per-parameter numbers in a table
# (NOTE [Flat CUDA step], ops/optimizer/flat_cuda.py); GPUNDA_FLAT_CUDA=0 keeps the chunked
# array-module kernels there.


def _same(klass, opt, names):
    return all(getattr(type(opt), n) is getattr(klass, n) for n in names)


_METHODS = ("update", "update_multi_precision", "create_state", "create_state_multi_precision")


def _clip_of(opt):
    """The clipping bound the formulas apply (None: off; a negative one is off too)."""
    c = opt.clip_gradient
    return None if c is None or float(c) < 0 else float(c)


def _count_lr_wd(opt, i):
    """Count index ``i``'s update, then its learning rate and weight decay, as every
    optimizer's per-parameter ``update`` does first (schedulers see the new count)."""
    opt._update_count(i)
    return opt._get_lr(i), opt._get_wd(i)


class _SGDSpec:
    mp_master_last = True       # multi_precision state: (momentum or None, master)

    @staticmethod
    def states(opt):
        return 0 if opt.momentum == 0.0 else 1

    @staticmethod
    def scalars(opt, i):
        lr, wd = _count_lr_wd(opt, i)
        return (lr, wd, opt.rescale_grad, opt.clip_gradient is not None, _clip_of(opt),
                opt.momentum)

    @staticmethod
    def run(xp, grp, lo, hi, k):
        K.sgd(xp, grp.bufs, grp.scratch, lo, hi, k)

    @staticmethod
    def cuda(grp, ks):
        rows = {}
        for j, (lr, wd, rs, op_form, clip, mom) in ks.items():
            rows[j] = (1.0, lr * rs, 1.0 - lr * wd, lr * wd, lr, float(bool(wd)), rs,
                       float(clip is not None), clip or 0.0, mom)
        b = grp.bufs
        m = b[2] if len(b) > 2 else b[0]
        op_form = next(iter(ks.values()))[3]        # clip_gradient set: one per optimizer
        grp.launch("gpunda_flat_sgd", (b[0], b[1], m, grp.btab,
                                       grp.table(rows, len(KC.SGD_COLS)),
                                       np.int32(op_form), np.int32(len(b) > 2)))


class _AdamSpec:
    mp_master_last = False      # multi_precision state: (master, inner state)

    @staticmethod
    def states(opt):
        return 2

    @staticmethod
    def scalars(opt, i):
        lr, wd = _count_lr_wd(opt, i)
        t = opt._index_update_count[i]
        lr *= math.sqrt(1.0 - opt.beta2 ** t) / (1.0 - opt.beta1 ** t)
        return (lr, wd, opt.rescale_grad, _clip_of(opt), opt.beta1, opt.beta2, opt.epsilon)

    @staticmethod
    def run(xp, grp, lo, hi, k):
        K.adam(xp, grp.bufs, grp.scratch, lo, hi, k)

    @staticmethod
    def cuda(grp, ks):
        rows = {j: (1.0, lr, wd, rs, float(clip is not None), clip or 0.0, b1, 1 - b1, 1 - b2,
                    b2, eps) for j, (lr, wd, rs, clip, b1, b2, eps) in ks.items()}
        W, G, M, V = grp.bufs
        grp.launch("gpunda_flat_adam",
                   (W, G, M, V, grp.btab, grp.table(rows, len(KC.ADAM_COLS))))


class _LAMBSpec:
    @staticmethod
    def states(opt):
        return 2

    @staticmethod
    def scalars(opt, i):
        lr, wd = _count_lr_wd(opt, i)
        t = opt._index_update_count[i]
        return (lr, wd, t, opt.rescale_grad, _clip_of(opt), opt.beta1, opt.beta2, opt.epsilon,
                opt.bias_correction)

    @staticmethod
    def run(xp, grp, lo, hi, k):
        if grp.D is None:
            grp.D = xp.empty(grp.total, grp.dtype)
        K.lamb_direction(xp, grp.bufs, grp.scratch, lo, hi, k, grp.D)
        opt = grp.opt
        for a, b in grp.segments_in(lo, hi):
            K.lamb_step(xp, grp.bufs[0], grp.D, grp.scratch, a, b, k[0], opt.lower_bound,
                        opt.upper_bound)

    @staticmethod
    def cuda(grp, ks):
        opt, xp = grp.opt, grp.xp
        lower, upper = opt.lower_bound or 0.0, opt.upper_bound or 0.0
        rows = {j: (1.0, wd, rs, float(clip is not None), clip or 0.0, b1, 1.0 - b1, 1.0 - b2,
                    b2, eps, 1.0 - b1 ** t, 1.0 - b2 ** t, lr, lower, upper, float(bool(bias)))
                for j, (lr, wd, t, rs, clip, b1, b2, eps, bias) in ks.items()}
        if grp.D is None:
            grp.D = xp.empty(grp.total, grp.dtype)
        tab = grp.table(rows, len(KC.LAMB_COLS))
        norms = xp.zeros(2 * len(grp.members), np.float64)
        W, G, M, V = grp.bufs
        grp.launch("gpunda_flat_lamb1", (W, G, M, V, grp.D, grp.btab, tab, norms))
        grp.launch("gpunda_flat_lamb2", (W, grp.D, grp.btab, tab, norms))


class _NAGSpec:
    mp_master_last = True

    @staticmethod
    def states(opt):
        return 0 if opt.momentum == 0.0 else 1

    @staticmethod
    def scalars(opt, i):
        lr, wd = _count_lr_wd(opt, i)
        return (lr, wd, opt.rescale_grad, _clip_of(opt), opt.momentum)

    @staticmethod
    def run(xp, grp, lo, hi, k):
        if len(grp.bufs) == 2:      # no momentum: SGD's operator formula
            lr, wd, rs, clip, _ = k
            K.sgd(xp, grp.bufs, grp.scratch, lo, hi, (lr, wd, rs, True, clip, 0.0))
        else:
            K.nag(xp, grp.bufs, grp.scratch, lo, hi, k)

    @staticmethod
    def cuda(grp, ks):
        b = grp.bufs
        if len(b) == 2:             # no momentum: SGD's operator formula
            rows = {j: (1.0, 0.0, 1 - lr * wd, lr * wd, lr, float(bool(wd)), rs,
                        float(clip is not None), clip or 0.0, 0.0)
                    for j, (lr, wd, rs, clip, _) in ks.items()}
            grp.launch("gpunda_flat_sgd", (b[0], b[1], b[0], grp.btab,
                                           grp.table(rows, len(KC.SGD_COLS)),
                                           np.int32(1), np.int32(0)))
            return
        rows = {j: (1.0, lr, wd, rs, float(clip is not None), clip or 0.0, mu, mu + 1)
                for j, (lr, wd, rs, clip, mu) in ks.items()}
        grp.launch("gpunda_flat_nag",
                   (b[0], b[1], b[2], grp.btab, grp.table(rows, len(KC.NAG_COLS))))


class _RMSPropSpec:
    mp_master_last = False

    @staticmethod
    def states(opt):
        return 3 if opt.centered else 1

    @staticmethod
    def scalars(opt, i):
        lr, wd = _count_lr_wd(opt, i)
        cw = opt.clip_weights
        # the operator clips for clip_weights >= 0 when given; centered, when truthy
        cw = (float(cw) if cw and (opt.centered or cw >= 0) else None)
        return (lr, wd, opt.rescale_grad, _clip_of(opt), opt.gamma1, opt.gamma2, opt.epsilon,
                cw, opt.centered)

    @staticmethod
    def run(xp, grp, lo, hi, k):
        K.rmsprop(xp, grp.bufs, grp.scratch, lo, hi, k)

    @staticmethod
    def cuda(grp, ks):
        rows = {j: (1.0, lr, wd, rs, float(clip is not None), clip or 0.0, g1, 1 - g1, g2, eps,
                    float(cw is not None), cw or 0.0)
                for j, (lr, wd, rs, clip, g1, g2, eps, cw, _) in ks.items()}
        b = grp.bufs
        centered = len(b) == 5
        gb, dl = (b[3], b[4]) if centered else (b[2], b[2])
        grp.launch("gpunda_flat_rmsprop",
                   (b[0], b[1], b[2], gb, dl, grp.btab, grp.table(rows, len(KC.RMSPROP_COLS)),
                    np.int32(centered)))


class _AdaGradSpec:
    mp_master_last = False

    @staticmethod
    def states(opt):
        return 1

    @staticmethod
    def scalars(opt, i):
        lr, wd = _count_lr_wd(opt, i)
        return (lr, wd, opt.rescale_grad, _clip_of(opt), opt.float_stable_eps)

    @staticmethod
    def run(xp, grp, lo, hi, k):
        K.adagrad(xp, grp.bufs, grp.scratch, lo, hi, k)

    @staticmethod
    def cuda(grp, ks):
        rows = {j: (1.0, lr, wd, rs, float(clip is not None), clip or 0.0, eps)
                for j, (lr, wd, rs, clip, eps) in ks.items()}
        W, G, H = grp.bufs
        grp.launch("gpunda_flat_adagrad",
                   (W, G, H, grp.btab, grp.table(rows, len(KC.ADAGRAD_COLS))))


_SPECS = ((SGD, _SGDSpec), (Adam, _AdamSpec), (LAMB, _LAMBSpec), (NAG, _NAGSpec),
          (RMSProp, _RMSPropSpec), (AdaGrad, _AdaGradSpec))


def spec_of(opt):
    """The flat kernel spec of optimizer ``opt``, or None when it has none."""
    for klass, spec in _SPECS:
        if isinstance(opt, klass) and _same(klass, opt, _METHODS):
            return spec
    return None


_ND = []


def _state_list(state, n):
    """The ``n`` state NDArrays of one parameter's state, or None for another layout."""
    if not _ND:
        from gpunda.ndarray import NDArray
        _ND.append(NDArray)
    NDArray = _ND[0]
    if n == 0:
        return [] if state is None else None
    if n == 1 and isinstance(state, NDArray):
        return [state] if state.stype == "default" else None
    if isinstance(state, (tuple, list)) and len(state) == n and \
            all(isinstance(s, NDArray) and s.stype == "default" for s in state):
        return list(state)
    return None


def _slot_states(spec, state, n, mp):
    """The state NDArrays of one parameter in slot order (``[master, *inner]`` for a
    multi_precision float16 weight), or None for another layout."""
    if not mp:
        return _state_list(state, n)
    if not isinstance(state, (tuple, list)) or len(state) != 2:
        return None
    inner, master = state if spec.mp_master_last else state[::-1]
    ml, il = _state_list(master, 1), _state_list(inner, n)
    return None if ml is None or il is None else ml + il


class FlatGroup:
    """Flat weight/gradient/state buffers of the parameters ``members`` (index,
    Parameter) on context copy ``dev``, all of one dtype and context."""

    def __init__(self, spec, upd, dev, members):
        self.spec, self.dev, self.upd = spec, dev, upd
        self.opt = upd.optimizer
        self.nstates = spec.states(self.opt)
        self.key = [(i, id(p)) for i, p in members]
        # equal multipliers side by side: they form one run of the update
        members = sorted(members, key=lambda ip: (float(ip[1].lr_mult), float(ip[1].wd_mult),
                                                  ip[0]))
        self.members = members
        first = members[0][1]._data[dev]
        self.ctx = first.context
        xp = self.xp = self.ctx.backend.xp
        self.dtype = np.dtype(first.dtype)
        # multi_precision float16 weights (GPU only, _eligible): the buffers the kernels
        # update are float32 (master weights, states); the Parameters' float16 weights and
        # gradients live in two more, which the kernels' _mp forms read and write
        self.mp = bool(self.opt.multi_precision) and self.dtype == np.float16
        if self.mp:
            self.dtype = np.dtype(np.float32)
        sizes = [int(np.prod(p.shape, dtype=np.int64)) for _, p in members]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        self.total = total = self.offsets[-1]
        self.bufs = [xp.empty(total, self.dtype) for _ in range(2 + self.nstates)]
        # slot j of a member binds to slot_bufs[j]: weight, gradient, [master,] states
        self.slot_bufs = self.bufs
        if self.mp:     # the kernels read the float16 gradients and write the weights
            self.bufs[1] = xp.empty(total, np.float16)
            self.slot_bufs = [xp.empty(total, np.float16), self.bufs[1]] + \
                [self.bufs[0]] + self.bufs[2:]
        self.D = None
        # on a GPU, one launch per step for the whole buffer (NOTE [Flat CUDA step])
        self.cuda = getattr(spec, "cuda", None) if xp is not np and KC.supported(self.dtype) \
            and os.environ.get("GPUNDA_FLAT_CUDA", "1") != "0" else None
        self.btab = xp.asarray(KC.block_table(self.offsets)) if self.cuda else None
        n = K.CHUNK if xp is np else K.GPU_CHUNK
        # (the chunked kernels' temporaries; the CUDA kernels need none)
        self.scratch = None if self.cuda else K.Scratch(xp, self.dtype, min(n, max(total, 1)))
        # slot j of member k: its NDArray and the view it must hold
        self.nds = [[None] * len(self.slot_bufs) for _ in members]
        self.views = [[b[o:o + s].reshape(p.shape) for b in self.slot_bufs]
                      for (o, s, (_, p)) in zip(self.offsets, sizes, members)]
        self.pos = {i: k for k, (i, _) in enumerate(members)}
        self.st_objs = [None] * len(members)
        self.src = None             # the members list last checked (reused while unchanged)
        self._starts = {o: k for k, o in enumerate(self.offsets)}
        with _scope(self.ctx):
            for k, (i, p) in enumerate(members):
                self._bind(k, i, p)

    # -- binding the Parameters' NDArrays to their segments ---------------------------
    def _arrays(self, k, i, p):
        st = self.upd.states.get(i)
        states = self._states_of(st) if self.upd.states_synced.get(i, False) else None
        return [p._data[self.dev], p._grad[self.dev]] + (
            states if states is not None else [None] * (len(self.slot_bufs) - 2))

    def _states_of(self, state):
        return _slot_states(self.spec, state, self.nstates, self.mp)

    def _bind(self, k, i, p):
        """Copy the arrays of member ``k`` into their segments and re-bind them there."""
        arrays = self._arrays(k, i, p)
        if i not in self.upd.states or any(a is None for a in arrays[2:]):
            # no state yet (or one loaded from a file, or of another layout): a new
            # one, with the old value when it has one
            w = arrays[0]
            old = self._states_of(self.upd.states.get(i))
            new = self.opt.create_state_multi_precision(i, w)
            new_list = self._states_of(new)
            if old is not None and new_list:
                for a, b in zip(new_list, old):
                    a._data[...] = b.as_in_context(self.ctx)._data
            self.upd.states[i] = new
            self.upd.states_synced[i] = True
            arrays[2:] = new_list
        for j, (a, view) in enumerate(zip(arrays, self.views[k])):
            if a._data is not view:
                view[...] = a._data
                a._data = view
            self.nds[k][j] = a
        self.st_objs[k] = self.upd.states[i]

    def _intact(self, k, i, p, states, synced):
        """Whether member ``k`` still holds the NDArrays and payloads it was bound to."""
        nds, views, dev = self.nds[k], self.views[k], self.dev
        if p._data[dev] is not nds[0] or p._grad[dev] is not nds[1] or \
                states.get(i) is not self.st_objs[k] or not synced.get(i, False):
            return False
        for a, v in zip(nds, views):
            if a._data is not v:
                return False
        return True

    def check(self, members):
        """Re-bind replaced payloads; False when the group must be rebuilt."""
        if self.upd.optimizer is not self.opt:
            return False
        if members is not self.src:
            if [(i, id(p)) for i, p in members] != self.key:
                return False
            self.src = members
        xp = self.xp
        states, synced = self.upd.states, self.upd.states_synced
        for k, (i, p) in enumerate(self.members):
            if self._intact(k, i, p, states, synced):
                continue
            nds, views = self.nds[k], self.views[k]
            arrays = self._arrays(k, i, p)
            for j, a in enumerate(arrays):
                if a is nds[j] and a._data is views[j]:
                    continue
                if a is None:
                    with _scope(self.ctx):
                        self._bind(k, i, p)
                    break
                d = a._data
                if type(d) is not xp.ndarray or d.shape != views[j].shape or \
                        d.dtype != views[j].dtype or a.context != self.ctx:
                    return False
                with _scope(self.ctx):
                    self._bind(k, i, p)
                break
        return True

    def table(self, rows, ncols):
        """The device copy of the per-segment float64 table: ``rows`` ``{member: values}``,
        zeros (inactive) for the members left out."""
        tab = np.zeros((len(self.members), ncols))
        for k, r in rows.items():
            tab[k] = r
        return self.xp.asarray(tab)

    def segments_in(self, lo, hi):
        """The member segments ``(start, stop)`` inside ``[lo, hi)``."""
        offs = self.offsets
        k = self._starts[lo]
        while offs[k] < hi:
            yield offs[k], offs[k + 1]
            k += 1

    # -- the step ---------------------------------------------------------------------
    def step(self, active):
        """Update the members whose index is in ``active`` (a set)."""
        opt, spec, xp = self.opt, self.spec, self.xp
        ks = {}
        for i in sorted(i for i in active if i in self.pos):   # index order, as the loop
            ks[self.pos[i]] = spec.scalars(opt, i)
        if self.cuda is not None:
            if ks:
                with _scope(self.ctx):
                    self.cuda(self, ks)
            return self._bump(ks)
        runs = []
        offs = self.offsets
        for k in range(len(self.members)):
            kk = ks.get(k)
            if kk is None:
                continue
            if runs and runs[-1][1] == offs[k] and runs[-1][2] == kk:
                runs[-1][1] = offs[k + 1]
            else:
                runs.append([offs[k], offs[k + 1], kk])
        with _scope(self.ctx):
            for lo, hi, kk in runs:
                spec.run(xp, self, lo, hi, kk)
        return self._bump(ks)

    def launch(self, name, args):
        """Launch flat kernel ``name`` over this group's blocks (its _mp form, writing the
        float16 weights too, for multi_precision float16 weights)."""
        KC.launch(self.xp, self.dtype, name, self.btab, args,
                  self.slot_bufs[0] if self.mp else None)

    def _bump(self, ks):
        bump = _ag.bump_version
        for k in ks:
            nds = self.nds[k]
            bump(nds[0])
            for s in nds[2:]:
                bump(s)
        return [self.members[k][0] for k in ks]


class _NoScope:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _scope(ctx):
    return ctx.backend.device_scope() if ctx.device_type == "gpu" else _NoScope()


def _eligible(p, dev, mp, spec):
    """Whether Parameter ``p``'s copy ``dev`` can live in a flat buffer (a multi_precision
    float16 weight only on a GPU, through the CUDA kernels, for the specs that say where
    their master copy sits)."""
    if p.grad_req == "null" or p._stype != "default" or p._grad_stype != "default" or \
            p._data is None or p._grad is None:
        return False
    w, g = p._data[dev], p._grad[dev]
    dt = np.dtype(w.dtype)
    if dt.kind != "f" or np.dtype(g.dtype) != dt:
        return False
    if mp and dt == np.float16 and (
            w.context.backend.xp is np or not hasattr(spec, "mp_master_last")
            or os.environ.get("GPUNDA_FLAT_CUDA", "1") == "0"):
        return False
    xp = w.context.backend.xp
    return type(w._data) is xp.ndarray and type(g._data) is xp.ndarray and \
        w._data.shape == g._data.shape and w.context == g.context


def flat_update(trainer, dev, upd, skip=()):
    """Update, through flat buffers, the parameters of ``trainer`` on context copy
    ``dev`` that qualify (NOTE [Flat buffers]) and whose index is not in ``skip``;
    returns the set of indices it updated."""
    if os.environ.get("GPUNDA_FLAT_OPTIMIZER", "1") == "0":
        return ()
    opt = upd.optimizer
    spec = spec_of(opt)
    groups = trainer.__dict__.setdefault("_flat_groups", {})
    if spec is None:
        groups.clear()
        return ()
    params = trainer._params
    # membership is recomputed only when a Parameter's array lists or grad_req changed
    sig = [(id(p._data), id(p._grad), p.grad_req) for p in params]
    cache = trainer.__dict__.setdefault("_flat_members", {})
    hit = cache.get(dev)
    if hit is not None and hit[0] == sig and hit[2] is opt and hit[3] == opt.multi_precision:
        by_key = hit[1]
    else:
        by_key = _members(params, dev, upd, spec, opt)
        # the lists are kept so their ids in ``sig`` cannot be reused
        cache[dev] = (sig, by_key, opt, opt.multi_precision,
                      [(p._data, p._grad) for p in params])
    done = set()
    for key, members in by_key.items():
        gkey = (dev,) + key
        grp = groups.get(gkey)
        if grp is None or grp.upd is not upd or not grp.check(members):
            grp = groups[gkey] = FlatGroup(spec, upd, dev, members)
            grp.src = members
        active = {i for i, p in members if i not in skip and p._fresh_grad(dev)}
        done.update(grp.step(active))
        done.update(i for i, _ in members if i not in active)   # stale: skipped, as the loop
    for gkey in [g for g in groups if g[0] == dev and g[1:] not in by_key]:
        del groups[gkey]
    return done


def _members(params, dev, upd, spec, opt):
    """``{(context, dtype): [(index, Parameter)]}`` of the parameters that qualify."""
    by_key = {}
    nstates = spec.states(opt)
    for i, p in enumerate(params):
        if _eligible(p, dev, opt.multi_precision, spec):
            w = p._data[dev]
            mp = bool(opt.multi_precision) and w.dtype == np.float16
            st = upd.states.get(i)
            if st is not None and upd.states_synced.get(i, False):
                # a state of another dtype or layout (the weight was cast after it was
                # made) is updated as it is, by the per-parameter path
                sl = _slot_states(spec, st, nstates, mp)
                if sl is None or any(s.dtype != (np.float32 if mp else w.dtype) for s in sl):
                    continue
            by_key.setdefault((str(w.context), np.dtype(w.dtype).str), []).append((i, p))
    return by_key
