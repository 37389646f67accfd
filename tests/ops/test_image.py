"""The image ops (``nd.image.*``, ``sym.image.*``) against NumPy references and
MXNet 1.9.1's outputs (tests/data/image_mxnet191.npz, made by
tests/data/make_image_fixture.py)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd as ag
from gpunda.base import GpundaError

nd = mx.nd
FIX = np.load(os.path.join(os.path.dirname(__file__), "..", "data", "image_mxnet191.npz"))
IMG_U8, IMG_F32, BATCH_U8, CHW = FIX["img_u8"], FIX["img_f32"], FIX["batch_u8"], FIX["chw"]


def _u8(a):
    return nd.array(a, dtype="uint8")


def test_namespaces_list_mxnet_names():
    names = {"adjust_lighting", "crop", "flip_left_right", "flip_top_bottom", "normalize",
             "random_brightness", "random_color_jitter", "random_contrast",
             "random_flip_left_right", "random_flip_top_bottom", "random_hue",
             "random_lighting", "random_saturation", "resize", "to_tensor"}
    assert names <= set(dir(nd.image)) and names <= set(dir(mx.sym.image))
    assert not hasattr(nd.image, "_backward_image_crop")


def test_to_tensor_matches_numpy_and_mxnet():
    out = nd.image.to_tensor(_u8(IMG_U8))
    assert out.dtype == np.float32 and out.shape == (3, 5, 7)
    np.testing.assert_allclose(out.asnumpy(), IMG_U8.transpose(2, 0, 1) / np.float32(255),
                               rtol=1e-6)
    np.testing.assert_array_equal(out.asnumpy(), FIX["to_tensor_u8"])
    np.testing.assert_array_equal(nd.image.to_tensor(_u8(BATCH_U8)).asnumpy(),
                                  FIX["to_tensor_batch"])
    np.testing.assert_allclose(nd.image.to_tensor(nd.array(IMG_F32)).asnumpy(),
                               FIX["to_tensor_f32"], rtol=1e-6)
    with pytest.raises(GpundaError, match="to_tensor"):
        nd.image.to_tensor(nd.ones((2, 2, 4, 4, 3)))


def test_normalize():
    out = nd.image.normalize(nd.array(CHW), mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 2.0))
    ref = (CHW - np.array([0.1, 0.2, 0.3], np.float32)[:, None, None]) \
        / np.array([0.5, 0.25, 2.0], np.float32)[:, None, None]
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6)
    np.testing.assert_allclose(out.asnumpy(), FIX["normalize"], rtol=1e-6)
    batch = nd.image.normalize(nd.array(np.stack([CHW, CHW])), mean=0.5, std=2.0)
    np.testing.assert_allclose(batch.asnumpy()[1], (CHW - 0.5) / 2, rtol=1e-6)
    with pytest.raises(GpundaError, match="mean"):
        nd.image.normalize(nd.array(CHW))          # MXNet's 4-element default mean
    with pytest.raises(GpundaError, match="channel"):
        nd.image.normalize(nd.ones((4, 3, 3)), mean=0.0, std=1.0)


def test_normalize_gradient_divides_by_std():
    x = nd.array(CHW)
    x.attach_grad()
    with ag.record():
        y = nd.image.normalize(x, mean=(0.1, 0.2, 0.3), std=(0.5, 0.25, 2.0))
    y.backward()
    ref = np.broadcast_to(1 / np.array([0.5, 0.25, 2.0], np.float32)[:, None, None], CHW.shape)
    np.testing.assert_allclose(x.grad.asnumpy(), ref, rtol=1e-6)


def test_crop_and_its_gradient():
    out = nd.image.crop(_u8(IMG_U8), 1, 2, 4, 3)
    np.testing.assert_array_equal(out.asnumpy(), IMG_U8[2:5, 1:5])
    np.testing.assert_array_equal(out.asnumpy(), FIX["crop"])
    np.testing.assert_array_equal(nd.image.crop(_u8(BATCH_U8), 2, 1, 3, 2).asnumpy(),
                                  FIX["crop_batch"])
    x = nd.array(IMG_F32)
    x.attach_grad()
    head = np.random.RandomState(0).rand(3, 4, 3).astype(np.float32)
    with ag.record():
        y = nd.image.crop(x, 1, 2, 4, 3)
    y.backward(nd.array(head))
    ref = np.zeros_like(IMG_F32)
    ref[2:5, 1:5] = head
    np.testing.assert_array_equal(x.grad.asnumpy(), ref)
    for bad in ((0, 0, 0, 2), (5, 0, 3, 2), (0, 4, 2, 2)):
        with pytest.raises(GpundaError, match="_image_crop"):
            nd.image.crop(_u8(IMG_U8), *bad)


def test_flips_and_gradients():
    np.testing.assert_array_equal(nd.image.flip_left_right(nd.array(IMG_F32)).asnumpy(),
                                  IMG_F32[:, ::-1])
    np.testing.assert_array_equal(nd.image.flip_top_bottom(nd.array(IMG_F32)).asnumpy(),
                                  IMG_F32[::-1])
    # MXNet's out-of-place flip swaps pairs and never writes the middle column of an odd
    # width (it holds whatever memory held); every other pixel is MXNet's
    keep = np.arange(IMG_F32.shape[1]) != IMG_F32.shape[1] // 2
    np.testing.assert_array_equal(
        nd.image.flip_left_right(nd.array(IMG_F32)).asnumpy()[:, keep], FIX["flip_lr"][:, keep])
    x = nd.array(IMG_F32)
    x.attach_grad()
    head = np.arange(IMG_F32.size, dtype=np.float32).reshape(IMG_F32.shape)
    with ag.record():
        y = nd.image.flip_left_right(x)
    y.backward(nd.array(head))
    np.testing.assert_array_equal(x.grad.asnumpy(), head[:, ::-1])
    with pytest.raises(GpundaError, match="channel"):
        nd.image.flip_left_right(nd.ones((3, 3, 4)))


def test_random_flips_are_seeded_and_either_way():
    x = nd.array(IMG_F32)
    mx.random.seed(3)
    first = [nd.image.random_flip_left_right(x).asnumpy() for _ in range(12)]
    mx.random.seed(3)
    again = [nd.image.random_flip_left_right(x).asnumpy() for _ in range(12)]
    flipped = [np.array_equal(a, IMG_F32[:, ::-1]) for a in first]
    assert all(f or np.array_equal(a, IMG_F32) for a, f in zip(first, flipped))
    assert 0 < sum(flipped) < 12
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    x.attach_grad()
    head = np.arange(IMG_F32.size, dtype=np.float32).reshape(IMG_F32.shape)
    for _ in range(4):
        with ag.record():
            y = nd.image.random_flip_top_bottom(x)
        y.backward(nd.array(head))
        did = np.array_equal(y.asnumpy(), IMG_F32[::-1])
        np.testing.assert_array_equal(x.grad.asnumpy(), head[::-1] if did else head)


@pytest.mark.parametrize("interp", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("kind", ["u8", "f32"])
def test_resize_gives_mxnet_pixels(interp, kind):
    src = IMG_U8 if kind == "u8" else IMG_F32
    for tag, size in (("up", (11, 9)), ("down", (4, 3))):
        out = nd.image.resize(nd.array(src, dtype=src.dtype), size, interp=interp)
        ref = FIX[f"resize_{kind}_{interp}_{tag}"]
        assert out.shape == ref.shape and out.dtype == ref.dtype
        # MXNet bundles OpenCV 3.4; area upsampling of uint8 rounds one level apart there
        atol = 1 if kind == "u8" else 1e-3
        np.testing.assert_allclose(out.asnumpy().astype(np.float64), ref, atol=atol, rtol=1e-5)


def test_resize_sizes_batch_and_errors():
    np.testing.assert_array_equal(nd.image.resize(_u8(BATCH_U8), (3, 5)).asnumpy(),
                                  FIX["resize_batch"])
    np.testing.assert_array_equal(nd.image.resize(_u8(IMG_U8), 4, keep_ratio=True).asnumpy(),
                                  FIX["resize_keep"])
    np.testing.assert_array_equal(nd.image.resize(_u8(IMG_U8), 4).asnumpy(),
                                  FIX["resize_square"])
    assert nd.image.resize(nd.ones((2, 3, 1)), (4, 5)).shape == (5, 4, 1)
    for size in (-3, (1, 2, 3)):
        with pytest.raises(GpundaError, match="size"):
            nd.image.resize(_u8(IMG_U8), size)
    with pytest.raises(GpundaError, match="dtype"):
        nd.image.resize(nd.ones((4, 4, 3), dtype="float16"), 2)


def test_resize_without_cv2_names_the_extra(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_cv2(name, *a, **k):
        if name == "cv2":
            raise ImportError("no cv2")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_cv2)
    with pytest.raises(GpundaError, match=r"pip install 'gpunda\[image\]'"):
        nd.image.resize(_u8(IMG_U8), 3)


@pytest.mark.parametrize("name", ["brightness", "contrast", "saturation", "hue"])
@pytest.mark.parametrize("kind", ["u8", "f32"])
def test_color_ops_with_fixed_factor_match_mxnet(name, kind):
    f = 0.25 if name == "hue" else 1.4
    src = IMG_U8 if kind == "u8" else IMG_F32
    out = getattr(nd.image, "random_" + name)(nd.array(src, dtype=src.dtype), f, f)
    ref = FIX[f"{name}_{kind}"]
    assert out.dtype == ref.dtype
    # float32 rounding before uint8 truncation may land one level apart
    atol = 1 if kind == "u8" else 2e-3
    np.testing.assert_allclose(out.asnumpy().astype(np.float64), ref, atol=atol, rtol=1e-5)


def test_brightness_contrast_numpy_reference():
    x = IMG_F32
    out = nd.image.random_brightness(nd.array(x), 0.5, 0.5).asnumpy()
    np.testing.assert_allclose(out, x * 0.5, rtol=1e-6)
    gray = (x * np.array([0.299, 0.587, 0.114], np.float32)).sum(-1).mean()
    out = nd.image.random_contrast(nd.array(x), 0.3, 0.3).asnumpy()
    np.testing.assert_allclose(out, x * 0.3 + 0.7 * gray, rtol=1e-4)
    out = nd.image.random_contrast(_u8(FIX["gray_u8"]), 0.6, 0.6).asnumpy()
    np.testing.assert_allclose(out, FIX["contrast_gray"], atol=1)


def test_hue_full_turn_is_identity_and_seeded():
    out = nd.image.random_hue(nd.array(IMG_F32), 1.0, 1.0).asnumpy()
    np.testing.assert_allclose(out, IMG_F32, atol=2e-3)
    mx.random.seed(11)
    a = nd.image.random_color_jitter(_u8(IMG_U8), 0.3, 0.3, 0.3, 0.1).asnumpy()
    mx.random.seed(11)
    b = nd.image.random_color_jitter(_u8(IMG_U8), 0.3, 0.3, 0.3, 0.1).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, IMG_U8)


def test_lighting():
    for kind, src in (("u8", IMG_U8), ("f32", IMG_F32)):
        out = nd.image.adjust_lighting(nd.array(src, dtype=src.dtype), alpha=(0.3, -0.2, 0.1))
        np.testing.assert_allclose(out.asnumpy().astype(np.float64),
                                   FIX[f"adjust_lighting_{kind}"], atol=1e-3)
    mx.random.seed(5)
    a = nd.image.random_lighting(nd.array(IMG_F32), 0.1).asnumpy()
    mx.random.seed(5)
    b = nd.image.random_lighting(nd.array(IMG_F32), 0.1).asnumpy()
    np.testing.assert_array_equal(a, b)
    shift = a - IMG_F32                     # one constant per channel
    np.testing.assert_allclose(shift, np.broadcast_to(shift[0, 0], shift.shape), atol=1e-3)
    with pytest.raises(GpundaError, match="alpha"):
        nd.image.adjust_lighting(nd.array(IMG_F32), alpha=(0.1, 0.2))


def test_symbol_image_ops_bind_and_infer():
    data = mx.sym.var("data")
    s = mx.sym.image.to_tensor(mx.sym.image.resize(data, (4, 3)))
    _, out_shapes, _ = s.infer_shape(data=(5, 7, 3))
    assert out_shapes == [(3, 3, 4)]
    ex = s.bind(mx.cpu(), {"data": nd.array(IMG_F32)})
    ref = nd.image.to_tensor(nd.image.resize(nd.array(IMG_F32), (4, 3)))
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), ref.asnumpy(), rtol=1e-6)


@pytest.mark.gpu
def test_image_ops_on_gpu_match_cpu():
    gpu = mx.gpu(0)
    for fn in (lambda a: nd.image.resize(a, (4, 3)), nd.image.to_tensor,
               nd.image.flip_left_right, lambda a: nd.image.crop(a, 1, 1, 3, 2),
               lambda a: nd.image.random_hue(a, 0.3, 0.3),
               lambda a: nd.image.random_contrast(a, 1.3, 1.3),
               lambda a: nd.image.adjust_lighting(a, alpha=(0.1, 0.2, 0.3))):
        for src in (IMG_U8, IMG_F32):
            cpu_out = fn(nd.array(src, dtype=src.dtype)).asnumpy()
            gpu_in = nd.array(src, dtype=src.dtype, ctx=gpu)
            gpu_out = fn(gpu_in)
            assert gpu_out.context == gpu
            np.testing.assert_allclose(gpu_out.asnumpy().astype(np.float64), cpu_out,
                                       atol=1 if src.dtype == np.uint8 else 1e-3)
