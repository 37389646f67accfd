"""MobileNet (arXiv:1704.04861) and MobileNetV2 (arXiv:1801.04381), as MXNet's model zoo.

Both take a width ``multiplier``; the named constructors cover MXNet's published
widths 1.0, 0.75, 0.5 and 0.25.
"""
from __future__ import annotations

from gpunda.context import cpu
from gpunda.gluon.block import HybridBlock
from gpunda.gluon import nn
from gpunda.gluon.model_zoo.vision._common import load_pretrained

__all__ = ["MobileNet", "MobileNetV2", "mobilenet1_0", "mobilenet_v2_1_0", "mobilenet0_75",
           "mobilenet_v2_0_75", "mobilenet0_5", "mobilenet_v2_0_5", "mobilenet0_25",
           "mobilenet_v2_0_25", "get_mobilenet", "get_mobilenet_v2"]


class RELU6(HybridBlock):
    """min(max(x, 0), 6), as ``clip``."""

    def hybrid_forward(self, F, x):
        return F.clip(x, 0, 6, name="relu6")


def _add_conv(out, channels=1, kernel=1, stride=1, pad=0, num_group=1, active=True,
              relu6=False):
    """Append convolution (no bias), batch norm and, if ``active``, ReLU or ReLU6 to ``out``."""
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group, use_bias=False))
    out.add(nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation("relu"))


def _add_conv_dw(out, dw_channels, channels, stride, relu6=False):
    """Depthwise 3x3 convolution, then pointwise 1x1 convolution."""
    _add_conv(out, channels=dw_channels, kernel=3, stride=stride, pad=1, num_group=dw_channels,
              relu6=relu6)
    _add_conv(out, channels=channels, relu6=relu6)


class LinearBottleneck(HybridBlock):
    """MobileNetV2's inverted residual: 1x1 expand (x``t``), 3x3 depthwise, linear 1x1 project.

    Args:
        in_channels: input channels.
        channels: output channels.
        t: expansion ratio.
        stride: stride of the depthwise convolution; the input is added back when it is
            1 and the channel counts agree.
    """

    def __init__(self, in_channels, channels, t, stride, **kwargs):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        with self.name_scope():
            self.out = nn.HybridSequential()
            _add_conv(self.out, in_channels * t, relu6=True)
            _add_conv(self.out, in_channels * t, kernel=3, stride=stride, pad=1,
                      num_group=in_channels * t, relu6=True)
            _add_conv(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F, x):
        out = self.out(x)
        if self.use_shortcut:
            out = F.elemwise_add(out, x)
        return out


class MobileNet(HybridBlock):
    """MobileNet: a strided 3x3 stem and 13 depthwise-separable convolutions, pooled, dense.

    Args:
        multiplier: width multiplier (>= 0.25) applied to every layer's channels.
        classes: number of classes of the output layer.
    """

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _add_conv(self.features, channels=int(32 * multiplier), kernel=3, pad=1,
                          stride=2)
                dw_channels = [int(c * multiplier)
                               for c in [32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024]]
                channels = [int(c * multiplier)
                            for c in [64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2]
                strides = [1, 2] * 3 + [1] * 5 + [2, 1]
                for dwc, c, s in zip(dw_channels, channels, strides):
                    _add_conv_dw(self.features, dw_channels=dwc, channels=c, stride=s)
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class MobileNetV2(HybridBlock):
    """MobileNetV2: a strided stem, 17 linear bottlenecks, 1x1 to 1280 channels, pooled,
    and a 1x1 convolution as the classifier (children ``features``, ``output``).

    Args:
        multiplier: width multiplier applied to every layer's channels (the last 1280
            channels grow only for multipliers above 1).
        classes: number of classes of the output layer.
    """

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1,
                          relu6=True)
                in_channels_group = [int(c * multiplier) for c in [32] + [16] + [24] * 2
                                     + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3]
                channels_group = [int(c * multiplier) for c in [16] + [24] * 2 + [32] * 3
                                  + [64] * 4 + [96] * 3 + [160] * 3 + [320]]
                ts = [1] + [6] * 16
                strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
                for in_c, c, t, s in zip(in_channels_group, channels_group, ts, strides):
                    self.features.add(LinearBottleneck(in_channels=in_c, channels=c, t=t,
                                                       stride=s))
                last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
                _add_conv(self.features, last_channels, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"),
                                nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def _store_name(family, multiplier):
    # MXNet's file names: mobilenet1.0, mobilenet0.75, mobilenet0.5, mobilenet0.25
    suffix = f"{multiplier:.2f}"
    if suffix in ("1.00", "0.50"):
        suffix = suffix[:-1]
    return family + suffix


def get_mobilenet(multiplier, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """MobileNet with width ``multiplier``.

    Args:
        multiplier: width multiplier (>= 0.25).
        pretrained: load ``mobilenet<multiplier>-<hash>.params`` from ``root``.
        ctx: the context the pretrained weights are loaded to.
        root: folder of the weight files, default ``$MXNET_HOME/models``.
        **kwargs: passed to ``MobileNet`` (``classes``, ``prefix``, ``params``).
    """
    net = MobileNet(multiplier, **kwargs)
    if pretrained:
        load_pretrained(net, _store_name("mobilenet", multiplier), ctx, root)
    return net


def get_mobilenet_v2(multiplier, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """MobileNetV2 with width ``multiplier``.

    Args:
        multiplier: width multiplier.
        pretrained: load ``mobilenetv2_<multiplier>-<hash>.params`` from ``root``.
        ctx: the context the pretrained weights are loaded to.
        root: folder of the weight files, default ``$MXNET_HOME/models``.
        **kwargs: passed to ``MobileNetV2`` (``classes``, ``prefix``, ``params``).
    """
    net = MobileNetV2(multiplier, **kwargs)
    if pretrained:
        load_pretrained(net, _store_name("mobilenetv2_", multiplier), ctx, root)
    return net


def _constructor(getter, multiplier, name):
    def make(**kwargs):
        return getter(multiplier, **kwargs)
    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"{getter.__name__}({multiplier}, **kwargs) (``pretrained``, ``ctx``, "
                    f"``root``, ``classes``).")
    return make


mobilenet1_0 = _constructor(get_mobilenet, 1.0, "mobilenet1_0")
mobilenet0_75 = _constructor(get_mobilenet, 0.75, "mobilenet0_75")
mobilenet0_5 = _constructor(get_mobilenet, 0.5, "mobilenet0_5")
mobilenet0_25 = _constructor(get_mobilenet, 0.25, "mobilenet0_25")
mobilenet_v2_1_0 = _constructor(get_mobilenet_v2, 1.0, "mobilenet_v2_1_0")
mobilenet_v2_0_75 = _constructor(get_mobilenet_v2, 0.75, "mobilenet_v2_0_75")
mobilenet_v2_0_5 = _constructor(get_mobilenet_v2, 0.5, "mobilenet_v2_0_5")
mobilenet_v2_0_25 = _constructor(get_mobilenet_v2, 0.25, "mobilenet_v2_0_25")
