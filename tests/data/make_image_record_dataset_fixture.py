"""gluon.data.vision.ImageRecordDataset fixture, written and read by real MXNet 1.9.1.

MXNet's recordio packs PNG files (encoded here with zlib, since MXNet's venv has no
OpenCV for pack_img) into ``images.rec`` / ``images.idx`` under out-of-order keys;
MXNet's ImageRecordDataset then reads every record with flag=1 and flag=0, and the
decoded images and labels go to ``mxnet191.npz``. tests/test_not_supported_sites.py
reads the same files with gpunda.

    /work/mxref/bin/python tests/data/make_image_record_dataset_fixture.py
"""
import os
import struct
import zlib

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "image_record_dataset")
KEYS = (5, 2, 9, 7)


def png(img):
    """A PNG file of a uint8 (h, w) or (h, w, 3) image (filter 0 on every row)."""
    h, w = img.shape[:2]
    color = 0 if img.ndim == 2 else 2
    rows = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    head = struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(rows)) +
            chunk(b"IEND", b""))


def main():
    import mxnet as mx
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(7)
    images = [rng.randint(0, 256, size=(5, 4, 3)).astype(np.uint8),
              rng.randint(0, 256, size=(3, 6, 3)).astype(np.uint8),
              rng.randint(0, 256, size=(4, 4)).astype(np.uint8),      # a grayscale PNG
              rng.randint(0, 256, size=(2, 3, 3)).astype(np.uint8)]
    labels = [3.0, [1.0, 2.5, -4.0], 0.5, [7.0, 8.0]]
    rec, idx = os.path.join(OUT, "images.rec"), os.path.join(OUT, "images.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for key, img, label in zip(KEYS, images, labels):
        w.write_idx(key, mx.recordio.pack(mx.recordio.IRHeader(0, label, key, 0), png(img)))
    w.close()
    out = {}
    for flag in (1, 0):
        ds = mx.gluon.data.vision.ImageRecordDataset(rec, flag=flag)
        out[f"len_{flag}"] = np.array(len(ds))
        for i in range(len(ds)):
            img, label = ds[i]
            out[f"img_{flag}_{i}"] = img.asnumpy()
            out[f"label_{flag}_{i}"] = np.asarray(label, dtype=np.float32)
            out[f"type_{flag}_{i}"] = np.array(type(img).__name__)
    ds = mx.gluon.data.vision.ImageRecordDataset(
        rec, transform=lambda x, y: (x.astype("float32") / 2, y))
    out["transformed_1"] = ds[1][0].asnumpy()
    np.savez(os.path.join(OUT, "mxnet191.npz"), **out)


if __name__ == "__main__":
    main()
