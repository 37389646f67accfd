"""nn layers against NumPy references."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, nd
from gpunda.base import GpundaError
from gpunda.gluon import nn

CPU = mx.cpu()


def _nd(a):
    return nd.array(np.asarray(a, dtype=np.float32), ctx=CPU)


def _conv2d_ref(x, w, b, stride, pad):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + b[None, :, None, None]


@pytest.mark.parametrize("hybrid", [False, True])
def test_conv2d_pool_and_flatten(rng, hybrid):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(3, 3, strides=1, padding=1, in_channels=2), nn.MaxPool2D(2))
    net.initialize(mx.init.Normal(0.3), ctx=CPU)
    net.hybridize(hybrid)
    x = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)
    conv = net[0]
    ref = _conv2d_ref(x.astype(np.float64), conv.weight.data().asnumpy(),
                      conv.bias.data().asnumpy(), 1, 1)
    ref = ref.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
    np.testing.assert_allclose(net(_nd(x)).asnumpy(), ref, rtol=1e-4, atol=1e-5)
    gap = nn.GlobalAvgPool2D()
    np.testing.assert_allclose(gap(_nd(x)).asnumpy(), x.mean(axis=(2, 3), keepdims=True),
                               rtol=1e-5)
    gmp = nn.GlobalMaxPool2D()
    np.testing.assert_allclose(gmp(_nd(x)).asnumpy(), x.max(axis=(2, 3), keepdims=True))
    ap = nn.AvgPool2D(pool_size=2, strides=2)
    np.testing.assert_allclose(ap(_nd(x)).asnumpy(),
                               x.reshape(2, 2, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-5)
    np.testing.assert_array_equal(nn.Flatten()(_nd(x)).asnumpy(), x.reshape(2, -1))


def test_conv1d_and_transpose_shapes(rng):
    c1 = nn.Conv1D(4, 3, in_channels=2)
    c1.initialize(ctx=CPU)
    assert c1(_nd(rng.standard_normal((1, 2, 7)))).shape == (1, 4, 5)
    ct = nn.Conv2DTranspose(3, 2, strides=2)
    ct.initialize(ctx=CPU)
    y = ct(_nd(rng.standard_normal((1, 5, 3, 3))))
    assert y.shape == (1, 3, 6, 6) and ct.weight.shape == (5, 3, 2, 2)


def test_conv_channel_mismatch_names_parameter():
    c = nn.Conv2D(4, 3, in_channels=2)
    c.initialize(ctx=CPU)
    with pytest.raises(GpundaError) as e:
        c(nd.ones((1, 5, 6, 6), ctx=CPU))
    assert c.weight.name in str(e.value) and c.name in str(e.value)


def test_batchnorm_train_and_predict(rng):
    bn = nn.BatchNorm(in_channels=3, momentum=0.9)
    bn.initialize(ctx=CPU)
    x = rng.standard_normal((4, 3, 2, 2)).astype(np.float32) * 2 + 1
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    with autograd.record():
        y = bn(_nd(x))
    ref = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-4, atol=1e-4)
    # the running statistics change in the backward, as MXNet's
    np.testing.assert_array_equal(bn.running_mean.data().asnumpy(), 0)
    y.backward()
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), 0.1 * mean, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.data().asnumpy(), 0.9 + 0.1 * var, rtol=1e-4)
    # predict mode normalises with the running statistics
    rm, rv = bn.running_mean.data().asnumpy(), bn.running_var.data().asnumpy()
    y2 = bn(_nd(x)).asnumpy()
    np.testing.assert_allclose(y2, (x - rm[None, :, None, None]) /
                               np.sqrt(rv[None, :, None, None] + 1e-5), rtol=1e-4, atol=1e-5)
    assert bn.running_mean.grad_req == "null"


def test_layernorm_embedding_dropout_activations(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    ln = nn.LayerNorm()
    ln.initialize(ctx=CPU)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ln(_nd(x)).asnumpy(), ref, rtol=1e-4, atol=1e-5)
    emb = nn.Embedding(6, 2)
    emb.initialize(ctx=CPU)
    idx = np.array([[0, 5], [3, 3]])
    np.testing.assert_array_equal(emb(_nd(idx)).asnumpy(), emb.weight.data().asnumpy()[idx])
    do = nn.Dropout(0.5)
    np.testing.assert_array_equal(do(_nd(x)).asnumpy(), x)      # predict mode: identity
    with autograd.record():
        yd = do(_nd(np.ones((200, 50)))).asnumpy()
    assert set(np.unique(yd)) <= {0.0, 2.0} and 0.4 < (yd == 0).mean() < 0.6
    np.testing.assert_allclose(nn.LeakyReLU(0.1)(_nd(x)).asnumpy(), np.where(x > 0, x, 0.1 * x),
                               rtol=1e-6)
    np.testing.assert_allclose(nn.Activation("sigmoid")(_nd(x)).asnumpy(), 1 / (1 + np.exp(-x)),
                               rtol=1e-5)
    np.testing.assert_allclose(nn.HybridLambda("tanh")(_nd(x)).asnumpy(), np.tanh(x), rtol=1e-5)
    np.testing.assert_allclose(nn.HybridLambda(lambda F, a: F.relu(a))(_nd(x)).asnumpy(),
                               np.maximum(x, 0))
    with pytest.raises(GpundaError, match="rate"):
        nn.Dropout(1.5)


def test_layer_reprs():
    assert repr(nn.Dense(3, in_units=4, activation="relu")) == "Dense(4 -> 3, Activation(relu))"
    assert "Conv2D(None -> 8, kernel_size=(3, 3)" in repr(nn.Conv2D(8, 3))


# each layer and its repr as MXNet 1.9.1 prints it (observed with real MXNet)
_MXNET_REPRS = [
    (lambda: nn.Conv2D(16, 3),
     "Conv2D(None -> 16, kernel_size=(3, 3), stride=(1, 1))"),
    (lambda: nn.Conv2D(16, (3, 5), strides=2, padding=1, dilation=2, groups=2, use_bias=False,
                               activation='relu', in_channels=4),
     "Conv2D(2 -> 16, kernel_size=(3, 5), stride=(2, 2), padding=(1, 1), dilation=(2, 2), "
     "groups=2, bias=False, Activation(relu))"),
    (lambda: nn.Conv2D(8, 3, layout='NHWC', groups=2, in_channels=4),
     "Conv2D(3 -> 8, kernel_size=(3, 3), stride=(1, 1), groups=2)"),
    (lambda: nn.Conv1D(8, 3, activation='tanh', in_channels=2),
     "Conv1D(2 -> 8, kernel_size=(3,), stride=(1,), Activation(tanh))"),
    (lambda: nn.Conv3D(8, 3, padding=(1, 0, 1), dilation=(1, 2, 1), in_channels=2),
     "Conv3D(2 -> 8, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(1, 0, 1), "
     "dilation=(1, 2, 1))"),
    (lambda: nn.Conv2DTranspose(16, 3, strides=2, output_padding=1, groups=2, in_channels=4,
                                        use_bias=False, activation='sigmoid'),
     "Conv2DTranspose(8 -> 4, kernel_size=(3, 3), stride=(2, 2), groups=2, bias=False, "
     "Activation(sigmoid))"),
    (lambda: nn.Conv1DTranspose(6, 3, output_padding=1, strides=2, in_channels=3),
     "Conv1DTranspose(6 -> 3, kernel_size=(3,), stride=(2,))"),
    (lambda: nn.Conv2DTranspose(6, 3, dilation=2, padding=1),
     "Conv2DTranspose(6 -> 0, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), dilation=(2, 2))"),
    (lambda: nn.MaxPool2D(),
     "MaxPool2D(size=(2, 2), stride=(2, 2), padding=(0, 0), ceil_mode=False, global_pool=False, "
     "pool_type=max, layout=NCHW)"),
    (lambda: nn.MaxPool1D(3, 1, 1),
     "MaxPool1D(size=(3,), stride=(1,), padding=(1,), ceil_mode=False, global_pool=False, "
     "pool_type=max, layout=NCW)"),
    (lambda: nn.AvgPool2D(3, ceil_mode=True),
     "AvgPool2D(size=(3, 3), stride=(3, 3), padding=(0, 0), ceil_mode=True, global_pool=False, "
     "pool_type=avg, layout=NCHW)"),
    (lambda: nn.GlobalMaxPool3D(),
     "GlobalMaxPool3D(size=(1, 1, 1), stride=(1, 1, 1), padding=(0, 0, 0), ceil_mode=True, "
     "global_pool=True, pool_type=max, layout=NCDHW)"),
    (lambda: nn.AvgPool2D(2, padding=1, count_include_pad=False, layout='NHWC'),
     "AvgPool2D(size=(2, 2), stride=(2, 2), padding=(1, 1), ceil_mode=False, global_pool=False, "
     "pool_type=avg, layout=NHWC)"),
    (lambda: nn.Dense(10),
     "Dense(None -> 10, linear)"),
    (lambda: nn.Dense(10, in_units=5, activation='relu'),
     "Dense(5 -> 10, Activation(relu))"),
    (lambda: nn.Dense(10, use_bias=False, flatten=False, in_units=3),
     "Dense(3 -> 10, linear)"),
    (lambda: nn.BatchNorm(),
     "BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, use_global_stats=False, "
     "in_channels=None)"),
    (lambda: nn.BatchNorm(axis=2, momentum=0.8, epsilon=1e-3, center=False, scale=False,
                                  use_global_stats=True, in_channels=7),
     "BatchNorm(axis=2, eps=0.001, momentum=0.8, fix_gamma=True, use_global_stats=True, "
     "in_channels=7)"),
    (lambda: nn.Embedding(10, 4),
     "Embedding(10 -> 4, float32)"),
    (lambda: nn.Embedding(10, 4, dtype='float16', sparse_grad=True),
     "Embedding(10 -> 4, float16)"),
    (lambda: nn.InstanceNorm(in_channels=3, scale=True),
     "InstanceNorm(eps=1e-05, axis=1, center=True, scale=True, in_channels=3)"),
    (lambda: nn.LayerNorm(axis=1, epsilon=1e-6, center=False),
     "LayerNorm(eps=1e-06, axis=1, center=False, scale=True, in_channels=0)"),
]


@pytest.mark.parametrize("make, expected", _MXNET_REPRS,
                         ids=[want.split("(")[0] for _, want in _MXNET_REPRS])
def test_layer_repr_matches_mxnet(make, expected):
    assert repr(make()) == expected


def test_deferred_shapes_show_in_repr_after_forward_as_in_mxnet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, activation="relu"), nn.BatchNorm(), nn.Dense(2))
    net.initialize(ctx=CPU)
    net(nd.ones((1, 3, 5, 5), ctx=CPU))
    assert repr(net) == (
        "HybridSequential(\n"
        "  (0): Conv2D(3 -> 4, kernel_size=(3, 3), stride=(1, 1), Activation(relu))\n"
        "  (1): BatchNorm(axis=1, eps=1e-05, momentum=0.9, fix_gamma=False, "
        "use_global_stats=False, in_channels=4)\n"
        "  (2): Dense(36 -> 2, linear)\n"
        ")")


def test_group_norm_layer_matches_numpy_and_mxnet_docstring():
    # block names share the automatic-name counter with symbols (as MXNet): a fresh
    # NameManager keeps these blocks from shifting the names other tests expect
    with mx.name.NameManager():
        _group_norm_checks()


def _group_norm_checks():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    layer = nn.GroupNorm()
    layer.initialize()
    out = layer(nd.array(x)).asnumpy()
    # MXNet 1.9.1's GroupNorm docstring gives these values for this input
    np.testing.assert_allclose(out[0, 0], [-1.5932543, -1.3035717, -1.0138891, -0.7242065],
                               rtol=1e-5)
    layer2 = nn.GroupNorm(num_groups=3, epsilon=1e-3)
    layer2.initialize()
    layer2.hybridize()
    xr = x.reshape(2, 3, -1)
    ref = (xr - xr.mean(2, keepdims=True)) / np.sqrt(xr.var(2, keepdims=True) + 1e-3)
    out2 = layer2(nd.array(x)).asnumpy()
    np.testing.assert_allclose(out2, ref.reshape(x.shape), rtol=1e-5)
    assert layer2.gamma.shape == (3,)
    assert repr(layer2) == "GroupNorm(eps=0.001, num_groups=3, center=True, scale=True)"


def test_batch_norm_relu_layer_is_relu_of_batch_norm():
    x = nd.array(np.random.RandomState(1).randn(4, 3, 2))
    with mx.name.NameManager():      # keep the global batchnorm name count unchanged
        bn, bnr = nn.BatchNorm(), nn.BatchNormReLU()
    for layer in (bn, bnr):
        layer.initialize()
    bnr.hybridize()
    with autograd.record():
        ref, got = bn(x), bnr(x)
    np.testing.assert_allclose(got.asnumpy(), np.maximum(ref.asnumpy(), 0), rtol=1e-6)
    np.testing.assert_allclose(bnr.running_mean.data().asnumpy(),
                               bn.running_mean.data().asnumpy(), rtol=1e-6)
    assert [p[len(bnr.prefix):] for p in bnr.collect_params()] == \
        ["gamma", "beta", "running_mean", "running_var"]


def test_activations_module():
    from gpunda.gluon.nn import activations
    assert nn.Swish is activations.Swish and nn.Activation is activations.Activation
    assert set(activations.__all__) == {"Activation", "LeakyReLU", "PReLU", "ELU", "SELU",
                                        "Swish", "GELU"}


@pytest.mark.parametrize("op,shape,kwargs,expected", [
    # MXNet 1.9.1's answers
    ("Convolution", (1, 3, 0, 0), dict(kernel=(3, 3), stride=(1, 1), dilate=(1, 1), pad=(0, 0),
                                       num_filter=8, num_group=1, no_bias=False,
                                       layout="NCHW"),
     [(1, 3, 0, 0), (8, 3, 3, 3), (8,)]),
    ("Deconvolution", (1, 6, 0), dict(kernel=(5,), stride=(2,), dilate=(1,), pad=(0,), adj=(1,),
                                      num_filter=4, num_group=2, no_bias=False, layout="NCW"),
     [(1, 6, 0), (6, 2, 5), (4,)]),
    ("Convolution", (1, 0, 0, 0, 0), dict(kernel=(1, 2, 3), num_filter=5, no_bias=False),
     [(1, 0, 0, 0, 0), (5, 0, 1, 2, 3), (5,)]),
])
def test_infer_weight_shape_matches_mxnet(op, shape, kwargs, expected):
    from gpunda.gluon.nn.conv_layers import _infer_weight_shape
    assert _infer_weight_shape(op, shape, kwargs) == expected
