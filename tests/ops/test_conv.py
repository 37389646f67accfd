"""Convolution, Deconvolution, Pooling, UpSampling: naive-loop NumPy references and
float64 central finite differences (first and second order)."""
import json
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda.test_utils import check_numeric_gradient
from gpunda.base import GpundaError

nd = mx.nd
F64 = "float64"


def _nd(a):
    return nd.array(np.asarray(a, dtype=np.float64), dtype=F64)


def _fd_check(fn, arrays, wrt, train=False, eps=1e-6, rtol=1e-5, atol=1e-6):
    """Autograd gradients of ``fn`` against central differences, in float64."""
    check_numeric_gradient(fn, [np.array(a, dtype=np.float64) for a in arrays], grad_nodes=wrt,
                           numeric_eps=2 * eps, rtol=rtol, atol=atol, use_forward_train=train,
                           dtype=np.float64)


def _second_order(fn, arrays, i, j, rng, eps=1e-6, rtol=1e-5, atol=1e-6):
    """d/d(input j) of <d sum(fn*h)/d(input i), v> with create_graph, against differences."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    h = rng.standard_normal(fn(*[_nd(a) for a in arrays]).shape)
    v = rng.standard_normal(arrays[i].shape)

    def inner(arrs, create):
        xs = [_nd(a) for a in arrs]
        for x in xs:
            x.attach_grad()
        with mx.autograd.record():
            y = fn(*xs)
            (gi,) = mx.autograd.grad(y, [xs[i]], head_grads=_nd(h), create_graph=create)
            s = (gi * _nd(v)).sum()
        return s, xs
    s, xs = inner(arrays, True)
    s.backward()
    num = np.zeros_like(arrays[j])
    for idx in np.ndindex(arrays[j].shape):
        ap = [a.copy() for a in arrays]
        am = [a.copy() for a in arrays]
        ap[j][idx] += eps
        am[j][idx] -= eps
        num[idx] = (inner(ap, False)[0].asscalar() - inner(am, False)[0].asscalar()) / (2 * eps)
    np.testing.assert_allclose(xs[j].grad.asnumpy(), num, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------
# naive references (loops over every output position; tiny shapes only)


def ref_conv(x, w, b, stride, pad, dilate, groups):
    N, C = x.shape[:2]
    Fn = w.shape[0]
    k = w.shape[2:]
    nsp = len(k)
    xp_ = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out_sp = [(x.shape[2 + i] + 2 * pad[i] - dilate[i] * (k[i] - 1) - 1) // stride[i] + 1
              for i in range(nsp)]
    y = np.zeros((N, Fn) + tuple(out_sp))
    cg, fg = C // groups, Fn // groups
    for n in range(N):
        for f in range(Fn):
            g = f // fg
            for o in np.ndindex(*out_sp):
                acc = 0.0 if b is None else b[f]
                for c in range(cg):
                    for kk in np.ndindex(*k):
                        pos = tuple(o[i] * stride[i] + kk[i] * dilate[i] for i in range(nsp))
                        acc += xp_[(n, g * cg + c) + pos] * w[(f, c) + kk]
                y[(n, f) + o] = acc
    return y


def ref_deconv(x, w, stride, pad, dilate, adj, groups, num_filter):
    N, C = x.shape[:2]
    k = w.shape[2:]
    nsp = len(k)
    out_sp = [stride[i] * (x.shape[2 + i] - 1) + dilate[i] * (k[i] - 1) + 1 - 2 * pad[i] + adj[i]
              for i in range(nsp)]
    y = np.zeros((N, num_filter) + tuple(out_sp))
    cg, fg = C // groups, num_filter // groups
    for n in range(N):
        for c in range(C):
            g = c // cg
            for i_ in np.ndindex(*x.shape[2:]):
                for kk in np.ndindex(*k):
                    o = tuple(i_[d] * stride[d] + kk[d] * dilate[d] - pad[d] for d in range(nsp))
                    if all(0 <= o[d] < out_sp[d] for d in range(nsp)):
                        for f in range(fg):
                            y[(n, g * fg + f) + o] += x[(n, c) + i_] * w[(c, f) + kk]
    return y


def ref_pool(x, kernel, stride, pad, kind, convention="valid", include_pad=True):
    """MXNet's pooling: windows start at o*s - pad; avg divisor clipped to [-pad, S+pad)."""
    N, C = x.shape[:2]
    sp = x.shape[2:]
    nsp = len(sp)
    out = []
    for i in range(nsp):
        span = sp[i] + 2 * pad[i] - kernel[i]
        out.append((int(np.ceil(span / stride[i])) if convention == "full" else span // stride[i]) + 1)
    y = np.zeros((N, C) + tuple(out))
    for o in np.ndindex(*out):
        lo, hi, size = [], [], 1
        for i in range(nsp):
            s = o[i] * stride[i] - pad[i]
            e = min(s + kernel[i], sp[i] + pad[i])
            size *= e - s
            lo.append(max(s, 0))
            hi.append(min(e, sp[i]))
        region = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))]
        region = region.reshape(N, C, -1)
        if kind == "max":
            v = region.max(-1)
        elif kind == "sum":
            v = region.sum(-1)
        else:
            if not include_pad:
                size = region.shape[-1]
            v = region.sum(-1) / size
        y[(slice(None), slice(None)) + o] = v
    return y


# ---------------------------------------------------------------------------
# Convolution


@pytest.mark.parametrize("nsp,stride,pad,dilate,groups", [
    (2, (1, 1), (1, 1), (1, 1), 1),
    (2, (2, 1), (1, 0), (1, 2), 2),
    (1, (2,), (1,), (2,), 1),
    (3, (1, 2, 1), (0, 1, 1), (1, 1, 1), 2),
])
def test_convolution_forward_matches_naive(rng, nsp, stride, pad, dilate, groups):
    sp = {1: (7,), 2: (4, 5), 3: (3, 4, 4)}[nsp]
    k = {1: (3,), 2: (3, 2), 3: (2, 2, 3)}[nsp]
    x = rng.standard_normal((2, 4) + sp)
    w = rng.standard_normal((6, 4 // groups) + k)
    b = rng.standard_normal(6)
    y = nd.Convolution(_nd(x), _nd(w), _nd(b), kernel=k, stride=stride, pad=pad, dilate=dilate,
                       num_filter=6, num_group=groups)
    np.testing.assert_allclose(y.asnumpy(), ref_conv(x, w, b, stride, pad, dilate, groups),
                               rtol=1e-10, atol=1e-10)


def test_convolution_string_params_and_float32(rng):
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    y = nd.Convolution(nd.array(x), nd.array(w), kernel="(3, 3)", stride="(2, 2)", pad="(1, 1)",
                       num_filter="2", no_bias="True", cudnn_tune="off", workspace="512",
                       layout="NCHW")
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.asnumpy(), ref_conv(x, w, None, (2, 2), (1, 1), (1, 1), 1),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("stride,pad,dilate,groups,no_bias", [
    ((1, 1), (1, 1), (1, 1), 1, False),
    ((2, 2), (0, 1), (2, 1), 2, True),
])
def test_convolution_gradient(rng, stride, pad, dilate, groups, no_bias):
    x = rng.standard_normal((1, 2, 4, 4))
    w = rng.standard_normal((4, 2 // groups, 2, 3))
    arrays = [x, w] if no_bias else [x, w, rng.standard_normal(4)]
    kw = dict(kernel=(2, 3), stride=stride, pad=pad, dilate=dilate, num_filter=4,
              num_group=groups, no_bias=no_bias)
    _fd_check(lambda *a: nd.Convolution(*a, **kw), arrays, range(len(arrays)))


def test_convolution_1d_gradient(rng):
    kw = dict(kernel=(3,), stride=(2,), pad=(1,), num_filter=3)
    arrays = [rng.standard_normal((2, 2, 7)), rng.standard_normal((3, 2, 3)), rng.standard_normal(3)]
    _fd_check(lambda *a: nd.Convolution(*a, **kw), arrays, [0, 1, 2])


def test_convolution_second_order(rng):
    """d/dw of <dL/dx, v> through the hidden _conv_data_grad rule, against differences."""
    kw = dict(kernel=(2, 2), stride=(2, 1), pad=(1, 0), num_filter=3, no_bias=True)
    x = rng.standard_normal((1, 2, 4, 4))
    w = rng.standard_normal((3, 2, 2, 2))
    y0 = nd.Convolution(_nd(x), _nd(w), **kw)
    h = rng.standard_normal(y0.shape)
    v = rng.standard_normal(x.shape)

    def first(wv, create):
        xa, wa = _nd(x), _nd(wv)
        xa.attach_grad()
        wa.attach_grad()
        with mx.autograd.record():
            y = nd.Convolution(xa, wa, **kw)
            (dx,) = mx.autograd.grad(y, [xa], head_grads=_nd(h), create_graph=create)
            s = (dx * _nd(v)).sum()
        return s, wa

    s, wa = first(w, True)
    s.backward()
    num = np.zeros_like(w)
    eps = 1e-6
    for idx in np.ndindex(w.shape):
        wp, wm = w.copy(), w.copy()
        wp[idx] += eps
        wm[idx] -= eps
        num[idx] = (first(wp, False)[0].asscalar() - first(wm, False)[0].asscalar()) / (2 * eps)
    np.testing.assert_allclose(wa.grad.asnumpy(), num, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op,i,j", [("Convolution", 1, 0), ("Convolution", 1, 1),
                                   ("Deconvolution", 0, 1), ("Deconvolution", 1, 0)])
def test_conv_deconv_second_order_paths(rng, op, i, j):
    """Exercises _conv_weight_grad's and _conv_data_grad's own gradient rules."""
    kw = dict(kernel=(2, 2), stride=(2, 1), pad=(1, 0), num_filter=2, no_bias=True)
    x = rng.standard_normal((1, 2, 3, 3))
    w = rng.standard_normal((2, 2, 2, 2))
    f = getattr(nd, op)
    # a nonlinearity makes the second derivative in the same input non-zero
    _second_order(lambda a, b: nd.tanh(f(a, b, **kw)), [x, w], i, j, rng)


def test_convolution_bad_inputs():
    x = nd.ones((1, 3, 5, 5))
    with pytest.raises(GpundaError, match="Convolution.*weight"):
        nd.Convolution(x, nd.ones((2, 2, 3, 3)), kernel=(3, 3), num_filter=2, no_bias=True)
    with pytest.raises(GpundaError, match="Convolution.*layout"):
        nd.Convolution(x, nd.ones((2, 3, 3, 3)), kernel=(3, 3), num_filter=2, no_bias=True,
                       layout="NHWC")
    with pytest.raises(GpundaError, match="Convolution.*num_group"):
        nd.Convolution(x, nd.ones((2, 1, 3, 3)), kernel=(3, 3), num_filter=2, num_group=2,
                       no_bias=True)
    with pytest.raises(GpundaError, match="Convolution.*kernel"):
        nd.Convolution(x, nd.ones((2, 3, 7, 7)), kernel=(7, 7), num_filter=2, no_bias=True)
    with pytest.raises(GpundaError, match="Convolution.*num_filter"):
        nd.Convolution(x, nd.ones((2, 3, 3, 3)), kernel=(3, 3), no_bias=True)


def test_convolution_infer_shape():
    op = mx.ops.get_op("Convolution")
    p = op.parse_params({"kernel": "(3, 3)", "num_filter": "8", "stride": "(2, 2)", "pad": "(1, 1)"})
    shapes, outs = op.infer_shape(p, [(2, 3, 16, 16), None, None])
    assert shapes == [(2, 3, 16, 16), (8, 3, 3, 3), (8,)]
    assert outs == [(2, 8, 8, 8)]


# ---------------------------------------------------------------------------
# Deconvolution


@pytest.mark.parametrize("nsp,stride,pad,adj,dilate,groups", [
    (2, (2, 2), (1, 0), (1, 0), (1, 1), 1),
    (2, (1, 2), (0, 1), (0, 1), (2, 1), 2),
    (1, (3,), (1,), (2,), (1,), 1),
])
def test_deconvolution_forward_matches_naive(rng, nsp, stride, pad, adj, dilate, groups):
    sp = (3, 4) if nsp == 2 else (4,)
    k = (3, 2) if nsp == 2 else (3,)
    x = rng.standard_normal((2, 4) + sp)
    w = rng.standard_normal((4, 6 // groups) + k)
    y = nd.Deconvolution(_nd(x), _nd(w), kernel=k, stride=stride, pad=pad, adj=adj, dilate=dilate,
                         num_filter=6, num_group=groups)
    np.testing.assert_allclose(y.asnumpy(), ref_deconv(x, w, stride, pad, dilate, adj, groups, 6),
                               rtol=1e-10, atol=1e-10)


def test_deconvolution_target_shape_and_bias(rng):
    x = rng.standard_normal((1, 2, 3, 3))
    w = rng.standard_normal((2, 3, 3, 3))
    b = rng.standard_normal(3)
    y = nd.Deconvolution(_nd(x), _nd(w), _nd(b), kernel=(3, 3), stride=(2, 2), num_filter=3,
                         target_shape=(6, 6), no_bias=False)
    assert y.shape == (1, 3, 6, 6)
    # MXNet: total = s*(in-1)+k - target = 1 -> adj 1, pad 1
    ref = ref_deconv(x, w, (2, 2), (1, 1), (1, 1), (1, 1), 1, 3) + b[None, :, None, None]
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-10, atol=1e-10)


def test_deconvolution_gradient(rng):
    kw = dict(kernel=(2, 3), stride=(2, 1), pad=(0, 1), adj=(1, 0), num_filter=4, num_group=2,
              no_bias=False)
    arrays = [rng.standard_normal((2, 2, 3, 3)), rng.standard_normal((2, 2, 2, 3)),
              rng.standard_normal(4)]
    _fd_check(lambda *a: nd.Deconvolution(*a, **kw), arrays, [0, 1, 2])


def test_deconvolution_infer_shape():
    op = mx.ops.get_op("Deconvolution")
    p = op.parse_params({"kernel": "(4, 4)", "num_filter": "5", "stride": "(2, 2)", "pad": "(1, 1)"})
    shapes, outs = op.infer_shape(p, [(2, 3, 8, 8), None])
    assert shapes[1] == (3, 5, 4, 4)
    assert outs == [(2, 5, 16, 16)]


# ---------------------------------------------------------------------------
# Pooling


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
@pytest.mark.parametrize("convention,pad,include", [("valid", (0, 0), True), ("full", (1, 0), True),
                                                    ("valid", (1, 1), False), ("full", (1, 1), False)])
def test_pooling_2d_matches_naive(rng, kind, convention, pad, include):
    x = rng.standard_normal((2, 3, 7, 6))
    y = nd.Pooling(_nd(x), kernel=(3, 2), stride=(2, 2), pad=pad, pool_type=kind,
                   pooling_convention=convention, count_include_pad=include)
    ref = ref_pool(x, (3, 2), (2, 2), pad, kind, convention, include)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape,kernel,stride,pad", [((2, 2, 9), (3,), (2,), (1,)),
                                                     ((1, 2, 4, 5, 4), (2, 2, 2), (2, 1, 2), (0, 1, 0))])
def test_pooling_1d_3d(rng, shape, kernel, stride, pad):
    x = rng.standard_normal(shape)
    for kind in ("max", "avg"):
        y = nd.Pooling(_nd(x), kernel=kernel, stride=stride, pad=pad, pool_type=kind)
        np.testing.assert_allclose(y.asnumpy(), ref_pool(x, kernel, stride, pad, kind), rtol=1e-12)


def test_global_pooling(rng):
    x = rng.standard_normal((2, 3, 4, 5))
    np.testing.assert_allclose(nd.Pooling(_nd(x), global_pool=True, pool_type="avg").asnumpy(),
                               x.mean(axis=(2, 3), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(nd.Pooling(_nd(x), kernel=(1, 1), global_pool=True).asnumpy(),
                               x.max(axis=(2, 3), keepdims=True))


@pytest.mark.parametrize("kind,convention,pad", [("max", "valid", (0, 0)), ("max", "full", (1, 1)),
                                                 ("avg", "full", (1, 0)), ("sum", "valid", (1, 1))])
def test_pooling_gradient(rng, kind, convention, pad):
    kw = dict(kernel=(2, 3), stride=(2, 1), pad=pad, pool_type=kind, pooling_convention=convention)
    _fd_check(lambda x: nd.Pooling(x, **kw), [rng.standard_normal((2, 2, 6, 5))], [0])


def test_max_pooling_gradient_goes_to_first_max():
    x = _nd(np.array([[[[1.0, 3.0], [3.0, 0.0]]]]))
    x.attach_grad()
    with mx.autograd.record():
        y = nd.Pooling(x, kernel=(2, 2), pool_type="max")
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[[[0, 1], [0, 0]]]])


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_double_backward_is_adjoint(rng, kind):
    """d/dh <dx(h), v> is Pooling(v) for avg and the argmax pick for max."""
    kw = dict(kernel=(2, 2), stride=(1, 2), pool_type=kind, pad=(1, 0), pooling_convention="full")
    x = _nd(rng.standard_normal((1, 2, 4, 4)))
    x.attach_grad()
    y0 = nd.Pooling(x, **kw)
    h = _nd(rng.standard_normal(y0.shape))
    h.attach_grad()
    v = rng.standard_normal(x.shape)
    with mx.autograd.record():
        y = nd.Pooling(x, **kw)
        (dx,) = mx.autograd.grad(y, [x], head_grads=h, create_graph=True)
        s = (dx * _nd(v)).sum()
    s.backward()
    if kind == "avg":
        expect = nd.Pooling(_nd(v), **kw).asnumpy()
    else:
        # route is linear in h: <route(h), v> = <h, pick(v)>, checked by differences in h
        expect = np.zeros(h.shape)
        for idx in np.ndindex(h.shape):
            e = np.zeros(h.shape)
            e[idx] = 1.0
            xg = _nd(x.asnumpy())
            xg.attach_grad()
            with mx.autograd.record():
                yy = nd.Pooling(xg, **kw)
            yy.backward(_nd(e))
            expect[idx] = float((xg.grad.asnumpy() * v).sum())
    np.testing.assert_allclose(h.grad.asnumpy(), expect, rtol=1e-10, atol=1e-12)


def test_pooling_bad_params():
    x = nd.ones((1, 1, 4, 4))
    with pytest.raises(GpundaError, match="Pooling.*pool_type"):
        nd.Pooling(x, kernel=(2, 2), pool_type="median")
    with pytest.raises(GpundaError, match="Pooling.*kernel"):
        nd.Pooling(x, kernel=(2,))
    with pytest.raises(GpundaError, match="Pooling.*larger"):
        nd.Pooling(x, kernel=(5, 5))


@pytest.mark.mxnet_fixtures
def test_cnn_fixture_attrs_are_accepted(rng):
    path = os.path.join(os.environ["GPUNDA_MXNET_FIXTURES"], "cnn-symbol.json")
    with open(path) as f:
        nodes = json.load(f)["nodes"]
    attrs = {}
    for n in nodes:     # the first Convolution (stride 1) and first Pooling
        if n["op"] in ("Convolution", "Pooling"):
            attrs.setdefault(n["op"], n.get("attrs", {}))
    x = nd.array(rng.standard_normal((2, 3, 8, 8)).astype(np.float32))
    ca = attrs["Convolution"]
    w = nd.ones((int(ca["num_filter"]), 3, 3, 3))
    b = nd.zeros((int(ca["num_filter"]),))
    y = nd.Convolution(x, w, b, **ca)
    assert y.shape == (2, int(ca["num_filter"]), 8, 8)
    assert nd.Pooling(y, **attrs["Pooling"]).shape[2:] == (4, 4)


@pytest.mark.parametrize("pv", [1, 2, 3])
def test_lp_pooling(pv, rng):
    x = rng.uniform(0.5, 1.5, (2, 2, 4, 6))
    kw = dict(kernel=(2, 3), stride=(2, 3), pool_type="lp", p_value=pv)
    y = nd.Pooling(_nd(x), **kw)
    want = (x.reshape(2, 2, 2, 2, 2, 3) ** pv).sum(axis=(3, 5)) ** (1 / pv)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-12)
    _fd_check(lambda a: nd.Pooling(a, **kw), [x], [0])
    _second_order(lambda a: nd.Pooling(a, **kw), [x], 0, 0, rng)
    with pytest.raises(GpundaError, match="p_value 1, 2 or 3.*p_value=4"):
        nd.Pooling(_nd(x), kernel=(2, 2), pool_type="lp", p_value=4)


# ---------------------------------------------------------------------------
# UpSampling


def test_upsampling_nearest_and_gradient(rng):
    x = rng.standard_normal((1, 2, 2, 3))
    y = nd.UpSampling(_nd(x), scale=2, sample_type="nearest")
    np.testing.assert_array_equal(y.asnumpy(), x.repeat(2, axis=2).repeat(2, axis=3))
    _fd_check(lambda a: nd.UpSampling(a, scale=3, sample_type="nearest"), [x], [0])
    with pytest.raises(GpundaError, match="UpSampling.*bilinear.*data and weight"):
        nd.UpSampling(_nd(x), scale=2, sample_type="bilinear", num_filter=2)


@pytest.mark.parametrize("mode", ["concat", "sum"])
def test_upsampling_nearest_several_inputs(mode, rng):
    # each input is scaled to the first one's output size (2x of 2x3 -> 4x6)
    a, b = rng.standard_normal((1, 2, 2, 3)), rng.standard_normal((1, 2, 4, 6))
    y = nd.UpSampling(_nd(a), _nd(b), scale=2, num_args=2, multi_input_mode=mode)
    ua, ub = a.repeat(2, axis=2).repeat(2, axis=3), b
    want = np.concatenate([ua, ub], axis=1) if mode == "concat" else ua + ub
    np.testing.assert_array_equal(y.asnumpy(), want)
    _fd_check(lambda p, q: nd.UpSampling(p, q, scale=2, num_args=2, multi_input_mode=mode),
              [a, b], [0, 1])
    with pytest.raises(GpundaError, match="does not scale by a whole factor"):
        nd.UpSampling(_nd(a), _nd(rng.standard_normal((1, 2, 3, 3))), scale=2, num_args=2)


def _ref_bilinear_upsampling(x, w, s):
    """MXNet's bilinear UpSampling as the transposed convolution it is, by loops."""
    k, pad = 2 * s - s % 2, int(np.ceil((s - 1) / 2))
    N, C, H, W = x.shape
    out = np.zeros((N, C, H * s, W * s))
    for n, c, iy, ix, ky, kx in np.ndindex(N, C, H, W, k, k):
        oy, ox = iy * s - pad + ky, ix * s - pad + kx
        if 0 <= oy < H * s and 0 <= ox < W * s:
            out[n, c, oy, ox] += x[n, c, iy, ix] * w[c, 0, ky, kx]
    return out


@pytest.mark.parametrize("scale", [2, 3])
def test_upsampling_bilinear_is_mxnets_deconvolution(scale, rng):
    x = rng.standard_normal((2, 3, 3, 2))
    k = 2 * scale - scale % 2
    w = rng.standard_normal((3, 1, k, k))
    y = nd.UpSampling(_nd(x), _nd(w), scale=scale, sample_type="bilinear", num_filter=3)
    np.testing.assert_allclose(y.asnumpy(), _ref_bilinear_upsampling(x, w, scale), rtol=1e-12,
                               atol=1e-12)
    _fd_check(lambda a, b: nd.UpSampling(a, b, scale=scale, sample_type="bilinear",
                                         num_filter=3), [x, w], [0, 1])
    up = mx.sym.UpSampling(mx.sym.var("data"), mx.sym.var("weight"), scale=scale,
                           sample_type="bilinear", num_filter=3)
    arg, out, _ = up.infer_shape(data=(2, 3, 3, 2))
    assert arg == [(2, 3, 3, 2), (3, 1, k, k)] and out == [(2, 3, 3 * scale, 2 * scale)]


@pytest.mark.parametrize("layout,shape,kernel", [("NWC", (2, 9, 3), (3,)),
                                                 ("NHWC", (2, 7, 6, 3), (3, 2)),
                                                 ("NDHWC", (1, 4, 5, 4, 2), (2, 2, 2))])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_channels_last_matches_naive(rng, layout, shape, kernel, kind):
    # the naive reference pools channels-first data; channels-last moves axis 1 to the end
    x = rng.standard_normal(shape)
    stride, pad = (2,) * len(kernel), (1,) + (0,) * (len(kernel) - 1)
    y = nd.Pooling(_nd(x), kernel=kernel, stride=stride, pad=pad, pool_type=kind, layout=layout)
    ref = ref_pool(np.moveaxis(x, -1, 1), kernel, stride, pad, kind)
    np.testing.assert_allclose(y.asnumpy(), np.moveaxis(ref, 1, -1), rtol=1e-12)
    s = mx.sym.Pooling(mx.sym.var("d"), kernel=kernel, stride=stride, pad=pad, layout=layout)
    assert s.infer_shape(d=shape)[1] == [y.shape]


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
def test_pooling_channels_last_gradient(rng, kind):
    kw = dict(kernel=(2, 3), stride=(2, 1), pad=(1, 0), pool_type=kind, layout="NHWC")
    _fd_check(lambda x: nd.Pooling(x, **kw), [rng.standard_normal((2, 6, 5, 2))], [0])


def test_pooling_layout_must_match_rank():
    with pytest.raises(GpundaError, match="layout"):
        nd.Pooling(nd.ones((1, 4, 4, 2)), kernel=(2, 2), layout="NWC")


def test_pooling_same_convention_1d():
    # MXNet 1.9.1: ceil(width / stride) windows, pad refused; [1, 3, 5, 7, 9] for this input
    x = mx.nd.array(np.arange(10.0).reshape(1, 1, 10))
    out = mx.nd.Pooling(x, kernel=2, stride=2, pad=(0, 0, 0), pool_type="max",
                        pooling_convention="same")
    np.testing.assert_array_equal(out.asnumpy(), [[[1, 3, 5, 7, 9]]])
    odd = mx.nd.Pooling(mx.nd.array(np.arange(9.0).reshape(1, 1, 9)), kernel=2, stride=2,
                        pool_type="max", pooling_convention="same")
    np.testing.assert_array_equal(odd.asnumpy(), [[[1, 3, 5, 7, 8]]])    # last window clipped
    with pytest.raises(GpundaError, match="disables the use of pad"):
        mx.nd.Pooling(x, kernel=2, stride=2, pad=2, pool_type="max", pooling_convention="same")
    with pytest.raises(GpundaError, match="1-D"):
        mx.nd.Pooling(mx.nd.ones((1, 1, 4, 4)), kernel=(2, 2), pooling_convention="same")
