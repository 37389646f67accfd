"""mx.io.ImageDetRecordIter against OpenCV/NumPy references. (By hand its batches were also
compared with real MXNet 1.9.1's on the same file: labels equal, pixels equal up to one
level of OpenCV's bicubic rounding between versions.)"""
import numpy as np
import pytest

cv2 = pytest.importorskip("cv2", reason="ImageDetRecordIter needs opencv-python-headless")

import gpunda as mx  # noqa: E402
from gpunda.base import GpundaError  # noqa: E402


def _label(k):
    objs = [[j, 0.1 * j, 0.2, 0.1 * j + 0.4, 0.7] for j in range(1 + k % 3)]
    return [2, 5] + [v for o in objs for v in o]


@pytest.fixture
def det_rec(tmp_path, rng):
    rec, idx = str(tmp_path / "det.rec"), str(tmp_path / "det.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    bgrs = []
    for k in range(5):
        bgr = rng.integers(0, 256, (30 + 4 * k, 40 - 2 * k, 3), dtype=np.uint8)
        w.write_idx(k, mx.recordio.pack_img((0, np.array(_label(k)), k, 0), bgr, quality=3,
                                            img_fmt=".png"))
        bgrs.append(bgr)
    w.close()
    return tmp_path, rec, bgrs


def _rows(it):
    out = []
    for b in it:
        out += [(d, lb) for d, lb in zip(b.data[0].asnumpy(), b.label[0].asnumpy())]
    return out


def test_batches_labels_and_normalisation(det_rec):
    _, rec, bgrs = det_rec
    it = mx.io.ImageDetRecordIter(path_imgrec=rec, data_shape=(3, 16, 20), batch_size=2,
                                  label_pad_width=20, label_pad_value=-2, mean_r=10, mean_g=20,
                                  mean_b=30, std_r=2, std_g=3, std_b=4, scale=0.5)
    assert it.provide_label[0].shape == (2, 24)
    rows = _rows(it)
    assert len(rows) == 6                              # round_batch: 5 samples + 1 from the start
    for (data, label), k in zip(rows, [0, 1, 2, 3, 4, 0]):
        rgb = cv2.resize(bgrs[k], (20, 16), interpolation=cv2.INTER_LINEAR)[:, :, ::-1]
        want = (rgb.transpose(2, 0, 1) - np.float32([10, 20, 30])[:, None, None]) \
            / np.float32([2, 3, 4])[:, None, None] * np.float32(0.5)
        np.testing.assert_allclose(data, want, rtol=1e-6, atol=1e-6)
        raw = np.float32(_label(k))
        np.testing.assert_array_equal(label[:4], [3, 16, 20, raw.size])
        np.testing.assert_array_equal(label[4:4 + raw.size], raw)
        assert (label[4 + raw.size:] == -2).all()


def test_pad_width_estimate_mirror_and_image_list(det_rec):
    tmp, rec, bgrs = det_rec
    it = mx.io.ImageDetRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=5,
                                  rand_mirror_prob=1.0, inter_method=0)
    assert it.provide_label[0].shape == (5, 17 + 4)     # widest label: 2 + 3 objects * 5
    batch = it.next()
    data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
    want = cv2.resize(bgrs[2][:, ::-1], (8, 8), interpolation=cv2.INTER_NEAREST)[:, :, ::-1]
    np.testing.assert_array_equal(data[2], want.transpose(2, 0, 1))
    boxes = label[2, 6:6 + 15].reshape(3, 5)
    np.testing.assert_allclose(boxes[:, 1], [1 - (0.1 * j + 0.4) for j in range(3)], rtol=1e-6)
    np.testing.assert_allclose(boxes[:, 3], [1 - 0.1 * j for j in range(3)], rtol=1e-6)
    # labels from a list (by image id) replace the records'
    (tmp / "det.lst").write_text("".join(f"{k}\t2\t6\t{k}\t0.1\t0.1\t0.5\t0.5\t9\tx.png\n"
                                         for k in range(5)))
    it = mx.io.ImageDetRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=5,
                                  path_imglist=str(tmp / "det.lst"))
    label = it.next().label[0].asnumpy()
    np.testing.assert_array_equal(label[3],
                                  np.float32([3, 8, 8, 8, 2, 6, 3, 0.1, 0.1, 0.5, 0.5, 9]))


def test_bad_arguments(det_rec):
    _, rec, _ = det_rec
    args = dict(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2)
    with pytest.raises(GpundaError, match="label_pad_width=10 is smaller"):
        mx.io.ImageDetRecordIter(label_pad_width=10, **args)
    # a small file is one chunk: shuffle_chunk_size leaves the order (as MXNet's)
    plain = [b.label[0].asnumpy() for b in mx.io.ImageDetRecordIter(**args)]
    chunked = [b.label[0].asnumpy() for b in mx.io.ImageDetRecordIter(shuffle_chunk_size=2,
                                                                       **args)]
    assert len(plain) == len(chunked) and all((a == b).all() for a, b in zip(plain, chunked))
    with pytest.raises(GpundaError, match="label_width is 7"):
        mx.io.ImageDetRecordIter(label_width=7, **args)
    with pytest.raises(GpundaError, match="rand_mirror_prob"):
        mx.io.ImageDetRecordIter(rand_mirror=True, **args)
