"""Checkpoints of models built from legacy RNN cells: weights are saved unpacked (per
gate), so fused and unfused versions of a model read each other's files."""
import warnings

from gpunda.model import save_checkpoint, load_checkpoint
from gpunda.rnn._cells import BaseRNNCell


def _cell_list(cells):
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def rnn_unroll(cell, length, inputs=None, begin_state=None, input_prefix="", layout="NTC"):
    """Deprecated: ``cell.unroll(length, inputs, begin_state, layout=layout)``."""
    warnings.warn("rnn_unroll is deprecated. Please call cell.unroll directly.", stacklevel=2)
    return cell.unroll(length, inputs=inputs, begin_state=begin_state, layout=layout)


def save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params):
    """``mx.model.save_checkpoint`` after each cell's ``unpack_weights``."""
    for cell in _cell_list(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix, epoch):
    """``mx.model.load_checkpoint`` then each cell's ``pack_weights``:
    (symbol, arg_params, aux_params)."""
    sym, arg, aux = load_checkpoint(prefix, epoch)
    for cell in _cell_list(cells):
        arg = cell.pack_weights(arg)
    return sym, arg, aux


def do_rnn_checkpoint(cells, prefix, period=1):
    """An epoch-end callback that saves an RNN checkpoint every ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback


__all__ = ["rnn_unroll", "save_rnn_checkpoint", "load_rnn_checkpoint", "do_rnn_checkpoint"]
