"""``mx.rnn``: MXNet's legacy symbolic RNN API (cells that build Symbol graphs, fused
weights packing, RNN checkpoints, bucketing sentence iterator). Loaded lazily."""
from gpunda.rnn import rnn_cell, rnn, io
from gpunda.rnn.rnn_cell import *  # noqa: F401,F403
from gpunda.rnn.rnn import *  # noqa: F401,F403
from gpunda.rnn.io import *  # noqa: F401,F403
from gpunda.rnn.rnn_cell import ndarray, symbol, init, numeric_types, string_types  # noqa: F401
from gpunda.model import save_checkpoint, load_checkpoint  # noqa: F401
from gpunda.io import DataIter, DataBatch, DataDesc  # noqa: F401
