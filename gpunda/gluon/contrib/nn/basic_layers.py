"""Contrib layers: concurrent branches, sparse embeddings, SyncBatchNorm, pixel shuffles."""
from __future__ import annotations

import warnings

from gpunda import context as _context
from gpunda import ndarray as _nd
from gpunda.base import GpundaError
from gpunda.gluon.block import Block, HybridBlock
from gpunda.gluon.nn import BatchNorm, HybridSequential, Identity, Sequential

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm",
           "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


class Concurrent(Sequential):
    """Runs every child on the same input and concatenates their outputs along ``axis``."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return _nd.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Hybridizable ``Concurrent``."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class SparseEmbedding(Block):
    """Embedding whose weight and gradient are row_sparse: only the rows a batch looks up
    are pulled and updated (with optimizers that support sparse gradients).

    Args:
        input_dim: vocabulary size.
        output_dim: embedding size.
        dtype: weight dtype (default 'float32').
        weight_initializer: initializer of the (input_dim, output_dim) weight.
    """

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": True}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      grad_stype="row_sparse", stype="row_sparse")

    def forward(self, x):
        weight = self.weight.row_sparse_data(x)
        return _nd.Embedding(x, weight, **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return f"{type(self).__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class SyncBatchNorm(BatchNorm):
    """Batch normalisation whose statistics MXNet synchronises across the GPUs of one process.

    gpunda runs one device per process, so within a process this is ``BatchNorm`` over
    axis 1 with the same parameters and results; ``num_devices`` is accepted and kept.
    Statistics are not synchronised across processes (data-parallel ranks) yet.
    """

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5,
                 center=True, scale=True, use_global_stats=False, beta_initializer="zeros",
                 gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, use_global_stats=use_global_stats,
                         beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)
        if num_devices is None:
            warnings.warn("Caution using SyncBatchNorm: if not using all the GPUs, set "
                          "num_devices", UserWarning, stacklevel=2)
            num_devices = max(_context.num_gpus(), 1)
        self.num_devices = num_devices


def _factors(factor, n, name):
    if isinstance(factor, int):
        return (factor,) * n
    factors = tuple(int(f) for f in factor)
    if len(factors) != n:
        raise GpundaError(f"{name}: factor={factor!r} must be an int or {n} ints")
    return factors


class PixelShuffle1D(HybridBlock):
    """(N, f*C, W) -> (N, C, W*f): groups of f channels become f neighbouring pixels."""

    def __init__(self, factor):
        super().__init__()
        self._factor = _factors(factor, 1, type(self).__name__)[0]

    def hybrid_forward(self, F, x):
        f = self._factor
        x = F.reshape(x, (0, -4, -1, f, 0))             # (N, C, f, W)
        x = F.transpose(x, (0, 1, 3, 2))                # (N, C, W, f)
        return F.reshape(x, (0, 0, -3))                 # (N, C, W*f)

    def __repr__(self):
        return f"{type(self).__name__}({self._factor})"


class PixelShuffle2D(HybridBlock):
    """(N, f1*f2*C, H, W) -> (N, C, H*f1, W*f2) (Shi et al., 2016)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 2, type(self).__name__)

    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2, 0, 0))    # (N, C, f1*f2, H, W)
        x = F.reshape(x, (0, 0, -4, f1, f2, 0, 0))      # (N, C, f1, f2, H, W)
        x = F.transpose(x, (0, 1, 4, 2, 5, 3))          # (N, C, H, f1, W, f2)
        return F.reshape(x, (0, 0, -3, -3))             # (N, C, H*f1, W*f2)

    def __repr__(self):
        return f"{type(self).__name__}({self._factors})"


class PixelShuffle3D(HybridBlock):
    """(N, f1*f2*f3*C, D, H, W) -> (N, C, D*f1, H*f2, W*f3)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 3, type(self).__name__)

    def hybrid_forward(self, F, x):
        f1, f2, f3 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2 * f3, 0, 0, 0))     # (N, C, f1*f2*f3, D, H, W)
        x = F.swapaxes(x, 2, 3)                                  # (N, C, D, f1*f2*f3, H, W)
        x = F.reshape(x, (0, 0, 0, -4, f1, f2 * f3, 0, 0))       # (N, C, D, f1, f2*f3, H, W)
        x = F.reshape(x, (0, 0, -3, 0, 0, 0))                    # (N, C, D*f1, f2*f3, H, W)
        x = F.swapaxes(x, 3, 4)                                  # (N, C, D*f1, H, f2*f3, W)
        x = F.reshape(x, (0, 0, 0, 0, -4, f2, f3, 0))            # (N, C, D*f1, H, f2, f3, W)
        x = F.reshape(x, (0, 0, 0, -3, 0, 0))                    # (N, C, D*f1, H*f2, f3, W)
        x = F.swapaxes(x, 4, 5)                                  # (N, C, D*f1, H*f2, W, f3)
        return F.reshape(x, (0, 0, 0, 0, -3))                    # (N, C, D*f1, H*f2, W*f3)

    def __repr__(self):
        return f"{type(self).__name__}({self._factors})"
