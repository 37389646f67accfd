"""Vision datasets (MXNet 1.9.1's ``gluon.data.vision.datasets``) read from local
files in their original formats. gpunda downloads nothing: a missing file
raises a GpundaError saying which file to put where.

- MNIST / FashionMNIST: the idx files ``train-images-idx3-ubyte.gz`` & co.
- CIFAR10 / CIFAR100: the *binary* version (``cifar-10-batches-bin``,
  ``cifar-100-binary``), as MXNet reads it: the ``.bin`` batches in ``root``
  or in that sub-folder, or the ``.tar.gz`` archive in ``root`` (extracted on
  first use).
- ImageFolderDataset / ImageListDataset: image files decoded with OpenCV.

The default root is MXNet's, ``$MXNET_HOME/datasets/<name>`` with
``MXNET_HOME`` defaulting to ``~/.mxnet``.
"""
from __future__ import annotations

import os
import struct
import warnings

import numpy as np

from gpunda.base import GpundaError
from gpunda.util import is_np_array
from gpunda.gluon.data.dataset import Dataset, _DownloadedDataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset",
           "ImageFolderDataset", "ImageListDataset"]


def _data_dir():
    return os.path.expanduser(os.environ.get("MXNET_HOME", os.path.join("~", ".mxnet")))


def _default_root(name):
    return os.path.join(_data_dir(), "datasets", name)


def _missing(cls, path, what):
    return GpundaError(f"{cls}: {path} does not exist; gpunda downloads nothing, so put {what} "
                       f"there (or pass root= the folder that holds it)")


def read_idx(path):
    """The array in an idx file (gzip-compressed or not): MNIST's format."""
    import gzip
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        zero, dtype_code, ndim = struct.unpack(">HBB", f.read(4))
        if zero != 0 or dtype_code != 0x08:
            raise GpundaError(f"{path} is not an idx file of unsigned bytes "
                              f"(magic {zero:#x}, type {dtype_code:#x})")
        shape = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
        data = np.frombuffer(f.read(), dtype=np.uint8)
    if data.size != int(np.prod(shape)):
        raise GpundaError(f"{path}: holds {data.size} bytes of data, its header says {shape}")
    return data.reshape(shape)


class MNIST(_DownloadedDataset):
    """MNIST handwritten digits: (28, 28, 1) uint8 images, int32 labels.

    Args:
        root: folder with ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``
            (train) or ``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz`` (test).
        train: the training set (else the test set).
        transform: ``fn(data, label) -> sample``.
    """

    _files = {True: ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
              False: ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}
    _source = "http://yann.lecun.com/exdb/mnist/"

    def __init__(self, root=_default_root("mnist"), train=True, transform=None):
        self._train = train
        super().__init__(root, transform)

    def _find(self, name):
        for candidate in (name, name[:-3]):          # the .gz file, or it unpacked
            path = os.path.join(self._root, candidate)
            if os.path.exists(path):
                return path
        raise _missing(type(self).__name__, os.path.join(self._root, name),
                       f"{name} (from {self._source})")

    def _get_data(self):
        from gpunda import ndarray as nd
        data_name, label_name = self._files[bool(self._train)]
        label = read_idx(self._find(label_name)).astype(np.int32)
        data = read_idx(self._find(data_name))
        if data.shape[0] != label.shape[0]:
            raise GpundaError(f"{type(self).__name__}: {data.shape[0]} images but "
                              f"{label.shape[0]} labels in {self._root}")
        self._data = _as_array(nd.array(data.reshape(data.shape[:3] + (1,)), dtype=np.uint8))
        self._label = _as_array(nd.array(label, dtype=label.dtype), label)


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando): MNIST's format and file names, clothing classes."""

    _source = "https://github.com/zalandoresearch/fashion-mnist"

    def __init__(self, root=_default_root("fashion-mnist"), train=True, transform=None):
        super().__init__(root, train, transform)


class CIFAR10(_DownloadedDataset):
    """CIFAR-10: (32, 32, 3) uint8 images, int32 labels, from the binary version.

    Args:
        root: folder with ``data_batch_1.bin`` .. ``data_batch_5.bin`` and
            ``test_batch.bin`` (or ``cifar-10-batches-bin/`` holding them, or the
            archive ``cifar-10-binary.tar.gz``).
        train: the training set (else the test set).
        transform: ``fn(data, label) -> sample``.
    """

    _archive = "cifar-10-binary.tar.gz"
    _subdir = "cifar-10-batches-bin"
    _train_files = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
    _test_files = ("test_batch.bin",)
    _label_bytes = 1

    def __init__(self, root=_default_root("cifar10"), train=True, transform=None):
        self._train = train
        super().__init__(root, transform)

    def _label_column(self):
        return 0

    def _read_batch(self, path):
        n = self._label_bytes
        with open(path, "rb") as f:
            raw = np.frombuffer(f.read(), dtype=np.uint8)
        if raw.size % (3072 + n):
            raise GpundaError(f"{type(self).__name__}: {path} is not a CIFAR binary batch "
                              f"(size {raw.size} is not a multiple of {3072 + n})")
        raw = raw.reshape(-1, 3072 + n)
        images = raw[:, n:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return images, raw[:, self._label_column()].astype(np.int32)

    def _folder(self, names):
        for folder in (self._root, os.path.join(self._root, self._subdir)):
            if all(os.path.exists(os.path.join(folder, n)) for n in names):
                return folder
        return None

    def _get_data(self):
        from gpunda import ndarray as nd
        names = self._train_files if self._train else self._test_files
        folder = self._folder(names)
        archive = os.path.join(self._root, self._archive)
        if folder is None and os.path.exists(archive):
            import tarfile
            with tarfile.open(archive) as tar:
                # the "data" filter refuses paths outside root (Pythons that have it)
                safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tar.extractall(self._root, **safe)
            folder = self._folder(names)
        if folder is None:
            first = next(n for n in names if not os.path.exists(os.path.join(self._root, n)))
            raise _missing(type(self).__name__, os.path.join(self._root, first),
                           f"the binary version ({', '.join(names)}, or the archive "
                           f"{self._archive} from https://www.cs.toronto.edu/~kriz/cifar.html)")
        data, label = zip(*(self._read_batch(os.path.join(folder, n)) for n in names))
        self._data = _as_array(nd.array(np.concatenate(data), dtype=np.uint8))
        label = np.concatenate(label)
        self._label = _as_array(nd.array(label, dtype=label.dtype), label)


class CIFAR100(CIFAR10):
    """CIFAR-100 (binary version: ``train.bin``, ``test.bin``); ``fine_label`` picks the
    100 fine classes instead of the 20 coarse ones."""

    _archive = "cifar-100-binary.tar.gz"
    _subdir = "cifar-100-binary"
    _train_files = ("train.bin",)
    _test_files = ("test.bin",)
    _label_bytes = 2

    def __init__(self, root=_default_root("cifar100"), fine_label=False, train=True,
                 transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_column(self):
        return int(bool(self._fine_label))


# ----------------------------------------------------------------------------
# image files

_EXTS = (".jpg", ".jpeg", ".png")


def _as_array(arr, legacy=None):
    """``arr`` (an NDArray) as user code gets it: an ``mx.np.ndarray`` under NumPy
    semantics, as MXNet 1.9.1's datasets switch; else ``arr``, or ``legacy`` when given
    (MNIST's and CIFAR's labels stay NumPy arrays outside NumPy semantics)."""
    if is_np_array():
        return arr.as_np_ndarray()
    return arr if legacy is None else legacy


def imread(path, flag=1):
    """An image file as an HWC uint8 NDArray, RGB (flag=1) or grey (flag=0), as
    MXNet's ``image.imread``."""
    from gpunda import ndarray as nd
    from gpunda.ops.image.transforms import load_cv2
    cv2 = load_cv2("image.imread")
    if not os.path.exists(path):
        raise GpundaError(f"image.imread: {path} does not exist")
    img = cv2.imread(path, cv2.IMREAD_COLOR if flag else cv2.IMREAD_GRAYSCALE)
    if img is None:
        raise GpundaError(f"image.imread: OpenCV cannot decode {path}")
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB) if flag else img[:, :, None]
    return _as_array(nd.array(img, dtype=np.uint8))


class ImageFolderDataset(Dataset):
    """Images in ``root/<class>/<file>.{jpg,jpeg,png}``; labels number the sorted class
    folders (``synsets`` holds their names, ``items`` the (path, label) pairs).

    Args:
        root: the folder of class folders.
        flag: 1 for RGB images, 0 for greyscale.
        transform: ``fn(image, label) -> sample``.
    """

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = list(_EXTS)
        if not os.path.isdir(self._root):
            raise _missing("ImageFolderDataset", self._root, "one folder per class of images")
        self._list_images(self._root)

    def _list_images(self, root):
        self.synsets, self.items = [], []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for name in sorted(os.listdir(path)):
                filename = os.path.join(path, name)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn(f"Ignoring {filename} of type {ext}. "
                                  f"Only support {', '.join(self._exts)}")
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        path, label = self.items[idx]
        img = imread(path, self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)


class ImageListDataset(Dataset):
    """Images listed with their labels (MXNet 2's ``ImageListDataset``).

    Args:
        root: folder the image paths are relative to.
        imglist: a ``.lst`` file (tab-separated ``index, label(s)..., path`` lines, as
            im2rec writes) or a list of ``[label(s)..., path]`` entries.
        flag: 1 for RGB images, 0 for greyscale.
        transform: ``fn(image, label) -> sample``.
    """

    def __init__(self, root=".", imglist=None, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self.items = []
        if isinstance(imglist, str):
            path = imglist if os.path.isabs(imglist) else os.path.join(self._root, imglist)
            if not os.path.exists(path):
                raise _missing("ImageListDataset", path, "the .lst file")
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    cols = line.strip().split("\t")
                    if not cols or cols == [""]:
                        continue
                    if len(cols) < 3:
                        raise GpundaError(f"ImageListDataset: {path} line {n} needs "
                                          f"index, label(s) and path separated by tabs")
                    self.items.append((cols[-1], self._label([float(c) for c in cols[1:-1]])))
        elif imglist is not None:
            for entry in imglist:
                *labels, name = entry
                self.items.append((name, self._label([float(c) for c in labels])))
        else:
            raise GpundaError("ImageListDataset: imglist must be a .lst file name or a list "
                              "of [label(s)..., path] entries")

    @staticmethod
    def _label(values):
        return values[0] if len(values) == 1 else np.array(values, dtype=np.float32)

    def __getitem__(self, idx):
        name, label = self.items[idx]
        img = imread(os.path.join(self._root, name), self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)


class ImageRecordDataset(Dataset):
    """Images in a RecordIO file (``.rec`` with its ``.idx`` beside it), as MXNet's.

    Item ``i`` is the record of the ``i``-th key of the index file, decoded as
    ``mx.image.imdecode(payload, flag)`` (HWC uint8, RGB for ``flag=1``, one channel
    for ``flag=0``), with the header's label (a float, or a float32 NumPy array for
    several labels); ``transform(image, label)`` is applied when given.
    """

    def __init__(self, filename, flag=1, transform=None):
        from gpunda import recordio
        idx_file = os.path.splitext(filename)[0] + ".idx"
        for path in (filename, idx_file):
            if not os.path.exists(path):
                raise _missing("ImageRecordDataset", path, "the .rec file and its .idx index")
        self._record = recordio.MXIndexedRecordIO(idx_file, filename, "r")
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        from gpunda import recordio
        from gpunda.image import imdecode
        header, buf = recordio.unpack(self._record.read_idx(self._record.keys[idx]))
        # imdecode raises MXNet's errors for an empty or undecodable record
        img = _as_array(imdecode(buf, self._flag))
        if self._transform is not None:
            return self._transform(img, header.label)
        return img, header.label

    def __len__(self):
        return len(self._record.keys)
