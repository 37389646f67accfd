"""ImageRecordIter fixture: gpunda writes PNG images into a .rec (MXNet's venv has no
OpenCV for pack_img), real MXNet 1.9.1 iterates it.  Run in two steps:

    PYTHONPATH=. /work/main/.venv/bin/python tests/data/make_image_rec_fixture.py write
    /work/mxvenv/bin/python tests/data/make_image_rec_fixture.py read
"""
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "io_iter")
REC = os.path.join(OUT, "images.rec")
CASES = {
    "center": dict(data_shape=(3, 6, 5), batch_size=3, label_width=2),
    "norm": dict(data_shape=(3, 6, 5), batch_size=3, mean_r=10, mean_g=20, mean_b=30,
                 std_r=2, std_g=4, std_b=8, scale=0.5, mirror=True, label_width=2),
    "resize": dict(data_shape=(3, 8, 8), batch_size=4, resize=8, label_width=2),
    "gray": dict(data_shape=(1, 7, 7), batch_size=2, label_width=2),
    "uint8": dict(data_shape=(3, 6, 5), batch_size=3, label_width=2, cls="ImageRecordUInt8Iter"),
}


def write():
    import gpunda as mx
    rng = np.random.RandomState(0)
    w = mx.recordio.MXRecordIO(REC, "w")
    for i in range(5):
        img = rng.randint(0, 256, size=(9 + i, 7 + 2 * i, 3)).astype(np.uint8)
        w.write(mx.recordio.pack_img((0, [i, 10 + i], i, 0), img, quality=3, img_fmt=".png"))
    w.close()


def read():
    import mxnet as mx
    out = {}
    for key, kw in CASES.items():
        kw = dict(kw)
        it = getattr(mx.io, kw.pop("cls", "ImageRecordIter"))(path_imgrec=REC, **kw)
        for b, batch in enumerate(it):
            out[f"{key}_b{b}_data"] = batch.data[0].asnumpy()
            out[f"{key}_b{b}_label"] = batch.label[0].asnumpy()
            out[f"{key}_b{b}_pad"] = np.array(batch.pad)
    np.savez(os.path.join(OUT, "image_rec_mxnet191.npz"), **out)


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]]()
