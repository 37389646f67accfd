"""AlexNet ("One weird trick for parallelizing CNNs", arXiv:1404.5997), as MXNet's model zoo."""
from __future__ import annotations

from gpunda.context import cpu
from gpunda.gluon.block import HybridBlock
from gpunda.gluon import nn
from gpunda.gluon.model_zoo.vision._common import load_pretrained

__all__ = ["AlexNet", "alexnet"]


class AlexNet(HybridBlock):
    """AlexNet: five convolutions and three dense layers (children ``features``, ``output``).

    Args:
        classes: number of classes of the output layer.
    """

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                for channels, kernel, stride, pad, pool in ((64, 11, 4, 2, True),
                                                            (192, 5, 1, 2, True),
                                                            (384, 3, 1, 1, False),
                                                            (256, 3, 1, 1, False),
                                                            (256, 3, 1, 1, True)):
                    self.features.add(nn.Conv2D(channels, kernel_size=kernel, strides=stride,
                                                padding=pad, activation="relu"))
                    if pool:
                        self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Flatten())
                for _ in range(2):
                    self.features.add(nn.Dense(4096, activation="relu"))
                    self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained=False, ctx=cpu(), root=None, **kwargs):
    """AlexNet; ``pretrained=True`` loads ``alexnet-44335d1f.params`` from ``root``.

    Args:
        pretrained: load MXNet's published weights (from ``root``, never downloaded).
        ctx: the context the pretrained weights are loaded to.
        root: folder of the weight files, default ``$MXNET_HOME/models``.
        **kwargs: passed to ``AlexNet`` (``classes``, ``prefix``, ``params``).
    """
    net = AlexNet(**kwargs)
    if pretrained:
        load_pretrained(net, "alexnet", ctx, root)
    return net
