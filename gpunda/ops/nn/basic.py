"""Neural-network ops: FullyConnected, activations, normalisation, softmax family,
Dropout, Embedding, loss outputs; convolution and pooling live in ``nn_conv.py``.

Gradient rules follow NOTE [Gradient rules] in registry.py and use only F ops,
so they are differentiable again. Linear ops whose gradient needs a dedicated
kernel (FullyConnected, Embedding, convolution) get hidden ``_*_grad`` ops whose
own rules are expressed with the forward op and each other (they are linear in
each input).

Shape inference for Symbol: ops with parameters carry
``infer_shape(p, in_shapes) -> (in_shapes_completed, out_shapes)``. ``in_shapes``
is a list with one entry per input name (``op.input_names(p)``), each a tuple or
None when unknown. Given the data shape the function fills in the parameter
shapes (weight, bias, gamma, moving stats, label...) as MXNet does and returns
the shapes of *all* outputs (hidden ones included). When the data shape is
unknown it returns ``(in_shapes, None)``.
"""
from __future__ import annotations

import math

import numpy as np

from gpunda._core import modes as _modes
from gpunda._core import bf16 as _bf16
from gpunda.ops.raw import RawF
from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, get_op, register, declare_pointwise
from gpunda.ops._util import matmul, norm_axis, on_threads, sum_to_shape, require_same_dtype, not_real
from gpunda.ops.kernels import norm as _nk
from gpunda.ops.kernels.norm import _acc
from gpunda.ops.nn import conv as nn_conv  # noqa: F401  (registers Convolution, Pooling, ...)
from gpunda.backends.generators import generator as _generator

# ---------------------------------------------------------------------------
# channel-axis helpers (hidden ops; adjoint of each other)


def _axis_sum(xp, p, x):
    ax = norm_axis(p.axis, x.ndim, "_nn_axis_sum")
    red = tuple(i for i in range(x.ndim) if i != ax)
    if not red:
        return x.copy()
    if x.dtype.kind == "f" and x.dtype.itemsize >= 4 and x.size:
        return _nk.channel_sum(xp, x, ax)     # GEMVs: NumPy's reduce over these axes is slow
    return x.sum(axis=red)


def _axis_bcast(xp, p, v):
    shape = tuple(p.like_shape)
    ax = norm_axis(p.axis, len(shape), "_nn_axis_bcast")
    b = [1] * len(shape)
    b[ax] = v.shape[0]
    return xp.broadcast_to(v.reshape(b), shape).copy()


register(OpDef("_nn_axis_sum", _axis_sum, params=[Param("axis", "int", 1)],
               gradient=lambda F, p, i, o, g: [F._nn_axis_bcast(g[0], axis=p.axis,
                                                                like_shape=i[0].shape)],
               save=("inputs",), hidden=True, family="nn",
               doc="Sum over every axis but `axis` (shape (C,))."))
register(OpDef("_nn_axis_bcast", _axis_bcast,
               params=[Param("axis", "int", 1), Param("like_shape", "shape")],
               gradient=lambda F, p, i, o, g: [F._nn_axis_sum(g[0], axis=p.axis)],
               save=(), hidden=True, family="nn",
               doc="Broadcast a (C,) vector along `axis` into `like_shape`."))


def _kshape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _chan_shape(shape, ax):
    return tuple(d if i == ax else 1 for i, d in enumerate(shape))

# ---------------------------------------------------------------------------
# FullyConnected


def _fc_2d(x, flatten):
    if flatten:
        return x.reshape(x.shape[0], -1)    # 1-D data (n,) is n rows of one feature, as MXNet
    return x.reshape(-1, x.shape[-1])


def _fully_connected(xp, p, x, w, b=None):
    if x.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
        raise not_real("FullyConnected", "data", x.dtype)
    if b is None:
        require_same_dtype("FullyConnected", ("data", "weight"), x, w)
    else:
        require_same_dtype("FullyConnected", ("data", "weight", "bias"), x, w, b)
    x2 = _fc_2d(x, p.flatten)
    H = p.num_hidden
    if tuple(w.shape) != (H, x2.shape[1]):
        raise GpundaError(f"Operator FullyConnected: input weight has shape {tuple(w.shape)}, "
                          f"expected {(H, x2.shape[1])} for data {tuple(x.shape)} "
                          f"(num_hidden={H}, flatten={p.flatten})")
    y = matmul(xp, x2, w.T)
    if b is not None:
        if tuple(b.shape) not in ((H,), (H, 1)):    # MXNet accepts both bias shapes
            raise GpundaError(f"Operator FullyConnected: input bias has shape {tuple(b.shape)}, "
                              f"expected ({H},) or ({H}, 1)")
        y += b.reshape(H)
    if p.flatten:
        return y.reshape(x.shape[0], H)
    return y.reshape(tuple(x.shape[:-1]) + (H,))


def _grad_fc(F, p, ins, outs, og, need=None):
    x, w = ins[0], ins[1]
    g = og[0]
    # the first layer's data rarely needs a gradient: skip that GEMM when nobody asks
    res = [F._fc_data_grad(g, w, flatten=p.flatten, data_shape=x.shape)
           if need is None or need[0] else None,
           F._fc_weight_grad(g, x, flatten=p.flatten) if need is None or need[1] else None]
    if not p.no_bias:
        gb = sum_to_shape(F, g, (p.num_hidden,))
        res.append(gb if ins[2].ndim == 1 else F.reshape(gb, shape=(p.num_hidden, 1)))
    return res


def _infer_fc(p, in_shapes):
    data = in_shapes[0]
    shapes = list(in_shapes)
    if data is None:
        return shapes, None
    k = math.prod(data[1:]) if p.flatten else data[-1]
    shapes[1] = (p.num_hidden, k)
    if not p.no_bias and shapes[2] != (p.num_hidden, 1):
        shapes[2] = (p.num_hidden,)
    out = (data[0], p.num_hidden) if p.flatten else tuple(data[:-1]) + (p.num_hidden,)
    return shapes, [out]


register(OpDef(
    "FullyConnected", _fully_connected,
    params=[Param("num_hidden", "int"), Param("no_bias", "bool", False),
            Param("flatten", "bool", True)],
    inputs=lambda p: ("data", "weight") if p.no_bias else ("data", "weight", "bias"),
    gradient=_grad_fc, grad_need=True, save=("inputs",), infer_shape=_infer_fc, capture="gemm",
    family="nn", doc="y = x W^T + b; x is flattened to 2-D (flatten=True) or uses its last axis."))


def _bias_along(p, x, b):
    """The shape bias ``b`` broadcasts as along data ``x``'s axis ``p.axis``."""
    shape = [1] * x.ndim
    shape[norm_axis(p.axis, x.ndim, "_bias_add")] = b.size
    return tuple(shape)


def _bias_add(xp, p, x, b):
    return x + b.reshape(_bias_along(p, x, b))


def _grad_bias_add(F, p, ins, outs, og):
    x, b = ins
    gb = sum_to_shape(F, og[0], _bias_along(p, x, b))
    return [og[0], F.reshape(gb, shape=tuple(b.shape))]


def _bias_add_type(p, t):
    # the bias's type: the GEMM op's own (the GEMM half may hold a bfloat16 op's result in
    # float32, and the add rounds it once, as the op does)
    return list(t), [t[1]]


# a GEMM op's bias add on its own (NOTE [GEMM epilogues] in _engine/fusion/partition.py):
# the fusion pass splits a Dense's or a convolution's GEMM from its bias add when the add
# can join a group
register(OpDef(
    "_bias_add", _bias_add, inputs=("data", "bias"), params=[Param("axis", "int", -1)],
    gradient=_grad_bias_add, save=("inputs",), hidden=True, family="nn",
    infer_shape=lambda p, s: (list(s), None if s[0] is None else [s[0]]),
    infer_type=_bias_add_type,
    doc="data + bias along data's axis `axis` (a GEMM op's bias add, split off by the "
        "fusion pass)."))
declare_pointwise("_bias_add", "data + bias", ("g", "g"), broadcast="channel")
get_op("FullyConnected").epilogue = \
    lambda p: None if p.no_bias else (p.replace(no_bias=True), "_bias_add", {"axis": -1})


def _fc_data_grad(xp, p, g, w):
    g2 = g.reshape(-1, w.shape[0])
    return matmul(xp, g2, w).reshape(tuple(p.data_shape))


def _fc_weight_grad(xp, p, g, x):
    H = g.shape[-1] if not p.flatten else g.reshape(g.shape[0], -1).shape[1]
    return matmul(xp, g.reshape(-1, H).T, _fc_2d(x, p.flatten))


register(OpDef(
    "_fc_data_grad", _fc_data_grad, inputs=("ograd", "weight"),
    params=[Param("flatten", "bool", True), Param("data_shape", "shape")],
    gradient=lambda F, p, i, o, g: [
        F.FullyConnected(g[0], i[1], no_bias=True, num_hidden=i[1].shape[0], flatten=p.flatten),
        F._fc_weight_grad(i[0], g[0], flatten=p.flatten)],
    save=("inputs",), hidden=True, capture="gemm", family="nn",
    doc="FullyConnected gradient with respect to data."))
register(OpDef(
    "_fc_weight_grad", _fc_weight_grad, inputs=("ograd", "data"),
    params=[Param("flatten", "bool", True)],
    gradient=lambda F, p, i, o, g: [
        F.FullyConnected(i[1], g[0], no_bias=True, num_hidden=g[0].shape[0], flatten=p.flatten),
        F._fc_data_grad(i[0], g[0], flatten=p.flatten, data_shape=i[1].shape)],
    save=("inputs",), hidden=True, capture="gemm", family="nn",
    doc="FullyConnected gradient with respect to weight."))

# ---------------------------------------------------------------------------
# Activation, LeakyReLU


def _softrelu(xp, x):
    return (xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))).astype(x.dtype, copy=False)


def _sigmoid(xp, x):
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def _activation(xp, p, x):
    if x.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
        raise not_real("Activation", "data", x.dtype)
    if p.act_type == "relu":        # a cheap pass: no gain from threads (NOTE [CPU threads])
        return xp.maximum(x, 0).astype(x.dtype, copy=False)
    return _activation_of(xp, p, x)


@on_threads
def _activation_of(xp, p, x):
    t = p.act_type
    if t == "sigmoid":
        return _sigmoid(xp, x)
    if t == "tanh":
        return xp.tanh(x)
    if t == "softrelu":
        return _softrelu(xp, x)
    return x / (1 + xp.abs(x))


def _grad_activation(F, p, ins, outs, og):
    t, x, y, g = p.act_type, ins[0], outs[0], og[0]
    if t == "relu":
        return [g * F._greater_scalar(x, scalar=0.0)]
    if t == "sigmoid":
        return [g * y * (1 - y)]
    if t == "tanh":
        return [g * (1 - y * y)]
    if t == "softrelu":
        return [g * F.sigmoid(x)]
    return [g / F.square(1 + F.abs(x))]


register(OpDef(
    "Activation", _activation,
    params=[Param("act_type", "enum", choices=("relu", "sigmoid", "tanh", "softrelu", "softsign"))],
    gradient=_grad_activation, save=("inputs", "outputs"), family="nn",
    infer_shape=lambda p, s: (list(s), None if s[0] is None else [s[0]]),
    doc="Element-wise activation: relu, sigmoid, tanh, softrelu (log(1+e^x)), softsign."))

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2 * math.pi)


def _prelu_gamma_shape(gshape, xshape):
    """Where a multi-dim gamma sits in data (MXNet's expand_shape): gamma's dims, read from
    the right, cover data's first two axes (equal or 1); every other axis is 1."""
    out, s = [1] * len(xshape), len(gshape) - 1
    for i in range(len(xshape) - 1, -1, -1):
        if s >= 0 and i <= 1 and gshape[s] in (xshape[i], 1):
            out[i] = gshape[s]
            s -= 1
    if s != -1:
        raise GpundaError(f"Operator LeakyReLU: cannot broadcast gamma of shape "
                          f"{tuple(gshape)} to data of shape {tuple(xshape)}")
    return tuple(out)


def _gamma_b(xp, gamma, x):
    if gamma.ndim > 1:
        return gamma.reshape(_prelu_gamma_shape(gamma.shape, x.shape))
    if gamma.size == 1 or x.ndim < 2:
        return gamma.reshape(-1)[0:1] if gamma.size == 1 else gamma
    if gamma.shape[0] != x.shape[1]:
        raise GpundaError(f"Operator LeakyReLU: input gamma has shape {tuple(gamma.shape)}, "
                          f"expected ({x.shape[1]},) or (1,) for data {tuple(x.shape)}")
    return gamma.reshape((1, -1) + (1,) * (x.ndim - 2))


def _leaky_relu(xp, p, x, *rest, ctx=None):
    # num_outputs depends on act_type, so the result is always a tuple
    r = _leaky_one(xp, p, x, rest, ctx)
    return r if isinstance(r, tuple) else (r,)


def _leaky_one(xp, p, x, rest, ctx):
    t = p.act_type
    from gpunda.ops._util import special
    if t == "leaky":
        return xp.where(x > 0, x, x * x.dtype.type(p.slope))
    if t == "prelu":
        return xp.where(x > 0, x, x * _gamma_b(xp, rest[0], x)).astype(x.dtype, copy=False)
    if t == "elu":
        return xp.where(x > 0, x, p.slope * xp.expm1(xp.minimum(x, 0))).astype(x.dtype, copy=False)
    if t == "selu":
        return (_SELU_LAMBDA * xp.where(x > 0, x, _SELU_ALPHA * xp.expm1(xp.minimum(x, 0)))).astype(
            x.dtype, copy=False)
    if t == "gelu":
        return (0.5 * x * (1 + special(xp).erf(x * _SQRT_HALF))).astype(x.dtype, copy=False)
    # rrelu: random negative slope while training, the mean slope otherwise
    if _modes.is_training():
        slope = _generator(ctx).uniform(p.lower_bound, p.upper_bound, size=x.shape)
        slope = xp.asarray(slope).astype(x.dtype)
    else:
        slope = xp.full(x.shape, (p.lower_bound + p.upper_bound) / 2, dtype=x.dtype)
    return xp.where(x > 0, x, x * slope), slope


def _grad_leaky(F, p, ins, outs, og):
    t, x, g = p.act_type, ins[0], og[0]
    pos = F._greater_scalar(x, scalar=0.0)
    neg = 1 - pos
    if t == "leaky":
        return [g * (pos + neg * p.slope)]
    if t == "prelu":
        gamma = ins[1]
        if gamma.ndim > 1:
            gshape = _prelu_gamma_shape(gamma.shape, x.shape)
            gb = F._reshape_exact(gamma, shape=gshape)
            dgamma = F._reshape_exact(sum_to_shape(F, g * x * neg, gshape),
                                      shape=tuple(gamma.shape))
            return [g * (pos + F.broadcast_mul(neg, gb)), dgamma]
        if gamma.shape[0] == 1 or x.ndim < 2:
            gb = gamma
            dgamma = sum_to_shape(F, g * x * neg, gamma.shape)
        else:
            gb = F._nn_axis_bcast(gamma, axis=1, like_shape=_chan_shape(x.shape, 1))
            dgamma = F._nn_axis_sum(g * x * neg, axis=1)
        return [g * (pos + neg * gb), dgamma]
    if t == "elu":
        return [g * (pos + neg * p.slope * F.exp(F._minimum_scalar(x, scalar=0.0)))]
    if t == "selu":
        return [g * _SELU_LAMBDA * (pos + neg * _SELU_ALPHA * F.exp(F._minimum_scalar(x, scalar=0.0)))]
    if t == "gelu":
        # 0.5 * (1 + erf(x / sqrt 2)) is the output over x (within an ulp; 0.5 at x = 0):
        # no second erf, the costliest part of GELU on the CPU (SciPy's erf, ~20 ns a value)
        zero = F._equal_scalar(x, scalar=0.0)
        cdf = (outs[0] + zero * 0.5) / (x + zero)
        return [g * (cdf + x * F.exp(x * x * -0.5) * _INV_SQRT_2PI)]
    return [g * (pos + neg * outs[1])]


def _infer_leaky(p, in_shapes):
    shapes = list(in_shapes)
    d = shapes[0]
    if d is None:
        return shapes, None
    if p.act_type == "prelu" and shapes[1] is None:
        shapes[1] = (d[1],) if len(d) > 1 else (1,)
    return shapes, [d, d] if p.act_type == "rrelu" else [d]


register(OpDef(
    "LeakyReLU", _leaky_relu,
    params=[Param("act_type", "enum", "leaky",
                  choices=("elu", "gelu", "leaky", "prelu", "rrelu", "selu")),
            Param("slope", "float", 0.25), Param("lower_bound", "float", 0.125),
            Param("upper_bound", "float", 0.334)],
    inputs=lambda p: ("data", "gamma") if p.act_type == "prelu" else ("data",),
    num_outputs=lambda p: 2 if p.act_type == "rrelu" else 1, num_visible=1,
    output_names=lambda p: ("output", "mask") if p.act_type == "rrelu" else ("output",),
    gradient=_grad_leaky, save=("inputs", "outputs"), infer_shape=_infer_leaky,
    wants_ctx=True, family="nn",
    doc="Leaky ReLU family: leaky, prelu (learned gamma per channel), elu, selu, gelu, rrelu."))

# pointwise records (NOTE [Pointwise records] in registry.py), mirroring the bodies and rules
_ACT_FWD = {"relu": "max(data, 0)", "sigmoid": "sigmoid(data)", "tanh": "tanh(data)",
            "softrelu": "max(data, 0) + log1p(exp(-abs(data)))",
            "softsign": "data / (1 + abs(data))"}
_ACT_GRAD = {"relu": "g * (data > 0)", "sigmoid": "g * out * (1 - out)",
             "tanh": "g * (1 - out * out)", "softrelu": "g * sigmoid(data)",
             "softsign": "g / ((1 + abs(data)) * (1 + abs(data)))"}
declare_pointwise("Activation", lambda p: (_ACT_FWD[p.act_type],),
                  lambda p: (_ACT_GRAD[p.act_type],))
_ELU_NEG = "slope * expm1(min(data, 0))"
_LEAKY = {
    "leaky": ("where(data > 0, data, data * slope)", "g * ((data > 0) + (1 - (data > 0)) * slope)"),
    "elu": (f"where(data > 0, data, {_ELU_NEG})",
            "g * ((data > 0) + (1 - (data > 0)) * slope * exp(min(data, 0)))"),
    "selu": (f"{_SELU_LAMBDA!r} * where(data > 0, data, {_SELU_ALPHA!r} * expm1(min(data, 0)))",
             f"g * {_SELU_LAMBDA!r} * ((data > 0) + (1 - (data > 0)) * {_SELU_ALPHA!r}"
             f" * exp(min(data, 0)))"),
    "gelu": (f"0.5 * data * (1 + erf(data * {_SQRT_HALF!r}))",
             f"g * (0.5 * (1 + erf(data * {_SQRT_HALF!r})) + data * exp(data * data * -0.5)"
             f" * {_INV_SQRT_2PI!r})"),
}
declare_pointwise(
    "LeakyReLU", lambda p: (_LEAKY[p.act_type][0],) if p.act_type in _LEAKY else
    f"act_type={p.act_type} " + ("reads a per-channel gamma" if p.act_type == "prelu"
                                 else "draws random slopes"),
    lambda p: (_LEAKY[p.act_type][1],))


# ---------------------------------------------------------------------------
# softmax family


def _temp(p):
    return 1.0 if p.temperature is None else p.temperature


def _softmax_core(xp, x, axis, log):
    if x.size == 0:     # nothing to normalise (and max has no identity on an empty axis)
        return xp.exp(x)
    m = x.max(axis=axis, keepdims=True)
    z = x - m
    e = xp.exp(z)
    s = e.sum(axis=axis, keepdims=True)
    if log:
        return z - xp.log(s)
    return e / s


def _softmax_prep(xp, p, x, opname):
    ax = norm_axis(p.axis, x.ndim, opname)
    if p.dtype is not None:
        x = x.astype(p.dtype)
    t = _temp(p)
    if t != 1.0:
        x = x / x.dtype.type(t)
    return x, ax


def _length_mask(xp, x, length, ax, opname):
    """True where the position along ``ax`` is below ``length`` (``use_length=True``).

    ``length`` has the shape of ``x`` without ``ax``, as in MXNet."""
    want = tuple(d for i, d in enumerate(x.shape) if i != ax)
    if tuple(length.shape) != want:
        raise GpundaError(f"Operator {opname}: input length has shape {tuple(length.shape)}, "
                          f"expected {want} (data shape {tuple(x.shape)} without axis {ax})")
    pos = xp.arange(x.shape[ax]).reshape(_chan_shape(x.shape, ax))
    return pos < xp.expand_dims(length, ax).astype(np.int64)


def _masked_softmax(xp, p, x, length, opname, log):
    x, ax = _softmax_prep(xp, p, x, opname)
    mask = _length_mask(xp, x, length, ax, opname)
    # masked cells get the lowest finite value, so a row with length 0 stays finite;
    # they are set to 0 in the output, as MXNet does
    low = np.finfo(x.dtype).min if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    y = _softmax_core(xp, xp.where(mask, x, low), ax, log)
    return xp.where(mask, y, 0).astype(y.dtype, copy=False)


def _softmax(xp, p, x, length=None):
    if p.use_length:
        return _masked_softmax(xp, p, x, length, "softmax", False)
    x, ax = _softmax_prep(xp, p, x, "softmax")
    return _softmax_core(xp, x, ax, False)


def _log_softmax(xp, p, x, length=None):
    if p.use_length:
        return _masked_softmax(xp, p, x, length, "log_softmax", True)
    x, ax = _softmax_prep(xp, p, x, "log_softmax")
    return _softmax_core(xp, x, ax, True)


def _sum_keep(F, t, ax):
    return F._sum_to(t, shape=_kshape(t.shape, (ax,)))


def _cast_back(F, g, x):
    return g if g.dtype == x.dtype else F.Cast(g, dtype=x.dtype)


def _grad_softmax(F, p, ins, outs, og):
    x, y, g = ins[0], outs[0], og[0]
    ax = norm_axis(p.axis, x.ndim, "softmax")
    # masked cells (use_length) have y = 0, so they get no gradient and add nothing
    gx = y * (g - _sum_keep(F, g * y, ax))
    t = _temp(p)
    if t != 1.0:
        gx = gx / t
    return [_cast_back(F, gx, x)] + ([None] if p.use_length else [])


def _grad_log_softmax(F, p, ins, outs, og):
    x, y, g = ins[0], outs[0], og[0]
    ax = norm_axis(p.axis, x.ndim, "log_softmax")
    if p.use_length:
        mask = F._length_mask_op(x, ins[1], axis=ax)
        g = g * mask
        gx = (g - F.exp(y) * mask * _sum_keep(F, g, ax))
    else:
        gx = g - F.exp(y) * _sum_keep(F, g, ax)
    t = _temp(p)
    if t != 1.0:
        gx = gx / t
    return [_cast_back(F, gx, x)] + ([None] if p.use_length else [])


_SOFTMAX_PARAMS = [Param("axis", "int", -1), Param("temperature", "float", None),
                   Param("dtype", "dtype", None), Param("use_length", "bool", False)]
_same = (lambda p, s: (list(s), None if s[0] is None else [s[0]]))


def _softmax_pw_when(p, train):
    if p.use_length:
        return "use_length (a length input)"
    if p.dtype is not None:
        return "dtype= (an output dtype of its own)"
    if p.axis != -1:
        return f"axis={p.axis} (fused rows run along the last axis)"
    return None


def _softmax_pw(p):
    t = _temp(p)
    x = "data" if t == 1.0 else f"(data / {float(t)!r})"
    e = f"exp({x} - rmax({x}))"
    return (f"{e} / rsum({e})",)


def _softmax_pw_grads(p):
    t = _temp(p)
    gx = "out * (g - rsum(g * out))"
    return (gx if t == 1.0 else f"({gx}) / {float(t)!r}",)


def _softmax_inputs(p):
    return ("data", "length") if p.use_length else ("data",)


register(OpDef("softmax", _softmax, params=_SOFTMAX_PARAMS, gradient=_grad_softmax,
               inputs=_softmax_inputs, no_grad_inputs=("length",),
               save=("inputs", "outputs"), family="nn", infer_shape=_same,
               doc="Softmax along `axis` (default -1), optionally with a temperature; with "
                   "use_length=True only the first `length` cells count, the rest give 0."))
# the fusion pass's row form (NOTE [Fusion IR]): a row kernel with its neighbours fused in
declare_pointwise("softmax", _softmax_pw, _softmax_pw_grads, when=_softmax_pw_when)
register(OpDef("log_softmax", _log_softmax, params=_SOFTMAX_PARAMS, gradient=_grad_log_softmax,
               inputs=_softmax_inputs, no_grad_inputs=("length",),
               save=("inputs", "outputs"), family="nn", infer_shape=_same,
               doc="Log of softmax along `axis`, computed stably; use_length as softmax."))


def _softmin(xp, p, x, length=None):
    # softmin(x) = softmax(-x): the negation happens before the dtype cast and temperature
    if p.use_length:
        return _masked_softmax(xp, p, -x, length, "softmin", False)
    x, ax = _softmax_prep(xp, p, -x, "softmin")
    return _softmax_core(xp, x, ax, False)


def _grad_softmin(F, p, ins, outs, og):
    x, y, g = ins[0], outs[0], og[0]
    ax = norm_axis(p.axis, x.ndim, "softmin")
    gx = -(y * (g - _sum_keep(F, g * y, ax)))
    t = _temp(p)
    if t != 1.0:
        gx = gx / t
    return [_cast_back(F, gx, x)] + ([None] if p.use_length else [])


register(OpDef("softmin", _softmin, params=_SOFTMAX_PARAMS, gradient=_grad_softmin,
               inputs=_softmax_inputs, no_grad_inputs=("length",),
               save=("inputs", "outputs"), family="nn", infer_shape=_same,
               doc="Softmin along `axis`: softmax of -x (temperature, dtype, use_length as "
                   "softmax)."))
register(OpDef(
    "_length_mask_op", lambda xp, p, x, length: _length_mask(xp, x, length, p.axis, "softmax")
    .astype(x.dtype), inputs=("data", "length"), params=[Param("axis", "int")], nondiff=True,
    save=(), hidden=True, family="nn",
    doc="1 where the position along `axis` is below `length`, else 0 (softmax use_length)."))


def _softmax_activation(xp, p, x):
    if x.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
        raise not_real("SoftmaxActivation", "data", x.dtype)
    if p.mode == "channel":
        if x.ndim < 2:
            raise GpundaError(f"Operator SoftmaxActivation: mode='channel' needs data with at "
                              f"least 2 dimensions, got shape {tuple(x.shape)}")
        return _softmax_core(xp, x, 1, False)
    # MXNet's instance mode runs on data.FlatTo2D(): every axis but the last folds into
    # rows, so the softmax is over the last axis ((1, 2, 2, 3) gives rows of 3 summing to 1)
    return _softmax_core(xp, x, x.ndim - 1, False)


def _grad_softmax_activation(F, p, ins, outs, og):
    y, g = outs[0], og[0]
    axes = (1,) if p.mode == "channel" else (y.ndim - 1,)
    return [y * (g - F._sum_to(g * y, shape=_kshape(y.shape, axes)))]


register(OpDef("SoftmaxActivation", _softmax_activation,
               params=[Param("mode", "enum", "instance", choices=("instance", "channel"))],
               gradient=_grad_softmax_activation, save=("outputs",), family="nn",
               infer_shape=_same,
               doc="Softmax per instance (over the last axis) or per channel (axis 1)."))


def _onehot(xp, p, label):
    idx = label.astype(np.int64)
    oh = (idx[..., None] == xp.arange(p.depth)).astype(p.dtype)
    ax = p.axis
    if ax != -1:
        oh = xp.moveaxis(oh, -1, ax)
    return oh


register(OpDef("_nn_onehot", _onehot, inputs=("label",),
               params=[Param("depth", "int"), Param("axis", "int", -1),
                       Param("dtype", "dtype", np.dtype("float32"))],
               nondiff=True, hidden=True, family="nn",
               doc="One-hot encoding of (float) labels; the class axis is inserted at `axis`."))


def _softmax_ce(xp, p, x, label):
    if x.ndim != 2 or label.shape != (x.shape[0],):
        raise GpundaError(f"Operator softmax_cross_entropy: data must be 2-D (batch, classes) and "
                          f"label 1-D (batch,), got data {tuple(x.shape)} and label "
                          f"{tuple(label.shape)}")
    ls = _softmax_core(xp, x, 1, True)
    idx = xp.clip(label.astype(np.int64), 0, x.shape[1] - 1)
    picked = xp.take_along_axis(ls, idx[:, None], axis=1)
    return (-picked.sum()).reshape(1).astype(x.dtype)


register(OpDef(
    "softmax_cross_entropy", _softmax_ce, inputs=("data", "label"),
    gradient=lambda F, p, i, o, g: [
        (F.softmax(i[0], axis=1) - F._nn_onehot(i[1], depth=i[0].shape[1], dtype=i[0].dtype)) * g[0],
        None],
    save=("inputs",), family="nn",
    infer_shape=lambda p, s: ([s[0], s[1] if s[1] is not None or s[0] is None else (s[0][0],)],
                              None if s[0] is None else [(1,)]),
    doc="Sum over the batch of the cross entropy of softmax(data) and integer labels."))

# ---------------------------------------------------------------------------
# SoftmaxOutput and regression outputs (MXNet's built-in loss gradients)


def _so_view(p, dshape):
    """(A, C, B) view of data in which axis 1 is the class axis, for each mode."""
    if p.multi_output:
        if len(dshape) < 2:
            raise GpundaError(f"Operator SoftmaxOutput: multi_output needs data with at least "
                              f"2 dimensions, got {tuple(dshape)}")
        return (dshape[0], dshape[1], math.prod(dshape[2:]))
    if p.preserve_shape:
        return (math.prod(dshape[:-1]), dshape[-1], 1)
    return (dshape[0], math.prod(dshape[1:]), 1)


def _so_label(p, label, view, dshape):
    A, C, B = view
    if label.size != A * B:
        raise GpundaError(f"Operator SoftmaxOutput: input label has shape {tuple(label.shape)} "
                          f"({label.size} values), expected {A * B} labels for data "
                          f"{tuple(dshape)}")
    return label.reshape(A, B)


def _softmax_output(xp, p, x, label):
    view = _so_view(p, x.shape)
    if tuple(label.shape) != tuple(x.shape):
        _so_label(p, label, view, x.shape)
    return _softmax_core(xp, x.reshape(view), 1, False).reshape(x.shape)


def _so_norm(xp, p, label2, dshape, spatial=1):
    """The divisor of the gradient; ``spatial``: the positions per sample of index labels,
    which MXNet's multi_output backward also divides by unless normalization='valid'."""
    if p.normalization == "batch":
        return float(dshape[0]) * spatial
    if p.normalization == "valid":
        if p.use_ignore:
            # stays on the device (no host sync, so CUDA-graph capture keeps working)
            return xp.maximum((label2 != p.ignore_label).sum(), 1).astype(np.float64)
        return float(max(label2.size, 1))
    return float(spatial)


def _so_keep(xp, p, label2, dtype):
    if p.use_ignore:
        return (label2 != p.ignore_label).astype(dtype)[:, None, :]
    return None


def _so_grad(xp, p, out, label):
    """(softmax - onehot(label)) * grad_scale / normalizer; ignored labels get 0."""
    view = _so_view(p, out.shape)
    if tuple(label.shape) == tuple(out.shape):      # probability labels
        return ((out - label) * (p.grad_scale / _so_norm(xp, p, label.reshape(view[0], -1), out.shape))
                ).astype(out.dtype, copy=False)
    lab = _so_label(p, label, view, out.shape)
    y = out.reshape(view)
    A, C, B = view
    idx = lab.astype(np.int64)
    oh = (idx[:, None, :] == xp.arange(C)[None, :, None]).astype(out.dtype)
    if p.smooth_alpha:
        oh = oh * (1 - p.smooth_alpha) + (1 - oh) * (p.smooth_alpha / max(C - 1, 1))
    g = y - oh
    keep = _so_keep(xp, p, lab, out.dtype)
    if keep is not None:
        g = g * keep
    g = g * (p.grad_scale / _so_norm(xp, p, lab, out.shape, B if p.multi_output else 1))
    return g.reshape(out.shape).astype(out.dtype, copy=False)


def _so_scale(xp, p, h, label):
    """The linear part of _softmax_output_grad (for its own gradient)."""
    view = _so_view(p, h.shape)
    if tuple(label.shape) == tuple(h.shape):
        return h * (p.grad_scale / _so_norm(xp, p, label.reshape(view[0], -1), h.shape))
    lab = _so_label(p, label, view, h.shape)
    g = h.reshape(view)
    keep = _so_keep(xp, p, lab, h.dtype)
    if keep is not None:
        g = g * keep
    spatial = view[2] if p.multi_output else 1
    return (g * (p.grad_scale / _so_norm(xp, p, lab, h.shape, spatial))).reshape(
        h.shape).astype(h.dtype, copy=False)


_SO_PARAMS = [Param("grad_scale", "float", 1.0), Param("ignore_label", "float", -1.0),
              Param("multi_output", "bool", False), Param("use_ignore", "bool", False),
              Param("preserve_shape", "bool", False),
              Param("normalization", "enum", "null", choices=("null", "batch", "valid")),
              Param("out_grad", "bool", False, "accepted, ignored"),
              Param("smooth_alpha", "float", 0.0)]


def _so_kw(p):
    return {k.name: getattr(p, k.name) for k in _SO_PARAMS if k.name != "out_grad"}


def _infer_so(p, in_shapes):
    shapes = list(in_shapes)
    d = shapes[0]
    if d is None:
        return shapes, None
    if shapes[1] is None:
        if p.multi_output:
            shapes[1] = (d[0],) + tuple(d[2:])
        elif p.preserve_shape:
            shapes[1] = tuple(d[:-1])
        else:
            shapes[1] = (d[0],)
    return shapes, [d]


register(OpDef(
    "SoftmaxOutput", _softmax_output, inputs=("data", "label"), params=_SO_PARAMS,
    aliases=("Softmax",),
    gradient=lambda F, p, i, o, g: [F._softmax_output_grad(o[0], i[1], **_so_kw(p)), None],
    save=("inputs", "outputs"), infer_shape=_infer_so, family="nn",
    doc="Softmax forward; backward is MXNet's built-in (softmax - onehot(label)) * grad_scale / "
        "normalizer, ignoring the head gradient."))
register(OpDef(
    "_softmax_output_grad", _so_grad, inputs=("out", "label"),
    params=[s for s in _SO_PARAMS if s.name != "out_grad"],
    gradient=lambda F, p, i, o, g: [F._softmax_output_scale(g[0], i[1], **_so_kw(p)), None],
    save=("inputs",), hidden=True, family="nn", doc="SoftmaxOutput's gradient."))
register(OpDef(
    "_softmax_output_scale", _so_scale, inputs=("ograd", "label"),
    params=[s for s in _SO_PARAMS if s.name != "out_grad"],
    gradient=lambda F, p, i, o, g: [F._softmax_output_scale(g[0], i[1], **_so_kw(p)), None],
    save=("inputs",), hidden=True, family="nn",
    doc="Masking and scaling of SoftmaxOutput's gradient (self-adjoint)."))


def _reg_label(opname, label, out):
    if label.size != out.size:
        raise GpundaError(f"Operator {opname}: input label has shape {tuple(label.shape)}, "
                          f"expected {tuple(out.shape)} (same size as data)")
    return label.reshape(out.shape)


def _reg_scale(p, label):
    per = label.size // label.shape[0] if label.ndim and label.shape[0] else 1
    return p.grad_scale / max(per, 1)


def _make_regression(name, fwd, kind):
    def compute(xp, p, x, label):
        if x.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
            raise not_real(name, "data", x.dtype)
        _reg_label(name, label, x)
        return fwd(xp, x)

    def grad(F, p, ins, outs, og):
        return [F._regression_output_grad(outs[0], ins[1], kind=kind, grad_scale=p.grad_scale),
                None]

    def infer(p, in_shapes):
        shapes = list(in_shapes)
        if shapes[0] is None:
            return shapes, None
        if shapes[1] is None:
            shapes[1] = shapes[0]
        return shapes, [shapes[0]]

    register(OpDef(name, compute, inputs=("data", "label"),
                   params=[Param("grad_scale", "float", 1.0)], gradient=grad,
                   save=("inputs", "outputs"), infer_shape=infer, family="nn",
                   doc=f"{name}: forward {kind}; backward is MXNet's built-in loss gradient "
                       f"(scaled by grad_scale / outputs per sample), ignoring the head gradient."))


def _regression_grad(xp, p, out, label):
    lab = _reg_label("_regression_output_grad", label, out)
    d = out - lab
    if p.kind == "mae":
        d = xp.sign(d)
    return (d * _reg_scale(p, label)).astype(out.dtype, copy=False)


register(OpDef(
    "_regression_output_grad", _regression_grad, inputs=("out", "label"),
    params=[Param("kind", "enum", choices=("linear", "logistic", "mae")),
            Param("grad_scale", "float", 1.0)],
    gradient=lambda F, p, i, o, g: [
        None if p.kind == "mae" else g[0] * _reg_scale(p, i[1]), None],
    save=("inputs",), hidden=True, family="nn", doc="Regression outputs' loss gradient."))
_make_regression("LinearRegressionOutput", lambda xp, x: x.copy(), "linear")
_make_regression("LogisticRegressionOutput", _sigmoid, "logistic")
_make_regression("MAERegressionOutput", lambda xp, x: x.copy(), "mae")


# ---------------------------------------------------------------------------
# Dropout


def _dropout(xp, p, x, ctx=None):
    mask = _dropout_mask(xp, p, x, ctx)
    if mask is None:
        return x.copy(), xp.ones_like(x)
    return x * mask, mask.copy()


def _dropout_mask(xp, p, x, ctx=None):
    """Dropout's mask of ``x``'s shape (broadcast along ``axes``), drawn from the context's
    generator, or None while it does not drop. The fused split (``_dropout_mask`` then
    ``_dropout_apply``) and Dropout itself both draw through here: one random stream."""
    if x.dtype.kind != "f":     # NOTE [Dtypes a kernel is instantiated for]
        raise not_real("Dropout", "data", x.dtype)
    if not 0 <= p.p <= 1:
        raise GpundaError(f"Operator Dropout: parameter p={p.p} must be in [0, 1]")
    for a in (p.axes or ()):
        if not 0 <= a < x.ndim:     # MXNet's shape function indexes the shape with the axis
            raise GpundaError(f"Operator Dropout: axes={p.axes}: axis {a} must be in range "
                              f"[0, {x.ndim}) (negative axes are not accepted)")
    active = p.mode == "always" or _modes.is_training()
    if not active or p.p == 0:
        return None
    mshape = list(x.shape)
    for a in (p.axes or ()):
        mshape[a] = 1
    if p.p >= 1:    # MXNet's mask is 0 * 1/(1 - p) = NaN: the output is NaN, as in MXNet
        mask = xp.full(mshape, np.nan, dtype=x.dtype)
    else:
        u = xp.asarray(_generator(ctx).uniform(0.0, 1.0, size=tuple(mshape)))
        mask = (u >= p.p).astype(x.dtype) * x.dtype.type(1.0 / (1.0 - p.p))
    return xp.broadcast_to(mask, x.shape)


def _mask_type(dt):
    # a bfloat16 Dropout computes on float32 (NOTE [bfloat16 compute] in ops/_bf16.py): its
    # mask, which the forward multiplies by and the gradient reads, stays float32, so the
    # split ops (mask, then data * mask) and the gradient use the very scale the op does
    return np.dtype(np.float32) if _bf16.is_bf16(dt) else dt


def _dropout_type(p, t):
    return None if t[0] is None else ([t[0]], [t[0], _mask_type(t[0])])


_DROPOUT_PARAMS = [Param("p", "float", 0.5),
                   Param("mode", "enum", "training", choices=("training", "always")),
                   Param("axes", "shape", ()),
                   Param("cudnn_off", "bool", False, "accepted, ignored")]
register(OpDef(
    "Dropout", _dropout,
    params=_DROPOUT_PARAMS,
    num_outputs=2, num_visible=1, wants_ctx=True, random=True, output_names=("output", "mask"),
    gradient=lambda F, p, i, o, g: [g[0] * o[1]], save=("outputs",),
    capture="random numbers (cuRAND)", family="nn", infer_type=_dropout_type,
    infer_shape=lambda p, s: (list(s), None if s[0] is None else [s[0], s[0]]),
    doc="Zero elements with probability p and scale the rest by 1/(1-p) while training "
        "(or always with mode='always'); identity otherwise. `axes` shares the mask along them."))

def _dropout_active(p, train):
    if p.mode == "always" or (train and p.p != 0):
        return "Dropout while it drops (training or mode='always'): random numbers"
    return None


# inference (or p == 0): output = data, mask = 1, gradient = g * mask; while it drops,
# the fusion pass splits it into its mask (one random kernel) and a pointwise multiply that
# joins its neighbours' kernel (NOTE [Fusion partition])
declare_pointwise("Dropout", ("data", "1"), ("g",), when=_dropout_active,
                  split=("_dropout_mask", "_dropout_apply"))


def _dropout_mask_op(xp, p, x, ctx=None):
    m = _dropout_mask(xp, p, x, ctx)
    return xp.ones_like(x) if m is None else m.copy()


register(OpDef(
    "_dropout_mask", _dropout_mask_op, params=_DROPOUT_PARAMS, wants_ctx=True, random=True,
    nondiff=True, capture="random numbers (cuRAND)", hidden=True, family="nn",
    infer_shape=lambda p, s: (list(s), None if s[0] is None else [s[0]]),
    infer_type=lambda p, t: None if t[0] is None else ([t[0]], [_mask_type(t[0])]),
    doc="Dropout's mask of data's shape (the first half of Dropout split by the fusion "
        "pass): the same draws from the same generator as Dropout."))
register(OpDef(
    "_dropout_apply", lambda xp, p, x, mask: x * mask, inputs=("data", "mask"),
    params=_DROPOUT_PARAMS, gradient=lambda F, p, i, o, g: [g[0] * i[1], g[0] * i[0]],
    save=("inputs",), hidden=True, family="nn",
    infer_shape=lambda p, s: (list(s), None if s[0] is None else [s[0]]),
    infer_type=lambda p, t: (list(t), [t[0]]),     # the data's type (a float32 mask beside)
    doc="data * mask (the second half of Dropout split by the fusion pass)."))
# (the mask's gradient is never asked for: the mask step is not differentiable)
declare_pointwise("_dropout_apply", "data * mask", ("g * mask", "g * data"))


# ---------------------------------------------------------------------------
# Embedding


def _embedding(xp, p, data, weight):
    if tuple(weight.shape) != (p.input_dim, p.output_dim):
        raise GpundaError(f"Operator Embedding: input weight has shape {tuple(weight.shape)}, "
                          f"expected ({p.input_dim}, {p.output_dim})")
    idx = xp.clip(data.astype(np.int64), 0, p.input_dim - 1)
    return weight[idx]


def _scatter_rows(xp, out, idx, vals):
    if xp is np:
        np.add.at(out, idx, vals)
    else:
        out.scatter_add(idx, vals)


def _embedding_wgrad(xp, p, data, g):
    idx = xp.clip(data.astype(np.int64), 0, p.input_dim - 1).reshape(-1)
    dw = xp.zeros((p.input_dim, p.output_dim), dtype=g.dtype)
    _scatter_rows(xp, dw, idx, g.reshape(-1, p.output_dim))
    return dw


def _infer_embedding(p, in_shapes):
    shapes = list(in_shapes)
    shapes[1] = (p.input_dim, p.output_dim)
    if shapes[0] is None:
        return shapes, None
    return shapes, [tuple(shapes[0]) + (p.output_dim,)]


register(OpDef(
    "Embedding", _embedding, inputs=("data", "weight"),
    params=[Param("input_dim", "int"), Param("output_dim", "int"),
            Param("dtype", "dtype", np.dtype("float32")),
            Param("sparse_grad", "bool", False, "accepted; the gradient is dense")],
    gradient=lambda F, p, i, o, g: [
        None, F._embedding_weight_grad(i[0], g[0], input_dim=p.input_dim, output_dim=p.output_dim)],
    save=("inputs",), infer_shape=_infer_embedding, family="nn",
    doc="Rows of weight picked by (float) indices in data (clipped to [0, input_dim-1])."))
register(OpDef(
    "_contrib_SparseEmbedding", _embedding, inputs=("data", "weight"),
    params=[Param("input_dim", "int"), Param("output_dim", "int"),
            Param("dtype", "dtype", np.dtype("float32")),
            Param("sparse_grad", "bool", False, "accepted; the gradient is row_sparse anyway")],
    gradient=lambda F, p, i, o, g: [
        None, F._embedding_rsp_grad(i[0], g[0], input_dim=p.input_dim, output_dim=p.output_dim)],
    save=("inputs",), infer_shape=_infer_embedding, family="nn",
    doc="Embedding whose weight gradient is row_sparse (only the rows looked up), for\n"
        "row_sparse weights updated lazily (MXNet's contrib.SparseEmbedding)."))
register(OpDef(
    "_embedding_weight_grad", _embedding_wgrad, inputs=("data", "ograd"),
    params=[Param("input_dim", "int"), Param("output_dim", "int")],
    gradient=lambda F, p, i, o, g: [
        None, F.Embedding(i[0], g[0], input_dim=p.input_dim, output_dim=p.output_dim)],
    save=("inputs",), hidden=True, family="nn",
    doc="Embedding's weight gradient: scatter-add of the output gradient rows."))

# ---------------------------------------------------------------------------
# BatchNorm, LayerNorm, InstanceNorm


def _check_vec(opname, name, v, C):
    if tuple(v.shape) != (C,):
        raise GpundaError(f"Operator {opname}: input {name} has shape {tuple(v.shape)}, "
                          f"expected ({C},)")


def _bn_training(p):
    return _modes.is_training() and not p.use_global_stats


# NOTE [BatchNorm parameter dtypes]
# MXNet's BatchNorm (BatchNormType in src/operator/nn/batch_norm.cc, and BatchNorm_v1,
# _contrib_BatchNormWithReLU, _contrib_SyncBatchNorm alike) keeps gamma, beta and the
# moving statistics in the data's accumulation dtype: float32 for float16 data, the data's
# own dtype for float32/float64. Its mean/var outputs have that dtype too; the output has
# the data's. A parameter of another dtype is refused ("This layer requires uniform type"),
# and so is integer data (BatchNorm, BatchNormWithReLU). A float16 network thus keeps its
# statistics in float32 (Gluon's BatchNorm.cast keeps float32 for 'float16' as well).
_F32 = np.dtype(np.float32)
_BN_ARGS = ("data", "gamma", "beta", "mean", "var")     # MXNet's names, for its messages
_BN_INPUTS = ("data", "gamma", "beta", "moving_mean", "moving_var")


def bn_param_dtype(dt, opname="BatchNorm", ints=False):
    """The dtype of BatchNorm's parameters for data of dtype ``dt``; integer data is a
    GpundaError unless ``ints`` (SyncBatchNorm's type rule lets it through)."""
    dt = np.dtype(dt)
    if dt == np.float16 or _bf16.is_bf16(dt):    # MXNet's AccReal of both is float
        return _F32
    if dt.kind != "f" and not ints:
        raise GpundaError(f"Operator {opname}: This operation only support floating point "
                          f"types, not {dt.name} (data)")
    return dt


def _bn_uniform_error(opname, i, want, got):
    return GpundaError(
        f"Operator {opname}: This layer requires uniform type. Expected '{want.name}' v.s. "
        f"given '{np.dtype(got).name}' at '{_BN_ARGS[i]}' (input {_BN_INPUTS[i]}: gamma, beta "
        f"and the moving statistics are float32 for float16 data, else the data's dtype)")


def check_bn_dtypes(opname, x, params):
    """The parameter dtype for ``x``; a GpundaError names a parameter of another dtype."""
    pt = bn_param_dtype(x.dtype, opname)
    for i, v in enumerate(params, 1):
        if v.dtype is not pt and v.dtype != pt:
            raise _bn_uniform_error(opname, i, pt, v.dtype)
    return pt


def bn_infer_type(opname, nout=3, ints=False):
    """OpDef.infer_type of the BatchNorm family: ``nout`` outputs, the first (and a fourth,
    BatchNormWithReLU's workspace) of the data's dtype, mean and var of the parameters'."""
    def rule(p, t):
        dt = t[0]
        if dt is None:
            return None     # MXNet infers nothing from the parameters alone
        pt = bn_param_dtype(dt, opname, ints)
        for i in range(1, len(t)):
            if t[i] is not None and np.dtype(t[i]) != pt:
                raise _bn_uniform_error(opname, i, pt, t[i])
        outs = [np.dtype(dt), pt, pt] + [np.dtype(dt)] * (nout - 3)
        return [np.dtype(dt)] + [pt] * (len(t) - 1), outs
    return rule


def _batch_norm(xp, p, x, gamma, beta, mm, mv, opname="BatchNorm"):
    ax = norm_axis(p.axis, x.ndim, opname)
    C = x.shape[ax]
    for name, v in (("gamma", gamma), ("beta", beta), ("moving_mean", mm), ("moving_var", mv)):
        _check_vec(opname, name, v, C)
    pt = check_bn_dtypes(opname, x, (gamma, beta, mm, mv))
    if p.fix_gamma and gamma.size:
        # MXNet's forward (CPU and MKL-DNN kernels alike) writes ones into gamma when it
        # writes its mean output, which an imperative call always does, in any mode
        gamma[...] = 1
    bshape = _chan_shape(x.shape, ax)
    red = tuple(i for i in range(x.ndim) if i != ax)
    training = _bn_training(p)
    if training and x.size:
        out, mean, var, r = _nk.batch_norm_train(xp, x, gamma, beta, ax, p.eps, p.fix_gamma)
    else:
        xa = _acc(x)
        if training:
            mean = xa.mean(axis=red)
            var = ((xa - mean.reshape(bshape)) ** 2).mean(axis=red)
        else:
            mean, var = _acc(mm), _acc(mv)
        r = 1 / xp.sqrt(var + p.eps)
        scale = r if p.fix_gamma else _acc(gamma) * r
        out = (xa - mean.reshape(bshape)) * scale.reshape(bshape) + _acc(beta).reshape(bshape)
        out = out.astype(x.dtype, copy=False)
    # the moving stats are not written here: MXNet writes them in the backward
    # (bn_update, NOTE [Mutated inputs and their pass] in ops/registry.py)
    # the third output is 1/sqrt(var + eps), as MXNet's (its "var" output holds the
    # inverse standard deviation, batch or moving, on CPU and with cuDNN alike); both
    # statistics in the parameters' dtype (NOTE [BatchNorm parameter dtypes])
    return out, mean.astype(pt), r.astype(pt)


def _norm_grad(F, x, g, gamma_b, axes, eps):
    """d/dx of ((x - mean) / sqrt(var + eps)) * gamma over ``axes`` (batch statistics).

    Only the normalised output's gradient flows: MXNet's BatchNorm, LayerNorm and GroupNorm
    backward kernels read the first output's gradient alone, so the mean/var/std outputs
    of output_mean_var=True pass no gradient to the data (MXNet 1.9.1 gives zero)."""
    ks = _kshape(x.shape, axes)
    n = float(math.prod(x.shape[a] for a in axes))
    mean = F._sum_to(x, shape=ks) / n
    xc = x - mean
    var = F._sum_to(xc * xc, shape=ks) / n
    r = F.rsqrt(var + eps)
    xhat = xc * r
    gx = g if gamma_b is None else g * gamma_b
    dx = r * (gx - F._sum_to(gx, shape=ks) / n - xhat * (F._sum_to(gx * xhat, shape=ks) / n))
    return dx, xhat


def _grad_batch_norm(F, p, ins, outs, og):
    # the backward's training mode decides (the engine runs this rule in it, as MXNet's
    # BatchNormBackward reads its own ctx.is_train): batch statistics are the forward's
    # saved mean and 1/std (the moving ones if the forward ran in predict mode)
    x, gamma = ins[0], ins[1]
    g = og[0]
    ax = norm_axis(p.axis, x.ndim, "BatchNorm")
    cs = _chan_shape(x.shape, ax)

    if _bn_training(p) and isinstance(F, RawF) and x.size:
        # plain backward: the fused kernel (the composite below is the differentiable form),
        # given the forward's batch statistics (in the parameters' dtype, float32 for
        # float16 data: they hold them as the kernel computes them)
        dx, dgamma, dbeta = _nk.batch_norm_train_backward(F._xp, x, g, gamma, ax, p.eps,
                                                          p.fix_gamma, mean=outs[1], r=outs[2])
        if p.fix_gamma:
            dgamma = F._xp.zeros_like(gamma)
        return [dx, dgamma, dbeta, None, None]
    if x.dtype != gamma.dtype:
        # float16 data, float32 parameters (NOTE [BatchNorm parameter dtypes]): the rule
        # runs in float32 and gives dx back in float16
        pt = gamma.dtype
        r = _grad_batch_norm(F, p, [F.Cast(x, dtype=pt)] + list(ins[1:]), outs,
                             [F.Cast(g, dtype=pt)] + list(og[1:]))
        return [F.Cast(r[0], dtype=x.dtype)] + r[1:]

    def bc(v):
        return F._nn_axis_bcast(v, axis=ax, like_shape=cs)
    gamma_b = None if p.fix_gamma else bc(gamma)
    if _bn_training(p):
        axes = tuple(i for i in range(x.ndim) if i != ax)
        dx, xhat = _norm_grad(F, x, g, gamma_b, axes, p.eps)
    else:
        # a predict-mode backward (or use_global_stats): MXNet's BatchNormBackward reads
        # the moving statistics as they are now, whatever mode the forward ran in
        r = bc(F.rsqrt(ins[4] + p.eps))
        xhat = (x - bc(ins[3])) * r
        dx = g * r if gamma_b is None else g * (gamma_b * r)
    dgamma = F.zeros_like(gamma) if p.fix_gamma else F._nn_axis_sum(g * xhat, axis=ax)
    return [dx, dgamma, F._nn_axis_sum(g, axis=ax), None, None]


def bn_update(xp, p, ins, outs, var_is_invstd=True):
    """The BatchNorm family's backward-pass write of the moving statistics (OpDef.update).

    As MXNet's BatchNormBackward (CPU, MKL-DNN and SyncBatchNorm alike): only when the
    batch statistics were used (not use_global_stats), from the forward's saved mean and
    third output, ``moving = moving * momentum + batch * (1 - momentum)``. BatchNorm's
    third output is 1/sqrt(var + eps), turned back into the biased batch variance as
    MXNet does (INVSTD_TO_VARIANCE); SyncBatchNorm's is the variance itself."""
    if p.use_global_stats:
        return
    mm, mv = ins[3], ins[4]
    mean, v = outs[1], outs[2]
    dt = mm.dtype.type
    if var_is_invstd:
        # MXNet: 1.0 / (invstd * invstd) - eps, the square in the stats' dtype, the rest in
        # double (eps is a double parameter)
        v = 1.0 / (v * v).astype(np.float64) - p.eps
    # momentum is a float32 parameter in MXNet, (1 - momentum) taken in the stats' dtype
    mom = dt(np.float32(p.momentum))
    rest = dt(1) - mom
    mm[...] = mm * mom + mean.astype(mm.dtype, copy=False) * rest
    mv[...] = mv * mom + v.astype(mv.dtype, copy=False) * rest


def _infer_bn(p, in_shapes):
    shapes = list(in_shapes)
    d = shapes[0]
    if d is None:
        return shapes, None
    C = d[norm_axis(p.axis, len(d), "BatchNorm")]
    for i in range(1, 5):
        shapes[i] = (C,)
    return shapes, [d, (C,), (C,)]


# the parameters every batch-norm op takes (SyncBatchNorm adds its own to these), and
# BatchNorm's whole list, which _contrib_BatchNormWithReLU shares
BN_COMMON_PARAMS = [Param("eps", "float", 1e-3), Param("momentum", "float", 0.9),
                    Param("fix_gamma", "bool", True), Param("use_global_stats", "bool", False),
                    Param("output_mean_var", "bool", False)]
BN_PARAMS = BN_COMMON_PARAMS + [
    Param("axis", "int", 1), Param("cudnn_off", "bool", False, "accepted, ignored"),
    Param("min_calib_range", "float", None, "accepted, ignored"),
    Param("max_calib_range", "float", None, "accepted, ignored")]

register(OpDef(
    "BatchNorm", _batch_norm, inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
    params=BN_PARAMS,
    num_outputs=3, num_visible=lambda p: 3 if p.output_mean_var else 1,
    aux_inputs=("moving_mean", "moving_var"), mutates=(3, 4), mutates_in="backward",
    update=bn_update, output_names=("output", "mean", "var"), gradient=_grad_batch_norm,
    save=("inputs", "outputs"), infer_shape=_infer_bn,
    infer_type=bn_infer_type("BatchNorm"), family="nn", aliases=("BatchNorm_v1",),
    doc="Batch normalisation along `axis`; in training (autograd.is_training() and not "
        "use_global_stats) it uses batch statistics, and its backward updates "
        "moving_mean/moving_var in place (as MXNet's)."))


def _bn_pointwise_when(p, train):
    if train and not p.use_global_stats:
        return "BatchNorm in training: batch statistics (a reduction)"
    return None


# pointwise record (NOTE [Pointwise records]): with the moving statistics BatchNorm is
# element-wise, its vectors read along the channel axis (the third output is 1/std);
# moving_mean and moving_var get no gradient, as in the rule above
declare_pointwise(
    "BatchNorm",
    lambda p: (("(data - moving_mean) * rsqrt(moving_var + eps)" if p.fix_gamma else
                "(data - moving_mean) * (gamma * rsqrt(moving_var + eps))") + " + beta",
               "moving_mean", "rsqrt(moving_var + eps)"),
    lambda p: ("g * rsqrt(moving_var + eps)" if p.fix_gamma else
               "g * (gamma * rsqrt(moving_var + eps))",
               "0" if p.fix_gamma else "g * (data - moving_mean) * rsqrt(moving_var + eps)",
               "g", None, None),
    when=_bn_pointwise_when, broadcast="channel", same_dtype=(0,))


def _layer_norm(xp, p, x, gamma, beta):
    ax = norm_axis(p.axis, x.ndim, "LayerNorm")
    C = x.shape[ax]
    _check_vec("LayerNorm", "gamma", gamma, C)
    _check_vec("LayerNorm", "beta", beta, C)
    # one dtype for all three, float16 included (unlike BatchNorm's float32 parameters)
    require_same_dtype("LayerNorm", ("data", "gamma", "beta"), x, gamma, beta)
    xa = _acc(x)
    mean = xa.mean(axis=ax, keepdims=True)
    var = ((xa - mean) ** 2).mean(axis=ax, keepdims=True)
    std = xp.sqrt(var + p.eps)
    cs = _chan_shape(x.shape, ax)
    out = (xa - mean) / std * _acc(gamma).reshape(cs) + _acc(beta).reshape(cs)
    return out.astype(x.dtype, copy=False), mean.astype(x.dtype), std.astype(x.dtype)


def _grad_layer_norm(F, p, ins, outs, og):
    x, gamma, beta = ins
    g = og[0]
    ax = norm_axis(p.axis, x.ndim, "LayerNorm")
    gamma_b = F._nn_axis_bcast(gamma, axis=ax, like_shape=_chan_shape(x.shape, ax))
    dx, xhat = _norm_grad(F, x, g, gamma_b, (ax,), p.eps)
    return [dx, F._nn_axis_sum(g * xhat, axis=ax), F._nn_axis_sum(g, axis=ax)]


def _infer_ln(p, in_shapes):
    shapes = list(in_shapes)
    d = shapes[0]
    if d is None:
        return shapes, None
    ax = norm_axis(p.axis, len(d), "LayerNorm")
    shapes[1] = shapes[2] = (d[ax],)
    ks = _kshape(d, (ax,))
    return shapes, [d, ks, ks]


register(OpDef(
    "LayerNorm", _layer_norm, inputs=("data", "gamma", "beta"),
    params=[Param("axis", "int", -1), Param("eps", "float", 1e-5),
            Param("output_mean_var", "bool", False)],
    num_outputs=3, num_visible=lambda p: 3 if p.output_mean_var else 1,
    output_names=("output", "mean", "std"), gradient=_grad_layer_norm, save=("inputs",), infer_shape=_infer_ln, family="nn",
    doc="Layer normalisation over `axis`; outputs (out, mean, std) with mean/std keepdims."))


def _ln_pw_when(p, train):
    if p.output_mean_var:
        return "output_mean_var (mean and std are read)"
    if p.axis != -1:
        return f"axis={p.axis} (fused rows run along the last axis)"
    return None


def _ln_terms(p):
    xc = "(data - rmean(data))"
    var = f"rmean({xc} * {xc}) + {float(p.eps)!r}"
    return xc, var


def _ln_pw(p):
    xc, var = _ln_terms(p)
    return (f"{xc} / sqrt({var}) * gamma + beta", "rmean(data)", f"sqrt({var})")


def _ln_pw_grads(p):
    xc, var = _ln_terms(p)
    r = f"rsqrt({var})"
    xhat = f"({xc} * {r})"
    return (f"{r} * (g * gamma - rmean(g * gamma) - {xhat} * rmean(g * gamma * {xhat}))",
            f"g * {xhat}", "g")


# the fusion pass's row form (NOTE [Fusion IR]); gamma and beta broadcast along the rows
declare_pointwise("LayerNorm", _ln_pw, _ln_pw_grads, when=_ln_pw_when, broadcast="numpy")


def _instance_norm(xp, p, x, gamma, beta):
    if x.ndim < 3:
        raise GpundaError(f"Operator InstanceNorm: input data must have at least 3 dimensions, "
                          f"got shape {tuple(x.shape)}")
    C = x.shape[1]
    _check_vec("InstanceNorm", "gamma", gamma, C)
    _check_vec("InstanceNorm", "beta", beta, C)
    require_same_dtype("InstanceNorm", ("data", "gamma", "beta"), x, gamma, beta)
    red = tuple(range(2, x.ndim))
    xa = _acc(x)
    mean = xa.mean(axis=red, keepdims=True)
    var = ((xa - mean) ** 2).mean(axis=red, keepdims=True)
    cs = _chan_shape(x.shape, 1)
    out = (xa - mean) / xp.sqrt(var + p.eps) * _acc(gamma).reshape(cs) + _acc(beta).reshape(cs)
    return (out.astype(x.dtype, copy=False), mean.reshape(x.shape[:2]).astype(x.dtype),
            var.reshape(x.shape[:2]).astype(x.dtype))


def _grad_instance_norm(F, p, ins, outs, og):
    x, gamma, beta = ins
    g = og[0]
    gamma_b = F._nn_axis_bcast(gamma, axis=1, like_shape=_chan_shape(x.shape, 1))
    dx, xhat = _norm_grad(F, x, g, gamma_b, tuple(range(2, x.ndim)), p.eps)
    return [dx, F._nn_axis_sum(g * xhat, axis=1), F._nn_axis_sum(g, axis=1)]


def _infer_in(p, in_shapes):
    shapes = list(in_shapes)
    d = shapes[0]
    if d is None:
        return shapes, None
    shapes[1] = shapes[2] = (d[1],)
    return shapes, [d, tuple(d[:2]), tuple(d[:2])]


register(OpDef(
    "InstanceNorm", _instance_norm, inputs=("data", "gamma", "beta"),
    params=[Param("eps", "float", 1e-3)], num_outputs=3, num_visible=1,
    output_names=("output", "mean", "var"), gradient=_grad_instance_norm, save=("inputs",), infer_shape=_infer_in, family="nn",
    doc="Instance normalisation over the spatial axes of each (sample, channel)."))
