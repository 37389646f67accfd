"""Contrib layers (MXNet 1.x ``gluon.contrib.nn``)."""
from .basic_layers import (Concurrent, HybridConcurrent, Identity, SparseEmbedding,  # noqa: F401
                           SyncBatchNorm, PixelShuffle1D, PixelShuffle2D, PixelShuffle3D)
from . import basic_layers  # noqa: F401
