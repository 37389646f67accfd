"""In-place update kernels over a slice ``[lo, hi)`` of flat buffers (NOTE [Flat buffers]).

Each kernel repeats, operation by operation, the per-parameter formula of its
optimizer (``optimizer.py``/``_more.py``/``ops/optimizer/updates.py``), in the
same order and with the same scalar types, so the flat step and the
per-parameter step give bit-identical weights and states. The slice is walked
in chunks of ``CHUNK`` elements on the CPU: every chunk's temporaries live in
two preallocated scratch vectors that stay in cache, so main-memory traffic is
about one read of each input and one write of each output; on a GPU the flat step
uses the one-launch CUDA kernels of ``flat_cuda.py``, and these run there only for the
multi-tensor ops and with ``GPUNDA_FLAT_CUDA=0``, in large chunks (``GPU_CHUNK``). A kernel's scalars (``lr``, ``wd``, ...)
are Python floats, as in the per-parameter code, and NumPy casts them to the
buffers' dtype.
"""
from __future__ import annotations

import functools

import numpy as np

from gpunda._core import threads as _threads

CHUNK = 1 << 16          # elements per chunk on the CPU (256 KiB of float32 per array)
GPU_CHUNK = 1 << 22      # on a GPU: few launches, and two scratch vectors of bounded size


def chunks(lo, hi, step):
    """``(start, stop)`` pieces of ``[lo, hi)`` at most ``step`` long."""
    s = lo
    while s < hi:
        e = min(s + step, hi)
        yield s, e
        s = e


class Scratch:
    """Two chunk-sized temporaries (``a``, ``b``) of one dtype on one device; ``spare(i)``
    is the i-th extra pair, for the i-th thread of a split step."""

    def __init__(self, xp, dtype, n):
        self.a = xp.empty(n, dtype)
        self.b = xp.empty(n, dtype)
        self.n = n
        self._spares = []

    def spare(self, i):
        while len(self._spares) < i:
            self._spares.append(Scratch(np, self.a.dtype, self.n))
        return self._spares[i - 1] if i else self


def _threaded(kernel):
    """On the CPU, ``kernel`` over ``[lo, hi)`` in pieces of whole chunks on gpunda's
    threads (NOTE [CPU threads]), each piece with its own scratch. Every element's
    formula is computed alone, so the result is the one-thread result, bit for bit."""
    @functools.wraps(kernel)
    def run(xp, bufs, sc, lo, hi, k, *rest):
        n = hi - lo
        if xp is not np or n < 2 * max(sc.n, _threads.STREAM_MIN_ELEMENTS):
            return kernel(xp, bufs, sc, lo, hi, k, *rest)
        ranges = _threads.bounds(n, _threads.pieces(n, n, _threads.STREAM_MIN_ELEMENTS), sc.n)
        scratch = {a: sc.spare(i) for i, (a, _) in enumerate(ranges)}
        _threads.run(lambda a, b: kernel(xp, bufs, scratch[a], lo + a, lo + b, k, *rest), ranges)
    return run


def _rescaled(xp, g, a, rs, clip):
    """``a = clip(g * rescale_grad)`` (``_ops._rescaled``)."""
    xp.multiply(g, g.dtype.type(rs), out=a)
    if clip is not None:
        xp.clip(a, -clip, clip, out=a)


@_threaded
def sgd(xp, bufs, sc, lo, hi, k):
    """SGD (``SGD.update``): ``k = (lr, wd, rescale_grad, op_form, clip, momentum)``.

    Without ``clip_gradient`` set (``op_form`` False): the in-place formula of
    ``SGD.update``; with it, ``_ops._sgd`` / ``_ops._sgd_mom`` (the order of the
    weight-decay and gradient terms differs), clipping when ``clip`` is not None.
    """
    lr, wd, rs, op_form, clip, mom = k
    W, G = bufs[0], bufs[1]
    M = bufs[2] if len(bufs) > 2 else None
    step = lr * rs
    for s, e in chunks(lo, hi, sc.n):
        w, g = W[s:e], G[s:e]
        a, b = sc.a[:e - s], sc.b[:e - s]
        if not op_form:
            xp.multiply(g, step, out=a)
            if M is None:
                if wd:
                    xp.multiply(w, 1.0 - lr * wd, out=w)
                w -= a
            else:
                m = M[s:e]
                m *= mom
                m -= a
                if wd:
                    xp.multiply(w, lr * wd, out=b)
                    m -= b
                w += m
        else:
            _rescaled(xp, g, a, rs, clip)
            a *= lr
            if M is None:
                xp.multiply(w, 1 - lr * wd, out=w)
                w -= a
            else:
                m = M[s:e]
                m *= mom
                xp.multiply(w, lr * wd, out=b)
                m -= b
                m -= a
                w += m


@_threaded
def adam(xp, bufs, sc, lo, hi, k):
    """Adam (``_ops._adam``): ``k = (lr with bias correction, wd, rescale_grad, clip,
    beta1, beta2, epsilon)``."""
    lr, wd, rs, clip, b1, b2, eps = k
    W, G, M, V = bufs
    for s, e in chunks(lo, hi, sc.n):
        w, g, m, v = W[s:e], G[s:e], M[s:e], V[s:e]
        a, b = sc.a[:e - s], sc.b[:e - s]
        xp.multiply(w, wd, out=b)       # always, as the formula: 0 * inf is nan there too
        if rs == 1.0:                   # g * 1 is g, bit for bit: one pass fewer
            xp.add(g, b, out=a)
        else:
            xp.multiply(g, g.dtype.type(rs), out=a)
            a += b
        if clip is not None:
            xp.clip(a, -clip, clip, out=a)
        m *= b1
        xp.multiply(a, 1 - b1, out=b)
        m += b
        xp.multiply(a, 1 - b2, out=b)
        b *= a
        v *= b2
        v += b
        xp.sqrt(v, out=b)
        b += eps
        xp.multiply(m, lr, out=a)
        a /= b
        w -= a


@_threaded
def lamb_direction(xp, bufs, sc, lo, hi, k, D):
    """LAMB phase 1 (``_more._lamb_direction``) into ``D[lo:hi]``: moments in place,
    then the (bias-corrected) Adam direction plus ``wd * w``.
    ``k = (lr, wd, t, rescale_grad, clip, beta1, beta2, epsilon, bias_correction)``."""
    _lr, wd, t, rs, clip, b1, b2, eps, bias = k
    W, G, M, V = bufs
    for s, e in chunks(lo, hi, sc.n):
        w, g, m, v, d = W[s:e], G[s:e], M[s:e], V[s:e], D[s:e]
        a, b = sc.a[:e - s], sc.b[:e - s]
        _rescaled(xp, g, a, rs, clip)
        m *= b1
        xp.multiply(a, 1.0 - b1, out=b)
        m += b
        xp.multiply(a, 1.0 - b2, out=b)
        b *= a
        v *= b2
        v += b
        if bias:
            xp.divide(v, 1.0 - b2 ** t, out=b)
            xp.sqrt(b, out=b)
            b += eps
            xp.divide(m, 1.0 - b1 ** t, out=a)
        else:
            xp.sqrt(v, out=b)
            b += eps
            a[...] = m
        a /= b
        xp.multiply(w, wd, out=b)
        xp.add(a, b, out=d)


def lamb_step(xp, W, D, sc, lo, hi, lr, lower, upper):
    """LAMB phase 2 on one tensor ``[lo, hi)``: the trust ratio from the two norms
    (``np.linalg.norm`` is ``sqrt(dot(x, x))`` on the flattened tensor, so these are
    the per-parameter norms bit for bit), then ``w -= (lr * ratio) * d``."""
    w, d = W[lo:hi], D[lo:hi]
    r1 = float(xp.sqrt(xp.dot(w, w)))
    r2 = float(xp.sqrt(xp.dot(d, d)))
    if lower:
        r1 = max(r1, lower)
    if upper:
        r1 = min(r1, upper)
    ratio = 1.0 if r1 == 0.0 or r2 == 0.0 else r1 / r2
    step = lr * ratio
    for s, e in chunks(lo, hi, sc.n):
        a = sc.a[:e - s]
        xp.multiply(D[s:e], step, out=a)
        W[s:e] -= a



@_threaded
def nag(xp, bufs, sc, lo, hi, k):
    """NAG with momentum (``NAG.update``'s step, MXNet's in-place kernel: the momentum's
    weight-decay term reads the weight just written). ``k = (lr, wd, rs, clip, mu)``."""
    lr, wd, rs, clip, mu = k
    W, G, M = bufs
    for s, e in chunks(lo, hi, sc.n):
        w, g, m = W[s:e], G[s:e], M[s:e]
        a, b = sc.a[:e - s], sc.b[:e - s]
        _rescaled(xp, g, a, rs, clip)
        m *= mu
        xp.multiply(w, wd, out=b)
        xp.add(a, b, out=b)
        b *= lr
        xp.subtract(m, b, out=b)
        b *= mu + 1
        w -= m
        w += b
        xp.multiply(w, wd, out=b)
        xp.add(a, b, out=b)
        b *= lr
        m -= b


@_threaded
def rmsprop(xp, bufs, sc, lo, hi, k):
    """RMSProp (``_ops._rmsprop``; centered: ``RMSProp.update``'s formula).
    ``k = (lr, wd, rs, clip, gamma1, gamma2, epsilon, clip_weights, centered)``."""
    lr, wd, rs, clip, g1, g2, eps, cw, centered = k
    W, G = bufs[0], bufs[1]
    N = bufs[2]
    for s, e in chunks(lo, hi, sc.n):
        w, g, n = W[s:e], G[s:e], N[s:e]
        a, b = sc.a[:e - s], sc.b[:e - s]
        xp.multiply(w, wd, out=b)
        xp.multiply(g, g.dtype.type(rs), out=a)
        a += b
        if clip is not None:
            xp.clip(a, -clip, clip, out=a)
        xp.multiply(a, 1 - g1, out=b)
        b *= a
        n *= g1
        n += b
        if not centered:
            xp.add(n, eps, out=b)
            xp.sqrt(b, out=b)
            a *= lr
            a /= b
            w -= a
        else:
            gb, delta = bufs[3][s:e], bufs[4][s:e]
            gb *= g1
            xp.multiply(a, 1.0 - g1, out=b)
            gb += b
            xp.multiply(gb, gb, out=b)
            xp.subtract(n, b, out=b)
            b += eps
            xp.sqrt(b, out=b)
            a *= lr
            a /= b
            delta *= g2
            delta -= a
            w += delta
        if cw is not None:
            xp.clip(w, -cw, cw, out=w)


@_threaded
def adagrad(xp, bufs, sc, lo, hi, k):
    """AdaGrad (``AdaGrad.update``): ``h += g*g; w -= lr * (g / sqrt(h + eps) + wd*w)``.
    ``k = (lr, wd, rs, clip, eps)``."""
    lr, wd, rs, clip, eps = k
    W, G, H = bufs
    for s, e in chunks(lo, hi, sc.n):
        w, g, h = W[s:e], G[s:e], H[s:e]
        a, b = sc.a[:e - s], sc.b[:e - s]
        _rescaled(xp, g, a, rs, clip)
        xp.multiply(a, a, out=b)
        h += b
        xp.add(h, eps, out=b)
        xp.sqrt(b, out=b)
        a /= b
        xp.multiply(w, wd, out=b)
        a += b
        a *= lr
        w -= a


def multi_sgd(xp, w, g, mom, out, sc, lr, wd, rs, clip, momentum):
    """MultiSGDKernel (``multi.py``'s ``_sgd_step``) on one tensor, in chunks: ``w``, ``g``,
    ``mom`` (or None) and ``out`` are flat, ``w``/``mom``/``out`` in the master dtype;
    ``mom`` is written in place and ``out`` (which may be ``w``) gets the new weight."""
    dt = w.dtype.type
    c = -dt(lr) * dt(wd)
    lr32, rs32, mo32 = dt(lr), dt(rs), dt(momentum)
    for s, e in chunks(0, w.shape[0], sc.n):
        a, b = sc.a[:e - s], sc.b[:e - s]
        if g.dtype == w.dtype:
            xp.multiply(g[s:e], rs32, out=a)
        else:                       # a float16 gradient of a float32 master weight
            a[...] = g[s:e]
            a *= rs32
        if clip is not None:
            xp.clip(a, -clip, clip, out=a)
        xp.multiply(w[s:e], c, out=b)
        a *= lr32
        b -= a
        if mom is not None:
            m = mom[s:e]
            m *= mo32
            m += b
            b = m
        xp.add(w[s:e], b, out=out[s:e])
