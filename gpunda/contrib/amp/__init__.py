"""``mx.contrib.amp``: MXNet's automatic mixed precision (``amp.amp``'s names: ``init``,
``init_trainer``/``scale_loss``/``unscale``, the ``convert_*`` graph conversions, the op
lists). ``lists`` and ``loss_scaler`` load on first use."""
import importlib

from gpunda.contrib.amp import amp  # noqa: F401 -- MXNet's package exposes its submodule
from gpunda.contrib.amp.amp import *  # noqa: F401,F403
from gpunda.contrib.amp.amp import __all__  # noqa: F401


def __getattr__(name):
    if name in ("lists", "loss_scaler"):      # MXNet's submodules, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'mxnet.contrib.amp' has no attribute {name!r}")
