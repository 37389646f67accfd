"""ImageRecordIter against what real MXNet 1.9.1 gives on the same .rec file
(tests/data/make_image_rec_fixture.py)."""
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

pytest.importorskip("cv2")
DATA = os.path.join(os.path.dirname(__file__), "data", "io_iter")
REC = os.path.join(DATA, "images.rec")
REF = np.load(os.path.join(DATA, "image_rec_mxnet191.npz"))
CASES = {
    "center": dict(data_shape=(3, 6, 5), batch_size=3, label_width=2),
    "norm": dict(data_shape=(3, 6, 5), batch_size=3, mean_r=10, mean_g=20, mean_b=30,
                 std_r=2, std_g=4, std_b=8, scale=0.5, mirror=True, label_width=2),
    "resize": dict(data_shape=(3, 8, 8), batch_size=4, resize=8, label_width=2),
    "gray": dict(data_shape=(1, 7, 7), batch_size=2, label_width=2),
    "uint8": dict(data_shape=(3, 6, 5), batch_size=3, label_width=2, cls="ImageRecordUInt8Iter"),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_matches_mxnet(key):
    kw = dict(CASES[key])
    it = getattr(mx.io, kw.pop("cls", "ImageRecordIter"))(path_imgrec=REC, **kw)
    n = 0
    for b, batch in enumerate(it):
        want = REF[f"{key}_b{b}_data"]
        got = batch.data[0].asnumpy()
        assert got.shape == want.shape and got.dtype == want.dtype
        # resizing may differ by one step of rounding between OpenCV builds
        tol = 2 if key == "resize" else 0
        np.testing.assert_allclose(got.astype(np.float64), want, atol=tol)
        np.testing.assert_array_equal(batch.label[0].asnumpy(), REF[f"{key}_b{b}_label"])
        assert batch.pad == int(REF[f"{key}_b{b}_pad"])
        n += 1
    assert f"{key}_b{n}_data" not in REF.files and n > 0


def test_shuffle_parts_and_errors(tmp_path):
    kw = dict(path_imgrec=REC, data_shape=(3, 6, 5), batch_size=1, label_width=2)
    seen = [b.label[0].asnumpy()[0, 0] for b in mx.io.ImageRecordIter(shuffle=True, seed=1, **kw)]
    assert sorted(seen) == [0, 1, 2, 3, 4]
    parts = [[b.label[0].asnumpy()[0, 0] for b in
              mx.io.ImageRecordIter(num_parts=2, part_index=p, **kw)] for p in range(2)]
    assert sorted(parts[0] + parts[1]) == [0, 1, 2, 3, 4] and parts[0] and parts[1]
    with pytest.raises(GpundaError, match="label_width"):
        next(iter(mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 6, 5), batch_size=1)))
    with pytest.raises(GpundaError, match="data_shape"):
        mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(5, 6, 5), batch_size=1)
    # a file far below the chunk size is one chunk: the file order (as MXNet's; the
    # chunked order is in tests/test_not_supported_sites.py)
    assert [b.label[0].asnumpy()[0, 0] for b in
            mx.io.ImageRecordIter(shuffle_chunk_size=4, **kw)] == [0, 1, 2, 3, 4]
    with pytest.raises(GpundaError, match="shuffle_chunk_size=-1 must be >= 0"):
        mx.io.ImageRecordIter(shuffle_chunk_size=-1, **kw)
    with pytest.raises(GpundaError, match="does not exist"):
        mx.io.ImageRecordIter(path_imgrec=str(tmp_path / "none.rec"), data_shape=(3, 6, 5),
                              batch_size=1)
    mean = tmp_path / "mean.bin"
    it = mx.io.ImageRecordIter(mean_img=str(mean), **kw)
    assert mean.exists()
    m = mx.nd.load(str(mean))["mean_img"].asnumpy()
    raw = [b.data[0].asnumpy()[0] for b in
           mx.io.ImageRecordIter(path_imgrec=REC, data_shape=(3, 6, 5), batch_size=1, label_width=2)]
    np.testing.assert_allclose(m, np.mean(raw, axis=0), rtol=1e-5)
    np.testing.assert_allclose(it.next().data[0].asnumpy()[0], raw[0] - m, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("cls", ["ImageRecordIter", "ImageDetRecordIter"])
def test_a_record_that_is_no_image_is_reported_by_its_iterator(tmp_path, cls):
    from gpunda import recordio
    path = str(tmp_path / "bad.rec")
    w = recordio.MXRecordIO(path, "w")
    label = [2, 5, 0, 0.1, 0.1, 0.5, 0.5] if cls == "ImageDetRecordIter" else [1, 0]
    w.write(recordio.pack(recordio.IRHeader(len(label), label, 0, 0), b"not an image"))
    w.close()
    it = getattr(mx.io, cls)(path_imgrec=path, data_shape=(3, 6, 5), batch_size=1,
                             label_width=-1 if cls == "ImageDetRecordIter" else 2)
    with pytest.raises(GpundaError, match=f"^{cls}: record 0 of .* is not a decodable image"):
        next(iter(it))
