"""Recurrent layers and cells (MXNet 1.x ``gluon.rnn``)."""
from .rnn_cell import (RecurrentCell, HybridRecurrentCell, RNNCell, LSTMCell, GRUCell,  # noqa: F401
                       SequentialRNNCell, HybridSequentialRNNCell, DropoutCell, ModifierCell,
                       ZoneoutCell, ResidualCell, BidirectionalCell)
from .rnn_layer import RNN, LSTM, GRU  # noqa: F401
from . import rnn_cell, rnn_layer  # noqa: F401
