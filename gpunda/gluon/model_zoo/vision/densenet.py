"""DenseNet-BC (arXiv:1608.06993), as MXNet's model zoo builds it."""
from __future__ import annotations

from gpunda.context import cpu
from gpunda.gluon.block import HybridBlock
from gpunda.gluon import nn
from gpunda.gluon.contrib.nn import HybridConcurrent, Identity
from gpunda.gluon.model_zoo.vision._common import load_pretrained

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _make_dense_layer(growth_rate, bn_size, dropout):
    """BN-ReLU-1x1 conv, BN-ReLU-3x3 conv, concatenated after the layer's input."""
    new_features = nn.HybridSequential(prefix="")
    new_features.add(nn.BatchNorm(), nn.Activation("relu"),
                     nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False),
                     nn.BatchNorm(), nn.Activation("relu"),
                     nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        new_features.add(nn.Dropout(dropout))
    out = HybridConcurrent(axis=1, prefix="")
    out.add(Identity(), new_features)
    return out


def _make_dense_block(num_layers, bn_size, growth_rate, dropout, stage_index):
    out = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with out.name_scope():
        for _ in range(num_layers):
            out.add(_make_dense_layer(growth_rate, bn_size, dropout))
    return out


def _make_transition(num_output_features):
    out = nn.HybridSequential(prefix="")
    out.add(nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(num_output_features, kernel_size=1, use_bias=False),
            nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """DenseNet-BC: a 7x7 stem, dense blocks joined by halving transitions, 7x7 pooling.

    The final 7x7 average pooling makes 224x224 the input size.

    Args:
        num_init_features: channels of the stem convolution.
        growth_rate: channels each dense layer adds (``k`` in the paper).
        block_config: number of dense layers in each block.
        bn_size: bottleneck width as a multiple of ``growth_rate``.
        dropout: dropout rate after each dense layer (0: none).
        classes: number of classes of the output layer.
    """

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0,
                 classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3,
                                        use_bias=False),
                              nn.BatchNorm(), nn.Activation("relu"),
                              nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            num_features = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_make_dense_block(num_layers, bn_size, growth_rate, dropout,
                                                    i + 1))
                num_features += num_layers * growth_rate
                if i != len(block_config) - 1:
                    num_features //= 2
                    self.features.add(_make_transition(num_features))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7),
                              nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (stem channels, growth rate, layers per dense block)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=cpu(), root=None, **kwargs):
    """DenseNet-BC with ``num_layers`` 121, 161, 169 or 201.

    Args:
        num_layers: depth, one of ``densenet_spec``.
        pretrained: load ``densenet<num_layers>-<hash>.params`` from ``root``.
        ctx: the context the pretrained weights are loaded to.
        root: folder of the weight files, default ``$MXNET_HOME/models``.
        **kwargs: passed to ``DenseNet`` (``bn_size``, ``dropout``, ``classes``, ``prefix``).
    """
    if num_layers not in densenet_spec:
        raise ValueError(f"get_densenet: invalid number of layers: {num_layers}. Options are "
                         f"{sorted(densenet_spec)}")
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    if pretrained:
        load_pretrained(net, f"densenet{num_layers}", ctx, root)
    return net


def densenet121(**kwargs):
    """DenseNet-BC 121: ``get_densenet(121, **kwargs)``."""
    return get_densenet(121, **kwargs)


def densenet161(**kwargs):
    """DenseNet-BC 161: ``get_densenet(161, **kwargs)``."""
    return get_densenet(161, **kwargs)


def densenet169(**kwargs):
    """DenseNet-BC 169: ``get_densenet(169, **kwargs)``."""
    return get_densenet(169, **kwargs)


def densenet201(**kwargs):
    """DenseNet-BC 201: ``get_densenet(201, **kwargs)``."""
    return get_densenet(201, **kwargs)
