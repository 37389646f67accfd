"""LAMB, AdamW and Group AdaGrad update ops of MXNet 1.x (single and multi-tensor).

- ``lamb_update_phase1/2`` (and ``mp_``): phase 1 updates mean/var in place and
  returns the direction g; the caller takes the norms r1 = |w|, r2 = |g| and
  phase 2 returns ``w - lr * (r1/r2) * g`` (r1 clipped to [lower_bound,
  upper_bound] when those are >= 0; a zero norm keeps lr).
- ``_adamw_update`` / ``_mp_adamw_update`` (``nd.contrib.adamw_update``):
  decoupled weight decay, ``w -= eta * (lr * m / (sqrt(v) + eps) + wd * w)``;
  ``rescale_grad`` is an input array and a NaN, Inf or zero scale skips the
  update (weights and states untouched), as in MXNet's mixed-precision training.
- ``_multi_adamw_update``, ``_multi_lamb_update`` and their ``mp`` forms: the same
  for a list of tensors (see ops/optimizer/multi.py for the input layout).
- ``_contrib_group_adagrad_update``: AdaGrad with one history value per row,
  computed only for a row_sparse gradient (MXNet has no dense kernel).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops.optimizer.updates import _clip, check_types
from gpunda.ops.optimizer import multi_cuda as _mcuda
from gpunda.ops.optimizer.multi import check_group_lengths, check_same_shapes, grouped_mutates, grouped_names
from gpunda.ops.sparse.ops import RSPData

_F32 = np.float32


_PH1_IN = ("weight", "grad", "mean", "var")
_PH2_IN = ("weight", "g", "r1", "r2")
_ADAMW_IN = ("weight", "grad", "mean", "var", "rescale_grad")


def _lamb_direction(xp, p, w, g, mean, var, t, wd):
    """Phase one on one tensor: update mean/var in place, return g (mean's dtype)."""
    dt = mean.dtype.type
    gr = _clip(xp, g.astype(mean.dtype, copy=False) * dt(p.rescale_grad), p.clip_gradient)
    mean[...] = dt(p.beta1) * mean + (dt(1) - dt(p.beta1)) * gr
    var[...] = dt(p.beta2) * var + (dt(1) - dt(p.beta2)) * gr * gr
    if p.bias_correction:
        m = mean / (1.0 - dt(dt(p.beta1) ** t))
        v = var / (1.0 - dt(dt(p.beta2) ** t))
    else:
        m, v = mean, var
    return (m / (xp.sqrt(v) + dt(p.epsilon)) + dt(wd) * w.astype(mean.dtype, copy=False)
            ).astype(mean.dtype, copy=False)


def _trust_lr(lr, r1, r2, lower, upper):
    if lower >= 0:
        r1 = max(r1, lower)
    if upper >= 0:
        r1 = min(r1, upper)
    return lr if r1 == 0 or r2 == 0 else lr * r1 / r2


def _scalar(a, op, name):
    if a.size < 1:
        raise GpundaError(f"Operator {op}: input {name} is empty; it must hold the norm")
    return float(a.reshape(-1)[0])


def _phase1(xp, p, w, g, mean, var):
    check_types("lamb_update_phase1", _PH1_IN, (w, g, mean, var))
    check_same_shapes("lamb_update_phase1", ("weight", "grad", "mean", "var"), (w, g, mean, var))
    return _lamb_direction(xp, p, w, g, mean, var, p.t, p.wd)


def _mp_phase1(xp, p, w, g, mean, var, w32):
    # NOTE [Update ops check before they write]: MPLambPhaseOneType
    check_types("mp_lamb_update_phase1", _PH1_IN + ("weight32",), (w, g, mean, var, w32), 2,
                f16=True)
    check_same_shapes("mp_lamb_update_phase1", ("weight", "grad", "mean", "var", "weight32"),
                      (w, g, mean, var, w32))
    return _lamb_direction(xp, p, w32, g, mean, var, p.t, p.wd)


def _phase2(xp, p, w, g, r1, r2, w32=None):
    name = "mp_lamb_update_phase2" if w32 is not None else "lamb_update_phase2"
    if w32 is None:
        check_types(name, _PH2_IN, (w, g, r1, r2))
        check_same_shapes(name, ("weight", "g"), (w, g))
    else:
        # MP_InferType<1, 1, 5>: g, r1, r2 and weight32 are float32;
        # MPLambUpdatePhaseTwoShape: weight32 has the weight's shape too
        check_types(name, _PH2_IN + ("weight32",), (w, g, r1, r2, w32), 1)
        check_same_shapes(name, ("weight", "g", "weight32"), (w, g, w32))
    for rn, r in (("r1", r1), ("r2", r2)):
        # MXNet's LambUpdatePhaseTwoShape: the norms' first dim must be 1
        if r.ndim < 1 or r.shape[0] != 1:
            raise GpundaError(f"Operator {name}: {rn} shape incorrect: its first dimension "
                              f"must be 1, got shape {tuple(r.shape)}")
    lr = _trust_lr(p.lr, _scalar(r1, name, "r1"), _scalar(r2, name, "r2"),
                   p.lower_bound, p.upper_bound)
    base = w if w32 is None else w32
    dt = g.dtype.type
    # MXNet's mp kernel declares weight32 mutable but only reads it
    return (base - dt(lr) * g).astype(w.dtype, copy=False)


_PH1 = [Param("beta1", "float", 0.9), Param("beta2", "float", 0.999),
        Param("epsilon", "float", 1e-6), Param("t", "int", doc="update count (from 1)"),
        Param("bias_correction", "bool", True), Param("wd", "float", doc="weight decay"),
        Param("rescale_grad", "float", 1.0), Param("clip_gradient", "float", -1.0)]
_PH2 = [Param("lr", "float", doc="learning rate"), Param("lower_bound", "float", -1.0),
        Param("upper_bound", "float", -1.0)]

register(OpDef("lamb_update_phase1", _phase1, inputs=("weight", "grad", "mean", "var"),
               params=_PH1, nondiff=True, save=(), mutates=(2, 3), family="optim",
               doc="LAMB phase 1: mean/var updated in place; returns "
                   "m_hat / (sqrt(v_hat) + epsilon) + wd * weight."))
register(OpDef("lamb_update_phase2", _phase2, inputs=("weight", "g", "r1", "r2"),
               params=_PH2, nondiff=True, save=(), family="optim",
               doc="LAMB phase 2: weight - lr * r1 / r2 * g (r1 = |weight|, r2 = |g|)."))
register(OpDef("mp_lamb_update_phase1", _mp_phase1,
               inputs=("weight", "grad", "mean", "var", "weight32"), params=_PH1,
               nondiff=True, save=(), mutates=(2, 3), family="optim",
               doc="LAMB phase 1 with a float32 master weight; g is float32."))
register(OpDef("mp_lamb_update_phase2", _phase2,
               inputs=("weight", "g", "r1", "r2", "weight32"), params=_PH2,
               nondiff=True, save=(), mutates=(4,), family="optim",
               doc="LAMB phase 2 from the float32 master weight, in the weight's dtype."))


# ---------------------------------------------------------------------------
# AdamW

def _rescale_of(a, name):
    s = _scalar(a, name, "rescale_grad")
    return None if not np.isfinite(s) or s == 0 else s


def _adamw_step(xp, p, lr, wd, eta, w, g, mean, var, scale, multi):
    dt = mean.dtype.type
    gr = _clip(xp, dt(scale) * g.astype(mean.dtype, copy=False), p.clip_gradient)
    if multi:   # MultiMPAdamWKernel's association: beta*(m - g) + g
        mean[...] = dt(p.beta1) * (mean - gr) + gr
        sq = gr * gr
        var[...] = dt(p.beta2) * (var - sq) + sq
    else:
        mean[...] = dt(p.beta1) * mean + (dt(1) - dt(p.beta1)) * gr
        var[...] = dt(p.beta2) * var + (dt(1) - dt(p.beta2)) * gr * gr
    return w - dt(eta) * (dt(lr) * mean / (xp.sqrt(var) + dt(p.epsilon)) + dt(wd) * w)


def _adamw(xp, p, w, g, mean, var, rescale):
    # MPUpdateInferType<4, 1, 5>: rescale_grad is float32 (NOTE [Update ops check ...])
    check_types("_adamw_update", _ADAMW_IN, (w, g, mean, var, rescale), 4)
    check_same_shapes("_adamw_update", ("weight", "grad", "mean", "var"), (w, g, mean, var))
    scale = _rescale_of(rescale, "_adamw_update")
    if scale is None:
        return w.copy()
    # MXNet's AdamWUpdate rescales (and clips) the grad input in place before the step
    g[...] = _clip(xp, g.dtype.type(scale) * g, p.clip_gradient)
    return _adamw_step(xp, p, p.lr, p.wd, p.eta, w, g, mean, var, 1.0, False).astype(
        w.dtype, copy=False)


def _mp_adamw(xp, p, w, g, mean, var, w32, rescale):
    # MPUpdateInferType<2, 1, 6>: mean, var, weight32 and rescale_grad are float32
    check_types("_mp_adamw_update", _ADAMW_IN[:4] + ("weight32", "rescale_grad"),
                (w, g, mean, var, w32, rescale), 2)
    check_same_shapes("_mp_adamw_update", ("weight", "grad", "mean", "var", "weight32"),
                      (w, g, mean, var, w32))
    scale = _rescale_of(rescale, "_mp_adamw_update")
    if scale is None:
        return w.copy()
    w32[...] = _adamw_step(xp, p, p.lr, p.wd, p.eta, w32, g, mean, var, scale, False)
    return w32.astype(w.dtype)


_ADAMW = [Param("lr", "float", doc="learning rate"), Param("beta1", "float", 0.9),
          Param("beta2", "float", 0.999), Param("epsilon", "float", 1e-8),
          Param("wd", "float", 0.0), Param("eta", "float", doc="schedule multiplier"),
          Param("clip_gradient", "float", -1.0)]
register(OpDef("_adamw_update", _adamw,
               inputs=("weight", "grad", "mean", "var", "rescale_grad"), params=_ADAMW,
               nondiff=True, save=(), mutates=(1, 2, 3), family="optim",
               doc="AdamW step; rescale_grad is a 1-element array (NaN/Inf/0 skips). "
                   "Like MXNet it writes the rescaled, clipped gradient back into grad."))
register(OpDef("_mp_adamw_update", _mp_adamw,
               inputs=("weight", "grad", "mean", "var", "weight32", "rescale_grad"),
               params=_ADAMW, nondiff=True, save=(), mutates=(2, 3, 4), family="optim",
               doc="AdamW step on the float32 master weight weight32."))


def _register_multi_adamw(name, slots):
    stride = len(slots)
    mp = "weight32" in slots

    def compute(xp, p, *arrays):
        n = p.num_weights
        if len(arrays) != stride * n + 1:
            raise GpundaError(f"Operator {name}: expects {stride * n + 1} inputs for "
                              f"num_weights={n}, got {len(arrays)}")
        check_group_lengths(name, p, n, ("lrs", "wds", "etas"))
        scale = _rescale_of(arrays[-1], name)
        outs = []
        gpu = None
        if xp is not np and scale is not None:
            # a GPU: every tensor of one dtype in one launch, read in place (multi_cuda.py)
            groups = [arrays[i * stride:(i + 1) * stride] for i in range(n)]
            for i, grp in enumerate(groups):
                check_same_shapes(name, [f"{s}_{i}" for s in slots], grp)
            clip = p.clip_gradient if p.clip_gradient >= 0 else None
            gpu = _mcuda.adamw(xp, groups, p.lrs, p.wds, p.etas, scale, clip, p.beta1,
                               p.beta2, p.epsilon, mp)
        for i in range(n):
            if gpu is not None and gpu[i] is not None:
                outs.append(gpu[i])
                continue
            grp = arrays[i * stride:(i + 1) * stride]
            check_same_shapes(name, [f"{s}_{i}" for s in slots], grp)
            w, g, mean, var = grp[:4]
            if scale is None:
                outs.append(w.copy())
                continue
            base = grp[4] if mp else w
            new = _adamw_step(xp, p, p.lrs[i], p.wds[i], p.etas[i], base, g, mean, var,
                              scale, True)
            if mp:
                base[...] = new
            outs.append(new.astype(w.dtype, copy=False))
        return tuple(outs)

    register(OpDef(
        name, compute, inputs=lambda p: grouped_names(slots, p.num_weights, ("rescale_grad",)),
        params=[Param("lrs", "floats"), Param("beta1", "float", 0.9),
                Param("beta2", "float", 0.999), Param("epsilon", "float", 1e-8),
                Param("wds", "floats"), Param("etas", "floats"),
                Param("clip_gradient", "float", -1.0), Param("num_weights", "int", 1)],
        num_outputs=lambda p: p.num_weights, nondiff=True, save=(), family="optim",
        mutates=grouped_mutates(stride, tuple(range(2, stride))),
        doc=f"AdamW on num_weights tensors ({', '.join(slots)} each, then rescale_grad)."))


_register_multi_adamw("_multi_adamw_update", ("weight", "grad", "mean", "var"))
_register_multi_adamw("_multi_mp_adamw_update", ("weight", "grad", "mean", "var", "weight32"))


# ---------------------------------------------------------------------------
# multi-tensor LAMB

def _register_multi_lamb(name, slots):
    stride = len(slots)
    mp = "weight32" in slots

    def compute(xp, p, *arrays):
        n = p.num_tensors
        if n > 45:
            raise GpundaError(f"Operator {name}: num_tensors={n}; the maximum is 45")
        if len(arrays) != stride * n:
            raise GpundaError(f"Operator {name}: expects {stride * n} inputs for "
                              f"num_tensors={n}, got {len(arrays)}")
        check_group_lengths(name, p, n, ("learning_rates", "wds", "step_count"), "num_tensors")
        outs = []
        gpu = None
        if xp is not np:
            # a GPU: every tensor of one dtype in two launches, read in place (multi_cuda.py)
            groups = [arrays[i * stride:(i + 1) * stride] for i in range(n)]
            for i, grp in enumerate(groups):
                check_same_shapes(name, [f"{s}_{i}" for s in slots], grp)
            gpu = _mcuda.lamb(xp, groups, p.learning_rates, p.wds, p.step_count, p, mp)
        for i in range(n):
            if gpu is not None and gpu[i] is not None:
                outs.append(gpu[i])
                continue
            grp = arrays[i * stride:(i + 1) * stride]
            check_same_shapes(name, [f"{s}_{i}" for s in slots], grp)
            w, g, mean, var = grp[:4]
            base = grp[4] if mp else w
            d = _lamb_direction(xp, p, base, g, mean, var, p.step_count[i], p.wds[i])
            # r1 is the norm of the weight input itself: MultiSumSq squares in its
            # dtype (float16 for the mp form) and sums in float32
            r1 = float(xp.sqrt(xp.sum(xp.square(w), dtype=_F32)))
            r2 = float(xp.sqrt(xp.sum(xp.square(d.astype(_F32)), dtype=_F32)))
            lr = _trust_lr(p.learning_rates[i], r1, r2, p.lower_bound, p.upper_bound)
            new = base - base.dtype.type(lr) * d.astype(base.dtype, copy=False)
            if mp:
                base[...] = new
            outs.append(new.astype(w.dtype, copy=False))
        return tuple(outs)

    register(OpDef(
        name, compute, inputs=lambda p: grouped_names(slots, p.num_tensors),
        params=[Param("learning_rates", "floats"), Param("beta1", "float", 0.9),
                Param("beta2", "float", 0.999), Param("epsilon", "float", 1e-6),
                Param("wds", "floats"), Param("rescale_grad", "float", 1.0),
                Param("lower_bound", "float", -1.0), Param("upper_bound", "float", -1.0),
                Param("clip_gradient", "float", -1.0), Param("bias_correction", "bool", True),
                Param("step_count", "ints"), Param("num_tensors", "int", 1)],
        num_outputs=lambda p: p.num_tensors, nondiff=True, save=(), family="optim",
        mutates=grouped_mutates(stride, tuple(range(2, stride)), "num_tensors"),
        doc=f"LAMB on num_tensors tensors ({', '.join(slots)} each); returns the weights."))


_register_multi_lamb("_multi_lamb_update", ("weight", "grad", "mean", "var"))
_register_multi_lamb("_multi_mp_lamb_update", ("weight", "grad", "mean", "var", "weight32"))


# ---------------------------------------------------------------------------
# Group AdaGrad

def _group_adagrad_dense(xp, p, w, g, history):
    raise GpundaError("Operator _contrib_group_adagrad_update: needs a row_sparse grad "
                      "(MXNet implements it only for dense weight, row_sparse grad, "
                      "dense history)")


def _group_adagrad_rsp(xp, sp, p, w, g, history):
    if not isinstance(g, RSPData) or isinstance(w, RSPData) or isinstance(history, RSPData):
        return NotImplemented
    if tuple(g.shape) != tuple(w.shape):
        raise GpundaError(f"Operator _contrib_group_adagrad_update: input grad has shape "
                          f"{tuple(g.shape)} but weight has shape {tuple(w.shape)}")
    if history.shape[0] != w.shape[0]:
        raise GpundaError(f"Operator _contrib_group_adagrad_update: input history has shape "
                          f"{tuple(history.shape)}; it needs one row per weight row "
                          f"({w.shape[0]})")
    out = w.copy()
    rows = g.indices
    if rows.size == 0:
        return out
    dt = w.dtype.type
    gr = _clip(xp, g.values.astype(w.dtype, copy=False) * dt(p.rescale_grad), p.clip_gradient)
    gr2 = gr.reshape(rows.size, -1)
    flat = history.reshape(-1)    # the kernel indexes history by row number
    flat[rows] += (gr2 * gr2).sum(axis=1) / dt(gr2.shape[1])
    div = dt(p.lr) * gr2 / xp.sqrt(flat[rows] + dt(p.epsilon))[:, None]
    out[rows] = (w[rows].reshape(rows.size, -1) - div).reshape((rows.size,) + w.shape[1:])
    return out


def _full_rows(xp, a, name):
    """The dense rows of row_sparse ``a`` that must hold every row (MXNet's kernel for
    row_sparse states); an uninitialised (empty) ``a`` reads as zeros."""
    n = a.shape[0]
    if a.indices.size == 0:
        return xp.zeros(a.shape, dtype=a.dtype)
    if a.indices.size != n:
        raise GpundaError(f"Operator _contrib_group_adagrad_update: with row_sparse states "
                          f"it needs {name} to store all its rows ({n}); it stores "
                          f"{a.indices.size}")
    return a.values[xp.argsort(a.indices)] if n > 1 else a.values


def _group_adagrad_rsp_states(xp, sp, p, w, g, history):
    """Row_sparse weight, grad and history: weight and history hold every row (history may
    still be empty, as a fresh optimizer state); only the grad's rows change."""
    if not all(isinstance(a, RSPData) for a in (w, g, history)):
        return NotImplemented
    wd = _full_rows(xp, w, "weight")
    hd = _full_rows(xp, history, "history").reshape(w.shape[0], -1)
    new_w = _group_adagrad_rsp(xp, sp, p, wd, g, hd)
    rows = xp.arange(w.shape[0], dtype=w.indices.dtype if w.indices.size else np.int64)
    history._rebind(RSPData(rows, hd.reshape(history.shape), history.shape))
    return RSPData(rows, new_w, w.shape)


register(OpDef(
    "_contrib_group_adagrad_update", _group_adagrad_dense,
    inputs=("weight", "grad", "history"),
    params=[Param("lr", "float", doc="learning rate"), Param("rescale_grad", "float", 1.0),
            Param("clip_gradient", "float", -1.0), Param("epsilon", "float", 1e-5)],
    nondiff=True, save=(), mutates=(2,), family="optim",
    sparse={("default", "row_sparse", "default"): _group_adagrad_rsp,
            ("row_sparse", "row_sparse", "row_sparse"): _group_adagrad_rsp_states},
    doc="Group AdaGrad: history[row] += mean(g[row]**2); weight[row] -= lr * g[row] / "
        "sqrt(history[row] + epsilon), for the rows of the row_sparse grad only (dense "
        "weight and history, or row_sparse ones that hold every row)."))
