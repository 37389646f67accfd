"""Legacy symbolic RNN cells (``mx.rnn``): cells that build Symbol graphs step by step.

The fused cell packs its weights in the layout of the ``RNN`` op (gpunda/ops/rnn.py,
``param_layout``); ``unpack_weights``/``pack_weights`` convert between that flat vector and
the per-gate ``<prefix><l|r><layer>_<i2h|h2h><gate>_<weight|bias>`` arrays the unrolled
cells use, so a fused model and its ``unfuse()``d twin share checkpoints.
"""
from gpunda import ndarray as _nd
from gpunda import symbol
from gpunda.base import GpundaError
from gpunda.gluon.rnn.rnn_cell import _format_sequence


def _normalize_sequence(length, inputs, layout, merge, in_layout=None):
    """Steps as a list (merge False), one merged Symbol (True) or as given (None)."""
    inputs, axis, _, _ = _format_sequence(length, inputs, layout, merge, in_layout)
    return inputs, axis


class RNNParams:
    """Shared Variables of cells: ``get(name)`` gives the Variable ``prefix + name``, the
    same object every time, so cells built with one RNNParams share weights."""

    def __init__(self, prefix=""):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        """The Variable ``prefix + name``, created with ``kwargs`` the first time."""
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


class BaseRNNCell:
    """Base of the symbolic cells: ``cell(inputs, states)`` is one step, ``unroll`` many."""

    def __init__(self, prefix="", params=None):
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self):
        """Restart the step and begin-state counters used in symbol names."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs, states):
        """One step: (output, next states)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement a step")

    @property
    def params(self):
        """The cell's RNNParams (after this, the cell no longer owns them)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self):
        """One dict (shape, __layout__) per state."""
        raise NotImplementedError(f"{type(self).__name__} does not define state_info")

    @property
    def state_shape(self):
        """The shapes of the states."""
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self):
        return ()

    def begin_state(self, func=symbol.zeros, **kwargs):
        """The first step's states, made by ``func(name=..., **state_info, **kwargs)``."""
        if self._modified:
            raise GpundaError("After applying modifier cells (e.g. DropoutCell) the base cell "
                              "cannot be called directly. Call the modifier cell instead.")
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}",
                               **kwargs))
        return states

    def unpack_weights(self, args):
        """Split the fused i2h/h2h weights and biases of ``args`` into one array per gate."""
        args = args.copy()
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ("i2h", "h2h"):
            weight = args.pop(f"{self._prefix}{group}_weight")
            bias = args.pop(f"{self._prefix}{group}_bias")
            for j, gate in enumerate(self._gate_names):
                name = f"{self._prefix}{group}{gate}"
                args[name + "_weight"] = weight[j * h:(j + 1) * h].copy()
                args[name + "_bias"] = bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args):
        """Inverse of ``unpack_weights``: concatenate the per-gate arrays of ``args``."""
        args = args.copy()
        if not self._gate_names:
            return args
        for group in ("i2h", "h2h"):
            names = [f"{self._prefix}{group}{gate}" for gate in self._gate_names]
            args[f"{self._prefix}{group}_weight"] = _nd.concat(
                *[args.pop(n + "_weight") for n in names], dim=0)
            args[f"{self._prefix}{group}_bias"] = _nd.concat(
                *[args.pop(n + "_bias") for n in names], dim=0)
        return args

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """Apply the cell ``length`` times: (outputs, last states)."""
        self.reset()
        inputs, _ = _normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for step in range(length):
            output, states = self(inputs[step], states)
            outputs.append(output)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs, activation, **kwargs):
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)


class _DenseCell(BaseRNNCell):
    """A cell with i2h/h2h FullyConnected projections of ``num_gates * num_hidden`` units."""

    def __init__(self, num_hidden, prefix, params, i2h_bias_init=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._iB = (self.params.get("i2h_bias", init=i2h_bias_init) if i2h_bias_init
                    else self.params.get("i2h_bias"))
        self._hW = self.params.get("h2h_weight")
        self._hB = self.params.get("h2h_bias")

    def _projections(self, inputs, hidden, name):
        n = self._num_hidden * len(self._gate_names)
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=n, name=name + "i2h")
        h2h = symbol.FullyConnected(data=hidden, weight=self._hW, bias=self._hB,
                                    num_hidden=n, name=name + "h2h")
        return i2h, h2h

    def _step_name(self):
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"


class RNNCell(_DenseCell):
    """Elman cell: h' = act(W_i x + b_i + W_h h + b_h)."""

    def __init__(self, num_hidden, activation="tanh", prefix="rnn_", params=None):
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        output = self._get_activation(i2h + h2h, self._activation, name=name + "out")
        return output, [output]


class LSTMCell(_DenseCell):
    """LSTM cell, gates in order input, forget, cell, output; the forget bias starts at
    ``forget_bias``."""

    def __init__(self, num_hidden, prefix="lstm_", params=None, forget_bias=1.0):
        from gpunda.initializer import LSTMBias
        super().__init__(num_hidden, prefix, params, LSTMBias(forget_bias=forget_bias))

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"},
                {"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ("_i", "_f", "_c", "_o")

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._projections(inputs, states[0], name)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        in_transform = symbol.Activation(gates[2], act_type="tanh", name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * in_transform,
                                        name=f"{name}state")
        next_h = symbol._internal._mul(out_gate, symbol.Activation(next_c, act_type="tanh"),
                                       name=f"{name}out")
        return next_h, [next_h, next_c]


class GRUCell(_DenseCell):
    """GRU cell, gates in order reset, update, new (cuDNN's variant: the reset gate
    scales h2h after its projection)."""

    def __init__(self, num_hidden, prefix="gru_", params=None):
        super().__init__(num_hidden, prefix, params)

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ("_r", "_z", "_o")

    def __call__(self, inputs, states):
        name = self._step_name()
        prev_h = states[0]
        i2h, h2h = self._projections(inputs, prev_h, name)
        i2h_r, i2h_z, i2h = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}i2h_slice")
        h2h_r, h2h_z, h2h = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}h2h_slice")
        reset_gate = symbol.Activation(i2h_r + h2h_r, act_type="sigmoid", name=f"{name}r_act")
        update_gate = symbol.Activation(i2h_z + h2h_z, act_type="sigmoid", name=f"{name}z_act")
        candidate = symbol.Activation(i2h + reset_gate * h2h, act_type="tanh",
                                      name=f"{name}h_act")
        next_h = symbol._internal._plus((1.0 - update_gate) * candidate, update_gate * prev_h,
                                        name=f"{name}out")
        return next_h, [next_h]
