"""mx.npx: NumPy-mode switches, MXNet's ops on mx.np arrays, reshape codes, save/load."""
import numpy as onp
import pytest

import gpunda as mx
from gpunda import np, npx
from gpunda.base import GpundaError


@pytest.fixture(autouse=True)
def _np_mode():
    npx.set_np()
    yield
    npx.reset_np()


def test_set_np_reset_np():
    assert npx.is_np_array() and npx.is_np_shape()
    npx.reset_np()
    assert not npx.is_np_array() and not npx.is_np_shape()
    npx.set_np()
    assert mx.nd.ones((2, 3)).sum().shape == ()      # NumPy shapes for nd ops too


@pytest.mark.parametrize("shape,codes,want", [
    ((2, 3, 4), (-2, -1), (2, 12)), ((2, 3, 4), (-5, -1), (6, 4)),
    ((2, 3, 4), (-4, -1), (2, 3, 4, 1)), ((2, 3, 4), (-6, 1, 2, -2, -2), (1, 2, 3, 4)),
    ((1, 3, 4), (-3, -4), (3, 4)), ((2, 3, 4), (6, -1), (6, 4))])
def test_reshape_codes(shape, codes, want):
    x = np.arange(int(onp.prod(shape))).reshape(shape)
    r = npx.reshape(x, codes)
    assert type(r) is np.ndarray and r.shape == want
    onp.testing.assert_array_equal(r.asnumpy().ravel(), x.asnumpy().ravel())


def test_reshape_reverse_and_errors():
    assert npx.reshape(np.ones((2, 3, 4)), (-1, 2), reverse=True).shape == (12, 2)
    with pytest.raises(GpundaError):
        npx.reshape(np.ones((2, 3, 4)), (-3, -1))     # -3 needs a size-1 axis


def test_nn_ops_match_numpy():
    x = onp.array([[-1., 0.5, 2.]], dtype=onp.float32)
    r = npx.relu(np.array(x))
    assert type(r) is np.ndarray and r.asnumpy().tolist() == [[0., 0.5, 2.]]
    s = npx.softmax(np.array(x))
    onp.testing.assert_allclose(s.asnumpy(), onp.exp(x) / onp.exp(x).sum(), rtol=1e-6)
    w = onp.arange(6, dtype=onp.float32).reshape(2, 3)
    fc = npx.fully_connected(np.array(x), np.array(w), None, num_hidden=2, no_bias=True)
    onp.testing.assert_allclose(fc.asnumpy(), x @ w.T, rtol=1e-6)
    p = npx.pick(np.array(w), np.array([0, 2]), axis=1)
    assert p.asnumpy().tolist() == [0., 5.]
    oh = npx.one_hot(np.array([0, 2]), 3)
    assert oh.asnumpy().tolist() == [[1, 0, 0], [0, 0, 1]]


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(3, 0, 4), (0, 0)])
@pytest.mark.parametrize("hybridize", [False, True])
def test_softmax_of_zero_size_arrays(op, shape, hybridize):
    # MXNet returns an empty array (and an empty gradient) along any axis
    class Net(mx.gluon.HybridBlock):
        def __init__(self, axis):
            super().__init__()
            self.axis = axis

        def hybrid_forward(self, F, x):
            return getattr(F.npx, op)(x, axis=self.axis)

    x = np.zeros(shape)
    x.attach_grad()
    for axis in range(-len(shape), len(shape)):
        net = Net(axis)
        if hybridize:
            net.hybridize()
        with mx.autograd.record():
            y = net(x)
        y.backward()
        assert y.shape == shape and y.dtype == onp.float32
        assert x.grad.shape == shape


def test_nonzero_gives_index_rows():
    r = npx.nonzero(np.array([[0, 1], [2, 0]]))
    assert r.dtype == onp.int64
    assert r.asnumpy().tolist() == onp.argwhere(onp.array([[0, 1], [2, 0]])).tolist()
    # MXNet 1.9.1 (and NumPy < 2): a 0-d array counts as one element, so one column
    assert npx.nonzero(np.array(3)).asnumpy().tolist() == [[0]]
    assert npx.nonzero(np.array(0)).shape == (0, 1)
    assert [c.asnumpy().tolist() for c in np.nonzero(np.array(3))] == [[0]]


def test_save_load_keeps_zero_dim_and_zero_size(tmp_path):
    arrays = [np.array(onp.random.randint(0, 9, size=s)) for s in [(), (0,), (2, 0, 1), (3,)]]
    f = str(tmp_path / "a.npy")
    npx.save(f, arrays[0])
    got = npx.load(f)
    assert isinstance(got, list) and got[0].shape == () and type(got[0]) is np.ndarray
    npx.save(f, arrays)
    for a, b in zip(arrays, npx.load(f)):
        assert a.shape == b.shape
        onp.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    npx.save(f, {"x": arrays[3]})
    assert npx.load(f)["x"].asnumpy().tolist() == arrays[3].asnumpy().tolist()


def test_devices_and_waitall():
    assert npx.current_context() == mx.current_context()
    assert npx.cpu(0) == mx.cpu(0)
    assert npx.num_gpus() >= 0
    npx.waitall()
