"""FusedRNNCell: the whole multi-layer (bi)directional RNN as one ``RNN`` op."""
import types
import warnings

from gpunda import ndarray as _nd
from gpunda import symbol
from gpunda.base import GpundaError
from gpunda.ops.nn.rnn import param_layout
from gpunda.rnn._cells import BaseRNNCell, RNNCell, LSTMCell, GRUCell, _normalize_sequence

_GATE_NAMES = {"rnn_relu": ("",), "rnn_tanh": ("",), "lstm": ("_i", "_f", "_c", "_o"),
               "gru": ("_r", "_z", "_o")}


class FusedRNNCell(BaseRNNCell):
    """All layers of an RNN in one ``RNN`` op; its single ``parameters`` Variable holds the
    weights in the op's flat layout (see ``unpack_weights``). Only ``unroll`` works:
    ``unfuse()`` gives the equivalent stack of steppable cells."""

    def __init__(self, num_hidden, num_layers=1, mode="lstm", bidirectional=False,
                 dropout=0., get_next_state=False, forget_bias=1.0, prefix=None, params=None):
        if mode not in _GATE_NAMES:
            raise GpundaError(f"FusedRNNCell: mode={mode!r} is not one of {sorted(_GATE_NAMES)}")
        super().__init__(prefix=f"{mode}_" if prefix is None else prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._forget_bias = forget_bias
        self._directions = ["l", "r"] if bidirectional else ["l"]
        from gpunda.initializer import FusedRNN
        self._parameter = self.params.get("parameters", init=FusedRNN(
            None, num_hidden, num_layers, mode, bidirectional, forget_bias))

    @property
    def state_info(self):
        shape = ((self._bidirectional + 1) * self._num_layers, 0, self._num_hidden)
        return [{"shape": shape, "__layout__": "LNC"}
                for _ in range(2 if self._mode == "lstm" else 1)]

    @property
    def _gate_names(self):
        return _GATE_NAMES[self._mode]

    def _layout(self, input_size):
        p = types.SimpleNamespace(mode=self._mode, num_layers=self._num_layers,
                                  bidirectional=self._bidirectional,
                                  state_size=self._num_hidden, projection_size=None)
        return param_layout(p, input_size)

    def _input_size(self, total):
        # total = h*g*d*(I + h + 2) + (L-1)*h*g*d*(d*h + h + 2), solved for I
        h, g, d = self._num_hidden, len(self._gate_names), len(self._directions)
        rest = total - (self._num_layers - 1) * h * g * d * (d * h + h + 2)
        size, rem = divmod(rest, h * g * d)
        if rem or size - h - 2 <= 0:
            raise GpundaError(f"FusedRNNCell: parameters of size {total} do not fit "
                              f"mode={self._mode}, num_hidden={h}, num_layers="
                              f"{self._num_layers}, bidirectional={self._bidirectional}")
        return size - h - 2

    def _slice_weights(self, arr, input_size):
        """{per-gate name: view of ``arr``} for the flat parameter vector ``arr``."""
        entries, total = self._layout(input_size)
        if arr.size != total:
            raise GpundaError(f"FusedRNNCell: parameters has {arr.size} elements, "
                              f"expected {total}")
        h = self._num_hidden
        views = {}
        for layer, direction, slots in entries:
            base = f"{self._prefix}{self._directions[direction]}{layer}_"
            for group, wkey, bkey in (("i2h", "wx", "bx"), ("h2h", "wh", "bh")):
                w_off, (_, cols) = slots[wkey]
                b_off, _ = slots[bkey]
                for j, gate in enumerate(self._gate_names):
                    start = w_off + j * h * cols
                    views[f"{base}{group}{gate}_weight"] = \
                        arr[start:start + h * cols].reshape((h, cols))
                    views[f"{base}{group}{gate}_bias"] = arr[b_off + j * h:b_off + (j + 1) * h]
        return views

    def unpack_weights(self, args):
        """Replace the flat ``parameters`` array in ``args`` by one copy per layer,
        direction, projection and gate (the names ``unfuse()``d cells use)."""
        args = args.copy()
        arr = args.pop(self._parameter.name)
        views = self._slice_weights(arr, self._input_size(arr.size))
        args.update({name: view.copy() for name, view in views.items()})
        return args

    def pack_weights(self, args):
        """Inverse of ``unpack_weights``: gather the per-gate arrays into ``parameters``."""
        args = args.copy()
        w0 = args[f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"]
        _, total = self._layout(w0.shape[1])
        arr = _nd.zeros((total,), ctx=w0.context, dtype=w0.dtype)
        for name, view in self._slice_weights(arr, w0.shape[1]).items():
            view[:] = args.pop(name)
        args[self._parameter.name] = arr
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped. Please use unroll")

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None):
        """One ``RNN`` op over the whole sequence (NTC inputs are swapped to TNC)."""
        self.reset()
        inputs, axis = _normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("NTC layout detected. Consider using TNC for FusedRNNCell for "
                          "faster speed", stacklevel=2)
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        elif axis != 0:
            raise GpundaError(f"FusedRNNCell.unroll: unsupported layout {layout!r}")
        states = self.begin_state() if begin_state is None else begin_state
        state_kwargs = {"state": states[0]}
        if self._mode == "lstm":
            state_kwargs["state_cell"] = states[1]
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional,
                         p=self._dropout, state_outputs=self._get_next_state, mode=self._mode,
                         name=self._prefix + "rnn", **state_kwargs)
        if not self._get_next_state:
            outputs, states = rnn, []
        else:
            n_states = 2 if self._mode == "lstm" else 1
            outputs, states = rnn[0], [rnn[k] for k in range(1, 1 + n_states)]
            for state in states:
                state._set_attr(__layout__="LNC")
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def unfuse(self):
        """The same network as a SequentialRNNCell of steppable cells sharing names."""
        from gpunda.rnn._containers import SequentialRNNCell, BidirectionalCell, DropoutCell
        make = {"rnn_relu": lambda prefix: RNNCell(self._num_hidden, activation="relu",
                                                   prefix=prefix),
                "rnn_tanh": lambda prefix: RNNCell(self._num_hidden, activation="tanh",
                                                   prefix=prefix),
                "lstm": lambda prefix: LSTMCell(self._num_hidden, prefix=prefix,
                                                forget_bias=self._forget_bias),
                "gru": lambda prefix: GRUCell(self._num_hidden, prefix=prefix)}[self._mode]
        stack = SequentialRNNCell()
        for layer in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make(f"{self._prefix}l{layer}_"),
                                            make(f"{self._prefix}r{layer}_"),
                                            output_prefix=f"{self._prefix}bi_l{layer}_"))
            else:
                stack.add(make(f"{self._prefix}l{layer}_"))
            if self._dropout > 0 and layer != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{layer}_"))
        return stack
