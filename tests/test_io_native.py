"""CSVIter, LibSVMIter and MNISTIter against every batch real MXNet 1.9.1 gave on the
same files (tests/data/make_io_iter_fixtures.py), plus bad input."""
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

DATA = os.path.join(os.path.dirname(__file__), "data", "io_iter")
REF = np.load(os.path.join(DATA, "io_iter_mxnet191.npz"))


def _p(name):
    return os.path.join(DATA, name)


def _check(it, key, epochs, index=True):
    for ep in range(epochs):
        n = 0
        for b, batch in enumerate(it):
            pre = f"{key}_e{ep}_b{b}_"
            d, lb = batch.data[0], batch.label[0]
            for got, name in ((d, "data"), (lb, "label")):
                want = REF[pre + name]
                assert got.shape == want.shape and got.asnumpy().dtype == want.dtype, pre + name
                np.testing.assert_array_equal(got.asnumpy(), want, err_msg=pre + name)
            assert batch.pad == int(REF[pre + "pad"]), pre
            if index:
                np.testing.assert_array_equal(batch.index, REF[pre + "index"])
            n += 1
        assert f"{key}_e{ep}_b{n}_data" not in REF.files and f"{key}_e{ep}_b{n - 1}_data" in REF.files
        it.reset()


def test_csv_round_batch_matches_mxnet():
    it = mx.io.CSVIter(data_csv=_p("d.csv"), data_shape=(3,), label_csv=_p("l.csv"), batch_size=3)
    assert it.provide_data[0].shape == (3, 3) and it.provide_label[0].shape == (3,)
    _check(it, "csv", 3)


def test_csv_no_round_batch_and_int_dtype_match_mxnet():
    _check(mx.io.CSVIter(data_csv=_p("d.csv"), data_shape=(3,), batch_size=3, round_batch=False),
           "csvnoround", 2)
    _check(mx.io.CSVIter(data_csv=_p("d.csv"), data_shape=(1, 3), label_csv=_p("l.csv"),
                         batch_size=2, dtype="int32"), "csvint", 2)


def test_libsvm_matches_mxnet():
    it = mx.io.LibSVMIter(data_libsvm=_p("d.libsvm"), data_shape=(4,), batch_size=2)
    assert it.getdata is not None
    _check(it, "svm", 2)
    batch = next(iter(it))
    assert batch.data[0].stype == "csr"
    batch.data[0].check_format(True)
    _check(mx.io.LibSVMIter(data_libsvm=_p("d.libsvm"), data_shape=(4,), label_libsvm=_p("l.libsvm"),
                            label_shape=(2,), batch_size=2), "svmlabel", 2)
    _check(mx.io.LibSVMIter(data_libsvm=_p("d.libsvm"), data_shape=(4,), batch_size=2,
                            num_parts=2, part_index=1), "svmpart", 1)


@pytest.mark.parametrize("flat", [0, 1])
def test_mnist_matches_mxnet(flat):
    it = mx.io.MNISTIter(image=_p("img-idx3-ubyte"), label=_p("lab-idx1-ubyte"), batch_size=3,
                         shuffle=False, flat=flat, silent=1)
    _check(it, f"mnist{flat}", 1, index=False)  # MXNet leaves the index unset without shuffle
    shuffled = mx.io.MNISTIter(image=_p("img-idx3-ubyte"), label=_p("lab-idx1-ubyte"),
                               batch_size=5, seed=3)
    a = [b.label[0].asnumpy() for b in shuffled]
    shuffled.reset()
    assert len(a) == 2 and all((x == b.label[0].asnumpy()).all() for x, b in zip(a, shuffled))


def test_int64_csv_is_exact(tmp_path):
    (tmp_path / "d.csv").write_text("2147483648,9007199254740993\n" * 4)
    it = mx.io.CSVIter(data_csv=str(tmp_path / "d.csv"), data_shape=(2,), batch_size=2, dtype="int64")
    got = it.next().data[0].asnumpy()
    assert got.dtype == np.int64 and got[0, 1] == 9007199254740993


def test_bad_input(tmp_path):
    (tmp_path / "bad.libsvm").write_text("1 0:1\n2 -1:0.5\n")
    with pytest.raises(GpundaError, match="line 2.*index -1"):
        mx.io.LibSVMIter(data_libsvm=str(tmp_path / "bad.libsvm"), data_shape=(3,), batch_size=1)
    (tmp_path / "bad.csv").write_text("1,2\n3\n")
    with pytest.raises(GpundaError, match="line 2 has 1 values"):
        mx.io.CSVIter(data_csv=str(tmp_path / "bad.csv"), data_shape=(2,), batch_size=1)
    with pytest.raises(GpundaError, match="cannot read"):
        mx.io.CSVIter(data_csv=str(tmp_path / "none.csv"), data_shape=(2,), batch_size=1)
    (tmp_path / "img").write_bytes(b"\0\0\x08\x03" + b"\0\0\0\x05" + b"\0\0\0\x02" * 2 + b"x")
    with pytest.raises(GpundaError, match="truncated"):
        mx.io.MNISTIter(image=str(tmp_path / "img"), label=_p("lab-idx1-ubyte"))
    with pytest.raises(GpundaError, match="not an MNIST label"):
        mx.io.MNISTIter(image=_p("img-idx3-ubyte"), label=_p("img-idx3-ubyte"))


# ten 20x24 lossless PNG records (RandomState(0) pixels, label i % 3) read by MXNet 1.9.1's
# ImageRecordIter_v1 / ImageRecordUInt8Iter_v1 (data_shape=(3, 16, 16), batch_size=4):
# per batch the sum of the pixels, the labels and the pad
_V1_BATCHES = {
    True: [(389702.0, [0, 1, 2, 0], 0), (384985.0, [1, 2, 0, 1], 0), (392119.0, [2, 0, 0, 1], 2)],
    False: [(389702.0, [0, 1, 2, 0], 0), (384985.0, [1, 2, 0, 1], 0), (388106.0, [2, 0, 0, 1], 2)],
}


@pytest.mark.parametrize("name", ["ImageRecordIter_v1", "ImageRecordUInt8Iter_v1"])
@pytest.mark.parametrize("round_batch", [True, False])
def test_image_record_iter_v1_matches_mxnet(tmp_path, name, round_batch):
    rng = np.random.RandomState(0)
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "t.idx"), str(tmp_path / "t.rec"), "w")
    for i in range(10):
        img = (rng.rand(20, 24, 3) * 255).astype(np.uint8)
        # MXNet's file was written by PIL from RGB; OpenCV encodes BGR, hence the flip
        rec.write_idx(i, mx.recordio.pack_img(mx.recordio.IRHeader(0, float(i % 3), i, 0),
                                              img[:, :, ::-1], img_fmt=".png"))
    rec.close()
    it = getattr(mx.io, name)(path_imgrec=str(tmp_path / "t.rec"),
                              path_imgidx=str(tmp_path / "t.idx"), data_shape=(3, 16, 16),
                              batch_size=4, round_batch=round_batch)
    got = [(float(b.data[0].asnumpy().astype(np.float64).sum()), b.label[0].asnumpy().tolist(),
            b.pad) for b in it]
    assert got == _V1_BATCHES[round_batch]
