"""Convolution, Deconvolution, Pooling and UpSampling (imported by ``nn.py``).

Convolution is im2col (one strided slice copy per kernel position, measured
faster than copying an ``as_strided`` window view) plus a matmul per sample and
group (``_conv_kernels.py``); pooling combines one strided slice per window cell.
The only Python loops run over kernel positions, never over output pixels,
and the same code runs on NumPy and CuPy.

Gradients stay differentiable by closing the set of linear maps under
adjointness: for convolution ``C(x, W)`` (bilinear), the data gradient
``D(gy, W)`` and weight gradient ``Wg(gy, x)`` are hidden ops whose own
gradients are again ``C``, ``D`` and ``Wg``. Pooling works the same way:
average/sum pooling and ``_pool_avg_backward`` are adjoint, and max pooling
routes through ``_pool_max_route``/``_pool_max_pick`` (adjoint given the
argmax, whose derivative with respect to the data is zero).
"""
from __future__ import annotations

import math

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.kernels import pool as _pk
from gpunda.ops.kernels.norm import channel_plane
from gpunda.ops._util import require_same_dtype
from gpunda._core import modes as _modes
from gpunda.ops.raw import RawF
from gpunda.ops.kernels.conv import (conv_backward, conv_forward, conv_out as _conv_out, data_grad,
                            kernel_slices as _kernel_slices, pad_spatial, weight_grad)
from gpunda.ops.registry import OpDef, Param, get_op, register

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
_LAST_LAYOUTS = {1: "NWC", 2: "NHWC", 3: "NDHWC"}   # channels-last (Pooling only)


# ---------------------------------------------------------------------------
# geometry helpers


def _tuple(v, nd, fill, opname, name):
    if v is None or v == ():
        return (fill,) * nd
    if len(v) != nd:
        raise GpundaError(f"Operator {opname}: parameter {name}={v} must have {nd} values "
                          f"(one per spatial dimension of kernel)")
    return tuple(v)


def _check_layout(p, nd, opname, allow_last=False):
    lay = getattr(p, "layout", None)
    if allow_last and lay is not None and lay == _LAST_LAYOUTS.get(nd):
        return
    if lay is not None and lay != _LAYOUTS.get(nd):
        raise GpundaError(f"Operator {opname}: layout={lay!r} is not supported; only "
                          f"channel-first layouts ({_LAYOUTS.get(nd, 'NC...')}) are")


def _conv_geo(p, x_ndim, opname):
    """(kernel, stride, dilate, pad) as full tuples, validated against the data rank."""
    kernel = tuple(p.kernel)
    nd = len(kernel)
    if nd not in (1, 2, 3):
        raise GpundaError(f"Operator {opname}: kernel={kernel} must have 1, 2 or 3 dimensions")
    if x_ndim != nd + 2:
        raise GpundaError(f"Operator {opname}: input data must have {nd + 2} dimensions for "
                          f"kernel={kernel}, got {x_ndim}")
    _check_layout(p, nd, opname)
    stride = _tuple(p.stride, nd, 1, opname, "stride")
    dilate = _tuple(getattr(p, "dilate", ()), nd, 1, opname, "dilate")
    pad = _tuple(p.pad, nd, 0, opname, "pad")
    if any(k <= 0 for k in kernel) or any(s <= 0 for s in stride) or any(d <= 0 for d in dilate):
        raise GpundaError(f"Operator {opname}: kernel={kernel}, stride={stride} and "
                          f"dilate={dilate} must be positive")
    if any(q < 0 for q in pad):
        raise GpundaError(f"Operator {opname}: pad={pad} must be non-negative")
    return kernel, stride, dilate, pad


def _windows(xp, xpad, kernel, stride, dilate, out_sp):
    """View (N, C, *out, *kernel) of padded data: element [n,c,o..,k..] = xpad[n,c,o*s+k*d]."""
    st = xpad.strides
    nd = len(kernel)
    shape = tuple(xpad.shape[:2]) + tuple(out_sp) + tuple(kernel)
    strides = tuple(st[:2]) + tuple(st[2 + i] * stride[i] for i in range(nd)) + \
        tuple(st[2 + i] * dilate[i] for i in range(nd))
    return xp.lib.stride_tricks.as_strided(xpad, shape=shape, strides=strides)


def _bias_shape(F, nd):
    return (1, F) + (1,) * nd


# ---------------------------------------------------------------------------
# Convolution

_CUDNN = [Param("workspace", "int", 1024, "accepted, ignored"),
          Param("cudnn_tune", "str", None, "accepted, ignored"),
          Param("cudnn_off", "bool", False, "accepted, ignored"),
          Param("layout", "str", None, "NCW, NCHW or NCDHW")]

_CONV_PARAMS = [Param("kernel", "shape", doc="kernel size (w,), (h, w) or (d, h, w)"),
                Param("stride", "shape", (), doc="stride, default 1 per dimension"),
                Param("dilate", "shape", (), doc="dilation, default 1 per dimension"),
                Param("pad", "shape", (), doc="zero padding, default 0 per dimension"),
                Param("num_filter", "int", doc="number of output channels"),
                Param("num_group", "int", 1, doc="number of groups"),
                Param("no_bias", "bool", False, doc="no bias input")] + _CUDNN


def _check_groups(opname, C, F, G):
    if G <= 0 or C % G or F % G:
        raise GpundaError(f"Operator {opname}: num_group={G} must divide the input channels "
                          f"({C}) and num_filter ({F})")


def _convolution(xp, p, x, w, b=None):
    if b is None:
        require_same_dtype("Convolution", ("data", "weight"), x, w)
    else:
        require_same_dtype("Convolution", ("data", "weight", "bias"), x, w, b)
    kernel, stride, dilate, pad = _conv_geo(p, x.ndim, "Convolution")
    C, F, G = x.shape[1], p.num_filter, p.num_group
    _check_groups("Convolution", C, F, G)
    want = (F, C // G) + kernel
    if tuple(w.shape) != want:
        raise GpundaError(f"Operator Convolution: input weight has shape {tuple(w.shape)}, "
                          f"expected {want} for data {tuple(x.shape)}")
    y = conv_forward(xp, x, w, kernel, stride, dilate, pad, G, "Convolution")
    if b is not None:
        if tuple(b.shape) != (F,):
            raise GpundaError(f"Operator Convolution: input bias has shape {tuple(b.shape)}, "
                              f"expected ({F},)")
        if y.flags.c_contiguous:      # one plane per sample (_norm_kernels.channel_plane)
            P = math.prod(y.shape[2:])
            rows = y.reshape(y.shape[0], F * P)
            rows += channel_plane(xp, b, P)
        else:
            y += b.reshape(_bias_shape(F, len(kernel)))
    return y


def _geo_kw(p, x_ndim, opname):
    kernel, stride, dilate, pad = _conv_geo(p, x_ndim, opname)
    return dict(kernel=kernel, stride=stride, dilate=dilate, pad=pad, num_group=p.num_group)


def _grad_convolution(F, p, ins, outs, og, need=None):
    x, w = ins[0], ins[1]
    g = og[0]
    geo = _geo_kw(p, x.ndim, "Convolution")
    both = need is None or (need[0] and need[1])
    if both and isinstance(F, RawF) and x.dtype == w.dtype == g.dtype:
        # plain backward: both gradients from one set of columns where that applies
        fused = conv_backward(F._xp, g, x, w, geo["kernel"], geo["stride"], geo["dilate"],
                              geo["pad"], p.num_group)
        if fused is not None:
            return list(fused) + ([] if p.no_bias else [F._nn_axis_sum(g, axis=1)])
    dx = F._conv_data_grad(g, w, data_shape=x.shape, **geo) if need is None or need[0] else None
    dw = F._conv_weight_grad(g, x, **geo) if need is None or need[1] else None
    res = [dx, dw]
    if not p.no_bias:
        res.append(F._nn_axis_sum(g, axis=1))
    return res


def _infer_conv(p, in_shapes):
    data = in_shapes[0]
    shapes = list(in_shapes)
    if data is None:
        return shapes, None
    kernel, stride, dilate, pad = _conv_geo(p, len(data), "Convolution")
    C = data[1]
    shapes[1] = (p.num_filter, C // p.num_group) + kernel
    if not p.no_bias:
        shapes[2] = (p.num_filter,)
    out = (data[0], p.num_filter) + _conv_out(data[2:], kernel, stride, dilate, pad, "Convolution")
    return shapes, [out]


register(OpDef(
    "Convolution", _convolution, params=_CONV_PARAMS,
    inputs=lambda p: ("data", "weight") if p.no_bias else ("data", "weight", "bias"),
    gradient=_grad_convolution, grad_need=True, save=("inputs",), infer_shape=_infer_conv,
    capture="gemm", family="nn", aliases=("Convolution_v1",),
    doc="N-d convolution (1-D, 2-D, 3-D), channel-first, with groups, dilation and padding."))
# its bias add, along the channel axis, may join the group after it (NOTE [GEMM epilogues])
get_op("Convolution").epilogue = \
    lambda p: None if p.no_bias else (p.replace(no_bias=True), "_bias_add", {"axis": 1})

_GEO_PARAMS = [Param("kernel", "shape"), Param("stride", "shape", ()), Param("dilate", "shape", ()),
               Param("pad", "shape", ()), Param("num_group", "int", 1)]


def _hidden_geo(p, nd, opname):
    k = tuple(p.kernel)
    return (k, _tuple(p.stride, nd, 1, opname, "stride"), _tuple(p.dilate, nd, 1, opname, "dilate"),
            _tuple(p.pad, nd, 0, opname, "pad"))


def _conv_data_grad(xp, p, gy, w):
    kernel, stride, dilate, pad = _hidden_geo(p, len(p.kernel), "_conv_data_grad")
    return data_grad(xp, gy, w, kernel, stride, dilate, pad, p.num_group, tuple(p.data_shape))


def _grad_conv_data_grad(F, p, ins, outs, og):
    gy, w = ins
    geo = dict(kernel=p.kernel, stride=p.stride, dilate=p.dilate, pad=p.pad, num_group=p.num_group)
    return [F.Convolution(og[0], w, no_bias=True, num_filter=gy.shape[1], **geo),
            F._conv_weight_grad(gy, og[0], **geo)]


register(OpDef(
    "_conv_data_grad", _conv_data_grad, inputs=("ograd", "weight"),
    params=_GEO_PARAMS + [Param("data_shape", "shape")], gradient=_grad_conv_data_grad,
    save=("inputs",), hidden=True, capture="gemm", family="nn",
    doc="Gradient of Convolution with respect to its data (transposed convolution)."))


def _conv_weight_grad(xp, p, gy, x):
    kernel, stride, dilate, pad = _hidden_geo(p, len(p.kernel), "_conv_weight_grad")
    return weight_grad(xp, gy, x, kernel, stride, dilate, pad, p.num_group, "_conv_weight_grad")


def _grad_conv_weight_grad(F, p, ins, outs, og):
    gy, x = ins
    geo = dict(kernel=p.kernel, stride=p.stride, dilate=p.dilate, pad=p.pad, num_group=p.num_group)
    return [F.Convolution(x, og[0], no_bias=True, num_filter=gy.shape[1], **geo),
            F._conv_data_grad(gy, og[0], data_shape=x.shape, **geo)]


register(OpDef(
    "_conv_weight_grad", _conv_weight_grad, inputs=("ograd", "data"), params=_GEO_PARAMS,
    gradient=_grad_conv_weight_grad, save=("inputs",), hidden=True, capture="gemm",
    family="nn", doc="Gradient of Convolution with respect to its weight."))

# ---------------------------------------------------------------------------
# Deconvolution (transposed convolution): forward is Convolution's data gradient


def _deconv_geo(p, in_sp):
    """(kernel, stride, dilate, pad, out_spatial) honouring adj and target_shape."""
    nd = len(p.kernel)
    kernel, stride, dilate, pad = _conv_geo(p, nd + 2, "Deconvolution")
    adj = _tuple(p.adj, nd, 0, "Deconvolution", "adj")
    target = p.target_shape
    if target is not None and target != () and any(t > 0 for t in target):
        target = _tuple(target, nd, 0, "Deconvolution", "target_shape")
        pad, adj = [], []
        for i in range(nd):
            full = stride[i] * (in_sp[i] - 1) + dilate[i] * (kernel[i] - 1) + 1
            if full < target[i]:
                raise GpundaError(f"Operator Deconvolution: target_shape={target} is too big "
                                  f"for input spatial shape {tuple(in_sp)}")
            tot = full - target[i]
            adj.append(tot % 2)
            pad.append((tot + 1) // 2)
        pad, adj = tuple(pad), tuple(adj)
    out = []
    for i in range(nd):
        o = stride[i] * (in_sp[i] - 1) + dilate[i] * (kernel[i] - 1) + 1 - 2 * pad[i] + adj[i]
        if o <= 0:
            raise GpundaError(f"Operator Deconvolution: pad={pad} leaves no output for input "
                              f"spatial shape {tuple(in_sp)}")
        out.append(o)
    return kernel, stride, dilate, pad, tuple(out)


def _deconvolution(xp, p, x, w, b=None):
    if b is None:
        require_same_dtype("Deconvolution", ("data", "weight"), x, w)
    else:
        require_same_dtype("Deconvolution", ("data", "weight", "bias"), x, w, b)
    nd = len(p.kernel)
    if x.ndim != nd + 2:
        raise GpundaError(f"Operator Deconvolution: input data must have {nd + 2} dimensions "
                          f"for kernel={tuple(p.kernel)}, got {x.ndim}")
    kernel, stride, dilate, pad, out_sp = _deconv_geo(p, x.shape[2:])
    C, F, G = x.shape[1], p.num_filter, p.num_group
    _check_groups("Deconvolution", C, F, G)
    want = (C, F // G) + kernel
    if tuple(w.shape) != want:
        raise GpundaError(f"Operator Deconvolution: input weight has shape {tuple(w.shape)}, "
                          f"expected {want} for data {tuple(x.shape)}")
    y = data_grad(xp, x, w, kernel, stride, dilate, pad, G, (x.shape[0], F) + out_sp)
    if b is not None:
        if tuple(b.shape) != (F,):
            raise GpundaError(f"Operator Deconvolution: input bias has shape {tuple(b.shape)}, "
                              f"expected ({F},)")
        y = y + b.reshape(_bias_shape(F, nd))
    return y


def _grad_deconvolution(F, p, ins, outs, og):
    x, w = ins[0], ins[1]
    kernel, stride, dilate, pad, _ = _deconv_geo(p, x.shape[2:])
    geo = dict(kernel=kernel, stride=stride, dilate=dilate, pad=pad, num_group=p.num_group)
    g = og[0]
    res = [F.Convolution(g, w, no_bias=True, num_filter=x.shape[1], **geo),
           F._conv_weight_grad(x, g, **geo)]
    if not p.no_bias:
        res.append(F._nn_axis_sum(g, axis=1))
    return res


def _infer_deconv(p, in_shapes):
    data = in_shapes[0]
    shapes = list(in_shapes)
    if data is None:
        return shapes, None
    kernel, stride, dilate, pad, out_sp = _deconv_geo(p, data[2:])
    shapes[1] = (data[1], p.num_filter // p.num_group) + kernel
    if not p.no_bias:
        shapes[2] = (p.num_filter,)
    return shapes, [(data[0], p.num_filter) + out_sp]


register(OpDef(
    "Deconvolution", _deconvolution,
    params=[Param("kernel", "shape"), Param("stride", "shape", ()), Param("dilate", "shape", ()),
            Param("pad", "shape", ()), Param("adj", "shape", ()),
            Param("target_shape", "shape", (), doc="output spatial shape; sets pad and adj"),
            Param("num_filter", "int"), Param("num_group", "int", 1),
            Param("no_bias", "bool", True)] + _CUDNN,
    inputs=lambda p: ("data", "weight") if p.no_bias else ("data", "weight", "bias"),
    gradient=_grad_deconvolution, save=("inputs",), infer_shape=_infer_deconv,
    capture="gemm", family="nn",
    doc="Transposed convolution (1-D, 2-D, 3-D); weight (in_channels, num_filter/num_group, *kernel)."))

# ---------------------------------------------------------------------------
# Pooling


_POOL_GEO_CACHE = {}


def _pool_geo(p, shape):
    """(kernel, stride, pad, out_spatial, extra_end_pad) for Pooling params and data shape
    (cached: a training step asks for the same geometry in its forward and backward)."""
    try:
        key = (p.global_pool, p.kernel, p.stride, p.pad, p.pooling_convention,
               getattr(p, "layout", None), tuple(shape))
        geo = _POOL_GEO_CACHE.get(key)
    except TypeError:       # an unhashable parameter value
        return _pool_geo_uncached(p, shape)
    if geo is None:
        geo = _pool_geo_uncached(p, shape)
        if len(_POOL_GEO_CACHE) > 1024:
            _POOL_GEO_CACHE.clear()
        _POOL_GEO_CACHE[key] = geo
    return geo


def _pool_geo_uncached(p, shape):
    if len(shape) < 3:
        raise GpundaError(f"Operator Pooling: input data must have 3 to 5 dimensions, got "
                          f"shape {tuple(shape)}")
    sp = tuple(shape[2:])
    nd = len(sp)
    if p.global_pool:
        kernel, stride, pad = sp, (1,) * nd, (0,) * nd
    else:
        kernel = tuple(p.kernel)
        if len(kernel) != nd:
            raise GpundaError(f"Operator Pooling: kernel={kernel} does not match the "
                              f"{nd} spatial dimension(s) of data {tuple(shape)}")
        stride = _tuple(p.stride, nd, 1, "Pooling", "stride")
        if p.pooling_convention == "same":
            # MXNet: 1-D only, and no padding (it reads pad as three zeros)
            if nd != 1:
                raise GpundaError(f"Operator Pooling: pooling_convention='same' supports 1-D "
                                  f"pooling of (batch, channel, x) data only, got data "
                                  f"{tuple(shape)}")
            if any(tuple(p.pad or ())):
                raise GpundaError(f"Operator Pooling: pad={tuple(p.pad)}: the same pooling "
                                  f"convention disables the use of pad")
            pad = (0,)
        else:
            pad = _tuple(p.pad, nd, 0, "Pooling", "pad")
    _check_layout(p, nd, "Pooling", allow_last=True)
    if any(k <= 0 for k in kernel) or any(s <= 0 for s in stride) or any(q < 0 for q in pad):
        raise GpundaError(f"Operator Pooling: kernel={kernel}, stride={stride}, pad={pad} "
                          f"must be positive (pad non-negative)")
    out, extra = [], []
    for i in range(nd):
        span = sp[i] + 2 * pad[i] - kernel[i]
        if span < 0:
            raise GpundaError(f"Operator Pooling: kernel={kernel} is larger than the padded "
                              f"input {sp} with pad={pad}")
        if p.pooling_convention == "full":
            o = -(-span // stride[i]) + 1
        elif p.pooling_convention == "same":     # ceil(in / stride) windows, the last clipped
            o = -(-sp[i] // stride[i])
        else:
            o = span // stride[i] + 1
        out.append(o)
        extra.append(max(0, (o - 1) * stride[i] + kernel[i] - (sp[i] + 2 * pad[i])))
    return kernel, stride, pad, tuple(out), tuple(extra)


def _pool_counts(xp, sp, kernel, stride, pad, out, include_pad, dtype):
    """Divisor of average pooling per output position (MXNet's window clipping)."""
    cnt = None
    for i in range(len(sp)):
        o = np.arange(out[i]) * stride[i]
        if include_pad:
            c = np.minimum(o + kernel[i], sp[i] + 2 * pad[i]) - o
        else:
            c = np.minimum(o + kernel[i], pad[i] + sp[i]) - np.maximum(o, pad[i])
        c = np.maximum(c, 1)
        cnt = c if cnt is None else np.multiply.outer(cnt, c)
    return xp.asarray(cnt.astype(dtype))


def _min_value(dtype):
    # MXNet pads max pooling with the lowest finite value: a window lying wholly in
    # the padding then yields that value (not -inf, whose gradient products are NaN)
    if dtype.kind == "f":
        return np.finfo(dtype).min
    return np.iinfo(dtype).min


def _pool_padded(xp, x, pad, extra, value):
    """``x`` padded for pooling: ``pad`` before, ``pad + extra`` (full convention) after."""
    return pad_spatial(xp, x, pad, tuple(a + b for a, b in zip(pad, extra)), value)


def _pool_windows(xp, x, kernel, stride, pad, out, extra, value):
    return _windows(xp, _pool_padded(xp, x, pad, extra, value), kernel, stride,
                    (1,) * len(kernel), out)


def _pool_type(p):
    if p.pool_type == "lp" and p.p_value not in (1, 2, 3):
        raise GpundaError(f"Operator Pooling: pool_type='lp' needs p_value 1, 2 or 3, got "
                          f"p_value={p.p_value}")
    return p.pool_type


def _lp_root(xp, s, pv):
    """s ** (1/p) for MXNet's lp pooling (p = 1, 2, 3; odd roots keep the sign)."""
    return s if pv == 1 else xp.sqrt(s) if pv == 2 else xp.cbrt(s)


def _window_slices(kernel, stride, out):
    """Per kernel position, the strided slice (batch and channel axes included) of the
    padded input that its window cells form: _kernel_slices without dilation."""
    lead = (slice(None), slice(None))
    for _, sl in _kernel_slices(kernel, stride, (1,) * len(kernel), out):
        yield lead + sl


def _pool_reduce(xp, x, kernel, stride, pad, out, extra, value, ufunc):
    """``ufunc`` (maximum or add) over every pooling window: one strided slice per kernel
    position, combined element-wise; a reduction over the window axes of a strided
    view is many times slower on NumPy."""
    if _pk.applies(kernel, stride, pad, extra, x.shape):
        return _pk.pool_2x2(xp, x, ufunc)
    if math.prod(kernel) > 16:      # big windows (global pooling): reduce the window axes
        win = _pool_windows(xp, x, kernel, stride, pad, out, extra, value)
        axes = tuple(range(2 + len(kernel), 2 + 2 * len(kernel)))
        return win.max(axis=axes) if ufunc is xp.maximum else win.sum(axis=axes, dtype=x.dtype)
    xpad = _pool_padded(xp, x, pad, extra, value)
    acc = None
    for sl in _window_slices(kernel, stride, out):
        acc = xpad[sl].copy() if acc is None else ufunc(acc, xpad[sl], out=acc)
    return acc


def _channels_last(p, ndim):
    """Whether Pooling's ``layout`` puts the channels last for data of rank ``ndim``."""
    lay = getattr(p, "layout", None)
    return lay is not None and lay == _LAST_LAYOUTS.get(ndim - 2)


def _to_first(ndim):
    """Axes permutation channels-last -> channels-first (its inverse is _to_last)."""
    return (0, ndim - 1) + tuple(range(1, ndim - 1))


def _to_last(ndim):
    return (0,) + tuple(range(2, ndim)) + (1,)


def _pooling(xp, p, x):
    if _channels_last(p, x.ndim):
        # pool channels-first and move the channels back: one copy each way
        y = _pooling_first(xp, p, x.transpose(_to_first(x.ndim)))
        return xp.ascontiguousarray(y.transpose(_to_last(x.ndim)))
    return _pooling_first(xp, p, x)


def _pooling_first(xp, p, x):
    kind = _pool_type(p)
    kernel, stride, pad, out, extra = _pool_geo(p, x.shape)
    if kind == "max":
        return _pool_reduce(xp, x, kernel, stride, pad, out, extra, _min_value(x.dtype),
                            xp.maximum)
    if kind == "lp":    # (sum of x^p over the window)^(1/p), without abs, as MXNet
        pv = p.p_value
        return _lp_root(xp, _pool_reduce(xp, x ** pv if pv != 1 else x, kernel, stride, pad,
                                         out, extra, 0, xp.add), pv).astype(x.dtype, copy=False)
    s = _pool_reduce(xp, x, kernel, stride, pad, out, extra, 0, xp.add)
    if kind == "sum":
        return s
    include = True if p.count_include_pad is None else p.count_include_pad
    return (s / _pool_counts(xp, x.shape[2:], kernel, stride, pad, out, include, x.dtype)).astype(
        x.dtype, copy=False)


def _pool_kw(p, shape):
    kernel, stride, pad, _, _ = _pool_geo(p, shape)
    inc = True if p.count_include_pad is None else p.count_include_pad
    return dict(kernel=kernel, stride=stride, pad=pad, pooling_convention=p.pooling_convention,
                count_include_pad=inc)


def _grad_pooling(F, p, ins, outs, og):
    x = ins[0]
    if _channels_last(p, len(x.shape)):
        n = len(x.shape)
        first = p.replace(layout=_LAYOUTS[n - 2])
        gx = _grad_pooling(F, first, [F.transpose(x, axes=_to_first(n))], None,
                           [F.transpose(og[0], axes=_to_first(n))])[0]
        return [F.transpose(gx, axes=_to_last(n))]
    kw = _pool_kw(p, x.shape)
    kind = _pool_type(p)
    if kind == "max":
        return [F._pool_max_route(x, og[0], **kw)]
    if kind == "lp":
        # d out / d x = (x / out)^(p-1) for each window the cell belongs to
        pv = p.p_value
        if pv == 1:
            return [F._pool_avg_backward(og[0], pool_type="sum", data_shape=x.shape, **kw)]
        out = F.Pooling(x, **p._given)      # recomputed: Pooling keeps only its input
        y = out if pv == 2 else out * out
        w = F._pool_avg_backward(og[0] / y, pool_type="sum", data_shape=x.shape, **kw)
        return [w * (x if pv == 2 else x * x)]
    return [F._pool_avg_backward(og[0], pool_type=p.pool_type, data_shape=x.shape, **kw)]


def _infer_pool(p, in_shapes):
    data = in_shapes[0]
    if data is None:
        return list(in_shapes), None
    if _channels_last(p, len(data)):
        _, _, _, out, _ = _pool_geo(p, tuple(data[i] for i in _to_first(len(data))))
        return list(in_shapes), [(data[0],) + out + (data[-1],)]
    _, _, _, out, _ = _pool_geo(p, data)
    return list(in_shapes), [tuple(data[:2]) + out]


register(OpDef(
    "Pooling", _pooling,
    params=[Param("kernel", "shape", ()),
            Param("pool_type", "enum", "max", choices=("max", "avg", "sum", "lp")),
            Param("global_pool", "bool", False),
            Param("cudnn_off", "bool", False, "accepted, ignored"),
            Param("pooling_convention", "enum", "valid", choices=("valid", "full", "same")),
            Param("stride", "shape", ()), Param("pad", "shape", ()),
            Param("p_value", "int", None, "lp pooling: p (1, 2 or 3)"),
            Param("count_include_pad", "bool", None, "avg: count padded cells (default True)"),
            Param("layout", "str", None, "NCW, NCHW, NCDHW or channels-last NWC, NHWC, NDHWC")],
    gradient=_grad_pooling, save=("inputs",), infer_shape=_infer_pool, family="nn",
    aliases=("Pooling_v1",),
    doc="Max/avg/sum/lp pooling over 1-3 spatial dimensions (valid or full convention)."))

_HPOOL = [Param("kernel", "shape"), Param("stride", "shape"), Param("pad", "shape"),
          Param("pooling_convention", "enum", "valid", choices=("valid", "full")),
          Param("count_include_pad", "bool", True)]


class _G:
    """Plain geometry holder so hidden pooling ops can reuse ``_pool_geo``."""

    global_pool = False
    layout = None

    def __init__(self, p):
        self.kernel, self.stride, self.pad = p.kernel, p.stride, p.pad
        self.pooling_convention = p.pooling_convention


def _argmax_windows(xp, p, x):
    """The (first) argmax position of every pooling window, as a flat kernel index."""
    kernel, stride, pad, out, extra = _pool_geo(_G(p), x.shape)
    geo = (kernel, stride, pad, out, extra)
    low = _min_value(x.dtype)
    kp = math.prod(kernel)
    if kp > 16:
        win = _pool_windows(xp, x, kernel, stride, pad, out, extra, low)
        return win.reshape(tuple(x.shape[:2]) + out + (kp,)).argmax(axis=-1), geo
    # small windows: compare the strided slices in turn (as _pool_reduce does); a later
    # position wins only when strictly larger, so ties keep the first, like argmax
    xpad = _pool_padded(xp, x, pad, extra, low)
    best = arg = None
    for j, sl in enumerate(_window_slices(kernel, stride, out)):
        v = xpad[sl]
        if best is None:
            best, arg = v.copy(), xp.zeros(v.shape, dtype=np.int64)
            continue
        m = v > best
        xp.maximum(best, v, out=best)
        xp.copyto(arg, j, where=m)      # a masked store: boolean indexing is far slower
    return arg, geo


def _route_disjoint(xp, x, h, kernel, stride, pad, out, extra):
    """_pool_max_route for windows that do not overlap. Each window cell is gathered
    into a contiguous array once (element-wise work on strided views, and masked
    stores, are several times slower on NumPy); a cell gets the pooled gradient when
    it is the first of its window equal to the maximum, ``rem`` keeping the gradient
    not yet routed."""
    xpad = _pool_padded(xp, x, pad, extra, _min_value(x.dtype))
    slices = list(_window_slices(kernel, stride, out))
    cells = [xpad[sl].copy() for sl in slices]
    best = cells[0].copy()
    for c in cells[1:]:
        xp.maximum(best, c, out=best)
    # every cell lies in exactly one window: stride == kernel and no cells left over
    covered = all(s == k and o * s == n for s, k, o, n in zip(stride, kernel, out,
                                                              xpad.shape[2:]))
    dx = (xp.empty if covered else xp.zeros)(xpad.shape, dtype=h.dtype)
    rem = h
    last = len(slices) - 1
    # multiplying by the mask is twice as fast as np.where on NumPy, and exact while the
    # gradient is finite (0 * inf would be NaN in the cells that are not the maximum)
    masked = xp is np and bool(np.isfinite(h).all())
    for j, (sl, c) in enumerate(zip(slices, cells)):
        hit = c == best
        if masked:
            xp.multiply(rem, hit, out=dx[sl])
            if j < last:
                rem = rem * ~hit
        else:
            dx[sl] = xp.where(hit, rem, 0)
            if j < last:
                rem = xp.where(hit, 0, rem)
    nd = len(kernel)
    if not any(pad) and not any(extra):
        return dx
    return dx[(slice(None), slice(None)) + tuple(slice(pad[i], pad[i] + x.shape[2 + i])
                                                 for i in range(nd))]


def _pool_max_route(xp, p, x, h):
    """Send each pooled value ``h`` to the (first) argmax position of its window in ``x``."""
    geo = _pool_geo(_G(p), x.shape)
    kernel, stride = geo[0], geo[1]
    if math.prod(kernel) <= 16 and all(s >= k for s, k in zip(stride, kernel)) and \
            x.dtype.kind == "f":
        if xp is np and _pk.applies(*geo[:3], geo[4], x.shape):
            dx = _pk.route_max_2x2(x, h)
            if dx is not None:
                return dx
        return _route_disjoint(xp, x, h, *geo)
    arg, (kernel, stride, pad, out, extra) = _argmax_windows(xp, p, x)
    nd = len(kernel)
    full = tuple(x.shape[2 + i] + 2 * pad[i] + extra[i] for i in range(nd))
    dx = xp.zeros(tuple(x.shape[:2]) + full, dtype=h.dtype)
    lead = (slice(None), slice(None))
    # windows that do not overlap own disjoint cells: assign instead of accumulating
    overlap = any(s < k for s, k in zip(stride, kernel))
    for j, sl in enumerate(_window_slices(kernel, stride, out)):
        if overlap:
            dx[sl] += (arg == j) * h
        else:
            xp.multiply(arg == j, h, out=dx[sl])
    return dx[lead + tuple(slice(pad[i], pad[i] + x.shape[2 + i]) for i in range(nd))]


def _pool_max_pick(xp, p, x, g):
    """Value of ``g`` (data-shaped) at the argmax of each pooling window of ``x``."""
    arg, (kernel, stride, pad, out, extra) = _argmax_windows(xp, p, x)
    win = _pool_windows(xp, g, kernel, stride, pad, out, extra, 0)
    w = win.reshape(tuple(g.shape[:2]) + out + (math.prod(kernel),))
    return xp.take_along_axis(w, arg[..., None], axis=-1)[..., 0]


def _hkw(p):
    return dict(kernel=p.kernel, stride=p.stride, pad=p.pad,
                pooling_convention=p.pooling_convention, count_include_pad=p.count_include_pad)


register(OpDef(
    "_pool_max_route", _pool_max_route, inputs=("data", "ograd"), params=_HPOOL,
    gradient=lambda F, p, i, o, g: [None, F._pool_max_pick(i[0], g[0], **_hkw(p))],
    save=("inputs",), hidden=True, family="nn",
    doc="Max-pooling gradient: route pooled values to the argmax of each window."))
register(OpDef(
    "_pool_max_pick", _pool_max_pick, inputs=("data", "ograd"), params=_HPOOL,
    gradient=lambda F, p, i, o, g: [None, F._pool_max_route(i[0], g[0], **_hkw(p))],
    save=("inputs",), hidden=True, family="nn",
    doc="Adjoint of _pool_max_route: pick values at the argmax of each window."))


def _pool_avg_backward(xp, p, g):
    shape = tuple(p.data_shape)
    kernel, stride, pad, out, extra = _pool_geo(_G(p), shape)
    nd = len(kernel)
    if tuple(g.shape[2:]) != out:
        raise GpundaError(f"Operator _pool_avg_backward: gradient spatial shape "
                          f"{tuple(g.shape[2:])} does not match pooled shape {out}")
    if p.pool_type == "avg":
        g = (g / _pool_counts(xp, shape[2:], kernel, stride, pad, out, p.count_include_pad,
                              g.dtype)).astype(g.dtype, copy=False)
    full = tuple(shape[2 + i] + 2 * pad[i] + extra[i] for i in range(nd))
    dx = xp.zeros(tuple(shape[:2]) + full, dtype=g.dtype)
    lead = (slice(None), slice(None))
    for sl in _window_slices(kernel, stride, out):
        dx[sl] += g
    return dx[lead + tuple(slice(pad[i], pad[i] + shape[2 + i]) for i in range(nd))]


register(OpDef(
    "_pool_avg_backward", _pool_avg_backward, inputs=("ograd",),
    params=_HPOOL + [Param("pool_type", "enum", "avg", choices=("avg", "sum")),
                     Param("data_shape", "shape")],
    gradient=lambda F, p, i, o, g: [F.Pooling(g[0], pool_type=p.pool_type, **_hkw(p))],
    save=(), hidden=True, family="nn",
    doc="Gradient of avg/sum pooling (the adjoint of Pooling)."))

# ---------------------------------------------------------------------------
# UpSampling: nearest (one or several inputs), bilinear (a Deconvolution, as in MXNet)


def _bilinear_deconv_params(p):
    """The Deconvolution MXNet runs for bilinear UpSampling: kernel 2s - s % 2, stride s,
    pad ceil((s - 1) / 2), one group per channel, no bias."""
    s = p.scale
    k, pad = 2 * s - s % 2, s // 2      # s // 2 == ceil((s - 1) / 2)
    return get_op("Deconvolution").parse_params(dict(
        kernel=(k, k), stride=(s, s), pad=(pad, pad), num_filter=p.num_filter,
        num_group=p.num_filter, no_bias=True))


def _nearest_scales(p, shapes):
    """Per input, its integer scale to the output size (the first input's size x scale)."""
    H, W = shapes[0][2] * p.scale, shapes[0][3] * p.scale
    scales = []
    for i, sh in enumerate(shapes):
        if len(sh) != 4:
            raise GpundaError(f"Operator UpSampling: input arg{i} must be 4-D (NCHW), got "
                              f"shape {tuple(sh)}")
        if H % sh[2] or W % sh[3] or H // sh[2] != W // sh[3]:
            raise GpundaError(f"Operator UpSampling: input arg{i} of shape {tuple(sh)} does not "
                              f"scale by a whole factor to the output size {(H, W)}")
        scales.append(H // sh[2])
    if p.multi_input_mode == "sum" and len({sh[1] for sh in shapes}) > 1:
        raise GpundaError(f"Operator UpSampling: multi_input_mode='sum' needs equal channel "
                          f"counts, got {[sh[1] for sh in shapes]}")
    return scales


def _upsampling(xp, p, *xs):
    if p.scale < 1:
        raise GpundaError(f"Operator UpSampling: scale={p.scale} must be >= 1")
    if p.sample_type == "bilinear":
        if len(xs) != 2:
            raise GpundaError("Operator UpSampling: sample_type='bilinear' takes data and "
                              f"weight, got {len(xs)} inputs")
        if p.num_filter != xs[0].shape[1]:
            raise GpundaError(f"Operator UpSampling: num_filter={p.num_filter} must equal the "
                              f"channels of data {tuple(xs[0].shape)}")
        return _deconvolution(xp, _bilinear_deconv_params(p), xs[0], xs[1])
    ups = [xp.repeat(xp.repeat(x, s, axis=2), s, axis=3)
           for x, s in zip(xs, _nearest_scales(p, [x.shape for x in xs]))]
    if len(ups) == 1:
        return ups[0]
    if p.multi_input_mode == "sum":
        out = ups[0].copy()
        for u in ups[1:]:
            out += u
        return out
    return xp.concatenate(ups, axis=1)


def _grad_upsampling(F, p, ins, outs, og):
    g = og[0]
    if p.sample_type == "bilinear":
        return _grad_deconvolution(F, _bilinear_deconv_params(p), ins, outs, og)
    grads, c0 = [], 0
    for x, s in zip(ins, _nearest_scales(p, [x.shape for x in ins])):
        part = g
        if p.multi_input_mode == "concat" and len(ins) > 1:
            part = F.slice_axis(g, axis=1, begin=c0, end=c0 + x.shape[1])
            c0 += x.shape[1]
        grads.append(F.Pooling(part, pool_type="sum", kernel=(s, s), stride=(s, s)))
    return grads


def _upsampling_inputs(p):
    if p.sample_type == "bilinear":
        return ("data", "weight")
    return tuple(f"arg{i}" for i in range(p.num_args))


def _infer_upsampling(p, in_shapes):
    d = in_shapes[0]
    shapes = list(in_shapes)
    if d is None:
        return shapes, None
    out = (d[0], d[1], d[2] * p.scale, d[3] * p.scale)
    if p.sample_type == "bilinear":
        k = 2 * p.scale - p.scale % 2
        shapes[1] = (p.num_filter, 1, k, k)
    elif len(shapes) > 1 and p.multi_input_mode == "concat":
        if any(s is None for s in shapes):
            return shapes, None
        out = (d[0], sum(s[1] for s in shapes), out[2], out[3])
    return shapes, [out]


register(OpDef(
    "UpSampling", _upsampling, inputs=_upsampling_inputs, key_var_num_args="num_args",
    params=[Param("scale", "int"), Param("num_filter", "int", 0),
            Param("sample_type", "enum", "nearest", choices=("nearest", "bilinear")),
            Param("multi_input_mode", "enum", "concat", choices=("concat", "sum")),
            Param("num_args", "int", 1), Param("workspace", "int", 512)],
    gradient=_grad_upsampling, save=("inputs",), infer_shape=_infer_upsampling, family="nn",
    capture="gemm",
    doc="Upsampling of NCHW data by an integer scale: nearest (several inputs are scaled to "
        "the first one's output size and concatenated or summed) or bilinear (a grouped "
        "Deconvolution with the given weight, as in MXNet)."))
