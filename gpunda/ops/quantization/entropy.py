"""The KL-divergence threshold search behind ``_contrib_calibrate_entropy``, vectorised
over blocks of candidate thresholds.

MXNet's CalibrateComputeCPU (src/operator/quantization/calibrate.cc) scores each
candidate half-width ``i`` in ``[nq // 2, zero]`` one at a time. Here a block of
consecutive candidates is one 2-D float32 array: column r holds candidate r's clipped
histogram p (and its quantized q) in rows 0 .. n[r] - 1, n growing by 2 a column. Every
step is the float32 operation MXNet does, element by element, so the divergences are
bit-for-bit those of the one-candidate-at-a-time loop:

* every float32 sum runs left to right as std::accumulate does: NumPy's reduction down
  the rows of a C-contiguous array with two or more columns adds row after row into the
  running sums (``_sums``; tests/ops/test_calibrate_entropy_search.py holds it to that),
  and rows past a column's end are -0.0 there (x + -0.0 == x);
* the integer sums (quantized bins, their non-zero counts) are exact, so they come from
  prefix sums over the whole histogram;
* the per-element log is taken in float64 and rounded once to float32.
"""
from __future__ import annotations

import numpy as np

_F32 = np.float32
_EPS = np.float32(0.0001)          # SmoothDistribution's default eps
_BLOCK = 1 << 19                   # elements a 2-D work array (2 MB of float32)
OK, INF, ALL_ZERO, NON_POSITIVE = 0, 1, 2, 3


def _sums(x):
    """Float32 sums down the columns of the C-contiguous 2-D x, each left to right.
    With two or more columns NumPy's reduction walks the rows in order, adding each row
    into the running sums; a single column would be summed pairwise, so it goes
    through the (sequential, slower) cumsum."""
    if x.shape[1] == 1:
        return np.cumsum(x, axis=0, dtype=_F32)[-1]
    return np.add.reduce(x, axis=0)


class _Block:
    """A block of consecutive candidates as columns: column r holds candidate r's
    bins in rows 0 .. n[r] - 1. The rows above n[0] are valid in every column; the
    few below them (n grows by 2 a column) are valid where ``edge`` says."""

    def __init__(self, n):
        self.n, self.n0 = n, int(n[0])
        self.edge = np.arange(self.n0, int(n[-1]))[:, None] < n[None, :]

    def sums(self, x):
        """Left-to-right float32 sum of each column's valid rows."""
        s = _sums(x[:self.n0])
        if self.edge.size:          # on down the ragged rows, -0.0 (x + -0.0 == x) past the end
            s = _sums(np.concatenate([s[None], np.where(self.edge, x[self.n0:], _F32(-0.0))]))
        return s

    def count(self, mask):
        return (np.count_nonzero(mask[:self.n0], axis=0)
                + np.count_nonzero(mask[self.n0:] & self.edge, axis=0))

    def all(self, mask):
        return mask[:self.n0].all(axis=0) & (mask[self.n0:] | ~self.edge).all(axis=0)

    def smooth(self, x, nonzero, tmp):
        """SmoothDistribution on each column, in place, given the mask x != 0: eps
        into the zeros, taken off the non-zeros. Returns which columns are well formed
        (MXNet returns an empty vector for an all-zero one or when eps would eat the
        mass). np.where is slow, so: x - eps1 * nonzero + eps * zero, which is
        x - eps1 on a non-zero and (+-0) - 0 + eps == eps on a zero."""
        n_nonzero = self.count(nonzero)
        n_zero = self.n - n_nonzero
        with np.errstate(divide="ignore", invalid="ignore"):
            eps1 = _EPS * n_zero.astype(_F32) / n_nonzero.astype(_F32)
            x -= np.multiply(nonzero, eps1, out=tmp)
            x += np.multiply(~nonzero, _EPS, out=tmp, dtype=_F32)
        return (n_nonzero > 0) & ~(eps1 >= 1.0)


class _Search:
    """The histogram's prefix sums and the work arrays, reused block after block (a
    fresh multi-megabyte array per step costs more in page faults than its
    arithmetic)."""

    def __init__(self, h, nq):
        nb = h.size
        self.h, self.nq, self.zero = h, nq, nb // 2
        counts = h.astype(np.uint64).astype(np.int64)    # MXNet keeps the slice in size_t
        # prefix sums; for an even len(h) the widest candidate reaches one bin past the
        # end, which MXNet's loop leaves at 0 (the -0.0 of hpad and the repeated last
        # prefix here)
        self.gcount = np.concatenate([[0], np.cumsum(counts)])
        self.gcount = np.append(self.gcount, self.gcount[-1])
        self.gnonzero = np.concatenate([[0], np.cumsum(counts != 0)])
        self.gnonzero = np.append(self.gnonzero, self.gnonzero[-1])
        self.head = np.cumsum(h, dtype=_F32)               # head[s] = h[0] + ... + h[s]
        self.hpad = np.concatenate([h, np.full(nb + 1, -0.0, _F32)])
        self._bufs = {}

    def buf(self, name, shape, dtype=_F32):
        size = shape[0] * shape[1]
        b = self._bufs.get(name)
        if b is None or b.size < size:
            b = self._bufs[name] = np.empty(size, dtype)
        return b[:size].reshape(shape)

    def quantized(self, i, n, start, width):
        """q before smoothing, column r: the size_t counts of the clipped histogram
        (first slot left unset, as MXNet's loop does) merged into nq bins of
        n[r] // nq each, the remainder going to the last, each spread back evenly
        over its non-zero bins (rows past n[r] hold junk)."""
        nq = self.nq
        merged = n // nq
        bounds = np.arange(nq + 1)[None, :] * merged[:, None]
        bounds[:, -1] = n
        lo = start[:, None] + np.maximum(bounds[:, :-1], 1)
        hi = start[:, None] + bounds[:, 1:]
        qbins = self.gcount[hi] - self.gcount[lo]      # integer sums: any order is exact
        nonzero = self.gnonzero[hi] - self.gnonzero[lo]
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(nonzero > 0, qbins.astype(_F32) / nonzero, 0).astype(_F32)
        per = np.ascontiguousarray(per.T)
        q = self.buf("q", (width, i.size))
        # row k of column r takes quantized bin min(k // merged[r], nq - 1); merged
        # changes only every nq / 2 columns, so a few runs of columns share it
        cuts = np.flatnonzero(np.diff(merged)) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, i.size]):
            rows = np.minimum(np.arange(width) // merged[a], nq - 1)
            np.take(per[:, a:b], rows, axis=0, out=q[:, a:b], mode="clip")
        return q

    def block(self, i):
        """Divergences and status codes of the candidates with half-widths i
        (ascending, consecutive)."""
        nb, zero, cols = self.h.size, self.zero, np.arange(i.size)
        n = 2 * i + 1                          # bins in each clipped histogram
        start = zero - i
        width = int(n[-1])
        blk = _Block(n)
        win = np.lib.stride_tricks.sliding_window_view(self.hpad, i.size)
        shape = (width, i.size)

        # p: the clipped histogram, the outliers on each side folded into its end
        # bins; p[k, r] = h[start[r] + k], start falling by one a column
        p = self.buf("p", shape)
        np.copyto(p, win[start[-1]:start[-1] + width, ::-1])
        p[0] = self.head[start]
        # h[stop - 1:] left to right: column r from h[zero + i[r]], -0.0 past the end
        tails = self.buf("tails", (nb - zero - int(i[0]), i.size))
        np.copyto(tails, win[zero + i[0]:nb])
        p[n - 1, cols] = _sums(tails)

        q = self.quantized(i, n, start, width)
        p_nonzero = np.not_equal(p, 0, out=self.buf("p_nonzero", shape, bool))
        q *= p_nonzero                         # (a finite per times 0 is a zero)
        tmp = self.buf("tmp", shape)
        p_ok = blk.smooth(p, p_nonzero, tmp)
        q_ok = blk.smooth(q, np.not_equal(q, 0, out=self.buf("mask", shape, bool)), tmp)
        with np.errstate(all="ignore"):
            p_sum, q_sum = blk.sums(p), blk.sums(q)
            p /= p_sum
            q /= q_sum
            positive = np.greater(p, 0, out=self.buf("mask", shape, bool))
            positive &= q > 0
            positive = blk.all(positive)
            ratio = np.divide(p, q, out=tmp)
            # log in float64, rounded once: as close to the C library's logf as NumPy
            # gets. Where p was 0, p and q are both eps over their sums, so the log is
            # one number a column: taken once, and those rows filled with it when many
            logs = self.buf("logs", shape)
            if np.count_nonzero(p_nonzero) < 0.75 * p_nonzero.size:
                zero_ratio = (_EPS / p_sum) / (_EPS / q_sum)
                logs[...] = np.log(zero_ratio.astype(np.float64)).astype(_F32)
                np.log(ratio, out=logs, where=p_nonzero, dtype=np.float64, casting="unsafe")
            else:                   # a masked log costs more than the few logs it saves
                np.log(ratio, out=logs, dtype=np.float64, casting="unsafe")
            div = blk.sums(np.multiply(p, logs, out=logs))
        code = np.where(~q_ok, INF, np.where(~p_ok, ALL_ZERO, np.where(positive, OK, NON_POSITIVE)))
        return np.where(code == INF, _F32(np.inf), div), code


def divergences(h, nq):
    """KL divergence of every candidate half-width ``nq // 2 .. len(h) // 2`` of the
    float32 histogram h, in order, and a status code per candidate: OK, INF (the
    quantized distribution is degenerate: divergence inf), ALL_ZERO or NON_POSITIVE
    (MXNet's CHECK fails: the caller raises at the first such candidate)."""
    search = _Search(h, nq)
    cand = np.arange(nq // 2, search.zero + 1)
    div = np.empty(cand.size, _F32)
    code = np.empty(cand.size, np.int64)
    k = 0
    while k < cand.size:
        cols = max(1, _BLOCK // (h.size - search.zero + 2 * int(cand[k]) + 2))
        sl = slice(k, min(k + cols, cand.size))
        div[sl], code[sl] = search.block(cand[sl])
        k = sl.stop
    return div, code
