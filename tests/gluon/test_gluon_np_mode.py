"""Gluon in NumPy mode: np parameters, hybridized np graphs (np Symbols), export/import,
MXNet's output-type checks, training through Trainer."""
import numpy as onp
import pytest

import gpunda as mx
from gpunda import np, npx, gluon, autograd
from gpunda.gluon import nn
from gpunda.util import use_np


@use_np
class _Creation(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return x * F.np.ones((2, 3)) + F.np.identity(3)[0], F.np.zeros(())


@pytest.mark.parametrize("hybridize", [False, True])
def test_np_functions_in_hybrid_forward(hybridize):
    b = _Creation()
    if hybridize:
        b.hybridize()
    with mx.util.np_shape(True), mx.util.np_array(True):
        x = np.array(onp.arange(6, dtype=onp.float32).reshape(2, 3))
    y, z = b(x)
    assert type(y) is np.ndarray and type(z) is np.ndarray and z.shape == ()
    onp.testing.assert_array_equal(y.asnumpy(), onp.arange(6).reshape(2, 3) + [1, 0, 0])


@use_np
class _Slicing(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return (x[1:, -1] + x[0, ::-2].sum()) * 2, x[:, None, 1] > 3


def test_symbolic_slicing_matches_imperative():
    with mx.util.np_shape(True), mx.util.np_array(True):
        x = np.array(onp.arange(12, dtype=onp.float32).reshape(3, 4))
        plain = [o.asnumpy() for o in _Slicing()(x)]
        b = _Slicing()
        b.hybridize()
        hyb = [o.asnumpy() for o in b(x)]
    h = onp.arange(12, dtype=onp.float32).reshape(3, 4)
    want = [(h[1:, -1] + h[0, ::-2].sum()) * 2, h[:, None, 1] > 3]
    for p, q, w in zip(plain, hyb, want):
        onp.testing.assert_array_equal(p, w)
        onp.testing.assert_array_equal(q, w)


def test_mixed_output_kinds_raise_type_error():
    @use_np
    class Mixed(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x.as_nd_ndarray() + 1, x * 2

    with mx.util.np_shape(True), mx.util.np_array(True):
        x = np.ones((2,))
    net = Mixed()
    with pytest.raises(TypeError):
        net(x)
    net.hybridize()
    with pytest.raises(TypeError):
        net(x)


def test_training_in_np_mode_lowers_the_loss_and_keeps_np_types():
    npx.set_np()
    try:
        onp.random.seed(0)
        mx.random.seed(0)
        net = nn.HybridSequential()
        net.add(nn.Dense(8, activation="relu"), nn.Dense(1))
        net.initialize(mx.init.Xavier())
        net.hybridize()
        X = np.array(onp.random.uniform(-1, 1, (64, 3)).astype(onp.float32))
        y = np.array((X.asnumpy() @ onp.array([[1.], [-2.], [0.5]], onp.float32)))
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
        loss_fn = gluon.loss.L2Loss()
        losses = []
        for _ in range(30):
            with autograd.record():
                loss = loss_fn(net(X), y)
            loss.backward()
            trainer.step(64)
            losses.append(float(loss.mean()))
        assert type(loss) is np.ndarray
        assert losses[-1] < 0.2 * losses[0]
        w = net[0].weight
        assert type(w.data()) is np.ndarray and type(w.grad()) is np.ndarray
        assert w.shape == (8, 3)
    finally:
        npx.reset_np()


def test_export_and_import_of_an_np_graph(tmp_path):
    npx.set_np()
    try:
        net = nn.HybridSequential()
        net.add(nn.Dense(4, flatten=False), nn.Dense(2, flatten=False))
        net.initialize()
        net.hybridize()
        x = np.array(onp.random.uniform(size=(3, 5)).astype(onp.float32))
        out = net(x)
        prefix = str(tmp_path / "npnet")
        net.export(prefix)
        back = gluon.SymbolBlock.imports(prefix + "-symbol.json", "data",
                                         prefix + "-0000.params")
        got = back(x)
        assert type(got) is np.ndarray
        onp.testing.assert_allclose(got.asnumpy(), out.asnumpy(), rtol=1e-5)
    finally:
        npx.reset_np()


def test_deferred_shapes_report_minus_one_in_np_shape_mode():
    d = nn.Dense(3)
    assert d.weight.shape == (3, 0)
    with mx.util.np_shape(True):
        assert d.weight.shape == (3, -1)
