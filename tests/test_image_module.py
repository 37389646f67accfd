"""mx.image against OpenCV and NumPy references (decoding, resizing, borders, crops, augmenters)."""
import random

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2", reason="mx.image needs opencv-python-headless ('gpunda[image]')")

import gpunda as mx  # noqa: E402
from gpunda import nd  # noqa: E402
from gpunda.base import GpundaError  # noqa: E402


@pytest.fixture
def rgb(rng):
    return rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)


def test_imdecode_and_imread_give_rgb(rgb, tmp_path):
    ok, png = cv2.imencode(".png", rgb[:, :, ::-1])        # OpenCV writes BGR
    assert ok
    np.testing.assert_array_equal(mx.image.imdecode(png.tobytes()).asnumpy(), rgb)
    np.testing.assert_array_equal(mx.image.imdecode(png, to_rgb=0).asnumpy(), rgb[:, :, ::-1])
    grey = mx.image.imdecode(png.tobytes(), flag=0).asnumpy()
    assert grey.shape == (12, 16, 1)
    path = tmp_path / "x.png"
    path.write_bytes(png.tobytes())
    np.testing.assert_array_equal(mx.image.imread(str(path)).asnumpy(), rgb)
    with pytest.raises(GpundaError, match="not an image"):
        mx.image.imdecode(b"not an image")
    with pytest.raises(GpundaError, match="cannot read"):
        mx.image.imread(str(tmp_path / "missing.png"))


@pytest.mark.parametrize("interp", [0, 1, 2, 3, 4])
def test_imresize_is_opencvs(rgb, interp):
    got = mx.image.imresize(nd.array(rgb, dtype="uint8"), 7, 5, interp=interp).asnumpy()
    np.testing.assert_array_equal(got, cv2.resize(rgb, (7, 5), interpolation=interp))


def test_imresize_rejects_bad_interp_as_mxnet(rgb):
    with pytest.raises(mx.base.MXNetError, match="interp=-1"):
        mx.image.imresize(nd.array(rgb), 4, 4, interp=-1)


def test_copy_make_border_and_crops(rgb):
    x = nd.array(rgb, dtype="uint8")
    padded = mx.image.copyMakeBorder(x, 1, 2, 3, 4, type=0, value=7).asnumpy()
    np.testing.assert_array_equal(padded, np.pad(rgb, ((1, 2), (3, 4), (0, 0)),
                                                 constant_values=7))
    assert mx.image.resize_short(x, 6).shape == (6, 8, 3)
    crop = mx.image.fixed_crop(x, 2, 3, 5, 4).asnumpy()
    np.testing.assert_array_equal(crop, rgb[3:7, 2:7])
    centre, box = mx.image.center_crop(x, (8, 6))
    assert box == (4, 3, 8, 6)
    np.testing.assert_array_equal(centre.asnumpy(), rgb[3:9, 4:12])
    random.seed(5)
    out, (x0, y0, w, h) = mx.image.random_crop(x, (5, 5))
    np.testing.assert_array_equal(out.asnumpy(), rgb[y0:y0 + 5, x0:x0 + 5])
    assert mx.image.scale_down((16, 12), (20, 10)) == (16, 8)


def test_augmenters_follow_their_formulas(rgb):
    x = nd.array(rgb, dtype="float32")
    random.seed(1)
    alpha = 1.0 + random.uniform(-0.3, 0.3)
    random.seed(1)
    np.testing.assert_allclose(mx.image.BrightnessJitterAug(0.3)(x).asnumpy(),
                               rgb * alpha, rtol=1e-5)
    random.seed(2)
    alpha = 1.0 + random.uniform(-0.4, 0.4)
    luma = (rgb.astype(np.float64) * [0.299, 0.587, 0.114]).sum(axis=2, keepdims=True)
    random.seed(2)
    np.testing.assert_allclose(mx.image.SaturationJitterAug(0.4)(x).asnumpy(),
                               rgb * alpha + luma * (1 - alpha), rtol=1e-4)
    norm = mx.image.ColorNormalizeAug([1.0, 2.0, 3.0], [2.0, 2.0, 2.0])(x).asnumpy()
    np.testing.assert_allclose(norm, (rgb - [1.0, 2.0, 3.0]) / 2.0, rtol=1e-6)
    random.seed(0)
    flipped = mx.image.HorizontalFlipAug(1.0)(x).asnumpy()
    np.testing.assert_array_equal(flipped, rgb[:, ::-1].astype(np.float32))
    assert mx.image.CastAug()(nd.array(rgb, dtype="uint8")).dtype == np.float32


def test_create_augmenter_order_and_output():
    augs = mx.image.CreateAugmenter((3, 8, 8), resize=10, rand_crop=True, rand_mirror=True,
                                    mean=True, std=True, brightness=0.1, pca_noise=0.1)
    kinds = [type(a).__name__ for a in augs]
    assert kinds == ["ResizeAug", "RandomCropAug", "HorizontalFlipAug", "CastAug",
                     "ColorJitterAug", "LightingAug", "ColorNormalizeAug"]
    img = nd.array(np.full((20, 30, 3), 128, np.uint8), dtype="uint8")
    for a in augs:
        img = a(img)
    assert img.shape == (8, 8, 3) and img.dtype == np.float32
    assert '"resizeaug"' in augs[0].dumps()
    with pytest.raises(GpundaError, match="rand_resize"):
        mx.image.CreateAugmenter((3, 8, 8), rand_resize=True)


def test_image_functions_and_iterators_give_np_arrays_in_numpy_mode(tmp_path):
    # MXNet 1.9.1 under npx.set_np(): imread/imdecode/imresize/resize_short/ImageIter batches
    # are mxnet.numpy.ndarray (its image functions run their _npi ops); outside, NDArray
    import cv2
    from gpunda import np as mnp
    img = np.random.RandomState(2).randint(0, 255, (7, 9, 3)).astype("uint8")
    cv2.imwrite(str(tmp_path / "x.png"), img[:, :, ::-1])
    buf = (tmp_path / "x.png").read_bytes()
    with mx.util.np_shape(True), mx.util.np_array(True):
        got = [mx.image.imread(str(tmp_path / "x.png")), mx.image.imdecode(buf),
               mx.image.imresize(mnp.array(img, dtype="uint8"), 4, 3),
               mx.image.resize_short(mnp.array(img, dtype="uint8"), 4),
               mx.image.ResizeAug(4)(mnp.array(img, dtype="uint8"))]
        assert all(type(g) is mnp.ndarray for g in got)
        it = mx.image.ImageIter(2, (3, 7, 9), imglist=[[1.0, "x.png"], [0.0, "x.png"]],
                                path_root=str(tmp_path))
        batch = it.next()
        assert type(batch.data[0]) is mnp.ndarray and type(batch.label[0]) is mnp.ndarray
    np.testing.assert_array_equal(got[0].asnumpy(), img)
    np.testing.assert_array_equal(batch.data[0].asnumpy()[1], img.transpose(2, 0, 1))
    assert batch.label[0].asnumpy().tolist() == [1.0, 0.0]
    assert type(mx.image.imdecode(buf)) is mx.nd.NDArray
    assert type(mx.image.imresize(mx.nd.array(img, dtype="uint8"), 4, 3)) is mx.nd.NDArray


def test_opencv_is_a_dependency_loaded_on_first_use():
    # MXNet's wheel bundles OpenCV: a plain install of gpunda brings opencv-python-headless,
    # and `import gpunda` stays free of it until an image function runs
    import os
    import subprocess
    import sys
    try:
        import tomllib
    except ImportError:         # Python 3.10
        tomllib = pytest.importorskip("tomli")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    assert any(d.startswith("opencv-python-headless") for d in deps)
    code = ("import sys, gpunda as mx; mx.nd.ones((2,)).asnumpy(); "
            "assert 'cv2' not in sys.modules; "
            "r = mx.image.imresize(mx.nd.ones((4, 6, 3), dtype='uint8'), 3, 2); "
            "assert r.shape == (2, 3, 3) and 'cv2' in sys.modules")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


def test_opencv_results_are_mxnets():
    # recorded from MXNet 1.9.1 (tests/data/make_image_module_fixture.py); it links OpenCV
    # 3.4.2: bicubic (interp=2) uint8 pixels may differ by 1 from a newer OpenCV's, the
    # other interpolations are exact
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                        "image_module_mxnet191.npz")
    ref = np.load(path)
    img = ref["img"]
    ok, png = cv2.imencode(".png", img[:, :, ::-1])
    src = mx.image.imdecode(png.tobytes())
    np.testing.assert_array_equal(src.asnumpy(), img)
    T = mx.gluon.data.vision.transforms
    for interp in range(5):
        got = {f"imresize_up_{interp}": mx.image.imresize(src, 47, 40, interp=interp),
               f"imresize_down_{interp}": mx.image.imresize(src, 12, 9, interp=interp),
               f"resize_short_{interp}": mx.image.resize_short(src, 16, interp=interp),
               f"T_resize_{interp}": T.Resize((13, 17), interpolation=interp)(src),
               f"T_resize_keep_{interp}": T.Resize(15, keep_ratio=True,
                                                   interpolation=interp)(src)}
        for k, v in got.items():
            want = ref[k]
            assert v.shape == want.shape and v.dtype == want.dtype, k
            diff = np.abs(v.asnumpy().astype(np.int16) - want.astype(np.int16))
            assert diff.max() <= (1 if interp == 2 else 0), (k, diff.max())
    np.testing.assert_array_equal(mx.image.center_crop(src, (10, 8))[0].asnumpy(),
                                  ref["center_crop"])
    np.testing.assert_array_equal(T.CenterCrop((10, 8))(src).asnumpy(), ref["T_center_crop"])


def test_image_cv2_and_get_interp_method_match_mxnet():
    import importlib.util
    import gpunda.image
    if importlib.util.find_spec("cv2") is None:
        assert gpunda.image.cv2 is None          # as MXNet without OpenCV's Python module
    else:
        import cv2
        assert gpunda.image.cv2 is cv2
    from gpunda.image.image import _get_interp_method as g
    # MXNet 1.9.1's answers
    assert [g(9, (10, 10, 20, 20)), g(9, (10, 10, 5, 5)), g(9, (10, 10, 20, 5)), g(9), g(3)] \
        == [2, 3, 1, 2, 3]
    assert all(0 <= g(10) <= 4 for _ in range(20))
    with pytest.raises(ValueError, match="Unknown interp method 7"):
        g(7)
