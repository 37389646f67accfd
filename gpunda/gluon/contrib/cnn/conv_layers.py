"""MXNet's ``mxnet.gluon.contrib.cnn.conv_layers``: deformable convolution layers (v1, Dai
2017; v2 "modulated", Dai 2018) as Gluon blocks over the ``contrib.DeformableConvolution`` and
``contrib.ModulatedDeformableConvolution`` ops.

Each layer holds two convolutions: a plain ``Convolution`` that computes the sampling offsets
(and, for v2, the modulation mask) from the input, and the deformable one that produces the
output features. Parameter names, their order, shapes, defaults and ``repr`` follow MXNet 1.9.1.
"""
from __future__ import annotations

from gpunda.base import GpundaError, numeric_types
from gpunda.gluon.block import HybridBlock
from gpunda.gluon.nn.activations import Activation
from gpunda.gluon.nn.conv_layers import conv_repr

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


def _pair(v, n, what, where):
    if isinstance(v, numeric_types):
        return (int(v),) * n
    try:
        v = tuple(int(i) for i in v)
    except TypeError:
        raise GpundaError(f"{where}: {what}={v!r} must be an int or a tuple of ints") from None
    if len(v) != n:
        raise GpundaError(f"{where}: {what}={v} must have {n} values")
    return v


class _DeformableBase(HybridBlock):
    """What both layers share: argument checks, the two convolutions' keyword sets, the
    parameters (``_offset_per_position`` offset channels per kernel position and group: 2 for
    v1's (dy, dx), 3 for v2's (dy, dx, mask))."""

    _offset_per_position = 2
    _op = None

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout="NCHW",
                 use_bias=True, in_channels=0, activation=None, weight_initializer=None,
                 bias_initializer="zeros", offset_weight_initializer="zeros",
                 offset_bias_initializer="zeros", offset_use_bias=True, op_name=None,
                 adj=None, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        where = type(self).__name__
        if layout not in ("NCHW", "NHWC"):
            raise GpundaError(f"{where}: layout={layout!r} is not supported: only 'NCHW' and "
                              f"'NHWC' (as in MXNet)")
        kernel = _pair(kernel_size, 2, "kernel_size", where)
        n = len(kernel)
        strides = _pair(strides, n, "strides", where)
        padding = _pair(padding, n, "padding", where)
        dilation = _pair(dilation, n, "dilation", where)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._op_name = op_name or type(self).__name__
            per_group = kernel[0] * kernel[1] * num_deformable_group
            self.offset_split_index = 2 * per_group
            self._kwargs_offset = {
                "kernel": kernel, "stride": strides, "dilate": dilation, "pad": padding,
                "num_filter": self._offset_per_position * per_group, "num_group": groups,
                "no_bias": not offset_use_bias, "layout": layout}
            self._kwargs_deformable_conv = {
                "kernel": kernel, "stride": strides, "dilate": dilation, "pad": padding,
                "num_filter": channels, "num_group": groups,
                "num_deformable_group": num_deformable_group, "no_bias": not use_bias,
                "layout": layout}
            if adj:
                self._kwargs_offset["adj"] = adj
                self._kwargs_deformable_conv["adj"] = adj
            self._make_params(in_channels, layout, use_bias, offset_use_bias,
                              weight_initializer, bias_initializer,
                              offset_weight_initializer, offset_bias_initializer)
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _offset_params(self, in_channels, layout, offset_use_bias, w_init, b_init):
        # The offset convolution's weight shape as the Convolution op infers it for this
        # layout (channels unknown while in_channels is 0: deferred to the first forward).
        from gpunda import symbol
        dshape = [0] * (len(self._kwargs_offset["kernel"]) + 2)
        dshape[layout.find("N")] = 1
        dshape[layout.find("C")] = in_channels
        conv = symbol.Convolution(symbol.var("data", shape=tuple(dshape)), **self._kwargs_offset)
        shapes = conv.infer_shape_partial()[0]
        self.offset_weight = self.params.get("offset_weight", shape=shapes[1], init=w_init,
                                             allow_deferred_init=True)
        if offset_use_bias:
            self.offset_bias = self.params.get("offset_bias", shape=shapes[2], init=b_init,
                                               allow_deferred_init=True)
        else:
            self.offset_bias = None

    def _conv_params(self, use_bias, w_init, b_init):
        k = self._kwargs_deformable_conv["kernel"]
        self.deformable_conv_weight = self.params.get(
            "deformable_conv_weight", shape=(self._channels, 0, k[0], k[1]), init=w_init,
            allow_deferred_init=True)
        if use_bias:
            self.deformable_conv_bias = self.params.get(
                "deformable_conv_bias", shape=(self._channels,), init=b_init,
                allow_deferred_init=True)
        else:
            self.deformable_conv_bias = None

    def _offsets(self, F, x, offset_weight, offset_bias):
        args = (x, offset_weight) if offset_bias is None else (x, offset_weight, offset_bias)
        return F.Convolution(*args, cudnn_off=True, **self._kwargs_offset)

    def _finish(self, act):
        return self.act(act) if self.act is not None else act


class DeformableConvolution(_DeformableBase):
    """2-D deformable convolution v1 (Dai et al., 2017): the sampling grid of each output
    position is shifted by offsets that a plain convolution of the input learns.

    ``channels`` output channels; ``kernel_size``, ``strides``, ``padding``, ``dilation``
    (int or 2 ints), ``groups``, ``num_deformable_group``, ``layout`` ('NCHW' or 'NHWC'),
    ``use_bias``, ``in_channels`` (0: inferred at the first call), ``activation``;
    ``weight_initializer`` / ``bias_initializer`` for the feature convolution and
    ``offset_weight_initializer`` / ``offset_bias_initializer`` (zeros: the layer starts as
    a plain convolution) / ``offset_use_bias`` for the offset one.
    """

    _offset_per_position = 2

    def _make_params(self, in_channels, layout, use_bias, offset_use_bias, w_init, b_init,
                     ow_init, ob_init):
        # MXNet registers the offset parameters first in this layer, last in the v2 one.
        self._offset_params(in_channels, layout, offset_use_bias, ow_init, ob_init)
        self._conv_params(use_bias, w_init, b_init)

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset = self._offsets(F, x, offset_weight, offset_bias)
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        act = F.contrib.DeformableConvolution(data=x, offset=offset,
                                              weight=deformable_conv_weight, name="fwd",
                                              **extra, **self._kwargs_deformable_conv)
        return self._finish(act)

    def _alias(self):
        return "deformable_conv"

    def __repr__(self):
        return conv_repr(self, self._kwargs_deformable_conv, self.deformable_conv_weight,
                         self.deformable_conv_bias)


class ModulatedDeformableConvolution(_DeformableBase):
    """2-D modulated deformable convolution v2 (Dai et al., 2018): as
    :class:`DeformableConvolution`, and the offset convolution also yields a per-sample mask
    (its last third of channels, through ``2 * sigmoid``) that scales each sampled value.
    Same arguments as :class:`DeformableConvolution`.
    """

    _offset_per_position = 3

    def _make_params(self, in_channels, layout, use_bias, offset_use_bias, w_init, b_init,
                     ow_init, ob_init):
        self._conv_params(use_bias, w_init, b_init)
        self._offset_params(in_channels, layout, offset_use_bias, ow_init, ob_init)

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset = self._offsets(F, x, offset_weight, offset_bias)
        split = self.offset_split_index
        shifts = F.slice_axis(offset, axis=1, begin=0, end=split)
        mask = F.sigmoid(F.slice_axis(offset, axis=1, begin=split, end=None)) * 2
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        act = F.contrib.ModulatedDeformableConvolution(
            data=x, offset=shifts, mask=mask, weight=deformable_conv_weight, name="fwd",
            **extra, **self._kwargs_deformable_conv)
        return self._finish(act)

    def _alias(self):
        return "modulated_deformable_conv"
