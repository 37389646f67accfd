"""contrib.fft / contrib.ifft (gpunda/ops/contrib/fft.py) and contrib.count_sketch against NumPy;
gradients by finite differences in tests/test_registry_gradients.py."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import nd
from gpunda.base import GpundaError


def _interleaved(z):
    out = np.empty(z.shape[:-1] + (2 * z.shape[-1],))
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


@pytest.mark.parametrize("shape", [(3, 8), (2, 3, 4, 5)])
def test_fft_interleaves_numpys_transform(shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = nd.contrib.fft(nd.array(x))
    assert got.shape == shape[:-1] + (2 * shape[-1],) and got.dtype == np.float32
    np.testing.assert_allclose(got.asnumpy(), _interleaved(np.fft.fft(x, axis=-1)),
                               rtol=1e-4, atol=1e-4)


def test_ifft_is_the_unnormalised_inverse_real_part():
    rng = np.random.default_rng(1)
    z = rng.standard_normal((3, 6)) + 1j * rng.standard_normal((3, 6))
    got = nd.contrib.ifft(nd.array(_interleaved(z), dtype="float64"))
    np.testing.assert_allclose(got.asnumpy(), (np.fft.ifft(z, axis=-1) * 6).real, rtol=1e-12)
    # a round trip scales by d, as MXNet's
    x = rng.standard_normal((2, 5))
    back = nd.contrib.ifft(nd.contrib.fft(nd.array(x, dtype="float64")))
    np.testing.assert_allclose(back.asnumpy(), 5 * x, rtol=1e-12)


def test_fft_gradient_is_the_inverse_transform():
    rng = np.random.default_rng(2)
    x = nd.array(rng.standard_normal((2, 4)), dtype="float64")
    g = rng.standard_normal((2, 8))
    x.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.fft(x)
    y.backward(nd.array(g, dtype="float64"))
    # d/dx of sum(g * fft(x)) with the transform written as a matrix
    n = np.arange(4)
    w = np.exp(-2j * np.pi * np.outer(n, n) / 4)
    ref = g[:, 0::2] @ w.real.T + g[:, 1::2] @ w.imag.T
    np.testing.assert_allclose(x.grad.asnumpy(), ref, rtol=1e-10)


def test_bad_shapes_are_named():
    with pytest.raises(GpundaError, match="_contrib_fft.*2-D or 4-D"):
        nd.contrib.fft(nd.ones((4,)))
    with pytest.raises(GpundaError, match="_contrib_ifft.*even"):
        nd.contrib.ifft(nd.ones((2, 5)))


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 2, 4)])
def test_count_sketch_adds_signed_inputs_into_hashed_buckets(shape):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape)
    h = np.array([[0, 2, 2, 1]])
    s = np.array([[1, -1, 1, 1]])
    got = nd.contrib.count_sketch(nd.array(x, dtype="float64"), nd.array(h, dtype="float64"),
                                  nd.array(s, dtype="float64"), out_dim=3)
    ref = np.zeros(shape[:-1] + (3,))
    for j in range(4):
        ref[..., h[0, j]] += s[0, j] * x[..., j]
    np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-12)
    with pytest.raises(GpundaError, match="count_sketch.*\\[0, 2\\)"):
        nd.contrib.count_sketch(nd.array(x), nd.array(h), nd.array(s), out_dim=2)
