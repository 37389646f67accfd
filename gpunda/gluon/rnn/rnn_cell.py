"""Recurrent cells (MXNet 1.x ``gluon.rnn`` cells): one time step per call, ``unroll`` for many.

A cell maps ``(inputs, states) -> (output, new_states)``; ``unroll(length, inputs, ...)`` runs
it over a sequence given as one tensor (layout 'NTC' or 'TNC') or a list of steps, with
``valid_length`` masking padded steps and returning each sequence's last valid state.
Parameter names (``i2h_weight``, ``h2h_bias``, ...) and step symbol names (``t0_i2h``) are
MXNet's.
"""
from __future__ import annotations

from gpunda import ndarray as _nd
from gpunda.base import GpundaError, GpundaNotImplementedError, numeric_types
from gpunda.gluon.block import Block, HybridBlock

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell",
           "SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell",
           "ZoneoutCell", "ResidualCell", "BidirectionalCell"]


def _symbol():
    from gpunda import symbol
    return symbol


def _is_tensor(x):
    return isinstance(x, _nd.NDArray) or isinstance(x, _symbol().Symbol)


def _namespace(x):
    return _nd if isinstance(x, _nd.NDArray) else _symbol()


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _cells_state_info(cells, batch_size):
    return [info for c in cells for info in c.state_info(batch_size)]


def _cells_begin_state(cells, **kwargs):
    return [s for c in cells for s in c.begin_state(**kwargs)]


def _get_begin_state(cell, F, begin_state, inputs, batch_size):
    if begin_state is not None:
        return begin_state
    if F is _nd:
        ctx = inputs.context if isinstance(inputs, _nd.NDArray) else inputs[0].context
        with ctx:
            return cell.begin_state(func=F.zeros, batch_size=batch_size)
    return cell.begin_state(func=F.zeros, batch_size=batch_size)


def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """Inputs as a list of steps (merge False), one tensor (True) or as given (None).

    Returns (inputs, time axis, namespace F, batch size).
    """
    if inputs is None:
        raise GpundaError("unroll: inputs=None is not supported; create the input "
                          "variables outside unroll")
    axis, batch_axis = layout.find("T"), layout.find("N")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    batch_size = 0
    if _is_tensor(inputs):
        F = _namespace(inputs)
        if F is _nd:
            batch_size = inputs.shape[batch_axis]
        if merge is False:
            if F is _nd:
                steps = inputs.shape[in_axis]
                if length is not None and length != steps:
                    raise GpundaError(f"unroll: length={length} but the inputs have {steps} "
                                      f"steps along axis {in_axis}")
            else:
                if len(inputs.list_outputs()) != 1:
                    raise GpundaError("unroll: a grouped Symbol cannot be unrolled; pass "
                                      "list(inputs) or a single Symbol")
                steps = length
            parts = F.split(inputs, axis=in_axis, num_outputs=steps, squeeze_axis=True)
            # a Symbol split is one grouped Symbol: list() gives its outputs
            inputs = list(parts) if F is not _nd else _as_list(parts)
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise GpundaError(f"unroll: length={length} but {len(inputs)} input steps given")
        F = _namespace(inputs[0])
        if F is _nd:
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if _is_tensor(inputs) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    if not _is_tensor(data):
        data = F.stack(*data, axis=time_axis)
    out = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True,
                         axis=time_axis)
    if not merge:
        out = _as_list(F.split(out, num_outputs=length, axis=time_axis, squeeze_axis=True))
    return out


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    F = _namespace(sequences[0])
    if valid_length is None:
        return list(reversed(sequences))
    rev = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length,
                            use_sequence_length=True)
    if unroll_step > 1 or F is not _nd:
        return _as_list(F.split(rev, axis=0, num_outputs=unroll_step, squeeze_axis=True))
    return [rev[0]]


class RecurrentCell(Block):
    """Base class of recurrent cells.

    Args:
        prefix: name prefix of the cell (and of its parameters).
        params: a ParameterDict to share parameters with another cell.
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Reset the step counters before building another graph."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """Shape and layout of each state: a list of dicts."""
        raise NotImplementedError

    def _check_unmodified(self):
        if self._modified:
            raise GpundaError(f"{self.name}: after a modifier cell (ZoneoutCell, ResidualCell, "
                              f"...) wraps this cell, call the modifier cell instead")

    def begin_state(self, batch_size=0, func=_nd.zeros, **kwargs):
        """Initial states made by ``func`` (``nd.zeros`` by default, ``sym.var`` to feed them)."""
        self._check_unmodified()
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info or {})
            info.update(kwargs)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        """Run the cell over ``length`` steps.

        Args:
            length: number of steps.
            inputs: one tensor (N, T, C) / (T, N, C) as ``layout`` says, or a list of steps.
            begin_state: initial states (``begin_state()`` when None).
            layout: 'NTC' or 'TNC'.
            merge_outputs: True for one tensor, False for a list, None for either.
            valid_length: (N,) valid lengths; padded outputs are zero and the returned states
                are each sequence's last valid ones.

        Returns:
            (outputs, states).
        """
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*steps, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True, axis=0)
                      for steps in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        named = {"tanh": F.tanh, "relu": F.relu, "sigmoid": F.sigmoid, "softsign": F.softsign}
        if isinstance(activation, str):
            fn = named.get(activation)
            if fn is not None:
                return fn(inputs, **kwargs)
            return F.Activation(inputs, act_type=activation, **kwargs)
        from gpunda.gluon.nn import LeakyReLU
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type="leaky", slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One step: (output, new states)."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell written with ``hybrid_forward``, so it can be hybridized."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class _GatedCell(HybridRecurrentCell):
    """Cells with i2h/h2h weights and biases of ``gates * hidden_size`` rows."""

    _n_gates = 1
    _n_states = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._n_gates * hidden_size
        get = self.params.get
        self.i2h_weight = get("i2h_weight", shape=(rows, input_size),
                              init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = get("h2h_weight", shape=(rows, hidden_size),
                              init=h2h_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                            allow_deferred_init=True)
        self.h2h_bias = get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                            allow_deferred_init=True)

    def state_info(self, batch_size=0):
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}
                for _ in range(self._n_states)]

    def _mapping(self):
        shape = self.i2h_weight.shape
        return f"{shape[1] if shape[1] else None} -> {shape[0]}"

    def __repr__(self):
        return f"{type(self).__name__}({self._mapping()})"

    def _projections(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        rows = self._n_gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=h, weight=h2h_weight, bias=h2h_bias, num_hidden=rows,
                               name=prefix + "h2h")
        return prefix, i2h, h2h


class RNNCell(_GatedCell):
    """Elman RNN cell: h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).

    Args:
        hidden_size: output features.
        activation: 'tanh' (default), another activation name, or a callable/LeakyReLU.
        i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer ('zeros'),
        h2h_bias_initializer ('zeros'): initializers.
        input_size: input features (0: inferred from the first input).
        prefix, params: as for every Block (default prefix 'rnn_').
    """

    def __init__(self, hidden_size, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def _alias(self):
        return "rnn"

    def __repr__(self):
        return f"{type(self).__name__}({self._mapping()}, {self._activation})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight,
                                             i2h_bias, h2h_bias)
        total = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        output = self._get_activation(F, total, self._activation, name=prefix + "out")
        return output, [output]


class LSTMCell(_GatedCell):
    """LSTM cell with gates i, f, g, o (MXNet's order): c_t = f c_{t-1} + i g, h_t = o act(c_t).

    Args:
        hidden_size: output features.
        activation: of the cell input and the state (default 'tanh').
        recurrent_activation: of the gates (default 'sigmoid').
        Initializers, input_size, prefix and params as for ``RNNCell`` (prefix 'lstm_').
    """

    _n_gates = 4
    _n_states = 2

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def _alias(self):
        return "lstm"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight,
                                             i2h_bias, h2h_bias)
        gates = F.elemwise_add(i2h, h2h, name=prefix + "plus0")
        parts = F.SliceChannel(gates, num_outputs=4, name=prefix + "slice")
        act, rec = self._activation, self._recurrent_activation
        in_gate = self._get_activation(F, parts[0], rec, name=prefix + "i")
        forget_gate = self._get_activation(F, parts[1], rec, name=prefix + "f")
        in_transform = self._get_activation(F, parts[2], act, name=prefix + "c")
        out_gate = self._get_activation(F, parts[3], rec, name=prefix + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + "mul0"),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + "mul1"),
                                name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, F.Activation(next_c, act_type=act,
                                                       name=prefix + "activation0"),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """GRU cell, cuDNN's form: n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h' = (1-z) n + z h.

    Args: as for ``RNNCell`` without ``activation`` (prefix 'gru_').
    """

    _n_gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)

    def _alias(self):
        return "gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states[0], i2h_weight, h2h_weight,
                                             i2h_bias, h2h_bias)
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice")
        reset_gate = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"),
                                  act_type="sigmoid", name=prefix + "r_act")
        update_gate = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + "plus1"),
                                   act_type="sigmoid", name=prefix + "z_act")
        new_mem = F.Activation(F.elemwise_add(i2h, F.elemwise_mul(reset_gate, h2h,
                                                                  name=prefix + "mul0"),
                                              name=prefix + "plus2"),
                               act_type="tanh", name=prefix + "h_act")
        ones = F.ones_like(update_gate, name=prefix + "ones_like0")
        next_h = F.elemwise_add(
            F.elemwise_mul(F.elemwise_sub(ones, update_gate, name=prefix + "minus0"), new_mem,
                           name=prefix + "mul1"),
            F.elemwise_mul(update_gate, states[0], name=prefix + "mul20"),
            name=prefix + "out")
        return next_h, [next_h]


class _StackMixin:
    """What SequentialRNNCell and HybridSequentialRNNCell share."""

    def __repr__(self):
        mods = "\n".join(f"({i}): {_indent(repr(m))}" for i, m in self._children.items())
        return f"{type(self).__name__}(\n{mods}\n)"

    def add(self, cell):
        """Append a cell to the stack."""
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        self._check_unmodified()
        return _cells_begin_state(self._children.values(), **kwargs)

    def __call__(self, inputs, states):
        self._counter += 1
        next_states, pos = [], 0
        for cell in self._children.values():
            if isinstance(cell, BidirectionalCell):
                raise GpundaNotImplementedError(f"{self.name}: a stack holding a "
                                                f"BidirectionalCell cannot be stepped; use "
                                                f"unroll")
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[pos:pos + n])
            pos += n
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        cells = list(self._children.values())
        pos, next_states = 0, []
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            inputs, states = cell.unroll(length, inputs=inputs,
                                         begin_state=begin_state[pos:pos + n], layout=layout,
                                         merge_outputs=None if i < len(cells) - 1 else
                                         merge_outputs, valid_length=valid_length)
            pos += n
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)


def _indent(s):
    return s.replace("\n", "\n  ")


class SequentialRNNCell(_StackMixin, RecurrentCell):
    """Cells stacked one on another: each step feeds the output of one into the next."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)


class HybridSequentialRNNCell(_StackMixin, HybridRecurrentCell):
    """A stack of hybridizable cells."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Dropout on the inputs; the states pass through.

    Args:
        rate: fraction of elements dropped.
        axes: axes along which the mask is shared.
    """

    def __init__(self, rate, axes=(), prefix=None, params=None):
        if not isinstance(rate, numeric_types):
            raise GpundaError(f"DropoutCell: rate must be a number, got {rate!r}")
        super().__init__(prefix, params)
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return f"{type(self).__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return "dropout"

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes,
                               name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if _is_tensor(inputs):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """Base of cells that wrap another cell (``base_cell``) and change its behaviour."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise GpundaError(f"Cell {base_cell.name} is already modified; a cell can be "
                              f"modified once")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=None, **kwargs):
        self._check_unmodified()
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func or _symbol().zeros, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({self.base_cell!r})"


class ZoneoutCell(ModifierCell):
    """Zoneout: each output/state element keeps its previous value with probability
    ``zoneout_outputs``/``zoneout_states`` while training."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, BidirectionalCell):
            raise GpundaError("ZoneoutCell: a BidirectionalCell cannot be stepped; wrap the "
                              "cells inside it instead")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return (f"{type(self).__name__}(p_out={self.zoneout_outputs}, "
                f"p_state={self.zoneout_states}, {self.base_cell!r})")

    def _alias(self):
        return "zoneout"

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):
            return F.Dropout(F.ones_like(like), p=p)

        prev = self._prev_output if self._prev_output is not None else F.zeros_like(next_output)
        output = (F.where(keep_new(self.zoneout_outputs, next_output), next_output, prev)
                  if self.zoneout_outputs != 0. else next_output)
        states = ([F.where(keep_new(self.zoneout_states, new), new, old)
                   for new, old in zip(next_states, states)]
                  if self.zoneout_states != 0. else next_states)
        self._prev_output = output
        return output, states


class ResidualCell(ModifierCell):
    """The base cell's output plus its input (Wu et al., 2016)."""

    def _alias(self):
        return "residual"

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        return F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd"), states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        merge = _is_tensor(outputs) if merge_outputs is None else merge_outputs
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis, merge)
        if merge:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, i) for o, i in zip(outputs, inputs)], states


class BidirectionalCell(HybridRecurrentCell):
    """Runs ``l_cell`` forwards and ``r_cell`` backwards in time; outputs are concatenated."""

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise GpundaNotImplementedError("BidirectionalCell cannot be stepped; use unroll")

    def __repr__(self):
        return (f"{type(self).__name__}(forward={self._children['l_cell']!r}, "
                f"backward={self._children['r_cell']!r})")

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        self._check_unmodified()
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = list(_reverse_sequences(inputs, length, valid_length))
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        l_cell, r_cell = self._children.values()
        n_left = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_left],
                                            layout=layout, merge_outputs=merge_outputs,
                                            valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs,
                                            begin_state=states[n_left:], layout=layout,
                                            merge_outputs=False, valid_length=valid_length)
        reversed_r = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = _is_tensor(l_outputs)
            l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, merge_outputs)
            reversed_r, _, _, _ = _format_sequence(None, reversed_r, layout, merge_outputs)
        if merge_outputs:
            if not _is_tensor(reversed_r):
                reversed_r = F.stack(*reversed_r, axis=axis)
            outputs = F.concat(l_outputs, reversed_r, dim=2, name=f"{self._output_prefix}out")
        else:
            outputs = [F.concat(lo, ro, dim=1, name=f"{self._output_prefix}t{i}")
                       for i, (lo, ro) in enumerate(zip(l_outputs, reversed_r))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, l_states + r_states
