"""Gluon neural-network layers (MXNet 1.x ``gluon.nn``)."""
from gpunda.gluon.nn.basic_layers import *  # noqa: F401,F403
from gpunda.gluon.nn.conv_layers import *  # noqa: F401,F403
from gpunda.gluon.nn.activations import *  # noqa: F401,F403
from gpunda.gluon.block import Block, HybridBlock, SymbolBlock  # noqa: F401
