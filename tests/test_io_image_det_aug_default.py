"""ImageDetRecordIter's augmentations: deterministic settings against real MXNet 1.9.1's
output (tests/data/make_image_aug_fixture.py); random pad / crop / colour by invariants
(boxes drawn into the image must still frame their colour after the transform)."""
import os
import sys

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

import gpunda as mx  # noqa: E402
from gpunda.base import GpundaError  # noqa: E402
from gpunda.io.image_det_aug_default import DefaultImageDetAugmenter, DetLabel  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
import make_image_aug_fixture as F  # noqa: E402

REF = np.load(os.path.join(F.OUT, "image_aug_mxnet191.npz"))
COLOURS = {0: (0, 0, 250), 1: (0, 250, 0), 2: (250, 0, 0)}          # BGR per object id
BOXES = [(0, 0.05, 0.1, 0.3, 0.45), (1, 0.55, 0.05, 0.95, 0.35), (2, 0.2, 0.6, 0.8, 0.95)]


@pytest.mark.parametrize("key", sorted(F.DET_CASES))
def test_deterministic_settings_match_mxnet(key):
    batch = mx.io.ImageDetRecordIter(path_imgrec=F.DET_REC, **F.DET_BASE,
                                     **F.DET_CASES[key]).next()
    np.testing.assert_array_equal(batch.data[0].asnumpy(), REF[f"det_{key}_data"])
    np.testing.assert_array_equal(batch.label[0].asnumpy(), REF[f"det_{key}_label"])


@pytest.mark.parametrize("key", sorted(F.DET_STAT_CASES))
def test_random_settings_spread_like_mxnet(key):
    # MXNet draws from mt19937, gpunda from NumPy: the statistics over 40 epochs agree
    # (boxes kept per image, their width, the spread of an image's mean pixel value)
    kept, width, spread = F.det_epoch_statistics(mx, key)
    want = REF[f"det_stat_{key}"]
    assert abs(kept - want[0]) < 0.15 and abs(width / want[1] - 1) < 0.1, (key, want)
    assert abs(spread / want[2] - 1) < 0.3, (key, want)


@pytest.fixture(scope="module")
def boxes_rec(tmp_path_factory):
    """Five 40x60 gray images, each object's box painted in its colour."""
    rec = str(tmp_path_factory.mktemp("det_aug") / "boxes.rec")
    img = np.full((40, 60, 3), 90, np.uint8)
    for k, x1, y1, x2, y2 in BOXES:
        img[int(y1 * 40):int(y2 * 40), int(x1 * 60):int(x2 * 60)] = COLOURS[k]
    label = np.float32([2, 5] + [v for b in BOXES for v in b])
    w = mx.recordio.MXRecordIO(rec, "w")
    for i in range(5):
        w.write(mx.recordio.pack_img((0, label, i, 0), img, img_fmt=".png"))
    w.close()
    return rec, img


def _samples(rec, **kw):
    args = dict(data_shape=(3, 40, 60), batch_size=5, label_pad_width=20, inter_method=0,
                preprocess_threads=1)
    args.update(kw)
    b = mx.io.ImageDetRecordIter(path_imgrec=rec, **args).next()
    for data, label in zip(b.data[0].asnumpy(), b.label[0].asnumpy()):
        raw = label[4:4 + int(label[3])]
        yield data.transpose(1, 2, 0)[:, :, ::-1], raw[2:].reshape(-1, 5)


def _frames_its_colour(img, obj, margin=1):
    """The pixels a box covers (less a margin) are all its object's colour."""
    rows, cols = img.shape[:2]
    y1, y2 = int(np.ceil(obj[2] * rows)) + margin, int(obj[4] * rows) - margin
    x1, x2 = int(np.ceil(obj[1] * cols)) + margin, int(obj[3] * cols) - margin
    inside = img[y1:y2, x1:x2]
    return inside.size == 0 or (inside == COLOURS[int(obj[0])]).all()


def test_random_pad_moves_boxes_with_the_image(boxes_rec):
    rec, _ = boxes_rec
    padded = 0
    for seed in range(3):
        for img, objs in _samples(rec, rand_pad_prob=1.0, max_pad_scale=2.5, fill_value=30,
                                  seed=seed):
            assert len(objs) == 3 and ((objs[:, 1:] >= 0) & (objs[:, 1:] <= 1)).all()
            assert all(_frames_its_colour(img, o) for o in objs)
            padded += (img == 30).all(axis=2).any()
            # one scale for both axes: every box shrinks by the same factor in x and y
            ratio = (objs[:, 3] - objs[:, 1]) / np.float32([b[3] - b[1] for b in BOXES])
            np.testing.assert_allclose(ratio, ratio[0], rtol=1e-4)
            np.testing.assert_allclose((objs[:, 4] - objs[:, 2])
                                       / np.float32([b[4] - b[2] for b in BOXES]), ratio,
                                       rtol=1e-4)
    assert padded >= 10


def test_random_crop_keeps_boxes_on_their_objects(boxes_rec):
    rec, _ = boxes_rec
    counts = set()
    for seed in range(4):
        for img, objs in _samples(rec, rand_crop_prob=1.0, min_crop_scales=0.3,
                                  max_crop_scales=0.9, min_crop_aspect_ratios=0.5,
                                  max_crop_aspect_ratios=2.0, seed=seed):
            # each kept object once, with its own class, a box of positive size in the crop
            ids = objs[:, 0].astype(int).tolist()
            assert ids and len(set(ids)) == len(ids) and set(ids) <= {0, 1, 2}
            assert ((objs[:, 1:] >= 0) & (objs[:, 1:] <= 1)).all()
            assert (objs[:, 3] > objs[:, 1]).all() and (objs[:, 4] > objs[:, 2]).all()
            # crops start and end on whole source pixels, blown up by up to 1 / 0.3
            assert all(_frames_its_colour(img, o, margin=4) for o in objs)
            counts.add(len(objs))
    assert len(counts) > 1                      # some crops dropped objects


def test_mirror_pad_and_crop_together(boxes_rec):
    rec, _ = boxes_rec
    for img, objs in _samples(rec, rand_mirror_prob=0.5, rand_pad_prob=0.5, max_pad_scale=2,
                              rand_crop_prob=0.5, min_crop_scales=0.5, num_crop_sampler=2,
                              max_crop_scales=(0.8, 1.0), crop_emit_mode="overlap",
                              emit_overlap_thresh=0.5, seed=11):
        assert all(_frames_its_colour(img, o, margin=3) for o in objs)


def test_colour_noise(boxes_rec):
    rec, src = boxes_rec
    hls = cv2.cvtColor(src, cv2.COLOR_BGR2HLS).astype(int)
    for img, _ in _samples(rec, random_illumination_prob=1.0, max_random_illumination=20,
                           seed=1):
        errs = [np.abs(cv2.cvtColor(np.clip(hls + [0, s, 0], 0, [180, 255, 255]).astype(np.uint8),
                                    cv2.COLOR_HLS2BGR).astype(int) - img).max()
                for s in range(-20, 21)]
        assert min(errs) == 0
    for img, _ in _samples(rec, random_contrast_prob=1.0, max_random_contrast=0.5, seed=2):
        gain = img[src == 90].astype(float).mean() / 90     # the background: known to 1/180
        assert 0.5 - 1 / 180 <= gain <= 1.5 + 1 / 180
        assert np.abs(np.clip(np.rint(src * gain), 0, 255) - img).max() <= 2
    for img, _ in _samples(rec, random_hue_prob=0.0, max_random_hue=40, seed=3):
        np.testing.assert_array_equal(img, src)   # probability 0: never applied


def test_try_crop_constraints_and_emit_modes():
    lab = DetLabel([2, 5, 0, 0.1, 0.1, 0.5, 0.5])
    s = dict(min_crop_overlaps=0.5, max_crop_overlaps=1.0, min_crop_sample_coverages=0.0,
             max_crop_sample_coverages=1.0, min_crop_object_coverages=0.0,
             max_crop_object_coverages=1.0)
    assert not lab.try_crop((0.5, 0.5, 0.5, 0.5), s, "center", 0.3)      # IoU 0
    np.testing.assert_allclose(lab.to_array(), [2, 5, 0, 0.1, 0.1, 0.5, 0.5], rtol=1e-6)
    assert lab.try_crop((0.0, 0.0, 0.5, 0.5), s, "center", 0.3)          # IoU 0.64
    np.testing.assert_allclose(lab.to_array(), [2, 5, 0, 0.2, 0.2, 1, 1], rtol=1e-6)
    free = dict(s, min_crop_overlaps=0.0)
    two = [2, 5, 0, 0.4, 0.4, 0.6, 0.6, 1, 0.0, 0.0, 0.3, 0.3]
    lab = DetLabel(two)      # object 0: centre (0.5, 0.5) is outside, a quarter inside
    assert lab.try_crop((0.0, 0.0, 0.5, 0.5), free, "center", 0.3)
    assert lab.to_array()[2:].tolist() == pytest.approx([1, 0, 0, 0.6, 0.6])
    lab = DetLabel(two)
    assert lab.try_crop((0.0, 0.0, 0.5, 0.5), free, "overlap", 0.2)
    assert lab.to_array().size == 12                # coverage 0.25 > 0.2 keeps object 0
    assert not DetLabel([2, 5, 0, 0.4, 0.4, 0.6, 0.6]).try_crop((0, 0, 0.5, 0.5), free,
                                                              "overlap", 0.3)


def test_crop_box_sampler_ranges():
    s = dict(min_crop_scales=0.5, max_crop_scales=0.8, min_crop_aspect_ratios=0.5,
             max_crop_aspect_ratios=2.0)
    rng = np.random.RandomState(0)
    for _ in range(300):
        x, y, w, h = DefaultImageDetAugmenter.crop_box(s, 1.0, rng)
        assert 0 <= x and 0 <= y and x + w <= 1 + 1e-6 and y + h <= 1 + 1e-6
        assert 0.25 - 1e-5 <= w * h <= 0.64 + 1e-5 and 0.5 - 1e-5 <= w / h <= 2 + 1e-5


@pytest.mark.parametrize("kw, match", [
    (dict(num_crop_sampler=2, min_crop_scales=(0.1, 0.2, 0.3)), "one per crop sampler"),
    (dict(min_crop_scales=0.6, max_crop_scales=0.5), "crop scales"),
    (dict(crop_emit_mode="edge"), "crop_emit_mode='edge'"),
    (dict(resize_mode="stretch"), "resize_mode='stretch'"),
    (dict(inter_method=7), "inter_method=7"),
])
def test_bad_settings_raise(kw, match):
    with pytest.raises(GpundaError, match=match):
        mx.io.ImageDetRecordIter(path_imgrec=F.DET_REC, data_shape=(3, 8, 8), batch_size=1, **kw)
