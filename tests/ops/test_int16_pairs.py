"""int16 pair saturation of u8 x s8 products (gpunda/ops/quantization/int16_pairs.py)
against a plain loop over output positions, taps and channel pairs, for the geometry the
MXNet fixtures do not reach (groups, odd channel counts, stride, dilation, padding, 1-D
and 3-D) and with the memory budget forced small so the chunking runs. That the rule is
oneDNN's is checked against MXNet in tests/test_quantization_sg_fused.py."""
import itertools

import numpy as np
import pytest

from gpunda.ops.quantization import int16_pairs


def _loop_conv(x, w, stride, dilate, pad, groups):
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    og, nd = o // groups, x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    out = [(xp.shape[2 + d] - dilate[d] * (w.shape[2 + d] - 1) - 1) // stride[d] + 1
           for d in range(nd)]
    acc = np.zeros((n, o, *out))
    for b, oc in itertools.product(range(n), range(o)):
        g = oc // og
        for pos in itertools.product(*(range(s) for s in out)):
            total = 0.0
            for tap in itertools.product(*(range(k) for k in w.shape[2:])):
                at = tuple(pos[d] * stride[d] + tap[d] * dilate[d] for d in range(nd))
                for k in range(0, cg, 2):
                    s = sum(x_ * w_ for x_, w_ in zip(
                        xp[(b, slice(g * cg + k, g * cg + min(k + 2, cg))) + at],
                        w[(oc, slice(k, min(k + 2, cg))) + tap]))
                    total += min(max(s, -32768.0), 32767.0)
            acc[(b, oc) + pos] = total
    return acc


@pytest.mark.parametrize("shape,wshape,stride,dilate,pad,groups", [
    ((2, 5, 6, 5), (4, 5, 3, 3), (1, 1), (1, 1), (1, 1), 1),     # odd channel count
    ((1, 6, 7, 7), (4, 3, 2, 3), (2, 1), (1, 2), (0, 1), 2),     # groups, stride, dilation
    ((2, 4, 9), (3, 4, 3), (2,), (1,), (1,), 1),                 # 1-D
    ((1, 4, 3, 4, 3), (2, 4, 2, 2, 2), (1, 1, 1), (1, 1, 1), (0, 1, 0), 1),   # 3-D
])
def test_conv_pairs_match_a_plain_loop(monkeypatch, shape, wshape, stride, dilate, pad, groups):
    monkeypatch.setattr(int16_pairs, "_BUDGET", 7)
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, shape).astype(np.float64)
    w = rng.integers(-127, 128, wshape).astype(np.float64)
    got = int16_pairs.conv(x, w, stride, dilate, pad, groups, exact=lambda: None)
    np.testing.assert_array_equal(got, _loop_conv(x, w, stride, dilate, pad, groups))


def test_conv_without_a_saturating_pair_is_the_exact_sum():
    x = np.full((1, 2, 3, 3), 100.0)
    w = np.full((1, 2, 1, 1), 100.0)          # 100 * (100 + 100) < 32767
    assert int16_pairs.conv(x, w, (1, 1), (1, 1), (0, 0), 1, exact=lambda: "exact") == "exact"


@pytest.mark.parametrize("shift", [0.0, 128.0])
def test_fc_pairs_match_a_plain_loop(monkeypatch, shift):
    monkeypatch.setattr(int16_pairs, "_BUDGET", 5)
    rng = np.random.default_rng(2)
    lo = -128 if shift else 0
    x = rng.integers(lo, lo + 256, (5, 7)).astype(np.float64)
    w = rng.integers(-127, 128, (3, 7)).astype(np.float64)
    want = np.zeros((5, 3))
    for i, o in itertools.product(range(5), range(3)):
        for k in range(0, 7, 2):
            s = sum((x[i, j] + shift) * w[o, j] for j in range(k, min(k + 2, 7)))
            want[i, o] += min(max(s, -32768.0), 32767.0)
        want[i, o] -= shift * w[o].sum()
    np.testing.assert_array_equal(int16_pairs.fc(x, w, shift, exact=lambda: None), want)
