"""Fused recurrent layers (MXNet 1.x ``gluon.rnn.RNN/LSTM/GRU``) over the ``RNN`` op.

Each layer keeps one parameter per gate matrix, named as MXNet names them
(``l0_i2h_weight``, ``r1_h2h_bias``, ``l0_h2r_weight`` for LSTMP), so a ``.params`` file saved
by MXNet loads; every call concatenates them into the op's flat vector in the order of NOTE
[RNN parameter layout] (gpunda/ops/nn/rnn.py).
"""
from __future__ import annotations

from gpunda import ndarray as _nd
from gpunda.base import GpundaError
from gpunda.util import is_np_array
from gpunda.gluon.block import HybridBlock

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


class _RNNLayer(HybridBlock):
    """What RNN, LSTM and GRU share: parameters, states, layouts and the fused call."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, projection_size, h2r_weight_initializer,
                 lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise GpundaError(f"{type(self).__name__}: layout={layout!r} must be 'TNC' or 'NTC'")
        self._hidden_size = hidden_size
        self._projection_size = projection_size or None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self._gates = _GATES[mode]
        self.skip_states = None
        ng, nh = self._gates, hidden_size
        nr = self._projection_size or nh           # what the recurrence sees
        inits = {"i2h_weight": i2h_weight_initializer, "h2h_weight": h2h_weight_initializer,
                 "i2h_bias": i2h_bias_initializer, "h2h_bias": h2h_bias_initializer,
                 "h2r_weight": h2r_weight_initializer}
        ni = input_size
        for layer in range(num_layers):
            for d in "lr"[:self._dir]:
                shapes = {"i2h_weight": (ng * nh, ni), "h2h_weight": (ng * nh, nr),
                          "i2h_bias": (ng * nh,), "h2h_bias": (ng * nh,)}
                if self._projection_size:
                    shapes["h2r_weight"] = (nr, nh)
                for kind, shape in shapes.items():
                    name = f"{d}{layer}_{kind}"
                    setattr(self, name, self.params.get(name, shape=shape, init=inits[kind],
                                                        allow_deferred_init=True, dtype=dtype))
            ni = nr * self._dir

    def __repr__(self):
        shape = self.l0_i2h_weight.shape
        s = f"{type(self).__name__}({shape[1] if shape[1] else None} -> " \
            f"{shape[0] // self._gates}, {self._layout}"
        if self._num_layers != 1:
            s += f", num_layers={self._num_layers}"
        if self._dropout != 0:
            s += f", dropout={self._dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        return s + ")"

    def state_info(self, batch_size=0):
        raise NotImplementedError

    def _collect_params_with_prefix(self, prefix=""):
        # save_parameters/load_parameters use the names of MXNet's older unfused layout
        # (_unfused.<layer>.<i2h|h2h>_<weight|bias>, with l_cell/r_cell when bidirectional),
        # as MXNet 1.9.1 does, so files move between the two frameworks
        if prefix:
            prefix += "."
        out = {}
        for key, val in self._reg_params.items():
            d, layer, kind = key[0], key[1:key.index("_")], key[key.index("_") + 1:]
            cell = f"{d}_cell." if self._dir == 2 else ""
            out[f"{prefix}_unfused.{layer}.{cell}{kind}"] = val
        for name, child in self._children.items():
            out.update(child._collect_params_with_prefix(prefix + name))
        return out

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size=0, func=_nd.zeros, **kwargs):
        """Initial states: one array per state, shaped (layers*directions, batch, size).

        Args:
            batch_size: the batch size (N of the layout).
            func: creates each state (``nd.zeros``, ``nd.ones``; ``sym.zeros``, ``sym.var``).
            **kwargs: passed to ``func`` (``ctx``, ``dtype``, ...).
        """
        np_mode = is_np_array()     # NumPy semantics: mx.np states, as MXNet's layers give
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info = dict(info or {})
            info.update(kwargs)
            state = func(name=f"{self.prefix}h0_{i}", **info)
            states.append(state.as_np_ndarray() if np_mode else state)
        return states

    def infer_shape(self, inputs, *args):
        """The first layer's input weights take their input size from ``inputs``."""
        size = inputs.shape[self._layout.find("C")]
        for d in "lr"[:self._dir]:
            w = getattr(self, f"{d}0_i2h_weight")
            w.shape = (w.shape[0], size)

    _infer_param_shapes = infer_shape

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, _nd.NDArray):
                batch = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch, ctx=inputs.context, dtype=inputs.dtype)
            else:
                from gpunda import symbol
                states = self.begin_state(0, func=symbol.zeros)
        if not isinstance(states, (list, tuple)):
            states = [states]
        if self._use_sequence_length:
            return super().__call__(inputs, list(states), sequence_length, **kwargs)
        return super().__call__(inputs, list(states), **kwargs)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **params):
        if isinstance(inputs, _nd.NDArray):
            batch = inputs.shape[self._layout.find("N")]
            for state, info in zip(states, self.state_info(batch)):
                if tuple(state.shape) != tuple(info["shape"]):
                    raise ValueError(f"Invalid recurrent state shape. Expecting "
                                     f"{info['shape']}, got {tuple(state.shape)}.")
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, dim1=0, dim2=1)
        kinds = ("i2h", "h2h", "h2r") if self._projection_size else ("i2h", "h2h")
        flat = [params[f"{d}{layer}_{g}_{t}"].reshape((-1,))
                for t in ("weight", "bias")
                for layer in range(self._num_layers)
                for d in "lr"[:self._dir]
                for g in kinds if not (g == "h2r" and t == "bias")]
        # MXNet's own concat for RNN parameters: its shape rule shares the size the RNN op
        # needs among the weights whose input size is still deferred (both directions' first
        # i2h weights), so deferred initialisation works inside a larger hybridized graph,
        # and exported graphs hold the same node as MXNet's
        concat = F.np._internal.rnn_param_concat if is_np_array() else F._internal._rnn_param_concat
        packed = concat(*flat, dim=0)
        extra = [sequence_length] if self._use_sequence_length else []
        out = F.RNN(inputs, packed, *states, *extra, use_sequence_length=self._use_sequence_length,
                    state_size=self._hidden_size, projection_size=self._projection_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2,
                    p=self._dropout, state_outputs=True, mode=self._mode,
                    lstm_state_clip_min=self._lstm_state_clip_min,
                    lstm_state_clip_max=self._lstm_state_clip_max,
                    lstm_state_clip_nan=self._lstm_state_clip_nan)
        outputs = out[0]
        new_states = [out[1], out[2]] if self._mode == "lstm" else [out[1]]
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, dim1=0, dim2=1)
        return outputs if self.skip_states else (outputs, new_states)


_INIT_DOC = """
    Args:
        hidden_size: features of the hidden state.
        num_layers: stacked layers (default 1).
        layout: 'TNC' (default) or 'NTC'.
        dropout: dropout on the outputs of each layer but the last (default 0).
        bidirectional: add a layer running backwards in time (outputs concatenated).
        input_size: input features; 0 (default) infers them from the first input.
        i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
        h2h_bias_initializer: initializers (biases default to zeros).
        dtype: parameter dtype (default 'float32').

    Call ``layer(inputs, states=None)``: without states the output alone is returned,
    with states ``(output, new_states)``.
"""


class RNN(_RNNLayer):
    """Multi-layer Elman RNN: h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh), act relu or tanh.
    """ + _INIT_DOC

    def __init__(self, hidden_size, num_layers=1, activation="relu", layout="TNC", dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size=0,
                 dtype="float32", **kwargs):
        if activation not in ("relu", "tanh"):
            raise GpundaError(f"RNN: activation={activation!r} must be 'relu' or 'tanh'")
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, None, None, None, None,
                         False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                 "__layout__": "LNC", "dtype": self._dtype}]


class LSTM(_RNNLayer):
    """Multi-layer LSTM (gates i, f, g, o); ``projection_size`` makes it an LSTMP, and
    ``state_clip_min``/``state_clip_max`` clip the cell state.
    """ + _INIT_DOC

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 projection_size=None, h2r_weight_initializer=None, state_clip_min=None,
                 state_clip_max=None, state_clip_nan=False, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size=0):
        n = self._num_layers * self._dir
        h = self._projection_size or self._hidden_size
        return [{"shape": (n, batch_size, h), "__layout__": "LNC", "dtype": self._dtype},
                {"shape": (n, batch_size, self._hidden_size), "__layout__": "LNC",
                 "dtype": self._dtype}]


class GRU(_RNNLayer):
    """Multi-layer GRU (cuDNN's form: n = tanh(W_in x + b_in + r * (W_hn h + b_hn))).
    """ + _INIT_DOC

    def __init__(self, hidden_size, num_layers=1, layout="TNC", dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", dtype="float32",
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", None, None, None, None, False, dtype,
                         **kwargs)

    def state_info(self, batch_size=0):
        return [{"shape": (self._num_layers * self._dir, batch_size, self._hidden_size),
                 "__layout__": "LNC", "dtype": self._dtype}]
