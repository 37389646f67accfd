"""Pointwise fusion for CachedOp on GPU contexts (MXNet 1.6+'s MXNET_USE_FUSION).

The pieces: ``expr`` (the expression language of the ops' ``Pointwise`` records and the
kernel IR), ``partition`` (which steps fuse), ``group`` (the fused step: kernels and
gradients), ``codegen`` (CUDA C++ for NVRTC), ``reference`` (the NumPy evaluator of the
same IR) and ``counts`` (kernels per step, and every generated source of a graph).
CachedOp uses them on GPU contexts only (NOTE [Fusion in CachedOp] in cached_op.py).
Besides element-wise ops, groups take training-mode Dropout's multiply (its mask is a
random step of its own) and softmax/LayerNorm as row reductions (row kernels).
"""
from __future__ import annotations

import os

from gpunda._engine.fusion.group import FusedGroup
from gpunda._engine.fusion.partition import Partition, fused_order, partition

__all__ = ["ENABLED", "FusedGroup", "Partition", "partition", "fused_order", "sources_for",
           "kernel_counts"]

# read once, as MXNet reads MXNET_USE_FUSION (default on)
ENABLED = os.environ.get("MXNET_USE_FUSION", "1").strip() not in ("0", "false", "False")


def sources_for(symbol, shapes, dtypes=None, train=False, backward=True):
    """Every CUDA source the fusion pass generates for ``symbol`` with input ``shapes``
    (name -> shape) and ``dtypes`` (name -> dtype, default float32): a list of
    ``(kernel name, source)``, forward kernels and (``backward``) the gradient kernels of
    every input, for the partition of training mode ``train``. For the NVRTC compile
    check; needs no GPU."""
    from gpunda._engine.fusion.counts import graph_sources
    return graph_sources(symbol, shapes, dtypes, train, backward)


def kernel_counts(symbol, shapes, dtypes=None, train=True, grad_inputs=None):
    """Kernels of one call (forward) and its backward, unfused against fused, counted
    from the plan (see fusion/counts.py)."""
    from gpunda._engine.fusion.counts import count_kernels
    return count_kernels(symbol, shapes, dtypes, train, grad_inputs)
