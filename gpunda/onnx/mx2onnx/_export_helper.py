"""``mx.onnx.mx2onnx._export_helper``: ``load_module`` reads a saved checkpoint for export."""
import os

__all__ = ["load_module"]


def load_module(sym_filepath, params_filepath):
    """The Symbol and the merged arg and aux parameters of a checkpoint saved as
    ``prefix-symbol.json`` and ``prefix-EPOCH.params`` (epoch 0 when the params file name
    has no ``-EPOCH``).

    Raises:
        ValueError: either file does not exist.
    """
    from gpunda.model import load_checkpoint
    if not (os.path.isfile(sym_filepath) and os.path.isfile(params_filepath)):
        raise ValueError("Symbol and params files provided are invalid")
    prefix = sym_filepath.rsplit(".", 1)[0].rsplit("-", 1)[0]
    stem = params_filepath.rsplit(".", 1)[0].rsplit("-", 1)
    epoch = int(stem[1]) if len(stem) > 1 else 0
    sym, arg_params, aux_params = load_checkpoint(prefix, epoch)
    params = dict(arg_params)
    params.update(aux_params)
    return sym, params
