"""Write small .rec/.idx files with real MXNet 1.9.1 (run with /work/mxvenv/bin/python).

tests/test_recordio.py reads them with gpunda and checks that gpunda writes
the same bytes for the same records.
"""
import os
import struct

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recordio")
MAGIC = struct.pack("<I", 0xCED7230A)


def records():
    """Payloads that cover padding, empty records and magic words inside a record."""
    return [b"", b"a", b"ab", b"abc", b"abcd", b"hello world",
            MAGIC, b"xy" + MAGIC, b"abcd" + MAGIC + b"efgh" + MAGIC + MAGIC + b"z",
            MAGIC + b"12", b"1234" + MAGIC, bytes(range(256)) * 3]


def main():
    os.makedirs(OUT, exist_ok=True)
    w = mx.recordio.MXRecordIO(os.path.join(OUT, "plain.rec"), "w")
    for r in records():
        w.write(r)
    w.close()
    w = mx.recordio.MXIndexedRecordIO(os.path.join(OUT, "indexed.idx"),
                                      os.path.join(OUT, "indexed.rec"), "w")
    for i, r in enumerate(records()):
        w.write_idx(i * 10, r)
    w.close()
    w = mx.recordio.MXRecordIO(os.path.join(OUT, "packed.rec"), "w")
    w.write(mx.recordio.pack((0, 3.5, 7, 9), b"payload"))
    w.write(mx.recordio.pack((0, [1.0, 2.5, -3.0], 11, 12), b"multi"))
    w.close()  # pack_img is not here: this MXNet install has no OpenCV


if __name__ == "__main__":
    main()
