"""SequenceMask / SequenceLast / SequenceReverse against NumPy loops (MXNet's definitions)."""
import numpy as np
import pytest

from gpunda import nd
from gpunda.base import GpundaError


def _data(rng, shape):
    return rng.uniform(-1, 1, shape)


@pytest.mark.parametrize("axis", [0, 1])
def test_sequence_mask(rng, axis):
    x = _data(rng, (4, 3, 2)) if axis == 0 else _data(rng, (3, 4, 2))
    lengths = np.array([4, 1, 2])
    got = nd.SequenceMask(nd.array(x), nd.array(lengths), use_sequence_length=True, value=-7,
                          axis=axis).asnumpy()
    want = x.astype(np.float32).copy()
    for n, ln in enumerate(lengths):
        for t in range(ln, 4):
            if axis == 0:
                want[t, n] = -7
            else:
                want[n, t] = -7
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(nd.SequenceMask(nd.array(x), axis=axis).asnumpy(),
                                  x.astype(np.float32))


@pytest.mark.parametrize("axis", [0, 1])
def test_sequence_last(rng, axis):
    x = _data(rng, (4, 3, 2)) if axis == 0 else _data(rng, (3, 4, 2))
    lengths = np.array([4, 1, 2])
    got = nd.SequenceLast(nd.array(x), nd.array(lengths), use_sequence_length=True,
                          axis=axis).asnumpy()
    for n, ln in enumerate(lengths):
        ref = x[ln - 1, n] if axis == 0 else x[n, ln - 1]
        np.testing.assert_allclose(got[n], ref, rtol=1e-6)
    full = nd.SequenceLast(nd.array(x), axis=axis).asnumpy()
    np.testing.assert_allclose(full, x[-1] if axis == 0 else x[:, -1], rtol=1e-6)


def test_sequence_reverse(rng):
    x = _data(rng, (4, 3, 2))
    lengths = np.array([4, 1, 3])
    got = nd.SequenceReverse(nd.array(x), nd.array(lengths), use_sequence_length=True).asnumpy()
    want = x.astype(np.float32).copy()
    for n, ln in enumerate(lengths):
        want[:ln, n] = x[:ln, n][::-1]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(nd.SequenceReverse(nd.array(x)).asnumpy(), x[::-1], rtol=1e-6)


def test_errors_and_inputs_untouched(rng):
    x = nd.array(_data(rng, (4, 3)))
    before = x.asnumpy().copy()
    with pytest.raises(GpundaError, match="sequence_length has shape"):
        nd.SequenceMask(x, nd.array([1, 2]), use_sequence_length=True)
    with pytest.raises(GpundaError, match="axis=2 must be 0 or 1"):
        nd.SequenceLast(x, axis=2)
    with pytest.raises(GpundaError, match="axis 0 only"):
        nd.SequenceReverse(x, axis=1)
    np.testing.assert_array_equal(x.asnumpy(), before)
