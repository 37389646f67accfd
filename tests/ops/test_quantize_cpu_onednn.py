"""quantize / quantize_v2 / dequantize / requantize on the CPU against what MXNet 1.9.1's
CPU wheel (built with oneDNN) gave, to the bit (NOTE [CPU quantization through oneDNN]).

tests/data/quant_flow/rounding/cases.npz was recorded with real MXNet by
record_mxnet_quantize.py there: ties at .5 steps, values at and past the range's edges,
negative and one-sided ranges, int8/uint8/auto, calibrated and not, NaN/inf, int8/uint8
data passed through, int32 data near its limits.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import gpunda as mx


@pytest.fixture(autouse=True)
def _on_the_cpu():
    # CPU kernels (MXNet's CPU build) checked on cpu(0), also under --standin-gpu
    with mx.cpu():
        yield

_NPZ = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                    "quant_flow", "rounding", "cases.npz")
_DATA = np.load(_NPZ)
_CASES = json.loads(str(_DATA["cases"]))


def _expected(ref):
    dtype, offset, shape = ref
    n = int(np.prod(shape))
    return _DATA["pool_" + dtype][offset:offset + n].reshape(shape)


def _ids():
    return [f"{i}-{c['op']}-{'-'.join(f'{k}={v}' for k, v in c['kwargs'].items())}"
            for i, c in enumerate(_CASES)]


@pytest.mark.parametrize("case", _CASES, ids=_ids())
def test_cpu_quantization_is_mxnets_bit_for_bit(case):
    ins = [mx.nd.array(_DATA[k], dtype=_DATA[k].dtype) for k in case["inputs"]]
    outs = getattr(mx.nd.contrib, case["op"])(*ins, **case["kwargs"])
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    assert len(outs) == len(case["outputs"])
    for got, ref in zip(outs, case["outputs"]):
        want = _expected(ref)
        got = got.asnumpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        if want.dtype.kind == "f":      # -0.0 as MXNet gives it (-r of a zero range)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_the_cases_cover_each_rule():
    """The fixture holds the ties, -128 and the wrapped int32 range the rules are about."""
    ops = {c["op"] for c in _CASES}
    assert ops == {"quantize", "quantize_v2", "dequantize", "requantize"}
    i8 = [_expected(r) for c in _CASES for r in c["outputs"][:1] if r[0] == "int8"]
    assert any((o == -128).any() for o in i8)
    flipped = [c for c in _CASES if c["op"] == "requantize" and "min_calib_range" not in
               c["kwargs"] and _expected(c["outputs"][1])[0] > 0]
    assert flipped      # MXNet's int32 magnitude wrapped: the range came out reversed


def test_quantize_v2_rounds_half_to_even_with_oneDNN_scale():
    """x = (k + 0.5) / 127.5 lands on a tie: k even rounds down, k odd up, and the
    negative edge reaches -128."""
    k = np.arange(-128, 127, dtype=np.float32)
    x = (k + np.float32(0.5)) / np.float32(127.5)
    q, lo, hi = mx.nd.contrib.quantize_v2(mx.nd.array(x), min_calib_range=-1.0,
                                          max_calib_range=1.0)
    want = np.where(k % 2 == 0, k, k + 1)
    np.testing.assert_array_equal(q.asnumpy(), want.astype(np.int8))
    assert (lo.asscalar(), hi.asscalar()) == (-1.0, 1.0)


def test_gpu_keeps_mxnets_plain_kernel(standin_gpu):
    """MXNet's GPU build runs the plain kernel: half away from zero, int8 within +-127,
    affine uint8 dequantize."""
    x = mx.nd.array([-1.0, -0.5 / 127, 0.5 / 127, 1.5 / 127, 1.0], ctx=mx.gpu(0))
    q, _, _ = mx.nd.contrib.quantize_v2(x, min_calib_range=-1.0, max_calib_range=1.0)
    assert q.asnumpy().tolist() == [-127, -1, 1, 2, 127]
    u = mx.nd.array([0, 255], dtype="uint8", ctx=mx.gpu(0))
    back = mx.nd.contrib.dequantize(u, mx.nd.array([0.5], ctx=mx.gpu(0)),
                                    mx.nd.array([2.0], ctx=mx.gpu(0)))
    np.testing.assert_allclose(back.asnumpy(), [0.5, 2.0], rtol=1e-6)
