"""``mx.contrib.amp``: MXNet's automatic mixed precision. Not built in gpunda yet: the
modules import (MXNet code imports them at the top of files), and every name raises
"is not supported yet". The op lists (``lists.symbol_fp16``, ``lists.symbol_bf16``) are
MXNet's, loaded when first used."""
import importlib

from gpunda._core.not_built import missing_module_getattr
from gpunda.contrib.amp import amp  # noqa: F401 -- MXNet's package exposes its submodule

_not_built = missing_module_getattr("mxnet.contrib.amp", "automatic mixed precision (AMP)")


def __getattr__(name):
    if name in ("lists", "loss_scaler"):      # MXNet's submodules, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    return _not_built(name)
