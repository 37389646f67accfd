"""Training the model zoo's CIFAR-style ResNet-20 (issue 19): imperative and hybridized.

ResNet-20 is ``ResNetV1(BasicBlockV1, [3, 3, 3], [16, 16, 32, 64], thumbnail=True)``: a 3x3
stem, three stages of three basic blocks, global pooling, a 10-way dense layer. The data are
generated: a noisy copy of one of ten fixed prototype images, labelled by the prototype.
The time per step next to PyTorch and the memory over 1000 steps are in bench/ (W11).
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, gluon
from gpunda.gluon.model_zoo import vision


def _resnet20():
    return vision.ResNetV1(vision.BasicBlockV1, [3, 3, 3], [16, 16, 32, 64], classes=10,
                           thumbnail=True)


def _batches(n, size, seed):
    r = np.random.RandomState(seed)
    protos = r.standard_normal((10, 3, size, size)).astype(np.float32)
    while True:
        y = r.randint(0, 10, n)
        x = protos[y] + 0.5 * r.standard_normal((n, 3, size, size)).astype(np.float32)
        yield mx.nd.array(x), mx.nd.array(y.astype(np.float32))


def _train(net, batches, steps):
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9,
                                                          "wd": 1e-4})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    losses = []
    for _, (x, y) in zip(range(steps), batches):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        losses.append(float(loss.mean().asscalar()))
    return np.array(losses)


def test_resnet20_loss_falls_and_hybridized_matches_imperative(tmp_path):
    x, y = next(_batches(4, 16, seed=0))
    fixed = iter(lambda: (x, y), None)      # one batch over and over: the loss must fall
    nets = {}
    for hybrid in (False, True):
        net = _resnet20()
        if not nets:
            net.initialize(mx.init.Xavier())
            net(x)
            net.save_parameters(str(tmp_path / "init.params"))
        else:
            net.load_parameters(str(tmp_path / "init.params"))
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        nets[hybrid] = (net, _train(net, fixed, 6))
    (imp, loss_imp), (hyb, loss_hyb) = nets[False], nets[True]
    assert loss_imp[-1] < 0.3 * loss_imp[0], loss_imp
    np.testing.assert_allclose(loss_hyb, loss_imp, rtol=1e-4, atol=1e-5)
    # the trained weights and the running statistics agree too (predict mode)
    np.testing.assert_allclose(hyb(x).asnumpy(), imp(x).asnumpy(), rtol=1e-3, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("hybrid", [False, True])
def test_resnet20_trains_for_300_steps(hybrid):
    mx.random.seed(3)
    net = _resnet20()
    net.initialize(mx.init.Xavier())
    if hybrid:
        net.hybridize(static_alloc=True, static_shape=True)
    losses = _train(net, _batches(16, 32, seed=1), 300)
    assert np.isfinite(losses).all()
    # fresh batches every step: the mean loss of the last 50 far below that of the first 50
    assert losses[-50:].mean() < 0.25 * losses[:50].mean(), losses[::25]
    x, y = next(_batches(64, 32, seed=1))   # same prototypes, new noise
    accuracy = (net(x).argmax(axis=1) == y).mean().asscalar()
    assert accuracy > 0.9
