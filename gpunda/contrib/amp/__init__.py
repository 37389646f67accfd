"""``mx.contrib.amp``: MXNet's automatic mixed precision. Not built in gpunda yet: the
modules import (MXNet code imports them at the top of files), and every name raises
"is not supported yet"."""
from gpunda._core.not_built import missing_module_getattr
from gpunda.contrib.amp import amp  # noqa: F401 -- MXNet's package exposes its submodule

__getattr__ = missing_module_getattr("mxnet.contrib.amp", "automatic mixed precision (AMP)")
