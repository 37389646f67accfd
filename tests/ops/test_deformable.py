"""Deformable convolutions, DeformablePSROIPooling and Correlation.

References: Convolution (zero offsets), loop-by-loop NumPy versions of the MXNet
kernels, and values observed on MXNet 1.9.1 for fixed inputs (float64).
Gradients are checked against finite differences in tests/test_registry_gradients.py.
"""
import itertools

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd as ag
from gpunda.base import GpundaError
from gpunda.ops.vision import deformable

nd = mx.nd


def A(a):
    return nd.array(a, dtype="float64")


def _conv_inputs():
    rng = np.random.default_rng(7)
    x = rng.uniform(size=(1, 2, 4, 4))
    off = rng.uniform(-1.5, 1.5, size=(1, 8, 3, 3))
    msk = rng.uniform(size=(1, 4, 3, 3))
    w = rng.normal(size=(2, 2, 2, 2))
    b = rng.normal(size=2)
    return x, off, msk, w, b


@pytest.mark.parametrize("groups,dgroups,dilate,stride", [(1, 1, 1, 1), (2, 2, 2, 1),
                                                          (1, 2, 1, 2)])
def test_zero_offsets_are_convolution(groups, dgroups, dilate, stride):
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(2, 4, 6, 5))
    w = rng.normal(size=(6, 4 // groups, 3, 3))
    b = rng.normal(size=6)
    kw = dict(kernel=(3, 3), pad=(1, 1), num_filter=6, num_group=groups,
              dilate=(dilate, dilate), stride=(stride, stride))
    ref = nd.Convolution(A(x), A(w), A(b), **kw).asnumpy()
    ho, wo = ref.shape[2:]
    off = np.zeros((2, dgroups * 18, ho, wo))
    out = nd.contrib.DeformableConvolution(A(x), A(off), A(w), A(b),
                                           num_deformable_group=dgroups, **kw)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-12, atol=1e-12)
    ones = np.ones((2, dgroups * 9, ho, wo))
    out = nd.contrib.ModulatedDeformableConvolution(A(x), A(off), A(ones), A(w), A(b),
                                                    num_deformable_group=dgroups, **kw)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-12, atol=1e-12)


def test_integer_offsets_shift_the_input():
    # an offset of exactly +1 row reads the next row: a convolution of the shifted input
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(1, 1, 5, 5))
    w = rng.normal(size=(1, 1, 1, 1))
    off = np.zeros((1, 2, 5, 5))
    off[:, 0] = 1.0
    out = nd.contrib.DeformableConvolution(A(x), A(off), A(w), kernel=(1, 1), num_filter=1,
                                           no_bias=True).asnumpy()
    want = np.zeros((5, 5))
    want[:4] = x[0, 0, 1:] * w[0, 0, 0, 0]
    np.testing.assert_allclose(out[0, 0], want, rtol=1e-12)


def test_deformable_convolution_matches_mxnet():
    x, off, msk, w, b = _conv_inputs()
    xs = [A(x), A(off), A(w), A(b)]
    for a in xs:
        a.attach_grad()
    with ag.record():
        y = nd.contrib.DeformableConvolution(*xs, kernel=(2, 2), num_filter=2)
    y.backward(nd.ones_like(y))
    # MXNet 1.9.1, same inputs
    np.testing.assert_allclose(y.asnumpy().ravel()[[0, 5, 11, 17]],
                               [-0.5766432961417638, -1.1554752216115078,
                                -2.096748428059712, -1.8950177176251004], rtol=1e-10)
    np.testing.assert_allclose(xs[1].grad.asnumpy().ravel()[[0, 7, 30, 61]],
                               [0.0, 0.7384485559760356, -1.5604074735865665, 0.0],
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(xs[0].grad.asnumpy().ravel()[[0, 9, 20, 31]],
                               [-0.692140697429313, -0.17377386138232065,
                                0.17456775356932988, -0.04590373556036992], rtol=1e-10)
    y = nd.contrib.ModulatedDeformableConvolution(A(x), A(off), A(msk), A(w), A(b),
                                                  kernel=(2, 2), num_filter=2)
    np.testing.assert_allclose(y.asnumpy().ravel()[[0, 5, 11, 17]],
                               [-0.390963589581305, -1.091925170852453,
                                -1.6369285255362305, -1.7607189915731318], rtol=1e-10)


def _np_deformable(x, off, w, msk=None):
    """MXNet's kernels, one sample at a time (stride 1, no pad, one group)."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    ho, wo = h - kh + 1, wd - kw + 1
    out = np.zeros((n, f, ho, wo))
    for b, i, j, y0, x0 in itertools.product(range(n), range(kh), range(kw), range(ho),
                                             range(wo)):
        t = i * kw + j
        py, px = y0 + i + off[b, 2 * t, y0, x0], x0 + j + off[b, 2 * t + 1, y0, x0]
        val = np.zeros(c)
        if msk is None and 0 <= py < h and 0 <= px < wd:
            yl, xl = int(np.floor(py)), int(np.floor(px))
            yh, xh = min(yl + 1, h - 1), min(xl + 1, wd - 1)
            ly = 0 if yl >= h - 1 else py - yl
            lx = 0 if xl >= wd - 1 else px - xl
            val = ((1 - ly) * (1 - lx) * x[b, :, yl, xl] + (1 - ly) * lx * x[b, :, yl, xh]
                   + ly * (1 - lx) * x[b, :, yh, xl] + ly * lx * x[b, :, yh, xh])
        elif msk is not None and -1 < py < h and -1 < px < wd:
            yl, xl = int(np.floor(py)), int(np.floor(px))
            ly, lx = py - yl, px - xl

            def at(yy, xx):
                return x[b, :, yy, xx] if 0 <= yy < h and 0 <= xx < wd else np.zeros(c)
            val = ((1 - ly) * (1 - lx) * at(yl, xl) + (1 - ly) * lx * at(yl, xl + 1)
                   + ly * (1 - lx) * at(yl + 1, xl) + ly * lx * at(yl + 1, xl + 1))
            val = val * msk[b, t, y0, x0]
        out[b, :, y0, x0] += w[:, :, i, j] @ val
    return out


def test_against_numpy_loops_with_border_samples():
    rng = np.random.default_rng(3)
    x = rng.uniform(size=(2, 3, 4, 5))
    off = rng.uniform(-2.5, 2.5, size=(2, 2 * 4, 3, 4))    # many samples leave the map
    w = rng.normal(size=(2, 3, 2, 2))
    msk = rng.uniform(size=(2, 4, 3, 4))
    got = nd.contrib.DeformableConvolution(A(x), A(off), A(w), kernel=(2, 2), num_filter=2,
                                           no_bias=True).asnumpy()
    np.testing.assert_allclose(got, _np_deformable(x, off, w), rtol=1e-12, atol=1e-12)
    got = nd.contrib.ModulatedDeformableConvolution(A(x), A(off), A(msk), A(w), kernel=(2, 2),
                                                    num_filter=2, no_bias=True).asnumpy()
    np.testing.assert_allclose(got, _np_deformable(x, off, w, msk), rtol=1e-12, atol=1e-12)


def test_chunking_gives_the_same_result(monkeypatch):
    rng = np.random.default_rng(4)
    x, w = rng.uniform(size=(5, 2, 4, 4)), rng.normal(size=(3, 2, 3, 3))
    off = rng.uniform(-1, 1, size=(5, 18, 2, 2))
    args = [A(x), A(off), A(w)]

    def run():
        for a in args:
            a.attach_grad()
        with ag.record():
            y = nd.contrib.DeformableConvolution(*args, kernel=(3, 3), num_filter=3,
                                                 no_bias=True)
        y.backward(nd.array(np.arange(y.size).reshape(y.shape) % 3, dtype="float64"))
        return [y.asnumpy()] + [a.grad.asnumpy() for a in args]

    whole = run()
    monkeypatch.setattr(deformable, "_CHUNK_ELEMS", 100)    # one image per chunk
    for a, b in zip(run(), whole):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_symbol_infer_shape_and_names():
    data = mx.sym.var("data")
    s = mx.sym.contrib.DeformableConvolution(data=data, kernel=(3, 3), num_filter=4, pad=(1, 1),
                                             num_deformable_group=2, name="dc")
    assert s.list_arguments() == ["data", "dc_offset", "dc_weight", "dc_bias"]
    args, outs, _ = s.infer_shape(data=(2, 6, 7, 8))
    assert args == [(2, 6, 7, 8), (2, 36, 7, 8), (4, 6, 3, 3), (4,)]
    assert outs == [(2, 4, 7, 8)]
    s = mx.sym.contrib.ModulatedDeformableConvolution(data=data, kernel=(3, 3), num_filter=4,
                                                      no_bias=True, name="m")
    assert s.list_arguments() == ["data", "m_offset", "m_mask", "m_weight"]
    assert s.infer_shape(data=(1, 2, 5, 5))[0][2] == (1, 9, 3, 3)


def test_bad_inputs_raise():
    x, w = nd.ones((1, 4, 5, 5)), nd.ones((2, 4, 3, 3))
    with pytest.raises(GpundaError, match="offset"):
        nd.contrib.DeformableConvolution(x, nd.ones((1, 17, 3, 3)), w, kernel=(3, 3),
                                         num_filter=2, no_bias=True)
    with pytest.raises(GpundaError, match="num_deformable_group"):
        nd.contrib.DeformableConvolution(x, nd.ones((1, 54, 3, 3)), w, kernel=(3, 3),
                                         num_filter=2, no_bias=True, num_deformable_group=3)


# --------------------------------------------------------------------------- PSROI


# MXNet 1.9.1 on the inputs of test_deformable_psroi_matches_mxnet
_PSROI_Y = [0.3805224677499123, 0.7117839818583116, 0.5114033778363346, 0.659383885172235]
_PSROI_DT = [0.19734711600742094, 0.005639312074226219, 0.07661176541828321,
             0.21163538601287862]
_PSROI_DX_SUM = 16.0


def test_deformable_psroi_matches_mxnet():
    rng = np.random.default_rng(5)
    x = rng.uniform(size=(1, 8, 6, 7))
    rois = np.array([[0, 1.4, 2.5, 9, 8], [0, 0, 0, 12, 11]])
    trans = rng.uniform(-1, 1, size=(2, 4, 2, 2))
    args = [A(x), A(rois), A(trans)]
    for a in args:
        a.attach_grad()
    with ag.record():
        y = nd.contrib.DeformablePSROIPooling(*args, spatial_scale=0.5, output_dim=2,
                                              group_size=2, pooled_size=2, sample_per_part=2,
                                              trans_std=0.2)
    y.backward(nd.ones_like(y))
    # MXNet 1.9.1, same inputs
    np.testing.assert_allclose(y.asnumpy().ravel()[[0, 3, 9, 14]], _PSROI_Y, rtol=1e-10)
    np.testing.assert_allclose(args[2].grad.asnumpy().ravel()[[0, 5, 11, 15]], _PSROI_DT,
                               rtol=1e-10, atol=1e-12)
    assert float(np.abs(args[1].grad.asnumpy()).max()) == 0.0
    np.testing.assert_allclose(args[0].grad.asnumpy().sum(), _PSROI_DX_SUM, rtol=1e-10)


def test_deformable_psroi_without_trans_is_averaged_sampling():
    # one bin, one sample at the ROI's top-left corner + half a sub-bin: a bilinear read
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    rois = np.array([[0, 1, 1, 2, 2]])
    y = nd.contrib.DeformablePSROIPooling(A(x), A(rois), spatial_scale=1.0, output_dim=1,
                                          group_size=1, pooled_size=1, sample_per_part=1,
                                          no_trans=True)
    # start (1 - 0.5, 1 - 0.5) = (0.5, 0.5): the mean of x[0:2, 0:2]
    np.testing.assert_allclose(y.asnumpy().ravel(), [np.mean([0, 1, 4, 5])])


# --------------------------------------------------------------------------- Correlation


def _np_correlation(a, b, k, md, s1, s2, pad, mult):
    n, c, h, w = a.shape
    pa = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    pb = np.pad(b, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    border = md + (k - 1) // 2
    th = int(np.ceil((h + 2 * pad - 2 * border) / s1))
    tw = int(np.ceil((w + 2 * pad - 2 * border) / s1))
    r = md // s2
    out = np.zeros((n, (2 * r + 1) ** 2, th, tw))
    for i, j, ch in itertools.product(range(th), range(tw), range((2 * r + 1) ** 2)):
        y1, x1 = i * s1 + md, j * s1 + md
        y2 = y1 + (ch // (2 * r + 1) - r) * s2
        x2 = x1 + (ch % (2 * r + 1) - r) * s2
        p1 = pa[:, :, y1:y1 + k, x1:x1 + k]
        p2 = pb[:, :, y2:y2 + k, x2:x2 + k]
        v = p1 * p2 if mult else np.abs(p1 - p2)
        out[:, ch, i, j] = v.sum(axis=(1, 2, 3)) / (k * k * c)
    return out


@pytest.mark.parametrize("k,md,s1,s2,pad,mult", [(1, 2, 1, 1, 2, True), (3, 2, 2, 2, 1, False),
                                                 (3, 1, 3, 1, 2, True), (5, 0, 1, 1, 2, False)])
def test_correlation_against_numpy(k, md, s1, s2, pad, mult):
    rng = np.random.default_rng(6)
    a, b = rng.uniform(size=(2, 3, 6, 7)), rng.uniform(size=(2, 3, 6, 7))
    got = nd.Correlation(A(a), A(b), kernel_size=k, max_displacement=md, stride1=s1,
                         stride2=s2, pad_size=pad, is_multiply=mult).asnumpy()
    np.testing.assert_allclose(got, _np_correlation(a, b, k, md, s1, s2, pad, mult),
                               rtol=1e-12, atol=1e-14)


def test_correlation_matches_mxnet_and_hidden_outputs():
    rng = np.random.default_rng(8)
    a, b = rng.uniform(size=(1, 2, 5, 6)), rng.uniform(size=(1, 2, 5, 6))
    kw = dict(kernel_size=3, max_displacement=2, stride1=2, stride2=2, pad_size=1)
    y = nd.Correlation(A(a), A(b), is_multiply=True, **kw)
    assert y.shape == (1, 9, 1, 1)
    np.testing.assert_allclose(y.asnumpy().ravel()[[0, 3, 5, 8]],
                               [0.10579980341650329, 0.14040592011552738,
                                0.2191698474772573, 0.10392677091141647], rtol=1e-10)
    y = nd.Correlation(A(a), A(b), is_multiply=False, **kw)
    np.testing.assert_allclose(y.asnumpy().ravel()[[0, 3, 5, 8]],
                               [0.33756803685525383, 0.40746050444486503,
                                0.3597553901622351, 0.4084571863660341], rtol=1e-10)
    s = mx.sym.Correlation(mx.sym.var("a"), mx.sym.var("b"), **kw)
    assert s.list_outputs() == [s.name + "_output"]
    # MXNet lists visible outputs only: get_internals() -> ['a', 'b', 'correlation0_output'];
    # the hidden tmp1 output is still inferred (reached here through every output)
    assert s.get_internals().list_outputs() == ["a", "b", s.name + "_output"]
    _, outs, _ = s._all_internals()[s.name + "_tmp1"].infer_shape(a=(1, 2, 5, 6),
                                                                  b=(1, 2, 5, 6))
    assert outs == [(1, 7, 8, 2)]


def test_correlation_float16_accumulates_in_float32():
    rng = np.random.default_rng(9)
    a, b = rng.uniform(size=(1, 64, 4, 4)), rng.uniform(size=(1, 64, 4, 4))
    got = nd.Correlation(nd.array(a, dtype="float16"), nd.array(b, dtype="float16"),
                         max_displacement=1, pad_size=1)
    assert got.dtype == np.float16
    want = _np_correlation(a.astype(np.float16).astype(np.float64),
                           b.astype(np.float16).astype(np.float64), 1, 1, 1, 1, 1, True)
    np.testing.assert_allclose(got.asnumpy().astype(np.float64), want, rtol=2e-3)


def test_correlation_errors():
    x = nd.ones((1, 1, 28, 28))
    with pytest.raises(GpundaError, match="don't fit"):
        nd.Correlation(x, x, kernel_size=28)
    with pytest.raises(GpundaError, match="odd"):
        nd.Correlation(x, x, kernel_size=4)
    with pytest.raises(GpundaError, match="same shape"):
        nd.Correlation(x, nd.ones((1, 1, 27, 28)))
