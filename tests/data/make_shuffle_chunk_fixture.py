"""ImageRecordIter ``shuffle_chunk_size``: the order real MXNet 1.9.1 reads records in.

``write_rec`` makes a 2.3 MB .rec of 240 PNG images (label i for record i; PNGs from
make_image_record_dataset_fixture.png, so gpunda's recordio writes the same bytes);
MXNet reads it for two epochs with ``shuffle_chunk_size=1`` (MB: three shuffled
parts of the file) and once with 4 (one part: file order), and the labels go to
``io_iter/shuffle_chunk_mxnet191.npz``. tests/test_not_supported_sites.py rebuilds the
file with gpunda and compares.

    /work/mxref/bin/python tests/data/make_shuffle_chunk_fixture.py
"""
import importlib.util
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N, SIDE, BATCH = 240, 56, 40


def _png():
    spec = importlib.util.spec_from_file_location(
        "_png_fixture", os.path.join(HERE, "make_image_record_dataset_fixture.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.png


def write_rec(mx, path):
    """The .rec file, written with ``mx.recordio`` (MXNet's or gpunda's)."""
    png = _png()
    rng = np.random.RandomState(11)
    w = mx.recordio.MXRecordIO(path, "w")
    for i in range(N):
        img = rng.randint(0, 256, size=(SIDE, SIDE, 3)).astype(np.uint8)
        w.write(mx.recordio.pack(mx.recordio.IRHeader(0, float(i), i, 0), png(img)))
    w.close()


def labels(mx, path, chunk, epochs):
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, SIDE, SIDE), batch_size=BATCH,
                               shuffle_chunk_size=chunk, shuffle_chunk_seed=0,
                               preprocess_threads=1)
    out = []
    for _ in range(epochs):
        it.reset()
        out.append(np.concatenate([b.label[0].asnumpy()[:BATCH - b.pad] for b in it]))
    return np.stack(out).astype(np.int64)


def main():
    import tempfile
    import mxnet as mx
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "chunks.rec")
        write_rec(mx, path)
        out = {"size": np.array(os.path.getsize(path)),
               "chunk1": labels(mx, path, 1, 2), "chunk4": labels(mx, path, 4, 1)}
    np.savez(os.path.join(HERE, "io_iter", "shuffle_chunk_mxnet191.npz"), **out)


if __name__ == "__main__":
    sys.exit(main())
