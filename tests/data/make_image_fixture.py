"""Writes tests/data/image_mxnet191.npz: outputs of MXNet 1.9.1's ``nd.image`` ops.

Run with a Python that has real MXNet 1.9.1 (it bundles its own OpenCV):

    /work/mxvenv/bin/python tests/data/make_image_fixture.py

The deterministic ops are recorded on fixed inputs; tests/ops/test_image.py
compares gpunda's outputs with these arrays (so the tests never need MXNet).
"""
from __future__ import annotations

import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(7)
img_u8 = rng.randint(0, 256, size=(5, 7, 3)).astype(np.uint8)
img_f32 = rng.uniform(0, 255, size=(5, 7, 3)).astype(np.float32)
batch_u8 = rng.randint(0, 256, size=(2, 4, 6, 3)).astype(np.uint8)
gray_u8 = rng.randint(0, 256, size=(6, 5, 1)).astype(np.uint8)
chw = rng.uniform(0, 1, size=(3, 4, 5)).astype(np.float32)

out = {"img_u8": img_u8, "img_f32": img_f32, "batch_u8": batch_u8, "gray_u8": gray_u8,
       "chw": chw}
nd = mx.nd.image
out["to_tensor_u8"] = nd.to_tensor(mx.nd.array(img_u8, dtype="uint8")).asnumpy()
out["to_tensor_batch"] = nd.to_tensor(mx.nd.array(batch_u8, dtype="uint8")).asnumpy()
out["to_tensor_f32"] = nd.to_tensor(mx.nd.array(img_f32)).asnumpy()
out["normalize"] = nd.normalize(mx.nd.array(chw), mean=(0.1, 0.2, 0.3),
                                std=(0.5, 0.25, 2.0)).asnumpy()
out["crop"] = nd.crop(mx.nd.array(img_u8, dtype="uint8"), 1, 2, 4, 3).asnumpy()
out["crop_batch"] = nd.crop(mx.nd.array(batch_u8, dtype="uint8"), 2, 1, 3, 2).asnumpy()
out["flip_lr"] = nd.flip_left_right(mx.nd.array(img_f32)).asnumpy()
out["flip_tb"] = nd.flip_top_bottom(mx.nd.array(img_f32)).asnumpy()
out["adjust_lighting_u8"] = nd.adjust_lighting(mx.nd.array(img_u8, dtype="uint8"),
                                               alpha=(0.3, -0.2, 0.1)).asnumpy()
out["adjust_lighting_f32"] = nd.adjust_lighting(mx.nd.array(img_f32),
                                                alpha=(0.3, -0.2, 0.1)).asnumpy()
# random_* with min_factor == max_factor are deterministic
for name in ("brightness", "contrast", "saturation", "hue"):
    f = 0.25 if name == "hue" else 1.4
    fn = getattr(nd, "random_" + name)
    out[f"{name}_u8"] = fn(mx.nd.array(img_u8, dtype="uint8"), f, f).asnumpy()
    out[f"{name}_f32"] = fn(mx.nd.array(img_f32), f, f).asnumpy()
out["contrast_gray"] = nd.random_contrast(mx.nd.array(gray_u8, dtype="uint8"), 0.6, 0.6).asnumpy()
for interp in (0, 1, 2, 3, 4):
    for src, key in ((img_u8, "u8"), (img_f32, "f32")):
        a = mx.nd.array(src, dtype=src.dtype)
        out[f"resize_{key}_{interp}_up"] = nd.resize(a, (11, 9), interp=interp).asnumpy()
        out[f"resize_{key}_{interp}_down"] = nd.resize(a, (4, 3), interp=interp).asnumpy()
out["resize_batch"] = nd.resize(mx.nd.array(batch_u8, dtype="uint8"), (3, 5)).asnumpy()
out["resize_keep"] = nd.resize(mx.nd.array(img_u8, dtype="uint8"), 4, keep_ratio=True).asnumpy()
out["resize_square"] = nd.resize(mx.nd.array(img_u8, dtype="uint8"), 4).asnumpy()

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "image_mxnet191.npz")
np.savez_compressed(path, **out)
print("wrote", path, len(out), "arrays")
