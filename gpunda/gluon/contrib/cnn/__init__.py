"""MXNet's ``mxnet.gluon.contrib.cnn``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from . import conv_layers  # noqa: F401
from .conv_layers import DeformableConvolution  # noqa: F401
from .conv_layers import ModulatedDeformableConvolution  # noqa: F401
