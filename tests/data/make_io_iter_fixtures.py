"""Record what MXNet 1.9.1's iterators return on small inputs (run with /work/mxvenv/bin/python).

Writes tests/data/io_iter/: the input files and io_iter_mxnet191.npz with every
batch (data, label, pad, index) of two epochs; tests/test_io_native.py compares.
"""
import os
import struct

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "io_iter")


def _write(name, text):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)
    return os.path.join(OUT, name)


def _epochs(it, key, out, n=2, sparse=False):
    print(key, flush=True)
    for ep in range(n):
        for b, batch in enumerate(it):
            d, lb = batch.data[0], batch.label[0]
            out[f"{key}_e{ep}_b{b}_data"] = d.asnumpy()
            out[f"{key}_e{ep}_b{b}_label"] = lb.asnumpy()
            out[f"{key}_e{ep}_b{b}_pad"] = np.array(batch.pad)
            out[f"{key}_e{ep}_b{b}_index"] = np.asarray(batch.index)
        it.reset()


def main():
    os.makedirs(OUT, exist_ok=True)
    out = {}
    data = _write("d.csv", "".join(f"{i},{i * 2},{-i}\n" for i in range(7)))
    label = _write("l.csv", "".join(f"{i % 3}\n" for i in range(7)))
    _epochs(mx.io.CSVIter(data_csv=data, data_shape=(3,), label_csv=label, batch_size=3), "csv", out, 3)
    _epochs(mx.io.CSVIter(data_csv=data, data_shape=(3,), batch_size=3, round_batch=False),
            "csvnoround", out)
    _epochs(mx.io.CSVIter(data_csv=data, data_shape=(1, 3), label_csv=label, batch_size=2,
                          dtype="int32"), "csvint", out)
    svm = _write("d.libsvm", "1 0:0.5 3:1.5\n2\n3 1:2 2:-1\n4 3:4\n5 0:1 1:1 2:1 3:1\n")
    lsvm = _write("l.libsvm", "0 1:1\n0\n0 0:2\n0 1:3\n0 0:1 1:1\n")
    _epochs(mx.io.LibSVMIter(data_libsvm=svm, data_shape=(4,), batch_size=2), "svm", out)
    _epochs(mx.io.LibSVMIter(data_libsvm=svm, data_shape=(4,), label_libsvm=lsvm,
                             label_shape=(2,), batch_size=2), "svmlabel", out)
    _epochs(mx.io.LibSVMIter(data_libsvm=svm, data_shape=(4,), batch_size=2, num_parts=2,
                             part_index=1), "svmpart", out, 1)
    rng = np.random.RandomState(0)
    img = rng.randint(0, 256, size=(10, 4, 5)).astype(np.uint8)
    lab = rng.randint(0, 10, size=10).astype(np.uint8)
    with open(os.path.join(OUT, "img-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, 10, 4, 5) + img.tobytes())
    with open(os.path.join(OUT, "lab-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 2049, 10) + lab.tobytes())
    for flat in (0, 1):
        _epochs(mx.io.MNISTIter(image=os.path.join(OUT, "img-idx3-ubyte"),
                                label=os.path.join(OUT, "lab-idx1-ubyte"), batch_size=3,
                                shuffle=False, flat=flat, silent=1), f"mnist{flat}", out, 1)
    np.savez(os.path.join(OUT, "io_iter_mxnet191.npz"), **out)


if __name__ == "__main__":
    main()
