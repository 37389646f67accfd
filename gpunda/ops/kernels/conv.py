"""The convolution kernels behind Convolution, Deconvolution, im2col and col2im.

Every product is batched per sample: the columns of a batch are laid out
(N, G, Cg*K, P) (group, channel-major rows: row cg * K + k is channel cg at kernel
position k; P output positions), so ``W (G, Fg, Cg*K) @ cols`` lands directly in the
(N, F, *out) layout of the result and no transposing copy of the data or of the
output is needed. A 1x1 kernel without padding needs no columns at all.

The data gradient of a stride-1 convolution is itself a convolution of the output
gradient with the flipped, transposed kernel (padding dilate * (k - 1) - pad): its
columns are a copy per kernel position, where summing column gradients back
(col2im) reads and writes the data gradient once per kernel position. Strided
convolutions take the col2im route.
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops._util import finite, matmul
from gpunda.ops.kernels import conv_flat as _flat
from gpunda.ops.kernels import conv_shifted as _shifted
from gpunda.ops.kernels import conv_grid as _grid
from gpunda.ops.kernels import conv_phase as _phase
from gpunda.ops.kernels import conv_pointwise as _pw


def conv_out(sp, kernel, stride, dilate, pad, opname):
    """Output spatial shape of a convolution; a GpundaError when the kernel does not fit."""
    out = []
    for i, s in enumerate(sp):
        dk = dilate[i] * (kernel[i] - 1) + 1
        o = (s + 2 * pad[i] - dk) // stride[i] + 1
        if o <= 0:
            raise GpundaError(f"Operator {opname}: kernel={kernel} (dilate={dilate}) is larger "
                              f"than the padded input {tuple(sp)} with pad={pad}")
        out.append(o)
    return tuple(out)


def kernel_slices(kernel, stride, dilate, out_sp):
    """((flat index, spatial slices), ...) per kernel position: the input cells it meets
    (cached: every call of an op with the same geometry needs the same slices)."""
    return _slices(tuple(kernel), tuple(stride), tuple(dilate), tuple(out_sp))


@functools.lru_cache(maxsize=512)
def _slices(kernel, stride, dilate, out_sp):
    nd = len(kernel)
    return tuple((j, tuple(slice(kidx[i] * dilate[i], kidx[i] * dilate[i] + stride[i] * (out_sp[i] - 1) + 1,
                                 stride[i]) for i in range(nd)))
                 for j, kidx in enumerate(itertools.product(*(range(k) for k in kernel))))


def pad_spatial(xp, x, before, after, value=0):
    """``x`` (N, C, *sp) padded with ``value`` on its spatial axes (a fill and one copy:
    ``pad`` is several times slower on small arrays)."""
    if not any(before) and not any(after):
        return x
    shape = tuple(x.shape[:2]) + tuple(s + b + a for s, b, a in zip(x.shape[2:], before, after))
    out = xp.empty(shape, dtype=x.dtype) if value != 0 else xp.zeros(shape, dtype=x.dtype)
    if value != 0:
        out.fill(value)
    inner = (slice(None), slice(None)) + tuple(slice(b, b + s) for b, s in zip(before, x.shape[2:]))
    out[inner] = x
    return out


def im2col(xp, x, kernel, stride, dilate, pad, opname):
    """Columns (N, C * K, P) of ``x`` (N, C, *sp), and the output spatial shape."""
    N, C = x.shape[:2]
    out_sp = conv_out(x.shape[2:], kernel, stride, dilate, pad, opname)
    P = math.prod(out_sp)
    lead = (slice(None), slice(None))
    if math.prod(kernel) == 1 and not any(pad):
        # a 1x1 kernel reads each output's own input cell: the data (strided) is the columns
        if all(s == 1 for s in stride):
            return x.reshape(N, C, P), out_sp
        sl = kernel_slices(kernel, stride, dilate, out_sp)[0][1]
        return xp.ascontiguousarray(x[lead + sl]).reshape(N, C, P), out_sp
    xpad = pad_spatial(xp, x, pad, pad)
    K = math.prod(kernel)
    cols = xp.empty((N, C, K) + out_sp, dtype=x.dtype)
    for j, sl in kernel_slices(kernel, stride, dilate, out_sp):
        cols[:, :, j] = xpad[lead + sl]
    return cols.reshape(N, C * K, P), out_sp


def col2im(xp, dcols, data_shape, kernel, stride, dilate, pad, out_sp):
    """Sum column gradients (N, C * K, P) back into an array of ``data_shape``."""
    N, C = data_shape[:2]
    sp = tuple(data_shape[2:])
    nd = len(kernel)
    K = math.prod(kernel)
    dk = dcols.reshape((N, C, K) + tuple(out_sp))
    full = tuple(max(sp[i] + 2 * pad[i], (out_sp[i] - 1) * stride[i] + dilate[i] * (kernel[i] - 1) + 1)
                 for i in range(nd))
    lead = (slice(None), slice(None))
    # kernel positions whose windows never overlap (stride past the dilated kernel) own
    # disjoint cells: assign instead of accumulating
    disjoint = all(stride[i] >= dilate[i] * (kernel[i] - 1) + 1 for i in range(nd))
    if disjoint and K == 1 and full == sp and all(s == 1 for s in stride):
        return dk[:, :, 0].reshape(data_shape)
    dx = xp.zeros((N, C) + full, dtype=dcols.dtype)
    for j, sl in kernel_slices(kernel, stride, dilate, out_sp):
        if disjoint:
            dx[lead + sl] = dk[:, :, j]
        else:
            dx[lead + sl] += dk[:, :, j]
    if full == sp and not any(pad):
        return dx
    return dx[lead + tuple(slice(pad[i], pad[i] + sp[i]) for i in range(nd))]


def _bmm(xp, a, b):
    """``a @ b`` with ``a``'s leading axes broadcast to ``b``'s (views, no copies), for
    the capture-safe GEMM, which takes equal leading axes only."""
    if a.shape[:-2] != b.shape[:-2]:
        a = xp.broadcast_to(a, b.shape[:-2] + a.shape[-2:])
    return matmul(xp, a, b)


# NOTE [Convolution in cache-sized chunks]
# The columns of a batch are K times the data: for a ResNet stage of 32 samples, 16
# channels on 32x32, 19 MB written and read back by the GEMM, at memory speed. On the
# CPU they are made a few samples at a time instead, into one buffer of about
# _CHUNK_BYTES that stays in the L2 cache while the GEMM reads it, and the padding is
# made per chunk in a second reused buffer whose border stays zero. On that ResNet
# stage this made forward + GEMM 25% faster; on small images the whole batch is one
# chunk, as before. A GPU runs the whole batch at once.
_CHUNK_BYTES = 3 << 18


def _chunk_size(xp, N, per_sample, cells):
    if xp is not np:
        return N
    return _grid.samples_per_chunk(N, per_sample, _CHUNK_BYTES, cells)


def col_chunks(xp, x, kernel, stride, dilate, pad, out_sp):
    """(n0, n1, columns (n1 - n0, C * K, P)) over the batch in cache-sized chunks; the
    columns' buffer is reused by the next chunk (NOTE above)."""
    N, C = x.shape[:2]
    K = math.prod(kernel)
    P = math.prod(out_sp)
    b = _chunk_size(xp, N, C * K * P * x.dtype.itemsize, P)
    if b >= N or (K == 1 and not any(pad)):
        yield 0, N, im2col(xp, x, kernel, stride, dilate, pad, "Convolution")[0]
        return
    lead = (slice(None), slice(None))
    slices = kernel_slices(kernel, stride, dilate, out_sp)
    padded = any(pad)
    if padded:
        xbuf = xp.zeros((b, C) + tuple(s + 2 * q for s, q in zip(x.shape[2:], pad)), dtype=x.dtype)
        inner = lead + tuple(slice(q, q + s) for q, s in zip(pad, x.shape[2:]))
    cbuf = xp.empty((b, C, K) + tuple(out_sp), dtype=x.dtype)
    for n0 in range(0, N, b):
        n1 = min(N, n0 + b)
        m = n1 - n0
        if padded:
            src = xbuf[:m]
            src[inner] = x[n0:n1]
        else:
            src = x[n0:n1]
        cb = cbuf[:m]
        for j, sl in slices:
            cb[:, :, j] = src[lead + sl]
        yield n0, n1, cb.reshape(m, C * K, P)


def conv_forward(xp, x, w, kernel, stride, dilate, pad, groups, opname):
    """Convolution of ``x`` (N, C, *sp) with ``w`` (F, C/G, *kernel), no bias."""
    N, C = x.shape[:2]
    F = w.shape[0]
    out_sp = conv_out(x.shape[2:], kernel, stride, dilate, pad, opname)
    if x.size == 0 or w.size == 0:
        return xp.zeros((N, F) + out_sp, dtype=x.dtype)
    if _pw.eligible(xp, x, kernel, pad, out_sp, C, F, "forward"):
        return _pw.forward(x, w, stride, groups, out_sp)
    if _flat.eligible(xp, x, kernel, stride, dilate, pad):
        if _shifted.eligible(x, kernel, groups):
            return _shifted.forward(x, w, kernel, dilate, pad, groups, _CHUNK_BYTES)
        return _flat.forward(x, w, kernel, dilate, pad, groups, _CHUNK_BYTES)
    if _grid.eligible(xp, x, kernel, stride, pad, out_sp):
        return _grid.forward(x, w, kernel, dilate, pad, groups, out_sp, _CHUNK_BYTES)
    P = math.prod(out_sp)
    wg = w.reshape(groups, F // groups, -1)
    y = None
    for n0, n1, cols in col_chunks(xp, x, kernel, stride, dilate, pad, out_sp):
        c = cols.reshape(n1 - n0, groups, -1, P)
        if n1 - n0 == N:
            y = _bmm(xp, wg, c)
        else:
            if y is None:
                y = xp.empty((N, groups, F // groups, P), dtype=x.dtype)
            xp.matmul(wg, c, out=y[n0:n1])      # NumPy only: a GPU has one chunk
    return y.reshape((N, F) + out_sp)


def weight_grad(xp, gy, x, kernel, stride, dilate, pad, groups, opname):
    """d/dW of a convolution: sum over the batch of ``gy[n] @ cols[n].T``."""
    N, F = gy.shape[:2]
    C = x.shape[1]
    out_sp = conv_out(x.shape[2:], kernel, stride, dilate, pad, opname)
    if tuple(out_sp) != tuple(gy.shape[2:]):
        raise GpundaError(f"Operator {opname}: output gradient spatial shape "
                          f"{tuple(gy.shape[2:])} does not match the convolution output {out_sp}")
    if gy.size == 0 or x.size == 0:
        return xp.zeros((F, C // groups) + tuple(kernel), dtype=gy.dtype)
    dw = None       # (G, Cg*K, Fg)
    if _pw.eligible(xp, x, kernel, pad, out_sp, C, F, "weight"):
        dw = _pw.weight_grad(gy, x, stride, groups)
    elif _flat.eligible(xp, x, kernel, stride, dilate, pad):
        dw = _flat.weight_grad(gy, x, kernel, dilate, pad, groups, _CHUNK_BYTES)
    elif _grid.eligible(xp, x, kernel, stride, pad, out_sp):
        dw = _grid.weight_grad(gy, x, kernel, dilate, pad, groups, out_sp, _CHUNK_BYTES)
    if dw is None:
        P = math.prod(out_sp)
        g = gy.reshape(N, groups, F // groups, P)
        for n0, n1, cols in col_chunks(xp, x, kernel, stride, dilate, pad, out_sp):
            c = cols.reshape(n1 - n0, groups, -1, P)
            # cols @ gy.T, transposed after: OpenBLAS runs this twice as fast as gy @ cols.T
            # when the transposed operand is the large one
            part = matmul(xp, c, g[n0:n1].swapaxes(-1, -2)).sum(axis=0)
            dw = part if dw is None else dw + part
    return xp.ascontiguousarray(dw.swapaxes(-1, -2)).reshape((F, C // groups) + tuple(kernel))


def transposed_pad(kernel, stride, dilate, pad, F, out_sp, data_shape):
    """The padding of the stride-1 data gradient as a convolution of the output gradient,
    or None where col2im is the route: strided, padding past the kernel, or more column
    entries than col2im's (F * input cells against C * output cells per kernel position:
    a 224x224 kernel over a 224x224 image has one output cell and 50176 input cells)."""
    nd = len(kernel)
    if any(s != 1 for s in stride):
        return None
    tpad = tuple(dilate[i] * (kernel[i] - 1) - pad[i] for i in range(nd))
    # the transposed convolution's output, out + 2 * tpad - d * (k - 1), is the data
    if min(tpad, default=0) < 0 or any(
            out_sp[i] + 2 * tpad[i] - dilate[i] * (kernel[i] - 1) != data_shape[2 + i]
            for i in range(nd)):
        return None
    if F * math.prod(data_shape[2:]) > 2 * data_shape[1] * math.prod(out_sp):
        return None
    return tpad


def flipped_kernel(xp, w, groups, C):
    """The kernel of the data gradient as a convolution: (F, Cg, *k) -> per group
    (Cg, Fg, *k), flipped in space, as (C, Fg, *k)."""
    F = w.shape[0]
    kernel = tuple(w.shape[2:])
    wg = w.reshape((groups, F // groups, C // groups) + kernel)
    flip = (slice(None),) * 3 + (slice(None, None, -1),) * len(kernel)
    return xp.ascontiguousarray(wg[flip].swapaxes(1, 2)).reshape((C, F // groups) + kernel)


def data_grad(xp, gy, w, kernel, stride, dilate, pad, groups, data_shape, out_dtype=None):
    """d/dx of a convolution (the transposed convolution of ``gy`` with ``w``)."""
    N, F = gy.shape[:2]
    C = data_shape[1]
    out_sp = tuple(gy.shape[2:])
    if gy.size == 0 or w.size == 0:
        return xp.zeros(tuple(data_shape), dtype=out_dtype or gy.dtype)
    tpad = transposed_pad(kernel, stride, dilate, pad, F, out_sp, data_shape)
    dx = None
    if _pw.eligible(xp, gy, kernel, pad, out_sp, C, F, "data"):
        dx = _pw.data_grad(gy, w, stride, groups, data_shape, out_dtype or gy.dtype)
    elif tpad is None and _phase.eligible(xp, gy, kernel, stride, dilate, pad, out_sp):
        # None where the kernel is not finite: col2im below
        dx = _phase.data_grad(gy, w, kernel, stride, dilate, pad, groups, data_shape, _CHUNK_BYTES)
    if dx is None and tpad is not None:
        dx = conv_forward(xp, gy, flipped_kernel(xp, w, groups, C), kernel, stride, dilate, tpad,
                          groups, "Convolution")
    elif dx is None:
        P = math.prod(out_sp)
        wm = w.reshape(groups, F // groups, -1)
        dcols = _bmm(xp, wm.swapaxes(-1, -2), gy.reshape(N, groups, F // groups, P))
        dx = col2im(xp, dcols.reshape(N, -1, P), tuple(data_shape), kernel, stride, dilate, pad,
                    out_sp)
    if out_dtype is not None and dx.dtype != out_dtype:
        dx = dx.astype(out_dtype)
    return dx


def conv_backward(xp, gy, x, w, kernel, stride, dilate, pad, groups):
    """(dx, dW) of a convolution in one pass over the output gradient's columns where
    flat or shifted rows (stride-1 2-D "same" convolution on NumPy) or the row grid
    (other stride-1 2-D ones) apply and the data and gradient are finite, else None."""
    if gy.size == 0 or x.size == 0:
        return None
    tpad = transposed_pad(kernel, stride, dilate, pad, gy.shape[1], gy.shape[2:], x.shape)
    if tpad is None:
        return None
    on_flat = _flat.eligible(xp, gy, kernel, stride, dilate, tpad)
    if not on_flat and not _grid.eligible(xp, gy, kernel, stride, tpad, x.shape[2:]):
        return None
    wt = flipped_kernel(xp, w, groups, x.shape[1])
    # dW' multiplies the data by the padding zeros of the gradient's columns, where the
    # sum over the data's columns multiplies the gradient by the data's padding: with an
    # inf in either, one has a NaN the other has not. Every element of both enters dW''s
    # sums, so a finite dW' (a small array, checked after) means finite inputs, where both
    # ways agree; otherwise the separate gradients are taken (weight_grad sums as MXNet's
    # im2col does), and the NaNs of the dropped result raise no warning
    with np.errstate(invalid="ignore"):
        if on_flat and _shifted.eligible(gy, kernel, groups):
            dx, dw = _shifted.backward(gy, x, wt, kernel, dilate, tpad, groups, _CHUNK_BYTES)
        elif on_flat:
            dx, dw = _flat.backward(gy, x, wt, kernel, dilate, tpad, groups, _CHUNK_BYTES)
        else:
            dx, dw = _grid.backward(gy, x, wt, kernel, dilate, tpad, groups, _CHUNK_BYTES)
        if not finite(dw):
            return None
    return dx, dw

