"""mx.image.ImageIter against batches built directly with OpenCV/NumPy, and its epoch ends
(pad / discard / roll_over) as MXNet 1.9.1's test_image.py checks them."""
import random

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2", reason="mx.image needs opencv-python-headless ('gpunda[image]')")

import gpunda as mx  # noqa: E402
from gpunda.base import GpundaError  # noqa: E402

N_IMAGES = 7


@pytest.fixture
def images(tmp_path, rng):
    """N_IMAGES PNG files of different sizes (RGB arrays kept) and their labels."""
    rgbs, names = [], []
    for k in range(N_IMAGES):
        rgb = rng.integers(0, 256, (20 + 3 * k, 26 + 2 * k, 3), dtype=np.uint8)
        name = f"im{k}.png"
        assert cv2.imwrite(str(tmp_path / name), rgb[:, :, ::-1])
        rgbs.append(rgb)
        names.append(name)
    return tmp_path, rgbs, names, [float(k % 4) for k in range(N_IMAGES)]


def _write_rec(tmp_path, rgbs, labels, with_idx=True):
    rec, idx = str(tmp_path / "d.rec"), str(tmp_path / "d.idx")
    w = (mx.recordio.MXIndexedRecordIO(idx, rec, "w") if with_idx
         else mx.recordio.MXRecordIO(rec, "w"))
    for k, (rgb, label) in enumerate(zip(rgbs, labels)):
        rec_bytes = mx.recordio.pack_img(mx.recordio.IRHeader(0, label, k, 0), rgb[:, :, ::-1],
                                         quality=3, img_fmt=".png")
        w.write_idx(k, rec_bytes) if with_idx else w.write(rec_bytes)
    w.close()
    return rec, idx


def _reference(rgb, short, h, w):
    """resize_short(short) with bicubic then the centre (w, h) crop, as CHW float32."""
    ih, iw = rgb.shape[:2]
    size = (short, ih * short // iw) if ih > iw else (iw * short // ih, short)
    img = cv2.resize(rgb, size, interpolation=cv2.INTER_CUBIC)
    y0, x0 = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
    return img[y0:y0 + h, x0:x0 + w].transpose(2, 0, 1).astype(np.float32)


def _all(it):
    return [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]


def test_batches_equal_opencv_resize_and_centre_crop(images):
    root, rgbs, names, labels = images
    it = mx.image.ImageIter(3, (3, 16, 18), imglist=[[lb, n] for lb, n in zip(labels, names)],
                            path_root=str(root), resize=20)
    assert it.provide_data == [("data", (3, 3, 16, 18))]
    assert it.provide_label == [("softmax_label", (3,))]
    batches = _all(it)
    assert [p for _, _, p in batches] == [0, 0, 2]
    data = np.concatenate([d for d, _, _ in batches])
    label = np.concatenate([lb for _, lb, _ in batches])
    order = list(range(N_IMAGES)) + [0, 1]          # 'pad' fills up from the start
    for row, k in enumerate(order):
        np.testing.assert_array_equal(data[row], _reference(rgbs[k], 20, 16, 18))
        assert label[row] == labels[k]
    assert data.dtype == np.float32


@pytest.mark.parametrize("with_idx", [True, False])
def test_rec_file_gives_the_same_batches_as_the_image_files(images, with_idx):
    root, rgbs, names, labels = images
    rec, idx = _write_rec(root, rgbs, labels, with_idx)
    from_rec = mx.image.ImageIter(2, (3, 16, 16), path_imgrec=rec,
                                  path_imgidx=idx if with_idx else None)
    from_files = mx.image.ImageIter(2, (3, 16, 16), path_root=str(root),
                                    imglist=[[lb, n] for lb, n in zip(labels, names)])
    for (d1, l1, p1), (d2, l2, p2) in zip(_all(from_rec), _all(from_files), strict=True):
        np.testing.assert_array_equal(d1, d2)
        np.testing.assert_array_equal(l1, l2)
        assert p1 == p2


def test_lst_file_labels_and_dtype(images):
    root, rgbs, names, labels = images
    lst = root / "d.lst"
    # im2rec writes labels as %f; an integer dtype still parses them
    lst.write_text("".join(f"{k}\t{lb:f}\t{lb + 1:f}\t{n}\n"
                           for k, (lb, n) in enumerate(zip(labels, names))))
    it = mx.image.ImageIter(4, (3, 8, 8), label_width=2, path_imglist=str(lst),
                            path_root=str(root), dtype="int32", last_batch_handle="discard")
    assert it.provide_label == [("softmax_label", (4, 2))]
    (data, label, pad), = _all(it)
    assert pad == 0 and label.dtype == np.float32
    np.testing.assert_array_equal(label, [[lb, lb + 1] for lb in labels[:4]])
    assert it.imglist[0][0].dtype == np.int32


def test_multi_label_records(images):
    root, rgbs, names, _ = images
    labels = [[k, 2.5 * k, -1.0] for k in range(N_IMAGES)]
    rec, idx = _write_rec(root, rgbs, labels)
    it = mx.image.ImageIter(N_IMAGES, (3, 8, 8), label_width=3, path_imgrec=rec, path_imgidx=idx)
    np.testing.assert_array_equal(it.next().label[0].asnumpy(), np.float32(labels))
    bad = mx.image.ImageIter(2, (3, 8, 8), label_width=2, path_imgrec=rec)
    with pytest.raises(GpundaError, match="3 label.*label_width is 2"):
        bad.next()


def _epoch_ends(make):
    """MXNet's _test_imageiter_last_batch for 7 images and batches of 3."""
    it = make("discard")
    assert len(list(it)) == 2
    it.reset()
    assert len(list(it)) == 2

    it = make("pad")
    batches = _all(it)
    assert len(batches) == 3 and batches[-1][2] == 2
    np.testing.assert_array_equal(batches[-1][0][1:], batches[0][0][:2])
    assert list(it) == []                    # nothing more until reset
    it.reset()
    assert len(list(it)) == 3

    it = make("roll_over")
    batches = _all(it)
    assert len(batches) == 2
    seventh = it._cache_data[0].asnumpy()    # the left-over sample waits for the next epoch
    it.reset()
    first = it.next()
    assert first.pad == 2                    # as MXNet: the samples the new epoch supplied
    np.testing.assert_array_equal(first.data[0][0].asnumpy(), seventh)
    np.testing.assert_array_equal(first.data[0][1].asnumpy(), batches[0][0][0])
    rest = list(it)                          # 5 samples left: one batch, 2 roll over
    assert len(rest) == 1
    it.reset()
    assert it.next().pad == 1
    it.hard_reset()                          # drops the rolled-over samples
    np.testing.assert_array_equal(it.next().data[0].asnumpy(), batches[0][0])


def test_last_batch_handles_over_image_list(images):
    root, _, names, labels = images
    imglist = [[lb, n] for lb, n in zip(labels, names)]
    _epoch_ends(lambda h: mx.image.ImageIter(3, (3, 8, 8), imglist=imglist, path_root=str(root),
                                             last_batch_handle=h))


def test_last_batch_handles_over_sequential_rec(images):
    root, rgbs, _, labels = images
    rec, _ = _write_rec(root, rgbs, labels, with_idx=False)
    _epoch_ends(lambda h: mx.image.ImageIter(3, (3, 8, 8), path_imgrec=rec, last_batch_handle=h))


def test_shuffle_and_partitions_use_the_index(images):
    root, rgbs, _, labels = images
    rec, idx = _write_rec(root, rgbs, [float(k) for k in range(N_IMAGES)])
    random.seed(0)
    it = mx.image.ImageIter(N_IMAGES, (3, 8, 8), path_imgrec=rec, path_imgidx=idx, shuffle=True)
    first = it.next().label[0].asnumpy()
    it.reset()
    second = it.next().label[0].asnumpy()
    # the index keys are shuffled in place with Python's random at every reset, as MXNet's
    random.seed(0)
    keys = list(range(N_IMAGES))
    random.shuffle(keys)
    assert first.tolist() == keys
    random.shuffle(keys)
    assert second.tolist() == keys
    parts = [mx.image.ImageIter(3, (3, 8, 8), path_imgrec=rec, path_imgidx=idx, num_parts=2,
                                part_index=p, last_batch_handle="discard") for p in (0, 1)]
    got = [it.next().label[0].asnumpy().tolist() for it in parts]
    assert got == [[0, 1, 2], [3, 4, 5]]      # N // num_parts each; the rest is left out
    with pytest.raises(GpundaError, match="path_imgidx"):
        mx.image.ImageIter(3, (3, 8, 8), path_imgrec=rec, shuffle=True)


def test_custom_aug_list_and_hooks(images):
    root, rgbs, names, labels = images

    class Flip(mx.image.Augmenter):
        def __call__(self, src):
            return mx.nd.flip(src, axis=1)

    augs = [mx.image.ForceResizeAug((10, 12), interp=0), Flip(), mx.image.CastAug()]
    it = mx.image.ImageIter(1, (3, 12, 10), imglist=[[0, names[2]]], path_root=str(root),
                            aug_list=augs)
    want = cv2.resize(rgbs[2], (10, 12), interpolation=cv2.INTER_NEAREST)[:, ::-1]
    np.testing.assert_array_equal(it.next().data[0].asnumpy()[0], want.transpose(2, 0, 1))
    raw = it.read_image(names[2])
    assert raw == (root / names[2]).read_bytes()
    np.testing.assert_array_equal(it.imdecode(raw).asnumpy(), rgbs[2])


def test_broken_image_names_its_file(images):
    root, _, names, _ = images
    (root / "bad.png").write_bytes(b"not a png")
    it = mx.image.ImageIter(2, (3, 8, 8), imglist=[[0, names[0]], [1, "bad.png"]],
                            path_root=str(root))
    with pytest.raises(RuntimeError, match="Broken image filename: bad.png"):
        it.next()


def test_bad_arguments(images):
    root, _, names, _ = images
    imglist = [[0, names[0]]]
    with pytest.raises(ValueError, match="3 channels"):
        mx.image.ImageIter(1, (1, 8, 8), imglist=imglist, path_root=str(root))
    with pytest.raises(ValueError, match="length 3"):
        mx.image.ImageIter(1, (8, 8), imglist=imglist, path_root=str(root))
    with pytest.raises(GpundaError, match="path_imgrec, path_imglist or imglist"):
        mx.image.ImageIter(1, (3, 8, 8))
    with pytest.raises(GpundaError, match="dtype='uint8'"):
        mx.image.ImageIter(1, (3, 8, 8), imglist=imglist, dtype="uint8")
    with pytest.raises(GpundaError, match="last_batch_handle='keep'"):
        mx.image.ImageIter(1, (3, 8, 8), imglist=imglist, last_batch_handle="keep")
