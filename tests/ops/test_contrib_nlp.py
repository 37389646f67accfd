"""contrib NLP/misc ops against NumPy references written from MXNet's op docs
(transformer.cc's reference recipes) and observed MXNet 1.9.1 outputs."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd as ag
from gpunda import nd
from gpunda.base import GpundaError


def _heads_of(x, heads, parts, idx):
    """(seq, batch, H*parts*D) -> (batch*H, seq, D), the idx-th interleaved part."""
    s, b, c = x.shape
    t = x.reshape(s, b, heads, parts, c // (heads * parts))[:, :, :, idx]
    return t.transpose(1, 2, 0, 3).reshape(b * heads, s, -1)


def _merge(y, heads):
    bh, s, d = y.shape
    return y.reshape(bh // heads, heads, s, d).transpose(2, 0, 1, 3).reshape(s, bh // heads, -1)


def test_selfatt_qk_and_valatt(rng):
    h, d = 3, 4
    qkv = rng.uniform(-1, 1, (5, 2, h * 3 * d))
    q, k, v = (_heads_of(qkv, h, 3, i) for i in range(3))
    want_qk = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    got = nd.contrib.interleaved_matmul_selfatt_qk(nd.array(qkv, dtype="float64"), heads=h)
    np.testing.assert_allclose(got.asnumpy(), want_qk, rtol=1e-12)
    att = rng.uniform(-1, 1, want_qk.shape)
    got = nd.contrib.interleaved_matmul_selfatt_valatt(nd.array(qkv, dtype="float64"),
                                                       nd.array(att, dtype="float64"), heads=h)
    np.testing.assert_allclose(got.asnumpy(), _merge(att @ v, h), rtol=1e-12)
    assert got.shape == (5, 2, h * d)


def test_encdec_qk_and_valatt(rng):
    h, d = 2, 3
    q = rng.uniform(-1, 1, (4, 2, h * d))
    kv = rng.uniform(-1, 1, (6, 2, h * 2 * d))
    qh, kh, vh = _heads_of(q, h, 1, 0), _heads_of(kv, h, 2, 0), _heads_of(kv, h, 2, 1)
    want = qh @ kh.transpose(0, 2, 1) / np.sqrt(d)
    got = nd.contrib.interleaved_matmul_encdec_qk(nd.array(q, dtype="float64"),
                                                  nd.array(kv, dtype="float64"), heads=h)
    assert got.shape == (2 * h, 4, 6)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
    att = rng.uniform(-1, 1, want.shape)
    got = nd.contrib.interleaved_matmul_encdec_valatt(nd.array(kv, dtype="float64"),
                                                      nd.array(att, dtype="float64"), heads=h)
    np.testing.assert_allclose(got.asnumpy(), _merge(att @ vh, h), rtol=1e-12)


def test_interleaved_bad_shapes():
    with pytest.raises(GpundaError, match="attention"):
        nd.contrib.interleaved_matmul_selfatt_valatt(nd.ones((3, 2, 12)), nd.ones((4, 3, 2)),
                                                     heads=2)
    with pytest.raises(GpundaError, match="heads"):
        nd.contrib.interleaved_matmul_selfatt_qk(nd.ones((3, 2, 12)), heads=0)


def test_div_sqrt_dim_and_quadratic(rng):
    x = rng.uniform(-1, 1, (2, 3, 8))
    np.testing.assert_allclose(nd.contrib.div_sqrt_dim(nd.array(x)).asnumpy(),
                               x / np.sqrt(8), rtol=1e-6)
    y = nd.contrib.quadratic(nd.array([1, 2], dtype="float16"), a=1, b=2, c=3)
    assert y.dtype == np.float16 and y.asnumpy().tolist() == [6, 11]   # MXNet 1.9.1 output
    xa = nd.array(x)
    xa.attach_grad()
    with ag.record():
        out = nd.contrib.quadratic(xa, a=0.5, b=-2, c=1)
    out.backward()
    np.testing.assert_allclose(xa.grad.asnumpy(), (2 * 0.5 * x - 2).astype(np.float32), rtol=1e-5)


def test_allclose():
    a = nd.array([1, 2, 3])
    r = nd.contrib.allclose(a, a + 1e-9)
    assert r.shape == () and r.dtype == np.uint8 and r.asscalar() == 1
    assert nd.contrib.allclose(a, a + 1).asscalar() == 0
    n = nd.array([np.nan])
    assert nd.contrib.allclose(n, n).asscalar() == 1
    assert nd.contrib.allclose(n, n, equal_nan=False).asscalar() == 0


def test_arange_like():
    x = nd.zeros((2, 3), dtype="float16")
    y = nd.contrib.arange_like(x)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y.asnumpy(), np.arange(6).reshape(2, 3))
    # observed MXNet 1.9.1 outputs
    assert nd.contrib.arange_like(x, axis=1, start=1, step=2, repeat=2).asnumpy().tolist() == \
        [1, 1, 3]
    assert nd.contrib.arange_like(x, repeat=4).asnumpy().tolist() == [[0, 0, 0], [0, 1, 1]]


def test_straight_through_and_gradient_multiplier():
    x = nd.array([-1.5, 0.5, 2.5, 1.4, -0.2])
    for op, want in [(nd.contrib.round_ste, [-2, 1, 3, 1, 0]),
                     (nd.contrib.sign_ste, [-1, 1, 1, 1, -1])]:
        x.attach_grad()
        with ag.record():
            y = op(x)
        y.backward(nd.array([1, 2, 3, 4, 5]))
        assert y.asnumpy().tolist() == want
        assert x.grad.asnumpy().tolist() == [1, 2, 3, 4, 5]
    x.attach_grad()
    with ag.record():
        y = nd.contrib.gradientmultiplier(x, scalar=-3.0)
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    np.testing.assert_array_equal(x.grad.asnumpy(), [-3] * 5)


def test_symbol_names():
    s = mx.sym.contrib.div_sqrt_dim(mx.sym.Variable("data"))
    assert s.infer_shape(data=(2, 4))[1] == [(2, 4)]
