"""gluon.data.vision: datasets read back from small files written in the original
formats, and the transforms against NumPy references and the image ops."""
from __future__ import annotations

import gzip
import os
import random
import struct
import tarfile

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError
from gpunda.gluon.data import vision
from gpunda.gluon.data.vision import transforms as T

cv2 = pytest.importorskip("cv2")
nd = mx.nd


# ----------------------------------------------------------------------------
# datasets


def _write_idx(path, arr):
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(">" + "I" * arr.ndim,
                                                                   *arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + arr.astype(np.uint8).tobytes())


@pytest.mark.parametrize("cls", [vision.MNIST, vision.FashionMNIST])
def test_mnist_reads_idx_gz(tmp_path, cls):
    rng = np.random.RandomState(0)
    images = rng.randint(0, 256, (4, 28, 28)).astype(np.uint8)
    labels = np.array([3, 1, 4, 1], np.uint8)
    _write_idx(str(tmp_path / "t10k-images-idx3-ubyte.gz"), images)
    _write_idx(str(tmp_path / "t10k-labels-idx1-ubyte.gz"), labels)
    ds = cls(root=str(tmp_path), train=False)
    assert len(ds) == 4
    img, lab = ds[2]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy()[:, :, 0], images[2])
    assert lab == 4 and ds._label.dtype == np.int32
    ds = cls(root=str(tmp_path), train=False, transform=lambda d, l: (d.astype("float32"), l + 1))
    assert ds[0][0].dtype == np.float32 and ds[0][1] == 4
    with pytest.raises(GpundaError, match="train-labels-idx1-ubyte.gz"):
        cls(root=str(tmp_path), train=True)


def _cifar_records(rng, n, label_bytes):
    images = rng.randint(0, 256, (n, 3, 32, 32)).astype(np.uint8)
    labels = rng.randint(0, 10, (n, label_bytes)).astype(np.uint8)
    raw = np.concatenate([labels, images.reshape(n, -1)], axis=1)
    return images.transpose(0, 2, 3, 1), labels, raw.tobytes()


def test_cifar10_reads_binary_batches_and_archive(tmp_path):
    rng = np.random.RandomState(1)
    img, lab, raw = _cifar_records(rng, 3, 1)
    (tmp_path / "test_batch.bin").write_bytes(raw)
    ds = vision.CIFAR10(root=str(tmp_path), train=False)
    assert len(ds) == 3 and ds[1][0].shape == (32, 32, 3)
    np.testing.assert_array_equal(ds[1][0].asnumpy(), img[1])
    assert ds[2][1] == lab[2, 0]
    # the original archive, extracted on first use into cifar-10-batches-bin/
    arch = tmp_path / "arch"
    src = arch / "cifar-10-batches-bin"
    src.mkdir(parents=True)
    batches = [_cifar_records(rng, 2, 1) for _ in range(5)]
    for i, (_, _, r) in enumerate(batches, 1):
        (src / f"data_batch_{i}.bin").write_bytes(r)
    with tarfile.open(arch / "cifar-10-binary.tar.gz", "w:gz") as tar:
        tar.add(src, arcname="cifar-10-batches-bin")
    for f in src.iterdir():
        f.unlink()
    src.rmdir()
    ds = vision.CIFAR10(root=str(arch), train=True)
    assert len(ds) == 10
    np.testing.assert_array_equal(ds[9][0].asnumpy(), batches[4][0][1])
    with pytest.raises(GpundaError, match="data_batch_1.bin"):
        vision.CIFAR10(root=str(tmp_path / "empty"), train=True)


def test_cifar100_coarse_and_fine_labels(tmp_path):
    img, lab, raw = _cifar_records(np.random.RandomState(2), 4, 2)
    (tmp_path / "train.bin").write_bytes(raw)
    coarse = vision.CIFAR100(root=str(tmp_path))
    fine = vision.CIFAR100(root=str(tmp_path), fine_label=True)
    assert [coarse[i][1] for i in range(4)] == list(lab[:, 0])
    assert [fine[i][1] for i in range(4)] == list(lab[:, 1])
    np.testing.assert_array_equal(fine[3][0].asnumpy(), img[3])


def _image_folder(tmp_path):
    rng = np.random.RandomState(3)
    imgs = {}
    for cls, ext in (("cat", ".png"), ("dog", ".png"), ("emu", ".jpg")):
        (tmp_path / cls).mkdir()
        for i in range(2):
            rgb = rng.randint(0, 256, (5, 6, 3)).astype(np.uint8)
            path = str(tmp_path / cls / f"{i}{ext}")
            cv2.imwrite(path, cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
            imgs[path] = rgb
    (tmp_path / "notes.txt").write_text("not a class")
    (tmp_path / "cat" / "readme.md").write_text("not an image")
    return imgs


def test_image_folder_dataset(tmp_path):
    imgs = _image_folder(tmp_path)
    with pytest.warns(UserWarning):
        ds = vision.ImageFolderDataset(str(tmp_path))
    assert ds.synsets == ["cat", "dog", "emu"] and len(ds) == 6
    img, label = ds[3]
    path = ds.items[3][0]
    assert label == 1 and img.shape == (5, 6, 3) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), imgs[path])        # PNG is lossless, RGB
    jpg, _ = ds[5]                                # lossy: compare with OpenCV's decode, RGB
    np.testing.assert_array_equal(jpg.asnumpy(), cv2.imread(ds.items[5][0])[:, :, ::-1])
    with pytest.warns(UserWarning):
        gray = vision.ImageFolderDataset(str(tmp_path), flag=0)[0][0]
    assert gray.shape == (5, 6, 1)
    with pytest.raises(GpundaError, match="does not exist"):
        vision.ImageFolderDataset(str(tmp_path / "nowhere"))


def test_image_list_dataset(tmp_path):
    imgs = _image_folder(tmp_path)
    names = sorted(os.path.relpath(p, tmp_path) for p in imgs)
    (tmp_path / "all.lst").write_text(
        "".join(f"{i}\t{i % 3}\t{n}\n" for i, n in enumerate(names)))
    ds = vision.ImageListDataset(str(tmp_path), "all.lst")
    assert len(ds) == 6 and ds[4][1] == 1.0
    np.testing.assert_array_equal(ds[0][0].asnumpy(), imgs[str(tmp_path / names[0])])
    ds = vision.ImageListDataset(str(tmp_path), [[1.0, 2.0, names[1]]])
    np.testing.assert_array_equal(ds[0][1], [1.0, 2.0])


# ----------------------------------------------------------------------------
# transforms


def test_transforms_namespace_has_mxnet_names():
    for name in ("Compose", "Cast", "ToTensor", "Normalize", "Resize", "CenterCrop", "CropResize",
                 "RandomResizedCrop", "RandomFlipLeftRight", "RandomFlipTopBottom",
                 "RandomBrightness", "RandomContrast", "RandomSaturation", "RandomHue",
                 "RandomColorJitter", "RandomLighting", "RandomRotation", "Rotate",
                 "RandomApply", "Block", "HybridBlock", "Sequential", "HybridSequential"):
        assert hasattr(T, name), name


def test_to_tensor_normalize_cast():
    x = np.random.RandomState(4).randint(0, 256, (6, 5, 3)).astype(np.uint8)
    t = T.ToTensor()(nd.array(x, dtype="uint8"))
    np.testing.assert_allclose(t.asnumpy(), x.transpose(2, 0, 1) / np.float32(255), rtol=1e-6)
    n = T.Normalize(mean=(0, 1, 2), std=(3, 2, 1))(t)
    ref = (x.transpose(2, 0, 1) / np.float32(255) - np.array([0, 1, 2])[:, None, None]) \
        / np.array([3, 2, 1])[:, None, None]
    np.testing.assert_allclose(n.asnumpy(), ref, rtol=1e-5)
    assert T.Cast("float64")(t).dtype == np.float64
    with pytest.raises(GpundaError):
        T.Normalize(mean=(0, 1, 2), std=(3, 2, 1))(nd.ones((5, 4, 3, 3)))


def test_resize_crop_resize_center_crop():
    x = nd.array(np.random.RandomState(5).uniform(0, 255, (30, 20, 3)).astype(np.float32))
    np.testing.assert_allclose(T.Resize(10)(x).asnumpy(),
                               cv2.resize(x.asnumpy(), (10, 10), interpolation=1), rtol=1e-5)
    assert T.Resize(15, keep_ratio=True)(x).shape == (22, 15, 3)
    assert T.Resize((8, 6))(nd.ones((2, 30, 20, 3))).shape == (2, 6, 8, 3)
    data = nd.arange(60).reshape((5, 4, 3)).astype("uint8")
    out = T.CropResize(0, 0, 3, 2)(data).asnumpy()
    assert out.sum() == 180 and list(out[0:2, 1, 1]) == [4, 16]      # MXNet's own test values
    out = T.CropResize(0, 0, 10, 5, (4, 4), 1)(x)
    np.testing.assert_allclose(out.asnumpy(), cv2.resize(x.asnumpy()[:5, :10], (4, 4)),
                               rtol=1e-5)
    with pytest.raises(GpundaError):
        T.CropResize(15, 20, 20, 50)(x)
    c = T.CenterCrop((10, 6))(x)
    np.testing.assert_array_equal(c.asnumpy(), x.asnumpy()[12:18, 5:15])
    assert T.CenterCrop(40)(x).shape == (40, 40, 3)                  # upsamples


def test_random_resized_crop_and_random_apply_follow_python_random():
    x = nd.ones((40, 30, 3), dtype="uint8")
    random.seed(0)
    a = T.RandomResizedCrop(12)(nd.array(np.arange(3600).reshape(40, 30, 3) % 251,
                                         dtype="uint8"))
    random.seed(0)
    b = T.RandomResizedCrop(12)(nd.array(np.arange(3600).reshape(40, 30, 3) % 251,
                                         dtype="uint8"))
    assert a.shape == (12, 12, 3)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    apply = T.Compose([T.RandomApply(T.Compose([T.Resize(20)]), 0.5)])
    random.seed(1)
    hits = sum(apply(x).shape[0] == 20 for _ in range(200))
    assert 70 < hits < 130


def test_rotate_matches_mxnet_test_values():
    img = nd.array([[[0., 0., 0.], [0., 0., 1.], [0., 0., 0.]]])
    expected = {90.: [[0, 1, 0], [0, 0, 0], [0, 0, 0]], 180.: [[0, 0, 0], [1, 0, 0], [0, 0, 0]],
                270.: [[0, 0, 0], [0, 0, 0], [0, 1, 0]], 360.: [[0, 0, 0], [0, 0, 1], [0, 0, 0]]}
    for deg, ref in expected.items():
        np.testing.assert_allclose(T.Rotate(deg)(img).asnumpy()[0], ref, atol=1e-6)
    with pytest.raises(TypeError):
        T.Rotate(10.)(nd.ones((3, 30, 60), dtype="uint8"))
    assert T.Rotate(10., zoom_in=True)(nd.ones((2, 3, 30, 60))).shape == (2, 3, 30, 60)
    # zoom_in leaves no padding: a constant image stays constant away from the rim
    z = T.Rotate(30., zoom_in=True)(nd.ones((1, 20, 20))).asnumpy()
    np.testing.assert_allclose(z[0, 2:-2, 2:-2], 1.0, atol=1e-5)
    data = nd.random.normal(shape=(3, 8, 9))
    np.testing.assert_array_equal(T.RandomRotation([-100., 100.], rotate_with_proba=0.0)(data)
                                  .asnumpy(), data.asnumpy())
    with pytest.raises(ValueError):
        T.RandomRotation([-10, 10.], rotate_with_proba=1.1)


def test_hybridized_random_transforms_draw_per_call():
    x = nd.array(np.arange(4 * 5 * 3).reshape(4, 5, 3) % 200, dtype="uint8")
    net = T.Compose([T.RandomFlipLeftRight(), T.RandomBrightness(0.0), T.ToTensor()])
    mx.random.seed(2)
    outs = [net(x).asnumpy() for _ in range(12)]
    plain = x.asnumpy().transpose(2, 0, 1) / np.float32(255)
    flipped = x.asnumpy()[:, ::-1].transpose(2, 0, 1) / np.float32(255)
    kinds = [np.allclose(o, flipped) for o in outs]
    assert all(np.allclose(o, flipped) or np.allclose(o, plain) for o in outs)
    assert 0 < sum(kinds) < 12


def test_color_transforms_keep_shape_and_dtype():
    x = nd.array(np.random.RandomState(6).randint(0, 256, (7, 6, 3)), dtype="uint8")
    for t in (T.RandomBrightness(0.3), T.RandomContrast(0.3), T.RandomSaturation(0.3),
              T.RandomHue(0.1), T.RandomColorJitter(0.1, 0.1, 0.1, 0.1), T.RandomLighting(0.1),
              T.RandomFlipTopBottom()):
        out = t(x)
        assert out.shape == (7, 6, 3) and out.dtype == np.uint8, t
    out = T.RandomBrightness(0.5)(nd.array(x.asnumpy().astype(np.float32)))
    ratio = out.asnumpy() / np.maximum(x.asnumpy(), 1)
    assert 0.5 <= ratio[x.asnumpy() > 0].min() and ratio.max() <= 1.5 + 1e-6
