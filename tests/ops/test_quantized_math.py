"""Quantized elemwise add/mul, quantize_asym, calibrate_entropy (gpunda/ops/quantization/math.py),
mx.contrib.quant's threshold search, the contrib backward_* ops and the names MXNet's
nd/sym.contrib modules re-export; against NumPy formulas and MXNet 1.9.1's values."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import nd
from gpunda.base import GpundaError

c = nd.contrib
_A = nd.array([[-100, 20, 127], [5, -128, 64]], dtype="int8")
_B = nd.array([[250, 3, 128], [0, 17, 255]], dtype="uint8")


def R(v):
    return nd.array([v], dtype="float32")


def test_elemwise_add_int32_over_the_summed_range():
    out, lo, hi = c.quantized_elemwise_add(_A, _A, R(-1.5), R(0.5), R(-0.25), R(0.75))
    assert out.dtype == np.int32 and (lo.asnumpy()[0], hi.asnumpy()[0]) == (-2.25, 2.25)
    # observed on MXNet 1.9.1
    assert out.asnumpy().tolist() == [[-1684301056, 336860192, 2139062272],
                                      [84215048, -2147483648, 1077952640]]
    real = _A.asnumpy() * (1.5 / 127.5) + _A.asnumpy() * (0.75 / 127.5)
    np.testing.assert_allclose(out.asnumpy() * 2.25 / 2147483647, np.clip(real, -2.25, 2.25),
                               atol=1e-6)


def test_elemwise_add_calibrated_keeps_or_mixes_dtypes():
    u = c.quantized_elemwise_add(_B, _B, R(0.0), R(2.0), R(0.0), R(0.5), min_calib_range=0.0,
                                 max_calib_range=2.0)[0]
    assert u.dtype == np.uint8 and u.asnumpy().tolist() == [[255, 4, 160], [0, 21, 255]]
    m = c.quantized_elemwise_add(_A, _B, R(-1.5), R(0.5), R(0.0), R(2.0), min_calib_range=-2.0,
                                 max_calib_range=3.0)[0]
    assert m.dtype == np.int8 and m.asnumpy().tolist() == [[33, 11, 106], [2, -58, 117]]
    with pytest.raises(GpundaError, match="same shape"):
        c.quantized_elemwise_add(_A, nd.zeros((3, 2), dtype="int8"), R(-1), R(1), R(-1), R(1))


def test_elemwise_mul_products_and_float_output():
    b = nd.array([[3, -2, 1], [-1, 0, 127]], dtype="int8")
    out, lo, hi = c.quantized_elemwise_mul(_A, b, R(-1.0), R(2.0), R(-0.5), R(0.5))
    np.testing.assert_array_equal(out.asnumpy(), _A.asnumpy().astype(np.int32) * b.asnumpy())
    assert hi.asnumpy()[0] == pytest.approx(2.0 / 127 * 0.5 / 127 * 2147483647, rel=1e-6)
    f = c.quantized_elemwise_mul(_A, b, R(-1.0), R(2.0), R(-0.5), R(0.5),
                                 enable_float_output=True)
    assert not isinstance(f, (list, tuple)) and f.dtype == np.float32
    a64, b64 = _A.asnumpy().astype(np.float64), b.asnumpy().astype(np.float64)
    np.testing.assert_allclose(f.asnumpy(), a64 * 2 / 127.5 * b64 * 0.5 / 127.5, rtol=1e-6)
    q = c.quantized_elemwise_mul(_A, b, R(-1.0), R(2.0), R(-0.5), R(0.5), min_calib_range=-0.1,
                                 max_calib_range=0.1)[0]
    ref = np.trunc(f.asnumpy() * 127.5 / 0.1)
    assert q.dtype == np.int8
    np.testing.assert_array_equal(q.asnumpy(), np.clip(ref, -128, 127))
    with pytest.raises(GpundaError, match="int8"):
        c.quantized_elemwise_mul(_B, _B, R(0), R(1), R(0), R(1))


def test_quantize_asym_formula_and_mxnet_values():
    x = np.array([[[-1.5, 0.25, 2.0], [0.7, -0.3, 1.1]]], dtype=np.float32)
    q, scale, shift = c.quantize_asym(nd.array(x))
    s = np.float32(255) / np.float32(2.0 - -1.5)
    b = np.float32(255) - np.float32(2.0) * s
    np.testing.assert_array_equal(q.asnumpy(), np.trunc(x * s + b + np.float32(0.5)))
    assert q.asnumpy().tolist() == [[[0, 128, 255], [160, 87, 189]]]     # MXNet 1.9.1
    assert (scale.asnumpy()[0], shift.asnumpy()[0]) == (s, b)
    qc = c.quantize_asym(nd.array(x), min_calib_range=-1.0, max_calib_range=1.0)
    assert qc[0].asnumpy().tolist() == [[[0, 159, 255], [217, 89, 255]]]  # saturated
    with pytest.raises(GpundaError, match="float32"):
        c.quantize_asym(nd.array(x, dtype="float64"))


def _hist_case(nb, positive=False):
    k = np.arange(nb) - nb // 2
    h = np.floor(1000.0 * np.exp(-(k / (nb / 8.0)) ** 2)) + (k % 7 == 0) * 3
    if positive:
        h[: nb // 2] = 0
    edges = (np.arange(nb + 1) - (nb + 1) / 2.0) * 0.0078125
    return h.astype(np.float32), edges.astype(np.float32)


@pytest.mark.parametrize("nb,nq,positive,threshold,divergence", [
    (101, 31, False, 0.25, 0.0023200286),
    (1001, 255, False, 3.734375, 0.00023431479),
    (1001, 511, True, 2.21875, 0.0039868974),
    (2001, 255, True, 7.8125, 0.00013066514),
])
def test_calibrate_entropy_matches_mxnet(nb, nq, positive, threshold, divergence):
    h, e = _hist_case(nb, positive)
    t, d = c.calibrate_entropy(nd.array(h), nd.array(e), num_quantized_bins=nq)
    assert t.asnumpy()[0] == threshold
    assert d.asnumpy()[0] == pytest.approx(divergence, rel=1e-5)


def test_calibrate_entropy_checks_its_inputs():
    h, e = _hist_case(101)
    with pytest.raises(GpundaError, match="len\\(hist\\) \\+ 1"):
        c.calibrate_entropy(nd.array(h), nd.array(e[:-1]))
    with pytest.raises(GpundaError, match="num_quantized_bins"):
        c.calibrate_entropy(nd.array(h), nd.array(e), num_quantized_bins=255)


def test_contrib_quant_threshold_search():
    q = mx.contrib.quant
    assert q is mx.contrib.quantization
    with pytest.raises(ValueError):
        q._smooth_distribution(np.zeros((2,)), eps=1e-3)
    delta = np.zeros(5)
    delta[2] = 1
    want = delta + 1e-3
    want[2] -= 5e-3
    np.testing.assert_allclose(q._smooth_distribution(delta, eps=1e-3), want, rtol=1e-6)
    # MXNet's adversarial case: all the mass in the last bin -> the threshold is the max
    hist = [0] * 998 + [1000]
    edges = [4 / 999 * i - 2 for i in range(999)] + [2]
    for dtype in ("uint8", "int8", "auto"):
        res = q._get_optimal_threshold((hist, edges, -2, 2, 2), dtype, num_quantized_bins=5)
        assert abs(res[2] - 2) < 1e-5
    h, e = _hist_case(1001, positive=True)
    th = q._get_optimal_thresholds({"a": (h, e, 0.0, 3.9, 3.9)}, "uint8",
                                   num_quantized_bins=255)
    assert th["a"][0] == 0 and th["a"][1][0] == 2.21875     # 511 bins for a uint8 layer
    with pytest.raises(ValueError, match="unknown quantized_dtype"):     # the flow is built
        q.quantize_model(None, {}, {}, quantized_dtype="int4")


def test_combine_histogram_widens_around_the_old_bins():
    q = mx.contrib.quant
    old = np.histogram([-0.2, 0.0, 0.4], bins=5, range=(-0.5, 0.5))     # [0, 1, 1, 0, 1]
    merged = q.combine_histogram((old[0], old[1], -0.2, 0.4, 0.5), np.array([0.95, -0.05]),
                                 -0.05, 0.95, 0.95)
    hist, edges, lo, hi, th = merged
    # 3 more bins of width 0.2 on each side: the old counts sit in the middle five
    assert len(hist) == 11 and th == pytest.approx(1.1) and edges[0] == pytest.approx(-1.1)
    np.testing.assert_array_equal(hist, [0, 0, 0, 0, 1, 2, 0, 1, 0, 0, 1])
    assert (lo, hi) == (-0.2, 0.95)
    same = q.combine_histogram((old[0], old[1], -0.2, 0.4, 0.5), np.array([0.05]), 0.05, 0.05,
                               0.05)
    np.testing.assert_array_equal(same[0], [0, 1, 2, 0, 1])


def test_backward_ops_exposed_by_name():
    g = nd.array(np.arange(12).reshape(4, 3) * 0.5)
    x = nd.array(np.linspace(-1, 1, 12).reshape(4, 3))
    np.testing.assert_allclose(c.backward_quadratic(g, x, a=1.5, b=-0.5).asnumpy(),
                               g.asnumpy() * (3.0 * x.asnumpy() - 0.5), rtol=1e-6)
    np.testing.assert_allclose(c.backward_gradientmultiplier(g, scalar=3.0).asnumpy(),
                               g.asnumpy() * 3.0)
    g_old, g_idx, g_new = c.backward_index_copy(g, nd.zeros((4, 3)), nd.array([3, 1]),
                                                nd.ones((2, 3)))
    want = g.asnumpy().copy()
    want[[3, 1]] = 0
    np.testing.assert_array_equal(g_old.asnumpy(), want)
    np.testing.assert_array_equal(g_new.asnumpy(), g.asnumpy()[[3, 1]])
    np.testing.assert_array_equal(g_idx.asnumpy(), [0, 0])


def test_contrib_reexports_and_sym_adamw():
    assert c.mx is mx and c.ndarray is mx.nd.ndarray
    assert c.current_context is mx.context.current_context
    assert c.uniform is mx.random.uniform
    s = mx.sym.contrib
    assert s.Symbol is mx.sym.Symbol and s.symbol is mx.sym.symbol
    assert s.AttrScope is mx.AttrScope and s.uniform is mx.sym.random.uniform
    w, g, m, v = (mx.sym.Variable(n) for n in "wgmv")
    node = s.adamw_update(w, g, m, v, rescale_grad=0.5, lr=0.1, eta=1.0, wd=0.01)
    vals = {"w": nd.ones((3,)), "g": nd.array([1.0, -2.0, 0.5]), "m": nd.zeros((3,)),
            "v": nd.zeros((3,))}
    got = node.bind(mx.cpu(), dict(vals)).forward()[0].asnumpy()
    want = c.adamw_update(vals["w"].copy(), vals["g"], nd.zeros((3,)), nd.zeros((3,)),
                          rescale_grad=0.5, lr=0.1, eta=1.0, wd=0.01).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    gr = 0.5 * vals["g"].asnumpy()
    mean, var = 0.1 * gr, 0.001 * gr * gr
    np.testing.assert_allclose(got, 1 - (0.1 * mean / (np.sqrt(var) + 1e-8) + 0.01), rtol=1e-5)
