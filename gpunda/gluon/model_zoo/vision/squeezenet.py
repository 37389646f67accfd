"""SqueezeNet 1.0 (arXiv:1602.07360) and 1.1, as MXNet's model zoo builds them."""
from __future__ import annotations

from gpunda.context import cpu
from gpunda.gluon.block import HybridBlock
from gpunda.gluon import nn
from gpunda.gluon.contrib.nn import HybridConcurrent
from gpunda.gluon.model_zoo.vision._common import load_pretrained

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _make_fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return out


def _make_fire(squeeze_channels, expand1x1_channels, expand3x3_channels):
    """Fire module: 1x1 squeeze, then 1x1 and 3x3 expands concatenated on channels."""
    out = nn.HybridSequential(prefix="")
    out.add(_make_fire_conv(squeeze_channels, 1))
    paths = HybridConcurrent(axis=1, prefix="")
    paths.add(_make_fire_conv(expand1x1_channels, 1))
    paths.add(_make_fire_conv(expand3x3_channels, 3, 1))
    out.add(paths)
    return out


# each entry: a fire module (squeeze, expand 1x1, expand 3x3) or "pool"
_FIRES = {"1.0": [(16, 64, 64), (16, 64, 64), (32, 128, 128), "pool", (32, 128, 128),
                  (48, 192, 192), (48, 192, 192), (64, 256, 256), "pool", (64, 256, 256)],
          "1.1": [(16, 64, 64), (16, 64, 64), "pool", (32, 128, 128), (32, 128, 128), "pool",
                  (48, 192, 192), (48, 192, 192), (64, 256, 256), (64, 256, 256)]}


class SqueezeNet(HybridBlock):
    """SqueezeNet: a strided stem, fire modules with max pooling, a 1x1 conv classifier.

    The classifier ends in 13x13 average pooling, so inputs are 224x224 (or near).

    Args:
        version: ``"1.0"`` or ``"1.1"`` (1.1: a 3x3 stem and earlier pooling, 2.4x cheaper).
        classes: number of classes of the output layer.
    """

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in _FIRES:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1.0 or 1.1 expected")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if version == "1.0":
                self.features.add(nn.Conv2D(96, kernel_size=7, strides=2))
            else:
                self.features.add(nn.Conv2D(64, kernel_size=3, strides=2))
            self.features.add(nn.Activation("relu"))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
            for fire in _FIRES[version]:
                if fire == "pool":
                    self.features.add(nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True))
                else:
                    self.features.add(_make_fire(*fire))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"),
                            nn.AvgPool2D(13), nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """SqueezeNet ``version`` ``"1.0"`` or ``"1.1"``.

    Args:
        version: ``"1.0"`` or ``"1.1"``.
        pretrained: load ``squeezenet<version>-<hash>.params`` from ``root``.
        ctx: the context the pretrained weights are loaded to.
        root: folder of the weight files, default ``$MXNET_HOME/models``.
        **kwargs: passed to ``SqueezeNet`` (``classes``, ``prefix``, ``params``).
    """
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        load_pretrained(net, f"squeezenet{version}", ctx, root)
    return net


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0: ``get_squeezenet("1.0", **kwargs)``."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1: ``get_squeezenet("1.1", **kwargs)``."""
    return get_squeezenet("1.1", **kwargs)
