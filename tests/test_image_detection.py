"""mx.image.detection: the detection augmenters against NumPy box geometry and against
outputs of real MXNet 1.9.1 for the same Python seeds; ImageDetIter's labels and batches."""
import random

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2", reason="mx.image needs opencv-python-headless ('gpunda[image]')")

import gpunda as mx  # noqa: E402
from gpunda import nd  # noqa: E402
from gpunda.base import GpundaError  # noqa: E402

BOXES = np.array([[0, 0.1, 0.2, 0.5, 0.7], [1, 0.4, 0.3, 0.9, 0.6]])


@pytest.fixture
def img():
    return nd.array(np.random.RandomState(0).randint(0, 255, (40, 50, 3)), dtype="uint8")


def test_modules_and_names():
    assert mx.image.det is mx.image.detection
    for name in ("DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
                 "DetRandomCropAug", "DetRandomPadAug", "CreateMultiRandCropAugmenter",
                 "CreateDetAugmenter", "ImageDetIter"):
        assert getattr(mx.image, name) is getattr(mx.image.detection, name)
    assert issubclass(mx.image.ImageDetIter, mx.image.ImageIter)


def test_flip_mirrors_image_and_boxes(img):
    label = BOXES.copy()
    out, lab = mx.image.DetHorizontalFlipAug(1.0)(img, label)
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[:, ::-1])
    np.testing.assert_allclose(lab[:, 1], 1 - BOXES[:, 3])   # x' = 1 - x, min and max swap
    np.testing.assert_allclose(lab[:, 3], 1 - BOXES[:, 1])
    np.testing.assert_array_equal(lab[:, (0, 2, 4)], BOXES[:, (0, 2, 4)])
    same, lab0 = mx.image.DetHorizontalFlipAug(0.0)(img, BOXES.copy())
    assert same is img and np.array_equal(lab0, BOXES)


def _crop_reference(label, x, y, w, h, width, height, min_eject):
    """Boxes in pixels clipped to the crop, back to fractions of it; kept when their
    remaining area is > min_eject of the original."""
    px = label[:, 1:5] * [width, height, width, height]
    clipped = np.stack([np.clip(px[:, 0], x, x + w), np.clip(px[:, 1], y, y + h),
                        np.clip(px[:, 2], x, x + w), np.clip(px[:, 3], y, y + h)], 1)
    area = lambda b: np.maximum(0, b[:, 2] - b[:, 0]) * np.maximum(0, b[:, 3] - b[:, 1])  # noqa
    keep = (area(clipped) / area(px) > min_eject) & (clipped[:, 2] > clipped[:, 0]) & \
        (clipped[:, 3] > clipped[:, 1])
    out = (clipped - [x, y, x, y]) / [w, h, w, h]
    return np.hstack([label[keep, :1], out[keep]])


def test_random_crop_follows_the_coverage_rules(img):
    aug = mx.image.DetRandomCropAug(min_object_covered=0.3, area_range=(0.1, 1.0),
                                    min_eject_coverage=0.3)
    for seed in range(20):
        random.seed(seed)
        proposal = aug._random_crop_proposal(BOXES, 40, 50)
        random.seed(seed)
        out, lab = aug(img, BOXES.copy())
        if not proposal:
            assert out is img
            continue
        x, y, w, h, _ = proposal
        assert 0.1 * 2000 <= w * h <= 2000 and 0.75 <= w / h <= 1.33 + 0.05
        np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[y:y + h, x:x + w])
        np.testing.assert_allclose(lab, _crop_reference(BOXES, x, y, w, h, 50, 40, 0.3),
                                   rtol=1e-6, atol=1e-7)
        # every object the crop touches is covered by more than min_object_covered
        px = BOXES[:, 1:5] * [50, 40, 50, 40]
        iw = np.minimum(px[:, 2], x + w) - np.maximum(px[:, 0], x)
        ih = np.minimum(px[:, 3], y + h) - np.maximum(px[:, 1], y)
        areas = (px[:, 2] - px[:, 0]) * (px[:, 3] - px[:, 1])
        cov = np.where((iw > 0) & (ih > 0), iw * ih, 0) / areas
        assert (cov[cov > 0] > 0.3).all()


def test_random_pad_places_the_image_on_a_filled_canvas(img):
    aug = mx.image.DetRandomPadAug(pad_val=(1, 2, 3))
    random.seed(4)
    x, y, w, h, _ = aug._random_pad_proposal(BOXES, 40, 50)
    random.seed(4)
    out, lab = aug(img, BOXES.copy())
    canvas = np.empty((h, w, 3), np.uint8)
    canvas[:] = (1, 2, 3)
    canvas[y:y + 40, x:x + 50] = img.asnumpy()
    np.testing.assert_array_equal(out.asnumpy(), canvas)
    # a box keeps its pixels: (fraction * old size + offset) / new size
    want = (BOXES[:, 1:] * [50, 40, 50, 40] + [x, y, x, y]) / [w, h, w, h]
    np.testing.assert_allclose(lab[:, 1:], want)
    # the proposal real MXNet 1.9.1 draws after random.seed(4) (x, y, width, height)
    assert (x, y, w, h) == (1, 12, 52, 59)


# real MXNet 1.9.1, random.seed(1), five calls in a row on `img` and BOXES (rounded to 4)
MXNET_CROP = [((40, 33, 3), [[0.0, 0.0, 0.2, 0.5152, 0.7], [1.0, 0.3636, 0.3, 1.0, 0.6]]),
              ((40, 33, 3), [[0.0, 0.0, 0.2, 0.303, 0.7], [1.0, 0.1515, 0.3, 0.9091, 0.6]]),
              ((38, 43, 3), [[0.0, 0.093, 0.2105, 0.5581, 0.7368],
                             [1.0, 0.4419, 0.3158, 1.0, 0.6316]])]
MXNET_PAD = [((85, 70, 3), [[0.0, 0.1857, 0.1412, 0.4714, 0.3765],
                            [1.0, 0.4, 0.1882, 0.7571, 0.3294]]),
             ((85, 70, 3), [[0.0, 0.2857, 0.4235, 0.5714, 0.6588],
                            [1.0, 0.5, 0.4706, 0.8571, 0.6118]])]
MXNET_MULTI = [((30, 35, 3), [[0.0, 0.0571, 0.0, 0.6286, 0.6333],
                              [1.0, 0.4857, 0.1, 1.0, 0.5]]),
               ((36, 27, 3), [[0.0, 0.1852, 0.1111, 0.9259, 0.6667]])]


@pytest.mark.parametrize("aug, expected", [
    (lambda: mx.image.DetRandomCropAug(0.3, (0.75, 1.33), (0.1, 1.0)), MXNET_CROP),
    (lambda: mx.image.DetRandomPadAug(), MXNET_PAD),
    (lambda: mx.image.CreateMultiRandCropAugmenter([0.1, 0.5],
                                                   area_range=[(0.1, 1.0), (0.3, 1.0)]),
     MXNET_MULTI)])
def test_same_draws_as_mxnet(img, aug, expected):
    a = aug()
    random.seed(1)
    for shape, boxes in expected:
        out, lab = a(img, BOXES.copy())
        assert out.shape == shape
        np.testing.assert_allclose(np.round(lab, 4), boxes, atol=1e-12)


def test_random_select_and_multi_crop_parameters():
    never = mx.image.DetRandomSelectAug([mx.image.DetHorizontalFlipAug(1.0)], skip_prob=1)
    x = nd.zeros((2, 2, 3))
    assert never(x, BOXES.copy())[0] is x
    assert mx.image.DetRandomSelectAug([]).skip_prob == 1
    with pytest.raises(ValueError, match="DetAugmenter"):
        mx.image.DetRandomSelectAug([mx.image.CastAug()])
    multi = mx.image.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5, 0.9],
                                                  area_range=[(0.1, 1), (0.2, 1), (0.3, 1)])
    assert [(a.min_object_covered, a.area_range, a.max_attempts) for a in multi.aug_list] == \
        [(0.1, (0.1, 1), 50), (0.5, (0.2, 1), 50), (0.9, (0.3, 1), 50)]
    with pytest.raises(GpundaError, match="1 or 3 entries"):
        mx.image.CreateMultiRandCropAugmenter([0.1, 0.2, 0.3], max_attempts=[1, 2])
    with pytest.warns(UserWarning, match="invalid area_range"):
        assert not mx.image.DetRandomCropAug(area_range=(0.5, 0.2)).enabled
    with pytest.raises(TypeError, match="invalid Augmenter"):
        mx.image.DetBorrowAug(lambda s: s)


def test_create_det_augmenter_order_as_mxnet():
    augs = mx.image.CreateDetAugmenter((3, 30, 40), resize=50, rand_crop=0.5, rand_pad=0.3,
                                       rand_mirror=True, mean=True, std=True, brightness=0.1,
                                       hue=0.1, pca_noise=0.1, rand_gray=0.2)
    kinds = [type(a).__name__ + (":" + type(a.augmenter).__name__ if hasattr(a, "augmenter")
                                 else "") for a in augs]
    assert kinds == ["DetBorrowAug:ResizeAug", "DetRandomSelectAug", "DetHorizontalFlipAug",
                     "DetRandomSelectAug", "DetBorrowAug:ForceResizeAug", "DetBorrowAug:CastAug",
                     "DetBorrowAug:ColorJitterAug", "DetBorrowAug:HueJitterAug",
                     "DetBorrowAug:LightingAug", "DetBorrowAug:RandomGrayAug",
                     "DetBorrowAug:ColorNormalizeAug"]
    assert augs[1].skip_prob == 0.5 and augs[3].skip_prob == pytest.approx(0.7)
    assert augs[3].aug_list[0].area_range == (1.0, 3.0)
    assert augs[4].augmenter.size == (40, 30)
    assert augs[0].dumps()[0] == "detborrowaug"
    with pytest.raises(GpundaError, match="mean"):
        mx.image.CreateDetAugmenter((3, 8, 8), mean=[1, 2, 3])


def _objects(k):
    """Flat label with a 4-wide header (2 extra fields) and 6-wide objects; one inverted box."""
    objs = [[c, 0.1 * c, 0.05, 0.1 * c + 0.3, 0.5, 7.0] for c in range(1 + k % 3)]
    objs.append([9, 0.8, 0.8, 0.2, 0.9, 0.0])            # xmax < xmin: dropped
    return [4, 6, -5, -6] + [v for o in objs for v in o]


@pytest.fixture
def det_images(tmp_path, rng):
    rgbs, names = [], []
    for k in range(5):
        rgb = rng.integers(0, 256, (24 + 2 * k, 30, 3), dtype=np.uint8)
        cv2.imwrite(str(tmp_path / f"d{k}.png"), rgb[:, :, ::-1])
        rgbs.append(rgb)
        names.append(f"d{k}.png")
    return tmp_path, rgbs, names


def test_parse_label_header_and_object_widths():
    rows = mx.image.detection.parse_det_label(np.array(_objects(1), np.float32))
    np.testing.assert_allclose(rows, [[0, 0, 0.05, 0.3, 0.5, 7], [1, 0.1, 0.05, 0.4, 0.5, 7]],
                               rtol=1e-6)
    with pytest.raises(RuntimeError, match="inconsistent"):
        mx.image.detection.parse_det_label(np.array([2, 5, 0, 0.1, 0.1, 0.5, 0.5, 1]))
    with pytest.raises(RuntimeError, match="invalid"):
        mx.image.detection.parse_det_label(np.array([2, 5, 0, 0.1]))
    with pytest.raises(RuntimeError, match="no valid label"):
        mx.image.detection.parse_det_label(np.array([2, 5, 0, 0.5, 0.5, 0.1, 0.1]))


def test_det_iter_batches_labels_and_padding(det_images):
    root, rgbs, names = det_images
    imglist = [_objects(k) + [n] for k, n in enumerate(names)]
    it = mx.image.ImageDetIter(2, (3, 16, 20), imglist=imglist, path_root=str(root))
    assert it.label_shape == (3, 6)
    assert it.provide_label == [("label", (2, 3, 6))]
    batches = [(b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it]
    assert [p for _, _, p in batches] == [0, 0, 1]
    for row, k in enumerate([0, 1, 2, 3, 4, 0]):
        data, label = batches[row // 2][0][row % 2], batches[row // 2][1][row % 2]
        want = cv2.resize(rgbs[k], (20, 16), interpolation=cv2.INTER_CUBIC)
        np.testing.assert_array_equal(data, want.transpose(2, 0, 1).astype(np.float32))
        n = 1 + k % 3
        np.testing.assert_allclose(label[:n], [[c, 0.1 * c, 0.05, 0.1 * c + 0.3, 0.5, 7]
                                               for c in range(n)], rtol=1e-6)
        assert (label[n:] == -1).all()


def test_det_iter_from_rec_with_flip(det_images):
    root, rgbs, names = det_images
    rec, idx = str(root / "d.rec"), str(root / "d.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for k, rgb in enumerate(rgbs):
        w.write_idx(k, mx.recordio.pack_img((0, np.array(_objects(k)), k, 0), rgb[:, :, ::-1],
                                            quality=3, img_fmt=".png"))
    w.close()
    flip = [mx.image.DetHorizontalFlipAug(1.0),
            mx.image.DetBorrowAug(mx.image.ForceResizeAug((30, 24), interp=0)),
            mx.image.DetBorrowAug(mx.image.CastAug())]
    it = mx.image.ImageDetIter(5, (3, 24, 30), path_imgrec=rec, path_imgidx=idx,
                               aug_list=flip)
    batch = it.next()
    np.testing.assert_array_equal(batch.data[0].asnumpy()[0],
                                  rgbs[0][:, ::-1].transpose(2, 0, 1).astype(np.float32))
    lab = batch.label[0].asnumpy()[2]                     # 3 objects
    np.testing.assert_allclose(lab[:, 1], [1 - (0.1 * c + 0.3) for c in range(3)], rtol=1e-6)
    np.testing.assert_allclose(lab[:, 3], [1 - 0.1 * c for c in range(3)], rtol=1e-6)


def test_reshape_sync_and_draw(det_images):
    root, rgbs, names = det_images
    small = mx.image.ImageDetIter(1, (3, 8, 8), imglist=[_objects(0) + [names[0]]],
                                  path_root=str(root))
    big = mx.image.ImageDetIter(1, (3, 8, 8), imglist=[_objects(2) + [names[2]]],
                                path_root=str(root))
    assert (small.label_shape, big.label_shape) == ((1, 6), (3, 6))
    assert small.sync_label_shape(big) is big
    big.sync_label_shape(small)
    assert small.label_shape == (3, 6) and small.provide_label[0][1] == (1, 3, 6)
    assert small.next().label[0].shape == (1, 3, 6)
    with pytest.raises(ValueError, match="reduce label count"):
        small.reshape(label_shape=(2, 6))
    with pytest.raises(ValueError, match="object width"):
        small.reshape(label_shape=(4, 5))
    small.reshape(data_shape=(3, 10, 12))
    assert small.provide_data == [("data", (1, 3, 10, 12))]
    plain = [mx.image.DetBorrowAug(mx.image.CastAug())]
    drawer = mx.image.ImageDetIter(1, (3, 26, 30), imglist=[_objects(0) + [names[1]]],
                                   path_root=str(root), aug_list=plain)
    image, = list(drawer.draw_next(color=(255, 0, 0), thickness=1))
    want = np.ascontiguousarray(rgbs[1][:, :, ::-1])
    cv2.rectangle(want, (0, int(0.05 * 26)), (int(0.3 * 30), int(0.5 * 26)), (0, 0, 255), 1)
    np.testing.assert_array_equal(image, want)
