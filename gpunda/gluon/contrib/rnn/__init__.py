"""Contrib recurrent cells (MXNet 1.x ``gluon.contrib.rnn``)."""
from .rnn_cell import VariationalDropoutCell, LSTMPCell, dynamic_unroll  # noqa: F401
from .conv_rnn_cell import (Conv1DRNNCell, Conv2DRNNCell, Conv3DRNNCell,  # noqa: F401
                            Conv1DLSTMCell, Conv2DLSTMCell, Conv3DLSTMCell,
                            Conv1DGRUCell, Conv2DGRUCell, Conv3DGRUCell)
from . import rnn_cell, conv_rnn_cell  # noqa: F401
