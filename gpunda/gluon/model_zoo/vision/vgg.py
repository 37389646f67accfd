"""VGG (arXiv:1409.1556), with or without batch norm, as MXNet's model zoo builds it."""
from __future__ import annotations

from gpunda.context import cpu
from gpunda.initializer import Xavier
from gpunda.gluon.block import HybridBlock
from gpunda.gluon import nn
from gpunda.gluon.model_zoo.vision._common import load_pretrained

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn",
           "vgg19_bn", "get_vgg"]


class VGG(HybridBlock):
    """VGG: stages of 3x3 convolutions each ending in 2x2 max pooling, then three dense layers.

    Args:
        layers: number of convolutions in each stage.
        filters: channels of each stage (as many entries as ``layers``).
        classes: number of classes of the output layer.
        batch_norm: batch norm after every convolution.
    """

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError(f"VGG: layers={list(layers)} and filters={list(filters)} must "
                             f"have the same length")
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"))
                self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal",
                                   bias_initializer="zeros")

    def _make_features(self, layers, filters, batch_norm):
        featurizer = nn.HybridSequential(prefix="")
        for num, channels in zip(layers, filters):
            for _ in range(num):
                featurizer.add(nn.Conv2D(channels, kernel_size=3, padding=1,
                                         weight_initializer=Xavier(rnd_type="gaussian",
                                                                   factor_type="out",
                                                                   magnitude=2),
                                         bias_initializer="zeros"))
                if batch_norm:
                    featurizer.add(nn.BatchNorm())
                featurizer.add(nn.Activation("relu"))
            featurizer.add(nn.MaxPool2D(strides=2))
        return featurizer

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (convolutions per stage, channels per stage)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """VGG with ``num_layers`` 11, 13, 16 or 19.

    Args:
        num_layers: depth, one of ``vgg_spec``.
        pretrained: load ``vgg<num_layers>[_bn]-<hash>.params`` from ``root``.
        ctx: the context the pretrained weights are loaded to.
        root: folder of the weight files, default ``$MXNET_HOME/models``.
        **kwargs: passed to ``VGG`` (``classes``, ``batch_norm``, ``prefix``, ``params``).
    """
    if num_layers not in vgg_spec:
        raise ValueError(f"get_vgg: invalid number of layers: {num_layers}. Options are "
                         f"{sorted(vgg_spec)}")
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        suffix = "_bn" if kwargs.get("batch_norm") else ""
        load_pretrained(net, f"vgg{num_layers}{suffix}", ctx, root)
    return net


def _constructor(num_layers, batch_norm):
    def make(**kwargs):
        if batch_norm:
            kwargs["batch_norm"] = True
        return get_vgg(num_layers, **kwargs)
    name = f"vgg{num_layers}{'_bn' if batch_norm else ''}"
    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"VGG-{num_layers}{' with batch norm' if batch_norm else ''}: "
                    f"``get_vgg({num_layers}, **kwargs)`` (``pretrained``, ``ctx``, ``root``, "
                    f"``classes``).")
    return make


vgg11 = _constructor(11, False)
vgg13 = _constructor(13, False)
vgg16 = _constructor(16, False)
vgg19 = _constructor(19, False)
vgg11_bn = _constructor(11, True)
vgg13_bn = _constructor(13, True)
vgg16_bn = _constructor(16, True)
vgg19_bn = _constructor(19, True)
