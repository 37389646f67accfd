"""gluon.contrib: nn layers against NumPy, contrib rnn cells against their definitions."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, gluon, nd
from gpunda.base import GpundaError

cn = None


def setup_module():
    global cn
    cn = gluon.contrib.nn


@pytest.mark.parametrize("factor,shape", [((2,), (1, 8, 3)), ((2, 3), (2, 12, 3, 5)),
                                          ((2, 3, 4), (1, 48, 2, 3, 2))])
def test_pixel_shuffle_against_numpy(factor, shape):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    n, c = shape[0], shape[1] // int(np.prod(factor))
    spatial = shape[2:]
    dims = len(factor)
    # out[n, c, s1*f1+i1, ...] = x[n, c*prod(f) + (i1, i2, ...) flattened, s1, ...]
    ref = x.reshape((n, c) + tuple(factor) + spatial)
    perm = [0, 1] + [p for k in range(dims) for p in (2 + dims + k, 2 + k)]
    ref = ref.transpose(perm).reshape((n, c) + tuple(s * f for s, f in zip(spatial, factor)))
    layer = {1: cn.PixelShuffle1D, 2: cn.PixelShuffle2D, 3: cn.PixelShuffle3D}[dims](
        factor if dims > 1 else factor[0])
    np.testing.assert_array_equal(layer(nd.array(x)).asnumpy(), ref)
    layer.hybridize()
    np.testing.assert_array_equal(layer(nd.array(x)).asnumpy(), ref)
    with pytest.raises(GpundaError, match="factor"):
        cn.PixelShuffle2D((2, 2, 2))


def test_concurrent_layers(rng):
    x = nd.array(rng.uniform(-1, 1, (2, 4)))
    for cls in (cn.Concurrent, cn.HybridConcurrent):
        net = cls(axis=1)
        with net.name_scope():
            net.add(gluon.nn.Dense(3))
            net.add(cn.Identity())
        net.initialize()
        got = net(x).asnumpy()
        dense = list(net._children.values())[0]
        w, b = dense.weight.data().asnumpy(), dense.bias.data().asnumpy()
        want = np.concatenate([x.asnumpy() @ w.T + b, x.asnumpy()], axis=1)
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_sparse_embedding_has_row_sparse_gradient():
    emb = cn.SparseEmbedding(10, 3)
    emb.initialize()
    idx = nd.array([1, 7, 1])
    with pytest.raises(RuntimeError, match="no Trainer"):   # as MXNet: rows come from it
        emb(idx)
    gluon.Trainer(emb.collect_params(), "sgd")
    with autograd.record():
        y = emb(idx)
    y.backward()
    w = emb.weight.row_sparse_data(idx).asnumpy()
    np.testing.assert_allclose(y.asnumpy(), w[[1, 7, 1]], rtol=1e-6)
    g = emb.weight.grad()
    assert g.stype == "row_sparse"
    dense = g.tostype("default").asnumpy()
    np.testing.assert_array_equal(dense[1], np.full(3, 2.0))
    np.testing.assert_array_equal(dense[7], np.ones(3))
    assert dense[[0, 2, 3, 4, 5, 6, 8, 9]].sum() == 0


def test_sync_batch_norm_is_batch_norm_in_one_process(rng):
    x = nd.array(rng.uniform(-1, 1, (4, 3, 2)))
    sync, plain = cn.SyncBatchNorm(num_devices=1), gluon.nn.BatchNorm()
    sync.initialize()
    plain.initialize()
    with autograd.record():
        a, b = sync(x), plain(x)
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(sync.running_mean.data().asnumpy(),
                               plain.running_mean.data().asnumpy(), rtol=1e-6)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_lstmp_cell_against_numpy(rng):
    cell = gluon.contrib.rnn.LSTMPCell(4, 2, input_size=3)
    cell.initialize(mx.init.Uniform(0.5))
    x = rng.uniform(-1, 1, (2, 3))
    r0, c0 = rng.uniform(-1, 1, (2, 2)), rng.uniform(-1, 1, (2, 4))
    out, (r1, c1) = cell(nd.array(x), [nd.array(r0), nd.array(c0)])
    p = {k.split("_", 1)[1]: v.data().asnumpy() for k, v in cell.collect_params().items()}
    a = x @ p["i2h_weight"].T + p["i2h_bias"] + r0 @ p["h2h_weight"].T + p["h2h_bias"]
    i, f, g, o = _sigmoid(a[:, :4]), _sigmoid(a[:, 4:8]), np.tanh(a[:, 8:12]), _sigmoid(a[:, 12:])
    c = f * c0 + i * g
    r = (o * np.tanh(c)) @ p["h2r_weight"].T
    np.testing.assert_allclose(c1.asnumpy(), c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.asnumpy(), r, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r1.asnumpy(), r, rtol=1e-5, atol=1e-6)


def test_conv_lstm_cell_matches_dense_lstm_for_1x1_maps(rng):
    """With 1x1 kernels on 1x1 maps a Conv2DLSTMCell is an LSTMCell."""
    conv = gluon.contrib.rnn.Conv2DLSTMCell((3, 1, 1), 4, 1, 1)
    dense = gluon.rnn.LSTMCell(4, input_size=3)
    conv.initialize(mx.init.Uniform(0.5))
    dense.initialize()
    for name in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
        v = getattr(conv, name).data()
        getattr(dense, name).set_data(v.reshape(getattr(dense, name).shape))
    x = rng.uniform(-1, 1, (2, 5, 3))
    y_conv, _ = conv.unroll(5, nd.array(x.reshape(2, 5, 3, 1, 1)), merge_outputs=True)
    y_dense, _ = dense.unroll(5, nd.array(x), merge_outputs=True)
    np.testing.assert_allclose(y_conv.asnumpy().reshape(2, 5, 4), y_dense.asnumpy(),
                               rtol=1e-5, atol=1e-6)
    assert conv.state_info(2)[0]["shape"] == (2, 4, 1, 1)
    with pytest.raises(GpundaError, match="odd"):
        gluon.contrib.rnn.Conv1DRNNCell((3, 8), 4, 3, 2)


def test_conv_gru_and_rnn_cells_keep_state_size(rng):
    for cls, shape in ((gluon.contrib.rnn.Conv1DGRUCell, (2, 7)),
                       (gluon.contrib.rnn.Conv3DRNNCell, (2, 3, 4, 5))):
        cell = cls(shape, 3, 3, 3, i2h_pad=1)
        cell.initialize()
        x = nd.array(rng.uniform(-1, 1, (2, 4) + shape))
        out, states = cell.unroll(4, x, merge_outputs=True)
        assert out.shape == (2, 4, 3) + shape[1:]
        assert states[0].shape == (2, 3) + shape[1:]


def test_variational_dropout_shares_one_mask_across_time():
    # around a pass-through cell the output is the input times the input mask
    cell = gluon.contrib.rnn.VariationalDropoutCell(gluon.rnn.DropoutCell(0.0), drop_inputs=0.5)
    x = nd.ones((4, 6, 5))
    with autograd.train_mode():
        out = cell.unroll(6, x, merge_outputs=True)[0].asnumpy()
    kept = out != 0
    assert np.all(kept == kept[:, :1, :])          # one mask for all steps
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(out[kept], 2.0)     # kept values scaled by 1/(1-p)
    assert np.all(cell.unroll(6, x, merge_outputs=True)[0].asnumpy() == 1)   # inference


def test_dynamic_unroll_equals_unroll(rng):
    cell = gluon.rnn.GRUCell(4)
    cell.initialize()
    x = nd.array(rng.uniform(-1, 1, (5, 3, 2)))
    lengths = nd.array([5, 2, 4])
    out, states = gluon.contrib.rnn.dynamic_unroll(cell, x, cell.begin_state(3),
                                                   valid_length=lengths)
    ref, ref_states = cell.unroll(5, x, layout="TNC", merge_outputs=True, valid_length=lengths)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(states[0].asnumpy(), ref_states[0].asnumpy(), rtol=1e-6)


def test_get_conv_out_size_matches_mxnet():
    from gpunda.gluon.contrib.rnn.conv_rnn_cell import _get_conv_out_size
    # MXNet 1.9.1: a size 0 (unknown) stays 0
    assert _get_conv_out_size((10, 0, 7), (3, 3, 5), (1, 0, 2), (2, 1, 1)) == (8, 0, 7)
    assert _get_conv_out_size((8,), (4,), (0,), (1,)) == (5,)
