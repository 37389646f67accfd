"""Writes tests/data/image_module_mxnet191.npz: MXNet 1.9.1's ``mx.image`` functions and
``gluon.data.vision.transforms`` on a small smooth image (decoded from PNG, so the source is
exact), for tests/test_image_module.py.

Run with a Python that has real MXNet 1.9.1 (it bundles OpenCV 3.4.2) and any cv2 to encode:

    /work/mxref/bin/python tests/data/make_image_module_fixture.py
"""
from __future__ import annotations

import os

import mxnet as mx
import numpy as np

rng = np.random.RandomState(0)
yy, xx = np.mgrid[0:23, 0:31]
img = np.stack([(xx * 8 + yy * 3) % 256, (yy * 11) % 256,
                rng.randint(0, 256, (23, 31))], axis=-1).astype(np.uint8)
src = mx.nd.array(img, dtype="uint8")
T = mx.gluon.data.vision.transforms
out = {"img": img}
for interp in range(5):
    out[f"imresize_up_{interp}"] = mx.image.imresize(src, 47, 40, interp=interp).asnumpy()
    out[f"imresize_down_{interp}"] = mx.image.imresize(src, 12, 9, interp=interp).asnumpy()
    out[f"resize_short_{interp}"] = mx.image.resize_short(src, 16, interp=interp).asnumpy()
    out[f"T_resize_{interp}"] = T.Resize((13, 17), interpolation=interp)(src).asnumpy()
    out[f"T_resize_keep_{interp}"] = T.Resize(15, keep_ratio=True,
                                              interpolation=interp)(src).asnumpy()
out["center_crop"] = mx.image.center_crop(src, (10, 8))[0].asnumpy()
out["T_center_crop"] = T.CenterCrop((10, 8))(src).asnumpy()
np.savez_compressed(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "image_module_mxnet191.npz"), **out)
