"""Initializers and parameter code under ``npx.set_np()`` meeting legacy NDArrays.

Recorded from real MXNet 1.9.1 (/work/mxref), after ``mx.npx.set_np()``::

    class NpStyle(mx.init.Initializer):
        def _init_weight(self, name, arr):
            seen.append(isinstance(arr, mx.np.ndarray))
            v = mx.np.arange(arr.size, dtype=arr.dtype).reshape(arr.shape) * 2
            arr[:] = v - arr.size
            arr[0] = mx.np.maximum(arr[0], 0)
    d = mx.gluon.nn.Dense(2, in_units=3); d.initialize(NpStyle())
    seen -> [True];  d.weight.data().tolist() -> [[0.0, 0.0, 0.0], [0.0, 2.0, 4.0]]
    d2 = mx.gluon.nn.Dense(2); d2.initialize(NpStyle()); d2(mx.np.ones((1, 4)))
    seen[-1] -> True; d2.weight.data().tolist() -> [[0.0, 0.0, 0.0, 0.0], [0.0, 2.0, 4.0, 6.0]]
    p = Parameter('w', shape=(2, 2)); p.initialize(mx.init.One())
    type(p.data().as_nd_ndarray()) -> NDArray, values [[1, 1], [1, 1]]; p.grad().as_nd_ndarray() zeros
    p.set_data(numpy.ones((2, 2))); p.data() -> mx.np.ndarray of ones

MXNet raises TypeError ("Cannot assign mx.nd.NDArray to mxnet.numpy.ndarray") for
``arr[:] = mx.nd.ones(arr.shape)`` in such an initializer and for ``p.set_data(mx.nd.ones(...))``;
gpunda copies the values (docs/compat.md, mixing flavours), checked here by value.
"""
import numpy as onp
import pytest

import gpunda as mx
from gpunda.gluon import nn


@pytest.fixture(autouse=True)
def _on_the_cpu():
    # the values were recorded from MXNet's CPU build, the legacy arrays made on cpu(0)
    with mx.cpu():
        yield


@pytest.fixture
def np_mode():
    mx.npx.set_np()
    try:
        yield
    finally:
        mx.npx.reset_np()


class _NpStyle(mx.init.Initializer):
    def __init__(self, seen):
        super().__init__()
        self.seen = seen

    def _init_weight(self, name, arr):
        self.seen.append(isinstance(arr, mx.np.ndarray))
        v = mx.np.arange(arr.size, dtype=arr.dtype).reshape(arr.shape) * 2
        arr[:] = v - arr.size
        arr[0] = mx.np.maximum(arr[0], 0)


def test_initializer_gets_np_array(np_mode):
    seen = []
    d = nn.Dense(2, in_units=3)
    d.initialize(_NpStyle(seen))
    assert seen == [True]
    assert isinstance(d.weight.data(), mx.np.ndarray)
    assert d.weight.data().tolist() == [[0.0, 0.0, 0.0], [0.0, 2.0, 4.0]]
    d2 = nn.Dense(2)
    d2.initialize(_NpStyle(seen))
    d2(mx.np.ones((1, 4)))          # deferred initialisation takes the same path
    assert seen[-1] is True
    assert d2.weight.data().tolist() == [[0.0, 0.0, 0.0, 0.0], [0.0, 2.0, 4.0, 6.0]]


class _LegacyOnes(mx.init.Initializer):
    def _init_weight(self, name, arr):
        arr[:] = mx.nd.ones(arr.shape) * 4
        arr[0:1] = mx.nd.full((1,) + arr.shape[1:], 5)


def test_legacy_values_written_into_np_array(np_mode):
    d = nn.Dense(2, in_units=3)
    d.initialize(_LegacyOnes())
    assert isinstance(d.weight.data(), mx.np.ndarray)
    assert d.weight.data().tolist() == [[5.0] * 3, [4.0] * 3]


@pytest.mark.parametrize("name", ["Xavier", "Uniform", "Normal", "Orthogonal", "MSRAPrelu"])
def test_builtin_initializers_same_values_in_np_mode(name):
    def draw():
        mx.random.seed(3)
        p = mx.gluon.Parameter('w_weight', shape=(4, 3))
        p.initialize(getattr(mx.init, name)())
        return p.data()
    legacy = draw().asnumpy()
    mx.npx.set_np()
    try:
        arr = draw()
    finally:
        mx.npx.reset_np()
    assert isinstance(arr, mx.np.ndarray)
    onp.testing.assert_array_equal(arr.asnumpy(), legacy)


def test_set_data_and_as_nd_ndarray(np_mode):
    p = mx.gluon.Parameter('w', shape=(2, 2))
    p.initialize(mx.init.One())
    nd_view = p.data().as_nd_ndarray()
    assert type(nd_view) is mx.nd.NDArray and nd_view.asnumpy().tolist() == [[1, 1], [1, 1]]
    g = p.grad().as_nd_ndarray()
    assert type(g) is mx.nd.NDArray and g.asnumpy().tolist() == [[0, 0], [0, 0]]
    p.set_data(onp.full((2, 2), 2.0))
    assert isinstance(p.data(), mx.np.ndarray) and p.data().tolist() == [[2, 2], [2, 2]]
    p.set_data(mx.nd.full((2, 2), 3.0))
    assert isinstance(p.data(), mx.np.ndarray) and p.data().tolist() == [[3, 3], [3, 3]]
