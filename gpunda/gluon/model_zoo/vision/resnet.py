"""ResNet V1 (arXiv:1512.03385) and V2 (arXiv:1603.05027), built as MXNet's model zoo builds them.

The blocks and their order are MXNet's, so parameter names (``resnetv10_stage1_conv0_weight``)
and structural names (``features.1.0.body.0.weight``) match files MXNet saved. MXNet's V1
bottleneck keeps a bias on its 1x1 convolutions; so does this one, for the same files.
"""
from __future__ import annotations

from gpunda.context import cpu
from gpunda.gluon.block import HybridBlock
from gpunda.gluon import nn
from gpunda.gluon.model_zoo.vision._common import load_pretrained

__all__ = ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1",
           "BottleneckV2", "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1",
           "resnet152_v1", "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2",
           "resnet152_v2", "get_resnet"]


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


def _bn_conv_downsample(channels, stride, in_channels):
    """V1 shortcut: 1x1 convolution with ``stride``, then batch norm."""
    down = nn.HybridSequential(prefix="")
    down.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                       in_channels=in_channels))
    down.add(nn.BatchNorm())
    return down


class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions with batch norm, added to the (downsampled) input, then ReLU.

    Args:
        channels: output channels.
        stride: stride of the first convolution.
        downsample: project the input with a strided 1x1 convolution.
        in_channels: input channels (0: inferred from the first input).
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(_conv3x3(channels, stride, in_channels), nn.BatchNorm(),
                      nn.Activation("relu"), _conv3x3(channels, 1, channels), nn.BatchNorm())
        self.downsample = (_bn_conv_downsample(channels, stride, in_channels)
                           if downsample else None)

    def hybrid_forward(self, F, x):
        residual = self.downsample(x) if self.downsample else x
        return F.Activation(residual + self.body(x), act_type="relu")


class BottleneckV1(HybridBlock):
    """1x1 (channels/4), 3x3, 1x1 (channels) convolutions with batch norm, plus the input.

    Args: as ``BasicBlockV1``.
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(nn.Conv2D(channels // 4, kernel_size=1, strides=stride), nn.BatchNorm(),
                      nn.Activation("relu"), _conv3x3(channels // 4, 1, channels // 4),
                      nn.BatchNorm(), nn.Activation("relu"),
                      nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm())
        self.downsample = (_bn_conv_downsample(channels, stride, in_channels)
                           if downsample else None)

    def hybrid_forward(self, F, x):
        residual = self.downsample(x) if self.downsample else x
        return F.Activation(self.body(x) + residual, act_type="relu")


class BasicBlockV2(HybridBlock):
    """Pre-activation basic block: (BN, ReLU, 3x3 conv) twice, plus the input.

    Args: as ``BasicBlockV1``; the shortcut projection sees the pre-activated input.
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False,
                                     in_channels=in_channels) if downsample else None)

    def hybrid_forward(self, F, x):
        residual = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.conv2(F.Activation(self.bn2(x), act_type="relu"))
        return x + residual


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck: (BN, ReLU, conv) with 1x1, 3x3, 1x1 kernels, plus the input.

    Args: as ``BasicBlockV1``.
    """

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False,
                                     in_channels=in_channels) if downsample else None)

    def hybrid_forward(self, F, x):
        residual = x
        x = F.Activation(self.bn1(x), act_type="relu")
        if self.downsample:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.conv2(F.Activation(self.bn2(x), act_type="relu"))
        x = self.conv3(F.Activation(self.bn3(x), act_type="relu"))
        return x + residual


def _make_stage(block, num_blocks, channels, stride, stage_index, in_channels):
    stage = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels,
                        prefix=""))
        for _ in range(num_blocks - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
    return stage


def _check_spec(layers, channels):
    if len(layers) != len(channels) - 1:
        raise ValueError(f"ResNet: channels={list(channels)} must have one entry more than "
                         f"layers={list(layers)}")


class ResNetV1(HybridBlock):
    """ResNet V1: stem, residual stages, global average pooling, dense output.

    Args:
        block: the residual block class (``BasicBlockV1`` or ``BottleneckV1``).
        layers: number of blocks in each stage.
        channels: stem channels followed by each stage's output channels.
        classes: number of classes of the output layer.
        thumbnail: a single 3x3 convolution as the stem (small inputs such as 32x32)
            instead of the 7x7 strided convolution and max pooling.
    """

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        _check_spec(layers, channels)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False),
                                  nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))
            for i, num_blocks in enumerate(layers):
                self.features.add(_make_stage(block, num_blocks, channels[i + 1],
                                              1 if i == 0 else 2, i + 1, channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet V2 (pre-activation): input batch norm, stem, stages, BN-ReLU, pooling, dense.

    Args: as ``ResNetV1``, with ``BasicBlockV2`` or ``BottleneckV2`` as ``block``.
    """

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        _check_spec(layers, channels)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False),
                                  nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(3, 2, 1))
            for i, num_blocks in enumerate(layers):
                self.features.add(_make_stage(block, num_blocks, channels[i + 1],
                                              1 if i == 0 else 2, i + 1, channels[i]))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(),
                              nn.Flatten())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (block kind, blocks per stage, stem + stage channels)
resnet_spec = {18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
                         {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2}]


def get_resnet(version, num_layers, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """ResNet of ``version`` 1 or 2 with ``num_layers`` 18, 34, 50, 101 or 152.

    Args:
        version: 1 (ResNetV1) or 2 (ResNetV2).
        num_layers: depth, one of ``resnet_spec``.
        pretrained: load ``resnet<num_layers>_v<version>-<hash>.params`` from ``root``.
        ctx: the context the pretrained weights are loaded to.
        root: folder of the weight files, default ``$MXNET_HOME/models``.
        **kwargs: passed to the network (``classes``, ``thumbnail``, ``prefix``, ``params``).
    """
    if num_layers not in resnet_spec:
        raise ValueError(f"get_resnet: invalid number of layers: {num_layers}. Options are "
                         f"{sorted(resnet_spec)}")
    if version not in (1, 2):
        raise ValueError(f"get_resnet: invalid resnet version: {version}. Options are 1 and 2.")
    block_type, layers, channels = resnet_spec[num_layers]
    block = resnet_block_versions[version - 1][block_type]
    net = resnet_net_versions[version - 1](block, layers, channels, **kwargs)
    if pretrained:
        load_pretrained(net, f"resnet{num_layers}_v{version}", ctx, root)
    return net


def _constructor(version, num_layers):
    def make(**kwargs):
        return get_resnet(version, num_layers, **kwargs)
    make.__name__ = make.__qualname__ = f"resnet{num_layers}_v{version}"
    make.__doc__ = (f"ResNet-{num_layers} V{version}: ``get_resnet({version}, {num_layers}, "
                    f"**kwargs)`` (``pretrained``, ``ctx``, ``root``, ``classes``, "
                    f"``thumbnail``).")
    return make


resnet18_v1 = _constructor(1, 18)
resnet34_v1 = _constructor(1, 34)
resnet50_v1 = _constructor(1, 50)
resnet101_v1 = _constructor(1, 101)
resnet152_v1 = _constructor(1, 152)
resnet18_v2 = _constructor(2, 18)
resnet34_v2 = _constructor(2, 34)
resnet50_v2 = _constructor(2, 50)
resnet101_v2 = _constructor(2, 101)
resnet152_v2 = _constructor(2, 152)
