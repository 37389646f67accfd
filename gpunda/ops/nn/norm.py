"""More normalisation ops: GroupNorm, BatchNormWithReLU, L2Normalization, LRN; hard_sigmoid
and SVMOutput.

Gradients follow NOTE [Gradient rules] in registry.py (F ops only, so they are
differentiable again). LRN's channel-window sum is a hidden op that is its own
adjoint (the window is symmetric), so LRN's gradient is built from it.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops._util import require_same_dtype, not_real
from gpunda.ops.nn.basic import (BN_PARAMS, _acc, _norm_grad, _kshape, _batch_norm,
                                 _grad_batch_norm, _infer_bn, bn_infer_type, bn_update)

# ---------------------------------------------------------------------------
# GroupNorm: channels split into num_groups groups, each normalised with its
# own (sample, group) statistics; gamma/beta are per group (shape (num_groups,))


def _gn_check(p, x, gamma, beta):
    G = p.num_groups
    if x.ndim < 2 or G < 1 or x.shape[1] % G:
        raise GpundaError(f"Operator GroupNorm: num_groups={G} must divide the channel axis 1 "
                          f"of data {tuple(x.shape)}")
    for name, v in (("gamma", gamma), ("beta", beta)):
        if tuple(v.shape) != (G,):
            raise GpundaError(f"Operator GroupNorm: input {name} has shape {tuple(v.shape)}, "
                              f"expected ({G},) (one value per group)")
    require_same_dtype("GroupNorm", ("data", "gamma", "beta"), x, gamma, beta)


def _group_norm(xp, p, x, gamma, beta):
    _gn_check(p, x, gamma, beta)
    N, G = x.shape[0], p.num_groups
    xa = _acc(x).reshape(N, G, -1)
    mean = xa.mean(axis=2, keepdims=True)
    var = ((xa - mean) ** 2).mean(axis=2, keepdims=True)
    std = xp.sqrt(var + p.eps)
    out = (xa - mean) / std * _acc(gamma).reshape(1, G, 1) + _acc(beta).reshape(1, G, 1)
    return (out.reshape(x.shape).astype(x.dtype, copy=False),
            mean.reshape(N, G).astype(x.dtype), std.reshape(N, G).astype(x.dtype))


def _grad_group_norm(F, p, ins, outs, og):
    x, gamma, beta = ins
    N, G = x.shape[0], p.num_groups
    gs = (N, G, -1)
    xr = F.Reshape(x, shape=gs)
    gr = F.Reshape(og[0], shape=gs)
    gamma_b = F.Reshape(gamma, shape=(1, G, 1))
    dx, xhat = _norm_grad(F, xr, gr, gamma_b, (2,), p.eps)
    dgamma = F.Reshape(F._sum_to(gr * xhat, shape=(1, G, 1)), shape=(G,))
    dbeta = F.Reshape(F._sum_to(gr, shape=(1, G, 1)), shape=(G,))
    return [F.Reshape(dx, shape=x.shape), dgamma, dbeta]


def _infer_gn(p, in_shapes):
    shapes = list(in_shapes)
    d = shapes[0]
    if d is None:
        return shapes, None
    shapes[1] = shapes[2] = (p.num_groups,)
    return shapes, [d, (d[0], p.num_groups), (d[0], p.num_groups)]


register(OpDef(
    "GroupNorm", _group_norm, inputs=("data", "gamma", "beta"),
    params=[Param("num_groups", "int", 1), Param("eps", "float", 1e-5),
            Param("output_mean_var", "bool", False)],
    num_outputs=3, num_visible=lambda p: 3 if p.output_mean_var else 1,
    output_names=("output", "mean", "std"),
    gradient=_grad_group_norm, save=("inputs",), infer_shape=_infer_gn, family="nn",
    doc="Group normalisation: outputs (out, mean, std), mean/std of shape (N, num_groups)."))

# ---------------------------------------------------------------------------
# _contrib_BatchNormWithReLU: BatchNorm followed by ReLU in one op (MXNet's MKL-DNN fusion).
# Its fourth output, "workspace", is a hidden buffer of the data's shape in MXNet; here it
# holds the ReLU mask (1 where the output is positive).


def _batch_norm_relu(xp, p, x, gamma, beta, mm, mv):
    out, mean, r = _batch_norm(xp, p, x, gamma, beta, mm, mv, "_contrib_BatchNormWithReLU")
    out = xp.maximum(out, 0).astype(x.dtype, copy=False)
    return out, mean, r, (out > 0).astype(x.dtype)


def _grad_batch_norm_relu(F, p, ins, outs, og):
    # the ReLU passes the gradient where its output is positive (sign(out), as relu's rule)
    g = [og[0] * F.sign(outs[0])] + list(og[1:3])
    return _grad_batch_norm(F, p, ins, outs[:3], g)


def _infer_bn_relu(p, in_shapes):
    shapes, outs = _infer_bn(p, in_shapes)
    return shapes, (None if outs is None else outs + [outs[0]])


register(OpDef(
    "_contrib_BatchNormWithReLU", _batch_norm_relu,
    inputs=("data", "gamma", "beta", "moving_mean", "moving_var"), params=BN_PARAMS,
    num_outputs=4, num_visible=lambda p: 3 if p.output_mean_var else 1,
    aux_inputs=("moving_mean", "moving_var"), mutates=(3, 4), mutates_in="backward",
    update=bn_update, output_names=("output", "mean", "var", "workspace"),
    gradient=_grad_batch_norm_relu, save=("inputs", "outputs"), infer_shape=_infer_bn_relu,
    infer_type=bn_infer_type("_contrib_BatchNormWithReLU", nout=4), family="nn",
    doc="relu(BatchNorm(...)): batch normalisation fused with ReLU; its backward updates "
        "moving_mean/moving_var in training as BatchNorm's."))

# ---------------------------------------------------------------------------
# L2Normalization


def _l2_axes(p, ndim):
    if p.mode == "instance":
        return tuple(range(1, ndim))
    if ndim < 2 or (p.mode == "spatial" and ndim < 3):
        raise GpundaError(f"Operator L2Normalization: mode='{p.mode}' needs data with at least "
                          f"{2 if p.mode == 'channel' else 3} dimensions, got {ndim}")
    return (1,) if p.mode == "channel" else tuple(range(2, ndim))


def _l2_norm_shape(p, shape):
    # the hidden norm output, as MXNet's: (N,), (N, spatial...) or (N, C)
    if p.mode == "instance":
        return (shape[0],)
    if p.mode == "channel":
        return (shape[0],) + tuple(shape[2:])
    return tuple(shape[:2])


def _l2_normalization(xp, p, x):
    if x.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
        raise not_real("L2Normalization", "data", x.dtype)
    axes = _l2_axes(p, x.ndim)
    xa = _acc(x)
    norm = xp.sqrt((xa * xa).sum(axis=axes, keepdims=True) + p.eps)
    out = (xa / norm).astype(x.dtype, copy=False)
    return out, norm.reshape(_l2_norm_shape(p, x.shape)).astype(x.dtype)


def _grad_l2_normalization(F, p, ins, outs, og):
    x, g = ins[0], og[0]
    ks = _kshape(x.shape, _l2_axes(p, x.ndim))
    r = F.rsqrt(F._sum_to(x * x, shape=ks) + p.eps)
    # d(x r)/dx = r g - x r^3 sum(g x)
    return [r * g - x * (r * r * r) * F._sum_to(g * x, shape=ks)]


register(OpDef(
    "L2Normalization", _l2_normalization,
    params=[Param("eps", "float", 1e-10),
            Param("mode", "enum", "instance", choices=("channel", "instance", "spatial"))],
    num_outputs=2, num_visible=1, output_names=("output", "norm"),
    gradient=_grad_l2_normalization, save=("inputs",), family="nn",
    infer_shape=lambda p, s: (list(s), None if s[0] is None
                              else [s[0], _l2_norm_shape(p, s[0])]),
    doc="x / sqrt(sum(x^2) + eps) over all axes but 0 (instance), axis 1 (channel) "
        "or the spatial axes (spatial)."))

# ---------------------------------------------------------------------------
# LRN (local response normalisation across channels)


def _lrn_window_sum(xp, p, x):
    n, C = p.nsize, x.shape[1]
    half = (n - 1) // 2
    pad = [(0, 0)] * x.ndim
    pad[1] = (half, n - 1 - half)
    c = xp.cumsum(xp.pad(x, pad), axis=1)
    zero = xp.zeros_like(c[:, :1])
    c = xp.concatenate([zero, c], axis=1)
    return (c[:, n:n + C] - c[:, :C]).astype(x.dtype, copy=False)


register(OpDef(
    "_lrn_window_sum", _lrn_window_sum, params=[Param("nsize", "int")],
    # the window is centred: odd sizes are symmetric, so the op is self-adjoint
    gradient=lambda F, p, i, o, g: [F._lrn_window_sum(g[0], nsize=p.nsize)],
    save=(), hidden=True, family="nn",
    doc="Sum over a window of nsize channels centred on each channel (zero padded)."))


def _lrn_check(p, x):
    if x.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
        raise not_real("LRN", "data", x.dtype)
    if x.ndim != 4:
        raise GpundaError(f"Operator LRN: input data must be 4-D (N, C, H, W), got shape "
                          f"{tuple(x.shape)}")
    if p.nsize < 1 or p.nsize % 2 == 0:
        raise GpundaError(f"Operator LRN: nsize={p.nsize} must be a positive odd number")


def _lrn(xp, p, x):
    _lrn_check(p, x)
    xa = _acc(x)
    norm = _lrn_window_sum(xp, p, xa * xa) * (p.alpha / p.nsize) + p.knorm
    return (xa * norm ** -p.beta).astype(x.dtype, copy=False), norm.astype(x.dtype)


def _grad_lrn(F, p, ins, outs, og):
    x, g = ins[0], og[0]
    s = p.alpha / p.nsize
    norm = F._lrn_window_sum(x * x, nsize=p.nsize) * s + p.knorm
    nb = norm ** -p.beta
    # y_c = x_c n_c^-b, n_c = k + s sum_{window(c)} x^2
    t = F._lrn_window_sum(g * x * nb / norm, nsize=p.nsize)
    return [g * nb - x * t * (2.0 * s * p.beta)]


register(OpDef(
    "LRN", _lrn,
    params=[Param("alpha", "float", 1e-4), Param("beta", "float", 0.75),
            Param("knorm", "float", 2.0), Param("nsize", "int")],
    num_outputs=2, num_visible=1, output_names=("output", "tmp_norm"),
    gradient=_grad_lrn, save=("inputs",), family="nn",
    infer_shape=lambda p, s: (list(s), None if s[0] is None else [s[0], s[0]]),
    doc="Local response normalisation: x / (knorm + alpha/nsize * sum of x^2 over nsize "
        "neighbouring channels)^beta."))

# ---------------------------------------------------------------------------
# hard_sigmoid


def _hard_sigmoid(xp, p, x):
    if x.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
        raise not_real("hard_sigmoid", "data", x.dtype)
    return xp.clip(x * p.alpha + p.beta, 0, 1).astype(x.dtype, copy=False)


def _grad_hard_sigmoid(F, p, ins, outs, og):
    y = outs[0]
    # slope alpha strictly inside (0, 1), zero where clipped (as MXNet)
    inside = F._greater_scalar(y, scalar=0.0) * F._lesser_scalar(y, scalar=1.0)
    return [og[0] * inside * p.alpha]


register(OpDef(
    "hard_sigmoid", _hard_sigmoid,
    params=[Param("alpha", "float", 0.2), Param("beta", "float", 0.5)],
    gradient=_grad_hard_sigmoid, save=("outputs",), family="nn",
    doc="clip(alpha * x + beta, 0, 1)."))

# ---------------------------------------------------------------------------
# SVMOutput: identity forward; backward is the hinge-loss gradient (head ignored)


def _svm_label(xp, x, label):
    # MXNet's SVMOutputProp::InferShape: label has data's shape without its last axis; the
    # kernel then reads the first data.shape[0] labels, one per row of data flattened to 2-D
    want = tuple(x.shape[:-1])
    if tuple(label.shape) != want:
        raise GpundaError(f"Operator SVMOutput: Shape inconsistent, Provided = "
                          f"{tuple(label.shape)}, inferred shape={want} (input label: data's "
                          f"shape {tuple(x.shape)} without its last axis)")
    n = x.shape[0] if x.ndim else 1
    return label.reshape(-1)[:n].astype(np.int64)


def _svm_output(xp, p, x, label):
    _svm_label(xp, x, label)
    return x.copy()


def _svm_grad(xp, p, out, label):
    o = out.reshape(out.shape[0], -1)
    lab = _svm_label(xp, out, label)
    is_k = xp.arange(o.shape[1])[None, :] == lab[:, None]
    m, c = p.margin, p.regularization_coefficient
    if p.use_linear:
        d = xp.where(is_k, -(m > o).astype(o.dtype), (m > -o).astype(o.dtype)) * c
    else:
        d = xp.where(is_k, xp.where(m > o, 2 * (m - o), 0) * -c,
                     xp.where(m > -o, -2 * (m + o), 0) * -c)
    return d.reshape(out.shape).astype(out.dtype, copy=False)


_SVM_PARAMS = [Param("margin", "float", 1.0), Param("regularization_coefficient", "float", 1.0),
               Param("use_linear", "bool", False)]


def _infer_svm(p, in_shapes):
    shapes = list(in_shapes)
    d = shapes[0]
    if d is None:
        return shapes, None
    if shapes[1] is None:
        shapes[1] = (d[0],)
    return shapes, [d]


register(OpDef(
    "SVMOutput", _svm_output, inputs=("data", "label"), params=_SVM_PARAMS,
    gradient=lambda F, p, i, o, g: [F._svm_output_grad(o[0], i[1], **{
        q.name: getattr(p, q.name) for q in _SVM_PARAMS}), None],
    save=("inputs", "outputs"), infer_shape=_infer_svm, family="nn",
    doc="Identity forward; backward is the L2-SVM (or L1 with use_linear) hinge-loss "
        "gradient for the labels, ignoring the head gradient (MXNet's loss-layer semantics)."))
register(OpDef(
    "_svm_output_grad", _svm_grad, inputs=("out", "label"), params=_SVM_PARAMS,
    save=(), hidden=True, nondiff=True,
    family="nn", doc="SVMOutput's loss gradient."))
