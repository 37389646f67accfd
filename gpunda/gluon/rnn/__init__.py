"""Recurrent layers and cells (MXNet 1.x ``gluon.rnn``)."""
from gpunda.gluon.rnn.rnn_cell import (RecurrentCell, HybridRecurrentCell, RNNCell, LSTMCell, GRUCell,  # noqa: F401
                       SequentialRNNCell, HybridSequentialRNNCell, DropoutCell, ModifierCell,
                       ZoneoutCell, ResidualCell, BidirectionalCell)
from gpunda.gluon.rnn.rnn_layer import RNN, LSTM, GRU  # noqa: F401
from gpunda.gluon.rnn import rnn_cell, rnn_layer  # noqa: F401
