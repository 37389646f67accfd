"""gluon.contrib.cnn: the deformable convolution layers against MXNet 1.9.1's outputs,
gradients, parameter names and repr (tests/data/make_deformable_conv_fixture.py recorded them
with the same weights)."""
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda.gluon.contrib.cnn import DeformableConvolution, ModulatedDeformableConvolution

FIX = np.load(os.path.join(os.path.dirname(__file__), "..", "data",
                           "deformable_conv_mxnet191.npz"))
CASES = [  # as in the fixture maker
    (DeformableConvolution, dict(channels=3, kernel_size=3, padding=1)),
    (ModulatedDeformableConvolution, dict(channels=4, kernel_size=(3, 2), strides=(2, 1),
                                          num_deformable_group=2, activation="relu", groups=2)),
    (DeformableConvolution, dict(channels=2, kernel_size=2, use_bias=False,
                                 offset_use_bias=False, dilation=2)),
]


def _net(i, hybridize):
    cls, kw = CASES[i]
    net = cls(**kw)
    net.initialize()
    net(mx.nd.array(FIX["x"]))
    names = [k[len(net.prefix):] for k in net.collect_params()]
    assert names == [k[len("c%d/param/" % i):] for k in FIX.files
                     if k.startswith("c%d/param/" % i)]          # MXNet's names and order
    for name, p in net.collect_params().items():
        p.set_data(mx.nd.array(FIX["c%d/param/%s" % (i, name[len(net.prefix):])]))
    if hybridize:
        net.hybridize()
    return net


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("i", range(len(CASES)))
def test_outputs_and_grads_match_mxnet(i, hybridize):
    net = _net(i, hybridize)
    with mx.autograd.record():
        y = net(mx.nd.array(FIX["x"]))
        loss = (y ** 2).sum()
    loss.backward()
    np.testing.assert_allclose(y.asnumpy(), FIX["c%d/y" % i], rtol=1e-5, atol=1e-5)
    assert repr(net) == str(FIX["c%d/repr" % i])
    for name, p in net.collect_params().items():
        key = "c%d/grad/%s" % (i, name[len(net.prefix):])
        assert (key in FIX.files) == (CASES[i][0] is DeformableConvolution)
        if key in FIX.files:
            np.testing.assert_allclose(p.grad().asnumpy(), FIX[key], rtol=1e-4, atol=1e-4)


def test_modulated_grads_match_finite_differences():
    # MXNet's CPU build has no backward for the modulated op; check gpunda's against
    # central differences of the loss in a few weight entries of both convolutions.
    net = _net(1, False)
    x = mx.nd.array(FIX["x"])
    with mx.autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    eps = 1e-2
    for p in (net.deformable_conv_weight, net.offset_weight):
        w = p.data().asnumpy().astype(np.float64)
        g = p.grad().asnumpy()
        for idx in [(0, 0, 0, 0), (1, 1, 2, 1), (3, 0, 1, 0)]:
            vals = []
            for s in (1, -1):
                w2 = w.copy()
                w2[idx] += s * eps
                p.set_data(mx.nd.array(w2.astype(np.float32)))
                vals.append(float((net(x) ** 2).sum().asscalar()))
            p.set_data(mx.nd.array(w.astype(np.float32)))
            np.testing.assert_allclose(g[idx], (vals[0] - vals[1]) / (2 * eps), rtol=2e-2,
                                       atol=2e-2)


def test_deferred_shapes_layout_and_bad_arguments():
    net = DeformableConvolution(5, kernel_size=(3, 3), groups=1)
    assert net.deformable_conv_weight.shape == (5, 0, 3, 3)     # in_channels inferred later
    assert net.offset_weight.shape == (18, 0, 3, 3)
    net = DeformableConvolution(6, 3, in_channels=4, num_deformable_group=2)
    assert net.offset_weight.shape == (36, 4, 3, 3) and net.offset_bias.shape == (36,)
    net = ModulatedDeformableConvolution(2, 1)
    assert net.offset_weight.shape == (3, 0, 1, 1) and net.offset_split_index == 2
    with pytest.raises(mx.MXNetError, match="layout='NCW'"):
        DeformableConvolution(2, 1, layout="NCW")
    with pytest.raises(mx.MXNetError, match="kernel_size"):
        DeformableConvolution(2, (1, 2, 3))


def test_zero_offsets_reduce_to_convolution():
    # the offset convolution starts at zero (MXNet's default initialisers): the layer is a
    # plain convolution with its feature weights
    x = mx.nd.array(FIX["x"])
    net = DeformableConvolution(3, 3, padding=1, in_channels=4)
    net.initialize(mx.init.Uniform(0.5))
    for p in (net.offset_weight, net.offset_bias):
        p.set_data(mx.nd.zeros(p.shape))
    y = net(x)
    ref = mx.nd.Convolution(x, net.deformable_conv_weight.data(), net.deformable_conv_bias.data(),
                            kernel=(3, 3), pad=(1, 1), num_filter=3)
    np.testing.assert_allclose(y.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-5)
