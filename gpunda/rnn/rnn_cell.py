"""The cells of the legacy symbolic RNN API (``mx.rnn.rnn_cell``)."""
from gpunda import ndarray, symbol  # noqa: F401  (MXNet's module exposes both names)
from gpunda import initializer as init  # noqa: F401
from gpunda.base import numeric_types, string_types, NotImplementedForGpunda  # noqa: F401
from gpunda.rnn._cells import (RNNParams, BaseRNNCell, RNNCell, LSTMCell, GRUCell,  # noqa: F401
                               _normalize_sequence)
from gpunda.rnn._fused import FusedRNNCell
from gpunda.rnn._containers import (SequentialRNNCell, BidirectionalCell, ModifierCell, DropoutCell,
                          ZoneoutCell, ResidualCell)
from gpunda.rnn._containers import (_cells_state_shape, _cells_state_info,  # noqa: F401
                                    _cells_begin_state, _cells_unpack_weights,
                                    _cells_pack_weights)
from gpunda.rnn._conv_cells import BaseConvRNNCell, ConvRNNCell, ConvLSTMCell, ConvGRUCell


__all__ = ["RNNParams", "BaseRNNCell", "RNNCell", "LSTMCell", "GRUCell", "FusedRNNCell",
           "SequentialRNNCell", "BidirectionalCell", "ModifierCell", "DropoutCell",
           "ZoneoutCell", "ResidualCell", "BaseConvRNNCell", "ConvRNNCell", "ConvLSTMCell",
           "ConvGRUCell"]
