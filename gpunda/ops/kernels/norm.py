"""Fused BatchNorm kernels: the forward in training mode and the plain (first-order)
backward, on backend arrays.

NumPy reduces over the batch and spatial axes of an (N, C, H, W) array several times
slower than it adds two such arrays, so the per-channel sums here are products with
a vector of ones (two GEMVs: over the leading axes, then over the trailing ones),
and the element-wise work is folded into as few passes as the formulas allow.
The composite rule in nn.py stays the differentiable one (create_graph=True).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from gpunda._core import threads as _threads
from gpunda.ops._util import matmul


def _split(shape, ax):
    """(A, C, B): the sizes before, at and after ``ax``."""
    return math.prod(shape[:ax]), shape[ax], math.prod(shape[ax + 1:])


@functools.lru_cache(maxsize=64)
def _host_ones(n, dtype):
    v = np.ones(n, dtype=dtype)
    v.flags.writeable = False       # shared by every call
    return v


def _ones(xp, n, dtype):
    return _host_ones(n, np.dtype(dtype)) if xp is np else xp.ones(n, dtype=dtype)


def channel_sum(xp, a, ax):
    """Sum of ``a`` over every axis but ``ax``, shape (C,)."""
    A, C, B = _split(a.shape, ax)
    a = xp.ascontiguousarray(a)
    if A > 1:
        a = matmul(xp, _ones(xp, A, a.dtype).reshape(1, A), a.reshape(A, C * B))
    a = a.reshape(C, B)
    if B == 1:
        return a[:, 0].copy() if A == 1 else a[:, 0]
    return matmul(xp, a, _ones(xp, B, a.dtype).reshape(B, 1))[:, 0]


def channel_dot(xp, a, b):
    """Per channel (axis 1 of (A, C, B) arrays), the sum of ``a * b``. On NumPy one
    einsum reads both arrays without writing their product (twice as fast)."""
    if xp is np:
        return np.einsum("acb,acb->c", a, b)
    return channel_sum(xp, a * b, 1)


def _acc(x):
    """``x`` in the dtype its statistics accumulate in (float32 for float16)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def channel_plane(xp, v, B):
    """Per-channel values ``v`` (C,) as one (C * B) plane: broadcast over the leading axis
    of an (A, C * B) array, NumPy runs A loops of C * B cells instead of A * C loops of B
    (several times faster on small maps)."""
    return v.repeat(B) if B > 1 else v      # the method: np.repeat adds a Python wrapper


def batch_stats(xp, x, ax):
    """(mean, var, x - mean as (A, C, B)) over every axis but ``ax`` (two passes: no
    E[x^2] - mean^2 cancellation)."""
    A, C, B = _split(x.shape, ax)
    n = A * B
    x3 = _acc(x).reshape(A, C, B)
    mean = channel_sum(xp, x3, 1) / n
    xc = _centred(xp, x3, mean)
    var = channel_dot(xp, xc, xc) / n
    return mean, var, xc


def _centred(xp, x3, mean):
    """``x3 - mean`` (A, C, B), a new array, in pieces of rows on the CPU threads."""
    A, C, B = x3.shape
    plane = channel_plane(xp, mean, B)
    x2 = x3.reshape(A, C * B)
    if xp is not np:
        return (x2 - plane).reshape(A, C, B)
    out = np.empty(x2.shape, np.result_type(x2.dtype, plane.dtype))
    _threads.rows(lambda lo, hi: np.subtract(x2[lo:hi], plane, out=out[lo:hi]), A, x2.size)
    return out.reshape(A, C, B)


# The element-wise work below runs in place on the one array each kernel allocates:
# a fresh result array costs NumPy about three in-place passes over cached data.

def batch_norm_train(xp, x, gamma, beta, ax, eps, fix_gamma):
    """(out, mean, var, 1/sqrt(var + eps)) of BatchNorm with batch statistics."""
    mean, var, xc = batch_stats(xp, x, ax)
    r = 1 / xp.sqrt(var + eps)
    scale = r if fix_gamma else _acc(gamma) * r
    A, C, B = xc.shape
    out = xc.reshape(A, C * B)
    sp, bp = channel_plane(xp, scale, B), channel_plane(xp, _acc(beta), B)

    def affine(lo, hi):
        o = out[lo:hi]
        o *= sp
        o += bp
    _threads.rows(affine, A, out.size) if xp is np else affine(0, A)
    return out.reshape(x.shape).astype(x.dtype, copy=False), mean, var, r


def batch_norm_train_backward(xp, x, g, gamma, ax, eps, fix_gamma, mean=None, r=None):
    """(dx, dgamma, dbeta) of BatchNorm with batch statistics: the forward's ``mean`` and
    ``r`` when given (as MXNet's backward reads its forward's outputs), else recomputed
    from ``x``.

    With xc = x - mean, r = 1/sqrt(var + eps), gr = gamma * r and n cells per channel:
    dbeta = sum(g), dgamma = r * sum(g * xc) and
    dx = gr * (g - r * dgamma / n * xc - dbeta / n).
    """
    A, C, B = _split(x.shape, ax)
    n = A * B
    if mean is None:
        _, var, xc = batch_stats(xp, x, ax)
        r = 1 / xp.sqrt(var + eps)
    else:
        xc = _centred(xp, _acc(x).reshape(A, C, B), mean)
    g3 = _acc(g).reshape(A, C, B)
    dbeta = channel_sum(xp, g3, 1)
    dgamma = channel_dot(xp, g3, xc) * r
    gr = r if fix_gamma else _acc(gamma) * r
    dx = xc.reshape(A, C * B)
    g2 = g3.reshape(A, C * B)
    p1, p2, p3 = (channel_plane(xp, v, B) for v in (-r * dgamma / n, dbeta / n, gr))

    def passes(lo, hi):
        d = dx[lo:hi]
        d *= p1
        d += g2[lo:hi]
        d -= p2
        d *= p3
    _threads.rows(passes, A, dx.size) if xp is np else passes(0, A)
    pt = gamma.dtype        # float32 for float16 data, as the parameters
    return (dx.reshape(x.shape).astype(x.dtype, copy=False), dgamma.astype(pt, copy=False),
            dbeta.astype(pt, copy=False))
