"""Contrib cells: variational dropout around a cell, the projected LSTM cell, dynamic_unroll."""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda.gluon.rnn.rnn_cell import (BidirectionalCell, HybridRecurrentCell, ModifierCell,
                             _format_sequence, _get_begin_state, _is_tensor,
                             _mask_sequence_variable_length, _as_list)

__all__ = ["VariationalDropoutCell", "LSTMPCell", "dynamic_unroll"]


class VariationalDropoutCell(ModifierCell):
    """Variational dropout (Gal and Ghahramani, 2016): one dropout mask per sequence for the
    inputs, the first state and the outputs, reused at every step.

    Args:
        base_cell: the cell to wrap.
        drop_inputs, drop_states, drop_outputs: dropout rates (0 turns each off).
    """

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise GpundaError("VariationalDropoutCell: state dropout cannot wrap a "
                              "BidirectionalCell; wrap the cells inside it instead")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self._masks = {}

    def _alias(self):
        return "vardrop"

    def reset(self):
        super().reset()
        self._masks = {}

    def _mask(self, F, key, rate, like):
        if key not in self._masks:
            self._masks[key] = F.Dropout(F.ones_like(like), p=rate)
        return self._masks[key]

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states:
            states = list(states)
            states[0] = states[0] * self._mask(F, "states", self.drop_states, states[0])
        if self.drop_inputs:
            inputs = inputs * self._mask(F, "inputs", self.drop_inputs, inputs)
        output, states = self.base_cell(inputs, states)
        if self.drop_outputs:
            output = output * self._mask(F, "outputs", self.drop_outputs, output)
        return output, states

    def __repr__(self):
        return (f"{type(self).__name__}(p_out = {self.drop_outputs}, "
                f"p_state = {self.drop_states})")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        if self.drop_states:        # the state mask must be applied step by step
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:        # one mask shared along time
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs, states, layout,
                                                    merge_outputs=True,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        merge = _is_tensor(outputs) if merge_outputs is None else merge_outputs
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    """LSTM with a projection (Sak et al., 2014): r_t = W_hr (o_t * tanh(c_t)) is both the
    output and the recurrent state.

    Args:
        hidden_size: cell state size.
        projection_size: output (and recurrent state) size.
        i2h/h2h/h2r weight and i2h/h2h bias initializers, input_size, prefix, params: as for
        ``gluon.rnn.LSTMCell`` (prefix 'lstmp_').
    """

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        get = self.params.get
        rows = 4 * hidden_size
        self.i2h_weight = get("i2h_weight", shape=(rows, input_size),
                              init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = get("h2h_weight", shape=(rows, projection_size),
                              init=h2h_weight_initializer, allow_deferred_init=True)
        self.h2r_weight = get("h2r_weight", shape=(projection_size, hidden_size),
                              init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                            allow_deferred_init=True)
        self.h2h_bias = get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                            allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self):
        return "lstmp"

    def __repr__(self):
        shape = self.i2h_weight.shape
        return (f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]} -> "
                f"{self.h2r_weight.shape[0]})")

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias,
                       h2h_bias):
        prefix = f"t{self._counter}_"
        rows = 4 * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=rows, name=prefix + "h2h")
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + "slice")
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=prefix + "f")
        in_transform = F.Activation(gates[2], act_type="tanh", name=prefix + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + "state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh"),
                                name=prefix + "hidden")
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size,
                                  weight=h2r_weight, no_bias=True, name=prefix + "out")
        return next_r, [next_r, next_c]


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout="TNC",
                   valid_length=None):
    """Run ``cell`` over the time axis of ``inputs`` (MXNet's contrib dynamic_unroll).

    MXNet loops with ``contrib.foreach``; gpunda runs the steps in Python (imperatively, or
    unrolled into the graph for a Symbol), with the same results: states stop at each
    sequence's valid length and padded outputs are zero.

    Returns:
        (outputs stacked along the time axis of ``layout``, final states).
    """
    inputs, axis, F, _ = _format_sequence(None, inputs, layout, True)
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(axis,))
    steps = _as_list(F.split(inputs, axis=axis, num_outputs=inputs.shape[axis]
                             if hasattr(inputs, "shape") else _symbol_length(inputs, axis),
                             squeeze_axis=True))
    states = list(_as_list(begin_state))
    outputs = []
    for t, x in enumerate(steps):
        out, new_states = cell(x, states)
        if valid_length is not None:
            alive = F.broadcast_greater(valid_length, F.ones_like(valid_length) * t)
            new_states = [F.where(alive, new, old) for new, old in zip(new_states, states)]
        states = list(new_states)
        outputs.append(out)
    outputs = F.stack(*outputs, axis=axis)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(axis,))
    if valid_length is not None:
        outputs = F.SequenceMask(outputs, sequence_length=valid_length,
                                 use_sequence_length=True, axis=axis)
    return outputs, states


def _symbol_length(sym, axis):
    raise GpundaError("dynamic_unroll: a Symbol input needs a known number of steps; "
                      "unroll the cell with cell.unroll(length, ...) instead")
