"""Contrib layers (MXNet 1.x ``gluon.contrib.nn``)."""
from gpunda.gluon.contrib.nn.basic_layers import (Concurrent, HybridConcurrent, Identity, SparseEmbedding,  # noqa: F401
                           SyncBatchNorm, PixelShuffle1D, PixelShuffle2D, PixelShuffle3D)
from gpunda.gluon.contrib.nn import basic_layers  # noqa: F401
