"""Integer products as oneDNN sums them on a CPU without AVX-512 VNNI.

NOTE [int16 pair saturation]
Without VNNI, oneDNN's int8 kernels multiply uint8 data by int8 weights with AVX2's
``vpmaddubsw``: two neighbouring products (input channels 2k and 2k+1 of one kernel tap, or
elements 2k and 2k+1 of an FC row) are added into an int16 that saturates at -32768 and
32767, and only then widened and summed into int32. So MXNet's CPU wheel on such a CPU gives
other numbers than the exact sum whenever a pair exceeds int16: a conv over uint8 data
(large activations after relu), an FC over uint8 data, and an FC over int8 data, which
oneDNN shifts by +128 into uint8 (subtracting ``128 * sum(w)`` afterwards, exactly). A conv over int8 data cannot
saturate: oneDNN halves its weights there (``s8s8_weight_adjust``). These functions give
the accumulator oneDNN gives, as float64 holding integers; where no pair can reach the
int16 limits they return the exact product directly.
"""
from __future__ import annotations

import itertools

import numpy as np

_LO, _HI = -32768.0, 32767.0
_BUDGET = 1 << 22           # float64 elements of pair sums held at once (32 MiB)


def _pairs_fit(x_max, w_pairs_abs):
    """True when no pair can leave int16: ``x_max * (|w0| + |w1|) <= 32767``."""
    return float(x_max) * float(w_pairs_abs.max(initial=0.0)) <= _HI


def _pad_even(a, axis):
    if a.shape[axis] % 2 == 0:
        return a
    pad = [(0, 0)] * a.ndim
    pad[axis] = (0, 1)
    return np.pad(a, pad)


def conv(x, w, stride, dilate, pad, groups, exact):
    """The int32 accumulator of a conv of uint8 data ``x`` (N, C, *S) with int8 weights
    ``w`` (O, C/groups, *K), both float64 NumPy arrays; ``exact()`` computes the exact one."""
    nd = x.ndim - 2
    cg = w.shape[1]
    wpairs = np.abs(_pad_even(w, 1))
    wpairs = wpairs.reshape(w.shape[0], -1, 2, *w.shape[2:]).sum(2)
    if _pairs_fit(x.max(initial=0.0), wpairs):
        return exact()
    n, o = x.shape[0], w.shape[0]
    og = o // groups
    xp_ = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out_sp = [(xp_.shape[2 + d] - dilate[d] * (w.shape[2 + d] - 1) - 1) // stride[d] + 1
              for d in range(nd)]
    acc = np.zeros((n, o, *out_sp))
    for g in range(groups):
        xg = _pad_even(xp_[:, g * cg:(g + 1) * cg], 1)
        wg = _pad_even(w[g * og:(g + 1) * og], 1)
        npair = xg.shape[1] // 2
        for tap in itertools.product(*(range(k) for k in w.shape[2:])):
            sl = tuple(slice(tap[d] * dilate[d], tap[d] * dilate[d] + stride[d] * out_sp[d],
                             stride[d]) for d in range(nd))
            patch = xg[(slice(None), slice(None)) + sl].reshape(n, npair, 2, -1)
            wt = wg[(slice(None), slice(None)) + tap].reshape(og, npair, 2)
            acc[:, g * og:(g + 1) * og] += _clipped_pair_sums(
                patch, wt, "nkjp,okj->nokp").reshape(n, og, *out_sp)
    return acc


def _clipped_pair_sums(a, b, spec):
    """sum over pairs k of clip(sum_j a[.., k, j, ..] * b[.., k, j]) with the pair sums
    made a few pairs at a time, so memory stays within _BUDGET elements."""
    n, npair, p = a.shape[0], a.shape[1], a.shape[-1]
    per_pair = n * b.shape[0] * p
    step = max(1, _BUDGET // max(per_pair, 1))
    out = np.zeros((n, b.shape[0], p))
    for k in range(0, npair, step):
        s = np.einsum(spec, a[:, k:k + step], b[:, k:k + step])
        out += np.clip(s, _LO, _HI).sum(2)
    return out


def fc(x, w, shift, exact):
    """The int32 accumulator of ``x @ w.T`` for x (N, K) and int8 w (O, K), float64; the data
    enter the pairs shifted by ``shift`` (128 for int8 data, which oneDNN makes uint8)."""
    wpairs = np.abs(_pad_even(w, 1)).reshape(w.shape[0], -1, 2).sum(2)
    if _pairs_fit(np.abs(x).max(initial=0.0) + shift, wpairs):
        return exact()
    xs = _pad_even(x + shift, 1)
    wp = _pad_even(w, 1)
    k2 = xs.shape[1] // 2
    rows = xs.reshape(x.shape[0], k2, 2, 1)
    acc = np.zeros((x.shape[0], w.shape[0]))
    step = max(1, _BUDGET // max(w.shape[0] * k2, 1))      # rows per chunk
    for start in range(0, x.shape[0], step):
        acc[start:start + step] = _clipped_pair_sums(
            rows[start:start + step], wp.reshape(-1, k2, 2), "nkjp,okj->nokp")[..., 0]
    return acc - shift * w.sum(1)[None, :]
