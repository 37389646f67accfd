"""Convolutional cells of the legacy symbolic RNN API (``mx.rnn.ConvRNNCell``,
``ConvLSTMCell``, ``ConvGRUCell``): the dense cells' recurrences with the i2h/h2h
projections done by ``Convolution`` (Xingjian et al., NIPS 2015), as MXNet 1.9.1's
python/mxnet/rnn/rnn_cell.py builds them (same node and parameter names).
"""
import functools

from gpunda import symbol
from gpunda.base import GpundaError
from gpunda.rnn._cells import BaseRNNCell

# MXNet's default activation of the convolutional cells
_LEAKY = functools.partial(symbol.LeakyReLU, act_type="leaky", slope=0.2)


class BaseConvRNNCell(BaseRNNCell):
    """Base of the convolutional cells: i2h is a Convolution of the input with the given
    kernel/stride/pad/dilate, h2h a same-size Convolution of the hidden state (odd
    ``h2h_kernel``, padded to keep the state's spatial shape)."""

    def __init__(self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel,
                 i2h_stride, i2h_pad, i2h_dilate, i2h_weight_initializer,
                 h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                 activation, prefix="", params=None, conv_layout="NCHW"):
        super().__init__(prefix=prefix, params=params)
        if any(k % 2 == 0 for k in h2h_kernel[:2]):
            # MXNet asserts this (an even kernel cannot keep the state's shape)
            raise AssertionError(f"Only support odd number, get h2h_kernel= {h2h_kernel}")
        self._h2h_kernel = h2h_kernel
        self._h2h_dilate = h2h_dilate
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(h2h_dilate[:2], h2h_kernel[:2]))
        self._i2h_kernel = i2h_kernel
        self._i2h_stride = i2h_stride
        self._i2h_pad = i2h_pad
        self._i2h_dilate = i2h_dilate
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        # the state has the shape of i2h's output for one gate (batch left unknown)
        probe = symbol.Convolution(data=symbol.Variable("data"), num_filter=num_hidden,
                                   kernel=i2h_kernel, stride=i2h_stride, pad=i2h_pad,
                                   dilate=i2h_dilate, layout=conv_layout)
        out = probe.infer_shape(data=input_shape)[1]
        if out is None:
            raise GpundaError(f"{type(self).__name__}: cannot infer the state shape from "
                              f"input_shape={input_shape}")
        self._state_shape = (0,) + tuple(out[0][1:])
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    @property
    def _num_gates(self):
        return len(self._gate_names)

    @property
    def state_info(self):
        info = {"shape": self._state_shape, "__layout__": self._conv_layout}
        return [info, dict(info)]

    def _conv_forward(self, inputs, states, name):
        n = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(name=f"{name}i2h", data=inputs, num_filter=n,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride,
                                 pad=self._i2h_pad, dilate=self._i2h_dilate,
                                 weight=self._iW, bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name=f"{name}h2h", data=states[0], num_filter=n,
                                 kernel=self._h2h_kernel, dilate=self._h2h_dilate,
                                 pad=self._h2h_pad, stride=(1, 1), weight=self._hW,
                                 bias=self._hB, layout=self._conv_layout)
        return i2h, h2h

    def _step_name(self):
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"

    def __call__(self, inputs, states):
        raise NotImplementedError("BaseConvRNNCell is abstract class for convolutional RNN")


def _conv_init(cls_prefix):
    """The keyword defaults shared by the three cells (prefix differs)."""
    def init(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
             i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
             i2h_weight_initializer=None, h2h_weight_initializer=None,
             i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", activation=_LEAKY,
             prefix=cls_prefix, params=None, conv_layout="NCHW"):
        BaseConvRNNCell.__init__(
            self, input_shape, num_hidden, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride,
            i2h_pad, i2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
            i2h_bias_initializer, h2h_bias_initializer, activation, prefix=prefix,
            params=params, conv_layout=conv_layout)
    init.__doc__ = (f"``input_shape`` is one step's input shape; ``prefix`` defaults to "
                    f"{cls_prefix!r}; the activation defaults to LeakyReLU(slope=0.2).")
    return init


class ConvRNNCell(BaseConvRNNCell):
    """Convolutional Elman cell: h' = act(conv_i(x) + conv_h(h))."""

    __init__ = _conv_init("ConvRNN_")

    @property
    def _gate_names(self):
        return ("",)

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}]

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM cell, gates input, forget, cell, output along the channel axis;
    the cell input and the output squashing use ``activation``."""

    __init__ = _conv_init("ConvLSTM_")

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4,
                                    axis=self._conv_layout.find("C"), name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = self._get_activation(gates[2], self._activation, name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * in_transform,
                                        name=f"{name}state")
        next_h = symbol._internal._mul(out_gate, self._get_activation(next_c, self._activation),
                                       name=f"{name}out")
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU cell, gates reset, update, new (the reset gate scales h2h after
    its convolution, as the dense GRUCell)."""

    __init__ = _conv_init("ConvGRU_")

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout}]

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        # MXNet slices along axis 1 here whatever the layout, and names the nodes "<name>_..."
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}_r_act")
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid",
                                        name=f"{name}_z_act")
        candidate = self._get_activation(i2h + reset_gate * h2h, self._activation,
                                         name=f"{name}_h_act")
        next_h = symbol._internal._plus((1.0 - update_gate) * candidate,
                                        update_gate * states[0], name=f"{name}out")
        return next_h, [next_h]
