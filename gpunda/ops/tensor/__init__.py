"""Tensor ops (MXNet's src/operator/tensor): element-wise, reductions, shape and indexing,
creation, linear algebra, mixed-precision casts."""
