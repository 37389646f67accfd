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


# -- NumPy semantics reach every array Gluon hands out (MXNet 1.9.1's is_np_array() branches;
#    each kind below recorded as mxnet.numpy.ndarray from MXNet 1.9.1 under npx.set_np()) ------

def _np_mode():
    return mx.util.np_shape(True), mx.util.np_array(True)


def test_split_and_load_of_host_data_gives_np_parts():
    shape_scope, array_scope = _np_mode()
    with shape_scope, array_scope:
        parts = gluon.utils.split_and_load(onp.arange(8, dtype="float32").reshape(4, 2),
                                           [mx.cpu(0), mx.cpu(1)])
    assert [type(p) for p in parts] == [np.ndarray, np.ndarray]
    assert parts[1].asnumpy().tolist() == [[4.0, 5.0], [6.0, 7.0]]
    assert type(gluon.utils.split_and_load(onp.ones((2, 2)), [mx.cpu()])[0]) is mx.nd.NDArray


@pytest.mark.parametrize("layer", [gluon.rnn.LSTM, gluon.rnn.GRU, gluon.rnn.RNN])
def test_rnn_layer_states_and_outputs_are_np_arrays(layer):
    ref = layer(4, input_size=2)
    ref.initialize(mx.init.Xavier())
    x = onp.random.RandomState(0).rand(3, 2, 2).astype("float32")
    ref_out, _ = ref(mx.nd.array(x), ref.begin_state(batch_size=2))
    shape_scope, array_scope = _np_mode()
    with shape_scope, array_scope:
        net = layer(4, input_size=2)
        net.initialize()
        for (_, p), (_, q) in zip(sorted(net.collect_params().items()),
                                  sorted(ref.collect_params().items())):
            p.set_data(q.data().asnumpy())
        states = net.begin_state(batch_size=2)
        assert all(type(s) is np.ndarray for s in states)
        out, new_states = net(np.array(x), states)
        assert type(out) is np.ndarray and all(type(s) is np.ndarray for s in new_states)
        assert type(net(np.array(x))) is np.ndarray          # states made inside
    onp.testing.assert_allclose(out.asnumpy(), ref_out.asnumpy(), rtol=1e-6, atol=1e-7)


def test_parameter_cast_keeps_np_arrays_and_constant_is_np():
    shape_scope, array_scope = _np_mode()
    with shape_scope, array_scope:
        net = nn.Dense(3, in_units=2)
        net.initialize()
        net.cast("float16")
        assert type(net.weight.data()) is np.ndarray and type(net.weight.grad()) is np.ndarray
        assert net.weight.grad().dtype == onp.float16
        c = gluon.Constant("c", [1.0, 2.0])
        assert type(c.value) is np.ndarray


def test_vision_transforms_and_image_datasets_give_np_arrays(tmp_path):
    cv2 = pytest.importorskip("cv2")
    from gpunda.gluon.data.vision import transforms
    img = onp.random.RandomState(1).randint(0, 255, (7, 9, 3)).astype("uint8")
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        cv2.imwrite(str(tmp_path / d / "0.png"), img[:, :, ::-1])
    shape_scope, array_scope = _np_mode()
    with shape_scope, array_scope:
        x = np.array(img, dtype="uint8")
        for t in (transforms.RandomResizedCrop(4), transforms.CenterCrop(4), transforms.Resize(4),
                  transforms.Compose([transforms.Resize(5), transforms.ToTensor()])):
            assert type(t(x)) is np.ndarray, t
        data, label = gluon.data.vision.ImageFolderDataset(str(tmp_path))[1]
        assert type(data) is np.ndarray and label == 1
        onp.testing.assert_array_equal(data.asnumpy(), img)
        batch = next(iter(gluon.data.DataLoader(
            gluon.data.vision.ImageFolderDataset(str(tmp_path)).transform_first(
                transforms.ToTensor()), batch_size=2)))
        assert [type(b) for b in batch] == [np.ndarray, np.ndarray]
    assert type(gluon.data.vision.ImageFolderDataset(str(tmp_path))[0][0]) is mx.nd.NDArray
