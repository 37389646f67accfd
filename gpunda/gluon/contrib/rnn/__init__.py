"""Contrib recurrent cells (MXNet 1.x ``gluon.contrib.rnn``)."""
from gpunda.gluon.contrib.rnn.rnn_cell import VariationalDropoutCell, LSTMPCell, dynamic_unroll  # noqa: F401
from gpunda.gluon.contrib.rnn.conv_rnn_cell import (Conv1DRNNCell, Conv2DRNNCell, Conv3DRNNCell,  # noqa: F401
                            Conv1DLSTMCell, Conv2DLSTMCell, Conv3DLSTMCell,
                            Conv1DGRUCell, Conv2DGRUCell, Conv3DGRUCell)
from gpunda.gluon.contrib.rnn import rnn_cell, conv_rnn_cell  # noqa: F401
