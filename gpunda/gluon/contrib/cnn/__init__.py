"""MXNet's ``mxnet.gluon.contrib.cnn``: contrib convolution layers (deformable convolutions)."""
from gpunda.gluon.contrib.cnn import conv_layers  # noqa: F401
from gpunda.gluon.contrib.cnn.conv_layers import *  # noqa: F401,F403
from gpunda.gluon.contrib.cnn.conv_layers import __all__  # noqa: F401
