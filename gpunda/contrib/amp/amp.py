"""``mx.contrib.amp.amp``: not built yet (see the package docstring)."""
from gpunda._core.not_built import missing_module_getattr

# MXNet's state flags (GluonNLP reads _amp_initialized at import): AMP is never on here
_amp_initialized = False
_amp_loss_scale_initialized = False
_loss_scaler = None

__getattr__ = missing_module_getattr("mxnet.contrib.amp.amp", "automatic mixed precision (AMP)")
