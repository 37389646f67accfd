"""``mx.rnn``: MXNet's legacy symbolic RNN API (cells that build Symbol graphs, fused
weights packing, RNN checkpoints, bucketing sentence iterator). Loaded lazily."""
from . import rnn_cell, rnn, io
from .rnn_cell import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .io import *  # noqa: F401,F403
from .rnn_cell import ndarray, symbol, init, numeric_types, string_types  # noqa: F401
from ..model import save_checkpoint, load_checkpoint  # noqa: F401
from ..io import DataIter, DataBatch, DataDesc  # noqa: F401
