"""Record what MXNet 1.9.1's CPU wheel (built with oneDNN) computes for quantize,
quantize_v2, dequantize and requantize on inputs chosen to tell rounding rules apart:
ties at .5 steps, values at and beyond the range's edges, negative and one-sided ranges,
int8/uint8/auto, calibrated and not, NaN/inf, already quantized data.

Run with real MXNet: /work/mxref/bin/python record_mxnet_quantize.py  (writes cases.npz)
"""
import json
import os

import mxnet as mx
import numpy as np

nd = mx.nd
rng = np.random.default_rng(7)
cases, arrays = [], {}


def _name(a):
    """Each distinct input array is stored once."""
    for k, v in arrays.items():
        if k.startswith("input_") and v.dtype == a.dtype and v.shape == a.shape and \
                v.tobytes() == a.tobytes():
            return k
    k = f"input_{sum(n.startswith('input_') for n in arrays)}"
    arrays[k] = a
    return k


pools = {}


def _pool(a):
    """Outputs go into one flat array per dtype: (dtype, offset, shape) finds each."""
    pool = pools.setdefault(a.dtype.name, [])
    offset = sum(p.size for p in pool)
    pool.append(a.reshape(-1))
    return [a.dtype.name, offset, list(a.shape)]


def record(op, inputs, **kw):
    ins = [nd.array(a, dtype=a.dtype) for a in inputs]
    outs = getattr(nd.contrib, op)(*ins, **kw)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    cases.append({"op": op, "kwargs": kw, "inputs": [_name(a) for a in inputs],
                  "outputs": [_pool(o.asnumpy()) for o in outs]})


f32 = np.float32
normal4 = (rng.standard_normal((2, 3, 4, 5)) * 3).astype(f32)          # 4-D: nhwc output
normal2 = (rng.standard_normal((7, 11)) * 0.8 - 0.3).astype(f32)
k = np.arange(-129, 130, dtype=f32)
ties_v2 = ((k + f32(0.5)) / f32(127.5) * f32(2)).astype(f32)           # .5 steps of 127.5/2
ties_u8 = ((np.arange(0, 260, dtype=f32) + f32(0.5)) / f32(255.5) * f32(2)).astype(f32)
ties_v1 = ((k + f32(0.5)) / f32(127) * f32(2)).astype(f32)
special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0, -2.0, 1e-30, -3.5], f32)
positive = np.abs(normal2) + f32(0.25)
negative = -positive

for x in (normal4, normal2, ties_v2, ties_u8, positive, negative):
    for ot in ("int8", "uint8", "auto"):
        record("quantize_v2", [x], out_type=ot)
for x in (normal2, ties_v2, ties_u8, special, positive):
    for lo, hi in ((-2.0, 2.0), (-0.5, 1.5), (0.0, 2.0), (0.5, 1.0), (-3.0, -1.0)):
        for ot in ("int8", "uint8", "auto"):
            record("quantize_v2", [x], out_type=ot, min_calib_range=lo, max_calib_range=hi)
record("quantize_v2", [np.zeros((3,), f32)], out_type="int8")
record("quantize_v2", [np.zeros((3,), f32)], out_type="uint8")
record("quantize_v2", [special], out_type="int8")
q8 = np.arange(-128, 128, dtype=np.int8)
u8 = np.arange(0, 256, dtype=np.uint8)
for x in (q8, u8):
    for ot in ("int8", "uint8", "auto"):
        record("quantize_v2", [x], out_type=ot)
        record("quantize_v2", [x], out_type=ot, min_calib_range=-1.5, max_calib_range=2.5)

for x in (normal2, ties_v1, special, positive):
    for lo, hi in ((-2.0, 2.0), (-0.5, 1.5), (0.0, 2.0), (0.5, 1.0), (-3.0, -1.0)):
        for ot in ("int8", "uint8"):
            record("quantize", [x, np.array([lo], f32), np.array([hi], f32)], out_type=ot)

for x in (q8, u8):
    for lo, hi in ((-1.0, 1.0), (-0.5, 2.0), (0.5, 2.0), (-3.0, 2.0), (0.0, 0.0)):
        record("dequantize", [x, np.array([lo], f32), np.array([hi], f32)])

wide = (rng.standard_normal(300) * 2.0 ** rng.integers(0, 31, 300)).clip(
    -2 ** 31 + 1, 2 ** 31 - 1).astype(np.int32)
small = rng.integers(-5000, 5000, (6, 7)).astype(np.int32)
edge = np.array([-2 ** 31 + 1, -2 ** 30, -5, 0, 5, 2 ** 20, 2 ** 30, 2 ** 31 - 1], np.int32)
ties_i32 = (np.arange(-300, 300, dtype=np.int64) * 2 ** 22 + 2 ** 21).astype(np.int32)
for x in (wide, small, edge, ties_i32):
    for lo, hi in ((-1.0, 1.0), (-20.0, 5.0), (0.0, 300.0)):
        rng_in = [x, np.array([lo], f32), np.array([hi], f32)]
        for ot in ("int8", "uint8", "auto"):
            record("requantize", rng_in, out_type=ot)
            record("requantize", rng_in, out_type=ot, min_calib_range=-0.7, max_calib_range=0.9)
            record("requantize", rng_in, out_type=ot, min_calib_range=0.0, max_calib_range=0.3)

arrays["cases"] = np.array(json.dumps(cases))
arrays.update({"pool_" + k: np.concatenate(v) for k, v in pools.items()})
np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases.npz"),
                    **arrays)
print(len(cases), "cases")
