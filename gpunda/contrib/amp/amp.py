"""``mx.contrib.amp.amp``: not built yet (see the package docstring)."""
from gpunda._core.not_built import missing_module_getattr

__getattr__ = missing_module_getattr("mxnet.contrib.amp.amp", "automatic mixed precision (AMP)")
