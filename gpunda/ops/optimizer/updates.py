"""Optimizer update ops with MXNet 1.x names, parameters and formulas.

As in MXNet, an update op returns the new weight (callers pass ``out=weight``
to update it in place) and writes its state inputs (momentum, mean/var, ...)
in place; those inputs are declared in ``mutates``. The weight input is not
modified unless it is also ``out``. Gradient clipping follows MXNet's kernels:
``clip_gradient >= 0`` turns it on (the Python optimizers pass -1 for off).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops._util import not_real

_COMMON = [Param("lr", "float", doc="learning rate"), Param("wd", "float", 0.0, "weight decay"),
           Param("rescale_grad", "float", 1.0, "gradient scale"),
           Param("clip_gradient", "float", -1.0, "clip to [-c, c] when c >= 0")]
_LAZY = [Param("lazy_update", "bool", True, "accepted; dense updates are never lazy")]


def _check(name, inputs, names):
    w = inputs[0]
    for n, a in zip(names[1:], inputs[1:]):
        if tuple(a.shape) != tuple(w.shape):
            raise GpundaError(f"Operator {name}: input {n} has shape {tuple(a.shape)} but weight "
                              f"has shape {tuple(w.shape)}")


# NOTE [Update ops check before they write]
# An update op writes its states in place, so everything MXNet refuses must be refused
# before the first write. MXNet's type inference: ElemwiseType<n> makes every input the
# weight's dtype; the mixed-precision forms (MP_InferType<n_same>, MPUpdateInferType,
# MPLambPhaseOneType) make the first n_same inputs one dtype (float16 for
# mp_lamb_update_phase1) and every later one float32; then the kernel is instantiated
# for float types only (MSHADOW_REAL_TYPE_SWITCH on the weight). ``check_types`` is that
# rule, run by every update op's compute ahead of its shape checks and its writes.
_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)


def check_types(name, names, arrays, n_same=None, f16=False):
    """GpundaError unless ``arrays`` follow MXNet's type rule for update op ``name``:
    ``arrays[:n_same]`` share the weight's dtype (float16 when ``f16``), later ones are
    float32, and the weight is a float type (see NOTE [Update ops check before they write])."""
    w = arrays[0]
    dt = w.dtype
    n = len(arrays) if n_same is None else n_same
    if f16 and dt != _F16:
        raise _type_inconsistent(name, names[0], dt, _F16)
    for i in range(1, len(arrays)):
        want = dt if i < n else _F32
        got = arrays[i].dtype
        if got is not want and got != want:
            raise _type_inconsistent(name, names[i], got, want)
    if dt.kind != "f":
        raise not_real(name, names[0], dt)


def _type_inconsistent(name, input_name, got, want):
    return GpundaError(f"Operator {name}: Type inconsistent, Provided = {np.dtype(got).name}, "
                       f"inferred type = {np.dtype(want).name} (input {input_name}); nothing "
                       f"was updated")


def _clip(xp, g, c):
    return xp.clip(g, -c, c) if c >= 0 else g


def _rescaled(xp, p, g, dtype):
    g = g.astype(dtype, copy=False) * dtype.type(p.rescale_grad)
    return _clip(xp, g, p.clip_gradient)


def _op(name, fn, names, params, doc, state=(), n_same=None, check=None):
    """Register an update op: ``fn(xp, p, *arrays) -> new weight``; ``state`` = mutated
    inputs; ``n_same``: the inputs sharing the weight's dtype (``check_types``)."""
    def compute(xp, p, *arrays):
        check_types(name, names, arrays, n_same)
        _check(name, arrays, names)
        return fn(xp, p, *arrays)
    register(OpDef(name, compute, inputs=names, params=params, nondiff=True,
                   mutates=tuple(names.index(s) for s in state), family="optim", doc=doc,
                   save=(), check=check))


def _sgd(xp, p, w, g):
    return ((1 - p.lr * p.wd) * w - p.lr * _rescaled(xp, p, g, w.dtype)).astype(w.dtype, copy=False)


def _sgd_mom(xp, p, w, g, mom):
    new = p.momentum * mom - p.lr * p.wd * w - p.lr * _rescaled(xp, p, g, w.dtype)
    mom[...] = new
    return (w + mom).astype(w.dtype, copy=False)


def _nag_mom(xp, p, w, g, mom):
    gr = _rescaled(xp, p, g, w.dtype) + p.wd * w
    m1 = p.momentum * mom
    out = w - m1 + (p.momentum + 1) * (m1 - p.lr * gr)
    mom[...] = m1 - p.lr * gr
    return out.astype(w.dtype, copy=False)


def _mp_nag_mom(xp, p, w, g, mom, w32):
    # MP_NAGMomKernel: in float32 on the master copy, weight decay inside the step
    gs = _rescaled(xp, p, g, w32.dtype)
    m1 = w32.dtype.type(p.momentum) * mom
    w32[...] = w32 - m1 + (p.momentum + 1) * (m1 - p.lr * (gs + p.wd * w32))
    mom[...] = m1 - p.lr * (gs + p.wd * w32)    # the kernel reads the updated weight here
    return w32.astype(w.dtype)


def _adam(xp, p, w, g, mean, var):
    gr = _clip(xp, g.astype(w.dtype, copy=False) * w.dtype.type(p.rescale_grad) + p.wd * w,
               p.clip_gradient)
    mean[...] = p.beta1 * mean + (1 - p.beta1) * gr
    var[...] = p.beta2 * var + (1 - p.beta2) * gr * gr
    return (w - p.lr * mean / (xp.sqrt(var) + p.epsilon)).astype(w.dtype, copy=False)


def _clip_w(xp, w, c):
    return xp.clip(w, -c, c) if c >= 0 else w


def _rmsprop(xp, p, w, g, n):
    gr = _clip(xp, g.astype(w.dtype, copy=False) * w.dtype.type(p.rescale_grad) + p.wd * w,
               p.clip_gradient)
    n[...] = (1 - p.gamma1) * gr * gr + p.gamma1 * n
    out = w - p.lr * gr / xp.sqrt(n + p.epsilon)
    return _clip_w(xp, out, p.clip_weights).astype(w.dtype, copy=False)


def _rmspropalex(xp, p, w, g, n, gs, delta):
    gr = _clip(xp, g.astype(w.dtype, copy=False) * w.dtype.type(p.rescale_grad) + p.wd * w,
               p.clip_gradient)
    n[...] = (1 - p.gamma1) * gr * gr + p.gamma1 * n
    gs[...] = (1 - p.gamma1) * gr + p.gamma1 * gs
    delta[...] = p.gamma2 * delta - p.lr * gr / xp.sqrt(n - gs * gs + p.epsilon)
    return _clip_w(xp, w + delta, p.clip_weights).astype(w.dtype, copy=False)


def _signsgd(xp, p, w, g):
    # MXNet's SignSGDKernel takes the sign of the raw gradient: rescale_grad and
    # clip_gradient have no effect (a negative rescale_grad does not flip the step)
    return ((1 - p.lr * p.wd) * w - p.lr * xp.sign(g).astype(w.dtype, copy=False)).astype(
        w.dtype, copy=False)


def _signum(xp, p, w, g, mom):
    mom[...] = p.momentum * mom - (1 - p.momentum) * p.wd * w - \
        (1 - p.momentum) * _rescaled(xp, p, g, w.dtype)
    return ((1 - p.lr * p.wd_lh) * w + p.lr * xp.sign(mom)).astype(w.dtype, copy=False)


def _mp_sgd(xp, p, w, g, w32):
    new = (1 - p.lr * p.wd) * w32 - p.lr * _rescaled(xp, p, g, w32.dtype)
    w32[...] = new
    return w32.astype(w.dtype)


def _mp_sgd_mom(xp, p, w, g, mom, w32):
    mom[...] = p.momentum * mom - p.lr * p.wd * w32 - p.lr * _rescaled(xp, p, g, w32.dtype)
    w32 += mom
    return w32.astype(w.dtype)


_MOM = [Param("momentum", "float", 0.0)]
_RMS = [Param("gamma1", "float", 0.95), Param("epsilon", "float", 1e-8),
        Param("clip_weights", "float", -1.0, "clip weights to [-c, c] when c >= 0")]

_op("sgd_update", _sgd, ("weight", "grad"), _COMMON + _LAZY,
    "SGD: w = (1 - lr*wd)*w - lr*clip(rescale_grad*grad).")
_op("sgd_mom_update", _sgd_mom, ("weight", "grad", "mom"), _COMMON + _MOM + _LAZY,
    "SGD with momentum: mom = momentum*mom - lr*wd*w - lr*clip(rescale*grad); w += mom.",
    state=("mom",))
_op("nag_mom_update", _nag_mom, ("weight", "grad", "mom"), _COMMON + _MOM,
    "Nesterov momentum (MXNet's formula).", state=("mom",))
_op("mp_nag_mom_update", lambda xp, p, w, g, mom, w32: _mp_nag_mom(xp, p, w, g, mom, w32),
    ("weight", "grad", "mom", "weight32"), _COMMON + _MOM,
    "Multi-precision Nesterov momentum: mom and the float32 weight32 in place.",
    state=("mom", "weight32"), n_same=2)
_op("adam_update", _adam, ("weight", "grad", "mean", "var"),
    _COMMON + [Param("beta1", "float", 0.9), Param("beta2", "float", 0.999),
               Param("epsilon", "float", 1e-8)] + _LAZY,
    "Adam without bias correction (the Optimizer folds it into lr); "
    "g = clip(rescale*grad + wd*w).", state=("mean", "var"))
_op("rmsprop_update", _rmsprop, ("weight", "grad", "n"), _COMMON + _RMS,
    "RMSProp (Tieleman & Hinton): n = (1-gamma1)*g^2 + gamma1*n; w -= lr*g/sqrt(n + eps).",
    state=("n",))
_op("rmspropalex_update", _rmspropalex, ("weight", "grad", "n", "g", "delta"),
    _COMMON + _RMS + [Param("gamma2", "float", 0.9)],
    "RMSProp (Graves 2013) with momentum delta.", state=("n", "g", "delta"))
_op("signsgd_update", _signsgd, ("weight", "grad"), _COMMON,
    "signSGD: w = (1 - lr*wd)*w - lr*sign(grad).")
_op("signum_update", _signum, ("weight", "grad", "mom"),
    _COMMON + [Param("momentum", "float", 0.0), Param("wd_lh", "float", 0.0)],
    "Signum: momentum of the gradient, then w = (1 - lr*wd_lh)*w + lr*sign(mom).",
    state=("mom",))
_op("mp_sgd_update", _mp_sgd, ("weight", "grad", "weight32"), _COMMON + _LAZY,
    "Multi-precision SGD: the float32 master copy weight32 is updated in place.",
    state=("weight32",), n_same=2)
_op("mp_sgd_mom_update", _mp_sgd_mom, ("weight", "grad", "mom", "weight32"),
    _COMMON + _MOM + _LAZY, "Multi-precision SGD with momentum (mom and weight32 in place).",
    state=("mom", "weight32"), n_same=2)


def _ftml_bounds(p):
    # FTMLParam declares beta1 and beta2 in [0, 1] (set_range): MXNet refuses the call
    for n in ("beta1", "beta2"):
        v = getattr(p, n)
        if not 0 <= v <= 1:
            raise GpundaError(f"Operator ftml_update: value {v} for Parameter {n} exceed "
                              f"bound [0,1]")


def _ftml(xp, p, w, g, d, v, z):
    # MXNet's FTMLKernel: weight decay is folded into the gradient before clipping
    dt = w.dtype.type
    gr = _clip(xp, dt(p.rescale_grad) * g.astype(w.dtype, copy=False) + dt(p.wd) * w, p.clip_grad)
    v[...] = p.beta2 * v + (1 - p.beta2) * gr * gr
    d_t = (1 - p.beta1 ** p.t) / p.lr * (xp.sqrt(v / (1 - p.beta2 ** p.t)) + p.epsilon)
    z[...] = p.beta1 * z + (1 - p.beta1) * gr - (d_t - p.beta1 * d) * w
    d[...] = d_t
    return (-z / d_t).astype(w.dtype, copy=False)


def _ftrl(xp, p, w, g, z, n):
    gr = _rescaled(xp, p, g, w.dtype)
    z[...] = z + gr - (xp.sqrt(n + gr * gr) - xp.sqrt(n)) * w / p.lr
    n[...] = n + gr * gr
    out = (xp.sign(z) * p.lamda1 - z) / ((p.beta + xp.sqrt(n)) / p.lr + p.wd) * \
        (xp.abs(z) > p.lamda1)
    return out.astype(w.dtype, copy=False)


_op("ftrl_update", _ftrl, ("weight", "grad", "z", "n"),
    [Param("lr", "float", doc="learning rate"), Param("lamda1", "float", 0.01, "L1 coefficient"),
     Param("beta", "float", 1.0, "per-coordinate learning rate beta"),
     Param("wd", "float", 0.0, "weight decay"), Param("rescale_grad", "float", 1.0),
     Param("clip_gradient", "float", -1.0, "clip to [-c, c] when c >= 0")],
    "FTRL-Proximal (MXNet's formula): z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr; "
    "n += g^2; w = (sign(z)*lamda1 - z) / ((beta + sqrt(n)) / lr + wd) where |z| > lamda1, "
    "else 0. A row_sparse grad updates only its rows.", state=("z", "n"))


_op("ftml_update", _ftml, ("weight", "grad", "d", "v", "z"),
    [Param("lr", "float", doc="learning rate"), Param("beta1", "float", 0.6),
     Param("beta2", "float", 0.999), Param("epsilon", "float", 1e-8),
     Param("t", "int", doc="update count (from 1)"), Param("wd", "float", 0.0),
     Param("rescale_grad", "float", 1.0), Param("clip_grad", "float", -1.0)],
    "FTML (Zheng & Kwok 2017): states d, v, z are updated in place.", state=("d", "v", "z"),
    check=_ftml_bounds)
