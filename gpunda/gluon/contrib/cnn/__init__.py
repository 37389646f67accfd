"""MXNet's ``mxnet.gluon.contrib.cnn``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda.gluon.contrib.cnn import conv_layers  # noqa: F401
from gpunda.gluon.contrib.cnn.conv_layers import DeformableConvolution  # noqa: F401
from gpunda.gluon.contrib.cnn.conv_layers import ModulatedDeformableConvolution  # noqa: F401
