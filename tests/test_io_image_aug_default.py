"""ImageRecordIter's augmentations: settings that draw no random number against real MXNet
1.9.1's output on the same .rec (tests/data/make_image_aug_fixture.py); random ones by
invariants (each output is one of the transforms the parameters allow, built here with
OpenCV directly)."""
import os
import sys

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2")

import gpunda as mx  # noqa: E402
from gpunda.base import GpundaError  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
import make_image_aug_fixture as F  # noqa: E402

REF = np.load(os.path.join(F.OUT, "image_aug_mxnet191.npz"))
# warpAffine's fixed-point rounding differs by one level between OpenCV builds
WARPED = {"rotate", "rotate_list", "scale", "aspect", "img_size", "auto_inter", "gray_rotate"}


def _uint8(**kw):
    """Every image of aug.rec through ImageRecordUInt8Iter, as HWC BGR."""
    args = dict(F.BASE, data_shape=(3, 12, 10))
    args.update(kw)
    data = mx.io.ImageRecordUInt8Iter(path_imgrec=F.REC, **args).next().data[0].asnumpy()
    return [d.transpose(1, 2, 0)[:, :, ::-1] for d in data]


def _center(img, h, w):
    y, x = (img.shape[0] - h) // 2, (img.shape[1] - w) // 2
    return img[y:y + h, x:x + w]


@pytest.mark.parametrize("key", sorted(F.CASES))
def test_deterministic_settings_match_mxnet(key):
    batch = mx.io.ImageRecordIter(path_imgrec=F.REC, **F.BASE, **F.CASES[key]).next()
    got, want = batch.data[0].asnumpy(), REF[f"{key}_data"]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, atol=1 if key in WARPED else 0)
    np.testing.assert_array_equal(batch.label[0].asnumpy(), REF[f"{key}_label"])


@pytest.mark.parametrize("key", sorted(F.STAT_CASES))
def test_random_settings_spread_like_mxnet(key):
    # MXNet draws from mt19937, gpunda from NumPy: only the statistics can agree. Over 40
    # epochs the spread of an image's mean is known to about 12%, its mean std to 2%.
    spread, contrast = F.epoch_statistics(mx, key)
    want = REF[f"stat_{key}"]
    assert abs(spread / want[0] - 1) < 0.3 and abs(contrast / want[1] - 1) < 0.06, (key, want)


def test_fixed_rotation_is_cv2_rotation_about_the_centre():
    for img, out in zip(F.images(), _uint8(rotate=30, fill_value=9)):
        rows, cols = img.shape[:2]
        m = cv2.getRotationMatrix2D((cols / 2, rows / 2), 30, 1.0)
        want = cv2.warpAffine(img, m, (cols, rows), borderValue=(9, 9, 9))
        diff = np.abs(out.astype(int) - _center(want, 12, 10))
        assert diff.max() <= 1 and (diff == 0).mean() > 0.9   # float32 vs float64 matrix


@pytest.mark.parametrize("kw, angles", [(dict(max_rotate_angle=4), range(-4, 5)),
                                         (dict(rotate_list="-20,5,40"), (-20, 5, 40))])
def test_random_rotation_is_one_of_the_allowed_angles(kw, angles):
    seen = set()
    for seed in range(4):
        for img, out in zip(F.images(), _uint8(seed=seed, **kw)):
            rows, cols = img.shape[:2]
            errs = [np.abs(out.astype(int) - _center(cv2.warpAffine(
                img, cv2.getRotationMatrix2D((cols / 2, rows / 2), a, 1.0), (cols, rows),
                borderValue=(255, 255, 255)), 12, 10)).max() for a in angles]
            assert min(errs) <= 1
            seen.add(list(angles)[int(np.argmin(errs))])
    assert len(seen) >= 3


def test_random_resized_crop_is_a_resized_window():
    kw = dict(random_resized_crop=True, min_random_area=0.25, max_random_area=0.25,
              min_aspect_ratio=1.0, max_aspect_ratio=1.0, inter_method=1)
    for seed in range(2):
        for img, out in zip(F.images(), _uint8(data_shape=(3, 6, 6), seed=seed, **kw)):
            rows, cols = img.shape[:2]
            side = int(np.floor(np.sqrt(rows * cols * 0.25) + 0.5))
            errs = [np.abs(cv2.resize(img[y:y + side, x:x + side], (6, 6)).astype(int) - out).max()
                    for y in range(rows - side + 1) for x in range(cols - side + 1)]
            assert min(errs) == 0


def test_random_crop_size_is_a_resized_square_window():
    for img, out in zip(F.images(), _uint8(data_shape=(3, 5, 5), min_crop_size=8,
                                           max_crop_size=10, rand_crop=True, seed=3)):
        found = [s for s in range(8, 11) for y in range(img.shape[0] - s + 1)
                 for x in range(img.shape[1] - s + 1)
                 if (cv2.resize(img[y:y + s, x:x + s], (5, 5)) == out).all()]
        assert found


def test_brightness_scales_every_pixel_by_one_factor():
    for img, out in zip(F.images(), _uint8(brightness=0.3, seed=1)):
        src = _center(img, 12, 10).astype(np.float64)
        alpha = out[src > 40].sum() / src[src > 40].sum()
        assert 0.69 <= alpha <= 1.31
        fits = [np.abs(np.clip(np.rint(src * a), 0, 255) - out).max()
                for a in np.linspace(alpha - 0.01, alpha + 0.01, 41)]
        assert min(fits) <= 1


def test_contrast_and_saturation_keep_the_gray_level():
    for kw in (dict(contrast=0.4), dict(saturation=0.4)):
        for img, out in zip(F.images(), _uint8(seed=2, **kw)):
            # MXNet takes the gray level with the RGB weights on its BGR pixels
            g_in = cv2.cvtColor(np.ascontiguousarray(_center(img, 12, 10)), cv2.COLOR_RGB2GRAY)
            g_out = cv2.cvtColor(np.ascontiguousarray(out), cv2.COLOR_RGB2GRAY)
            assert abs(g_in.astype(float).mean() - g_out.astype(float).mean()) < 1.5


def test_hls_lightness_shift_is_one_integer_shift():
    for img, out in zip(F.images(), _uint8(random_l=10, seed=4)):
        hls = cv2.cvtColor(np.ascontiguousarray(_center(img, 12, 10)), cv2.COLOR_BGR2HLS)
        errs = []
        for shift in range(-10, 11):
            moved = np.clip(hls.astype(int) + [0, shift, 0], 0, [180, 255, 255]).astype(np.uint8)
            errs.append(np.abs(cv2.cvtColor(moved, cv2.COLOR_HLS2BGR).astype(int) - out).max())
        assert min(errs) == 0


def test_pca_noise_adds_one_offset_per_channel():
    offsets = []
    for img, out in zip(F.images(), _uint8(pca_noise=0.1, seed=5)):
        src = _center(img, 12, 10).astype(int)
        inside = ((src > 30) & (src < 225)).all(axis=2)
        d = (out.astype(int) - src)[inside]
        assert (d.max(axis=0) - d.min(axis=0) <= 1).all()      # truncation toward zero
        offsets.append(np.median(d, axis=0))
    assert np.abs(offsets).max() > 0


def test_random_contrast_illumination_and_seed_aug():
    kw = dict(F.BASE, data_shape=(3, 12, 10), seed_aug=7, max_rotate_angle=20)
    raw = mx.io.ImageRecordUInt8Iter(path_imgrec=F.REC, **kw).next().data[0].asnumpy()
    again = mx.io.ImageRecordUInt8Iter(path_imgrec=F.REC, **kw).next().data[0].asnumpy()
    np.testing.assert_array_equal(raw, again)                  # seed_aug: reproducible
    out = mx.io.ImageRecordIter(path_imgrec=F.REC, max_random_contrast=0.3,
                                max_random_illumination=5, scale=0.5, **kw).next()
    for r, o in zip(raw.astype(np.float64), out.data[0].asnumpy()):
        slope, icpt = np.polyfit(r.ravel(), o.ravel(), 1)
        assert 0.5 * 0.7 - 1e-4 <= slope <= 0.5 * 1.3 + 1e-4 and abs(icpt) <= 2.5 + 1e-4
        np.testing.assert_allclose(o, r * slope + icpt, atol=1e-3)


def test_seed_aug_fixes_every_random_augmentation():
    # the settings of MXNet's test_ImageRecordIter_seed_augmentation
    kw = dict(F.BASE, data_shape=(3, 12, 10), rand_crop=True, rand_mirror=True,
              max_random_scale=1.3, max_random_illumination=3, max_rotate_angle=10,
              random_l=50, random_s=40, random_h=10, max_shear_ratio=2)

    def data(**more):
        return mx.io.ImageRecordIter(path_imgrec=F.REC, **kw, **more).next().data[0].asnumpy()
    np.testing.assert_array_equal(data(seed_aug=3), data(seed_aug=3))
    assert not np.array_equal(data(seed_aug=3), data(seed_aug=4))
    assert not np.array_equal(data(seed=1), data(seed=2))


def test_padding_and_values_stay_in_range():
    for out in _uint8(data_shape=(3, 26, 30), pad=4, fill_value=11, max_shear_ratio=0.3,
                      max_aspect_ratio=0.2, min_random_scale=0.8, max_random_scale=1.2):
        assert out.shape == (26, 30, 3) and out.dtype == np.uint8
    out = _uint8(data_shape=(3, 26, 30), pad=4, fill_value=11)[0]    # image 0 is 18x22
    np.testing.assert_array_equal(out[4:-4, 4:-4], F.images()[0])
    assert (out[:4] == 11).all() and (out[:, :4] == 11).all()


def test_four_channel_images_take_every_geometric_step(tmp_path):
    rec = str(tmp_path / "rgba.rec")
    w = mx.recordio.MXRecordIO(rec, "w")
    imgs = [np.random.RandomState(i).randint(0, 256, (20, 24, 4)).astype(np.uint8)
            for i in range(3)]
    for i, img in enumerate(imgs):
        w.write(mx.recordio.pack_img((0, float(i), i, 0), img, img_fmt=".png"))
    w.close()
    args = dict(path_imgrec=rec, data_shape=(4, 10, 10), batch_size=3)
    for kw in (dict(max_rotate_angle=20, pad=2, inter_method=10, resize=16),
               dict(random_resized_crop=True, min_random_area=0.3, inter_method=10),
               dict(min_crop_size=8, max_crop_size=12, inter_method=9, rand_crop=True)):
        out = mx.io.ImageRecordUInt8Iter(**args, **kw).next().data[0].asnumpy()
        assert out.shape == (3, 4, 10, 10)
    out = mx.io.ImageRecordUInt8Iter(**args, rotate=90, fill_value=3).next().data[0].asnumpy()
    for img, o in zip(imgs, out):       # alpha rotates with the colours
        m = cv2.getRotationMatrix2D((12, 10), 90, 1.0)
        want = _center(cv2.warpAffine(img, m, (24, 20), borderValue=(3, 3, 3, 3)), 10, 10)
        assert np.abs(o[3].astype(int) - want[:, :, 3]).max() <= 1


@pytest.mark.parametrize("kw, match", [
    (dict(rotate=10, inter_method=0), "inter_method=0 is invalid"),
    (dict(inter_method=5), "inter_method=5 is invalid"),
    (dict(random_resized_crop=True, rand_crop=True), "conflicts"),
    (dict(min_crop_size=8, max_crop_size=6), "min_crop_size=8"),
    (dict(data_shape=(1, 12, 10), contrast=0.2), "3-channel"),
    (dict(data_shape=(1, 12, 10), brightness=0.2), "3-channel"),
    (dict(data_shape=(3, 12, 10), max_crop_size=30, min_crop_size=30), "max_crop_size=30"),
])
def test_bad_settings_raise(kw, match):
    args = dict(F.BASE, data_shape=(3, 12, 10))
    args.update(kw)
    with pytest.raises(GpundaError, match=match):
        mx.io.ImageRecordIter(path_imgrec=F.REC, **args).next()
