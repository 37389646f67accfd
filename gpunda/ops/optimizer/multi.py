"""Multi-tensor optimizer update ops of MXNet 1.x: one call updates a list of weights.

Inputs come interleaved per tensor (``weight_0, grad_0, mom_0, weight_1, ...``),
``num_weights`` says how many tensors, and per-tensor hyper-parameters arrive as
tuples (``lrs``, ``wds``) or, for the ``preloaded_*`` ops, as two trailing float32
arrays (``lrs``, ``wds``). Each op returns the new weights (``num_weights``
outputs; pass ``out=weights`` to update them in place) and writes its states
(momenta, float32 master weights) in place, as MXNet's FMutateInputs declares;
those indices depend on ``num_weights``, so ``mutates`` is computed from params.
The formulas follow MXNet's kernels term by term (``mom = momentum*mom -
lr*wd*w - lr*clip(rescale_grad*grad); w += mom``), in the float32 master
precision for the ``mp`` variants.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops.optimizer import flat as _flat
from gpunda.ops.optimizer import multi_cuda as _mcuda
from gpunda.ops.optimizer.updates import _clip

_SCALE = [Param("rescale_grad", "float", 1.0, "gradient scale"),
          Param("clip_gradient", "float", -1.0, "clip to [-c, c] when c >= 0")]
_NUM = [Param("num_weights", "int", 1, "number of updated weights")]
_TUPLES = [Param("lrs", "floats", doc="learning rates, one per weight"),
           Param("wds", "floats", doc="weight decays, one per weight")]
_MOM = [Param("momentum", "float", 0.0, "momentum decay")]


def check_group_lengths(name, p, n, fields, what="num_weights"):
    """Every tuple param in ``fields`` holds one value per tensor (MXNet's shape check)."""
    for f in fields:
        v = getattr(p, f)
        if len(v) != n:
            raise GpundaError(f"Operator {name}: parameter {f} has {len(v)} values but "
                              f"{what}={n}; give one per weight")


def check_same_shapes(name, names, arrays):
    """The arrays of one tensor group all have the weight's shape."""
    w = arrays[0]
    for nm, a in zip(names[1:], arrays[1:]):
        if tuple(a.shape) != tuple(w.shape):
            raise GpundaError(f"Operator {name}: input {nm} has shape {tuple(a.shape)} but "
                              f"{names[0]} has shape {tuple(w.shape)}")


def grouped_names(slots, n, tail=()):
    """``weight_0, grad_0, ..., weight_1, ...`` then the trailing inputs."""
    return tuple(f"{s}_{i}" for i in range(n) for s in slots) + tuple(tail)


def grouped_mutates(stride, slots, count="num_weights"):
    """FMutateInputs of a grouped op: ``slots`` of every group of ``stride`` inputs."""
    def mutates(p):
        return tuple(i * stride + k for i in range(getattr(p, count)) for k in slots)
    return mutates


def _sgd_step(xp, p, lr, wd, w, g, mom):
    """MultiSGDKernel on one tensor; ``w`` and ``mom`` in the master precision."""
    dt = w.dtype.type
    gr = _clip(xp, dt(p.rescale_grad) * g.astype(w.dtype, copy=False), p.clip_gradient)
    m = -dt(lr) * dt(wd) * w - dt(lr) * gr
    if mom is not None:
        m = dt(p.momentum) * mom + m
        mom[...] = m
    return (w + m).astype(w.dtype, copy=False)


def _register_sgd(name, slots, with_mom, mp, preloaded):
    stride = len(slots)
    muts = tuple(k for k, s in enumerate(slots) if s in ("mom", "weight32"))
    tail = ("lrs", "wds") if preloaded else ()
    imom = slots.index("mom") if with_mom else None

    def compute(xp, p, *arrays):
        n = p.num_weights
        if len(arrays) != stride * n + len(tail):
            raise GpundaError(f"Operator {name}: expects {stride * n + len(tail)} inputs for "
                              f"num_weights={n}, got {len(arrays)}")
        if preloaded:
            lrs, wds = (a.astype(np.float32).reshape(-1).tolist() for a in arrays[-2:])
            for nm, v in (("lrs", lrs), ("wds", wds)):
                if len(v) != n:
                    raise GpundaError(f"Operator {name}: input {nm} has {len(v)} values but "
                                      f"num_weights={n}")
        else:
            check_group_lengths(name, p, n, ("lrs", "wds"))
            lrs, wds = p.lrs, p.wds
        outs = []
        sc = None
        clip = p.clip_gradient if p.clip_gradient >= 0 else None
        gpu = None
        if xp is not np:
            # a GPU: every tensor of one dtype in one launch, read in place (multi_cuda.py)
            groups = [arrays[i * stride:(i + 1) * stride] for i in range(n)]
            for i, grp in enumerate(groups):
                check_same_shapes(name, [f"{s}_{i}" for s in slots], grp)
            gpu = _mcuda.sgd(xp, groups, lrs, wds, p.rescale_grad, clip,
                             p.momentum if with_mom else 0.0, with_mom, mp)
        for i in range(n):
            if gpu is not None and gpu[i] is not None:
                outs.append(gpu[i])
                continue
            grp = arrays[i * stride:(i + 1) * stride]
            check_same_shapes(name, [f"{s}_{i}" for s in slots], grp)
            w, g = grp[0], grp[1]
            mom = grp[imom] if with_mom else None
            if all(getattr(getattr(a, "flags", None), "c_contiguous", False) for a in grp):
                # the chunked kernel of the flat optimizer buffers (ops/optimizer/flat.py):
                # the same formula, its temporaries in two cache-sized scratch vectors
                master = grp[-1] if mp else w
                if sc is None or sc.a.dtype != master.dtype:
                    cap = _flat.CHUNK if xp is np else _flat.GPU_CHUNK
                    big = max(int(a.size) for a in arrays[:stride * n:stride])
                    sc = _flat.Scratch(xp, master.dtype, max(1, min(cap, big)))
                out = master if mp else xp.empty_like(w)
                _flat.multi_sgd(xp, master.reshape(-1), g.reshape(-1),
                                None if mom is None else mom.reshape(-1), out.reshape(-1), sc,
                                lrs[i], wds[i], p.rescale_grad, clip, p.momentum if with_mom
                                else 0.0)
                outs.append(master.astype(w.dtype) if mp else out)
                continue
            if mp:
                w32 = grp[-1]
                w32[...] = _sgd_step(xp, p, lrs[i], wds[i], w32, g, mom)
                outs.append(w32.astype(w.dtype))
            else:
                outs.append(_sgd_step(xp, p, lrs[i], wds[i], w, g, mom))
        return tuple(outs)

    params = ([] if preloaded else _TUPLES) + (_MOM if with_mom else []) + _SCALE + _NUM
    kind = ("multi-precision " if mp else "") + ("SGD with momentum" if with_mom else "SGD")
    src = "the trailing lrs/wds arrays" if preloaded else "the lrs/wds tuples"
    register(OpDef(
        name, compute, inputs=lambda p: grouped_names(slots, p.num_weights, tail),
        params=params, num_outputs=lambda p: p.num_weights, nondiff=True, save=(),
        mutates=grouped_mutates(stride, muts), family="optim",
        doc=f"{kind} on num_weights tensors at once, per-tensor lr and wd from {src}; "
            f"inputs {', '.join(slots)} per tensor; returns the new weights."))


for _pre in (False, True):
    _prefix = "preloaded_multi_" if _pre else "multi_"
    _register_sgd(_prefix + "sgd_update", ("weight", "grad"), False, False, _pre)
    _register_sgd(_prefix + "sgd_mom_update", ("weight", "grad", "mom"), True, False, _pre)
    _register_sgd(_prefix + "mp_sgd_update", ("weight", "grad", "weight32"), False, True, _pre)
    _register_sgd(_prefix + "mp_sgd_mom_update", ("weight", "grad", "mom", "weight32"),
                  True, True, _pre)


def _multi_sum_sq(xp, p, *arrays):
    if len(arrays) != p.num_arrays:
        raise GpundaError(f"Operator multi_sum_sq: num_arrays={p.num_arrays} but got "
                          f"{len(arrays)} inputs")
    # squares in the input's dtype, accumulated in float32 (MXNet's CalcSumSq)
    sums = [xp.sum(xp.square(a), dtype=np.float32) for a in arrays]
    return xp.stack(sums).astype(np.float32) if sums else xp.zeros((0,), np.float32)


register(OpDef(
    "multi_sum_sq", _multi_sum_sq,
    inputs=lambda p: tuple(f"array_{i}" for i in range(p.num_arrays)),
    params=[Param("num_arrays", "int", doc="number of input arrays")],
    nondiff=True, save=(), family="optim",
    doc="float32 vector of the sums of squares of each input (LARS/LAMB norms)."))


def _multi_lars(xp, p, lrs, w_ssq, g_ssq, wds):
    for nm, a in (("lrs", lrs), ("weights_sum_sq", w_ssq), ("grads_sum_sq", g_ssq),
                  ("wds", wds)):
        if a.dtype != np.float32:
            raise GpundaError(f"Operator multi_lars: input {nm} is {a.dtype.name}; "
                              f"MultiLARS only supports float32")
        if tuple(a.shape) != tuple(lrs.shape):
            raise GpundaError(f"Operator multi_lars: input {nm} has shape {tuple(a.shape)} "
                              f"but lrs has shape {tuple(lrs.shape)}")
    w_norm = xp.sqrt(w_ssq)
    valid = (w_norm > 0) & (g_ssq > 0)
    f32 = np.float32
    scaled = lrs * f32(p.eta) * w_norm / (xp.sqrt(g_ssq) * f32(p.rescale_grad) + wds * w_norm
                                          + f32(p.eps))
    return xp.where(valid, scaled, lrs).astype(np.float32)


register(OpDef(
    "multi_lars", _multi_lars, inputs=("lrs", "weights_sum_sq", "grads_sum_sq", "wds"),
    params=[Param("eta", "float", doc="LARS trust coefficient"),
            Param("eps", "float", doc="added to the denominator"),
            Param("rescale_grad", "float", 1.0, "gradient scale")],
    nondiff=True, save=(), family="optim",
    doc="LARS learning rates: lr * eta * |w| / (|g| * rescale_grad + wd * |w| + eps) "
        "where both norms are positive, else lr."))
