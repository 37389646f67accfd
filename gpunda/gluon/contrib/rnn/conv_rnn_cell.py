"""Convolutional recurrent cells (MXNet 1.x ``gluon.contrib.rnn.Conv{1,2,3}D{RNN,LSTM,GRU}Cell``).

The i2h and h2h projections of the dense cells become convolutions (Shi et al., 2015): the
state is a feature map, and the h2h convolution pads so that it keeps the state's size
(odd kernels only, as in MXNet).
"""
from __future__ import annotations

from gpunda.base import GpundaError, numeric_types
from gpunda.gluon.rnn.rnn_cell import HybridRecurrentCell

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell", "Conv1DLSTMCell",
           "Conv2DLSTMCell", "Conv3DLSTMCell", "Conv1DGRUCell", "Conv2DGRUCell",
           "Conv3DGRUCell"]


def _tuple(spec, dims, what):
    if isinstance(spec, numeric_types):
        return (int(spec),) * dims
    spec = tuple(spec)
    if len(spec) != dims:
        raise GpundaError(f"{what}={spec} must be an int or {dims} values for a {dims}-D "
                          f"convolution")
    return spec


def _get_conv_out_size(dimensions, kernels, paddings, dilations):
    """Spatial sizes out of a stride-1 convolution; a size 0 (left to infer) stays 0."""
    return tuple(int(d + 2 * p - dl * (k - 1)) if d else 0
                 for d, k, p, dl in zip(dimensions, kernels, paddings, dilations))


class _BaseConvRNNCell(HybridRecurrentCell):
    """Shapes, parameters and the two convolutions shared by every conv cell."""

    _gates = 1

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad,
                 i2h_dilate, h2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, dims, conv_layout, activation,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_channels = hidden_channels
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        self._i2h_kernel = _tuple(i2h_kernel, dims, "i2h_kernel")
        self._i2h_pad = _tuple(i2h_pad, dims, "i2h_pad")
        self._i2h_dilate = _tuple(i2h_dilate, dims, "i2h_dilate")
        self._h2h_kernel = _tuple(h2h_kernel, dims, "h2h_kernel")
        self._h2h_dilate = _tuple(h2h_dilate, dims, "h2h_dilate")
        self._stride = (1,) * dims
        if any(k % 2 == 0 for k in self._h2h_kernel):
            raise GpundaError(f"{type(self).__name__}: h2h_kernel={self._h2h_kernel} must be "
                              f"odd (the state keeps its size)")
        if len(self._input_shape) != dims + 1:
            raise GpundaError(f"{type(self).__name__}: input_shape={self._input_shape} must "
                              f"have {dims + 1} entries (channels and {dims} spatial sizes, "
                              f"without batch and time)")
        self._channel_axis = conv_layout.find("C")
        first_channel = self._channel_axis == 1
        in_channels = self._input_shape[self._channel_axis - 1]
        spatial = self._input_shape[1:] if first_channel else self._input_shape[:-1]
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate,
                                                               self._h2h_kernel))
        out_size = _get_conv_out_size(spatial, self._i2h_kernel, self._i2h_pad, self._i2h_dilate)
        total = hidden_channels * self._gates
        if first_channel:
            i2h_shape = (total, in_channels) + self._i2h_kernel
            h2h_shape = (total, hidden_channels) + self._h2h_kernel
            self._state_shape = (hidden_channels,) + out_size
        else:
            i2h_shape = (total,) + self._i2h_kernel + (in_channels,)
            h2h_shape = (total,) + self._h2h_kernel + (hidden_channels,)
            self._state_shape = out_size + (hidden_channels,)
        get = self.params.get
        self.i2h_weight = get("i2h_weight", shape=i2h_shape, init=i2h_weight_initializer,
                              allow_deferred_init=True)
        self.h2h_weight = get("h2h_weight", shape=h2h_shape, init=h2h_weight_initializer,
                              allow_deferred_init=True)
        self.i2h_bias = get("i2h_bias", shape=(total,), init=i2h_bias_initializer,
                            allow_deferred_init=True)
        self.h2h_bias = get("h2h_bias", shape=(total,), init=h2h_bias_initializer,
                            allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size,) + self._state_shape, "__layout__": self._conv_layout}
                for _ in range(self._n_states)]

    _n_states = 1

    def __repr__(self):
        shape = self.i2h_weight.shape
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        return (f"{type(self).__name__}({in_channels if in_channels else None} -> {shape[0]}, "
                f"{self._activation}, {self._conv_layout})")

    def _convolutions(self, F, inputs, state, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        n = self._hidden_channels * self._gates
        i2h = F.Convolution(data=inputs, num_filter=n, kernel=self._i2h_kernel,
                            stride=self._stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                            weight=i2h_weight, bias=i2h_bias, layout=self._conv_layout,
                            name=prefix + "i2h")
        h2h = F.Convolution(data=state, num_filter=n, kernel=self._h2h_kernel,
                            dilate=self._h2h_dilate, pad=self._h2h_pad, stride=self._stride,
                            weight=h2h_weight, bias=h2h_bias, layout=self._conv_layout,
                            name=prefix + "h2h")
        return prefix, i2h, h2h


class _ConvRNNCell(_BaseConvRNNCell):
    def _alias(self):
        return "conv_rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._convolutions(F, inputs, states[0], i2h_weight, h2h_weight,
                                              i2h_bias, h2h_bias)
        output = self._get_activation(F, i2h + h2h, self._activation, name=prefix + "out")
        return output, [output]


class _ConvLSTMCell(_BaseConvRNNCell):
    _gates = 4
    _n_states = 2

    def _alias(self):
        return "conv_lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._convolutions(F, inputs, states[0], i2h_weight, h2h_weight,
                                              i2h_bias, h2h_bias)
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, axis=self._channel_axis,
                               name=prefix + "slice")
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=prefix + "f")
        in_transform = self._get_activation(F, gates[2], self._activation, name=prefix + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class _ConvGRUCell(_BaseConvRNNCell):
    _gates = 3

    def _alias(self):
        return "conv_gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._convolutions(F, inputs, states[0], i2h_weight, h2h_weight,
                                              i2h_bias, h2h_bias)
        axis = self._channel_axis
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, axis=axis,
                                           name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, axis=axis,
                                           name=prefix + "h2h_slice")
        reset_gate = F.Activation(i2h_r + h2h_r, act_type="sigmoid", name=prefix + "r_act")
        update_gate = F.Activation(i2h_z + h2h_z, act_type="sigmoid", name=prefix + "z_act")
        new_mem = self._get_activation(F, i2h + reset_gate * h2h, self._activation,
                                       name=prefix + "h_act")
        next_h = F.elemwise_add((1. - update_gate) * new_mem, update_gate * states[0],
                                name=prefix + "out")
        return next_h, [next_h]


def _make(base, dims, layout, doc):
    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad=0,
                 i2h_dilate=1, h2h_dilate=1, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", conv_layout=layout, activation="tanh",
                 prefix=None, params=None):
        base.__init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad,
                      i2h_dilate, h2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                      i2h_bias_initializer, h2h_bias_initializer, dims, conv_layout, activation,
                      prefix, params)
    __init__.__doc__ = doc
    return {"__init__": __init__, "__doc__": doc}


_DOC = """{dims}-D convolutional {kind} cell (default layout {layout}).

    Args:
        input_shape: one step's input shape without batch (channels and {dims} spatial sizes,
            in the order of ``conv_layout``).
        hidden_channels: state channels.
        i2h_kernel, h2h_kernel (odd), i2h_pad, i2h_dilate, h2h_dilate: convolution settings.
        initializers, conv_layout, activation ('tanh'), prefix, params: as MXNet's.
"""
_CLASSES = {}
for _dims, _layout in ((1, "NCW"), (2, "NCHW"), (3, "NCDHW")):
    for _kind, _base in (("RNN", _ConvRNNCell), ("LSTM", _ConvLSTMCell), ("GRU", _ConvGRUCell)):
        _name = f"Conv{_dims}D{_kind}Cell"
        _CLASSES[_name] = type(_name, (_base,), _make(
            _base, _dims, _layout, _DOC.format(dims=_dims, kind=_kind, layout=_layout)))
        _CLASSES[_name].__module__ = __name__
globals().update(_CLASSES)
