"""Make tests/data/deformable_conv_mxnet191.npz with real MXNet 1.9.1 (CPU): outputs and
parameter gradients of gluon.contrib.cnn's DeformableConvolution and
ModulatedDeformableConvolution with fixed weights, for tests/gluon/test_contrib_cnn.py.

Run with /work/mxref/bin/python. The input and the weights are drawn here from fixed seeds
and stored with the results; each case ``c`` stores ``c/param/<name>``, ``c/grad/<name>``
(of sum(y**2); v1 only: MXNet's CPU build has no backward of the modulated op) and ``c/y``; the test holds the layers' arguments (CASES, same order).
"""
import os

import numpy as np
import mxnet as mx
from mxnet.gluon.contrib.cnn import DeformableConvolution, ModulatedDeformableConvolution

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [
    (DeformableConvolution, dict(channels=3, kernel_size=3, padding=1)),
    (ModulatedDeformableConvolution, dict(channels=4, kernel_size=(3, 2), strides=(2, 1),
                                          num_deformable_group=2, activation="relu", groups=2)),
    (DeformableConvolution, dict(channels=2, kernel_size=2, use_bias=False,
                                 offset_use_bias=False, dilation=2)),
]
x = np.random.RandomState(0).uniform(-1, 1, (2, 4, 6, 5)).astype(np.float32)
out = {"x": x}
for i, (cls, kw) in enumerate(CASES):
    net = cls(**kw)
    net.initialize()
    net(mx.nd.array(x))
    rng = np.random.RandomState(1)
    for name, p in net.collect_params().items():
        short = name[len(net.prefix):]
        v = rng.uniform(-0.5, 0.5, p.shape).astype(np.float32)
        p.set_data(mx.nd.array(v))
        out["c%d/param/%s" % (i, short)] = v
    with mx.autograd.record():
        y = net(mx.nd.array(x))
        loss = (y ** 2).sum()
    out["c%d/y" % i] = y.asnumpy()
    if cls is ModulatedDeformableConvolution:
        out["c%d/repr" % i] = np.array(repr(net))
        continue
    loss.backward()
    for name, p in net.collect_params().items():
        out["c%d/grad/%s" % (i, name[len(net.prefix):])] = p.grad().asnumpy()
    out["c%d/repr" % i] = np.array(repr(net))
np.savez_compressed(os.path.join(HERE, "deformable_conv_mxnet191.npz"), **out)
