"""Downloads and the small data sets MXNet's examples use (MNIST, CIFAR-10), and DummyIter.

Files are looked for where MXNet puts them (the current directory, or
``data/``); a file that is missing is fetched with ``download``, which raises a
``GpundaError`` naming the URL and the path to place the file at when the
machine has no network.
"""
from __future__ import annotations

import bz2
import gzip
import logging
import os
import shutil
import struct
import tempfile
import time
import zipfile

import numpy as np

from gpunda.base import GpundaError
from gpunda.io import DataIter

__all__ = ["download", "download_model", "get_mnist", "get_mnist_pkl", "get_mnist_ubyte",
           "get_cifar10", "get_mnist_iterator", "get_zip_data", "get_bz2_data",
           "get_im2rec_path", "DummyIter"]

_log = logging.getLogger(__name__)

_DATA_URL = "http://data.mxnet.io/"


def _fetch(url, dest, timeout=30):
    """Copy ``url`` into ``dest`` through a temporary file, so a failure leaves no partial file."""
    import urllib.request
    folder = os.path.dirname(os.path.abspath(dest))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".download-")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            status = getattr(resp, "status", 200)
            if status not in (None, 200):
                raise OSError(f"HTTP status {status}")
            shutil.copyfileobj(resp, out)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """Download ``url`` to ``fname`` (default: the URL's last part) and return the file name.

    Args:
        url: http(s), ftp or file URL.
        fname: the file to write; joined to ``dirname`` when that is given.
        dirname: the directory, created if needed (default: ``fname``'s).
        overwrite: download even when the file exists (otherwise it is reused).
        retries: further attempts after a failed one.

    Raises ``GpundaError`` naming the URL and the file when every attempt
    fails, e.g. on a machine without network: put the file there and call again.
    """
    if not isinstance(retries, int) or retries < 0:
        raise GpundaError(f"download: retries={retries!r} must be an int >= 0")
    if fname is None:
        fname = url.split("/")[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    if not overwrite and os.path.exists(fname):
        _log.info("%s exists, skipping download", fname)
        return fname
    for attempt in range(retries + 1):
        try:
            _fetch(url, fname)
            break
        except Exception as e:   # URLError, HTTPError, timeouts, OSError
            if attempt == retries:
                raise GpundaError(
                    f"download: could not fetch {url} into {fname!r} after {retries + 1} "
                    f"attempt(s) ({type(e).__name__}: {e}); without network, place the file "
                    f"at {os.path.abspath(fname)!r} and call again") from e
            left = retries - attempt
            print(f"download failed, retrying, {left} attempt{'s' if left > 1 else ''} left")
            time.sleep(min(1.0, 0.1 * (attempt + 1)))
    _log.info("downloaded %s into %s successfully", url, fname)
    return fname


_MODELS = {
    "imagenet1k-inception-bn": ("imagenet/inception-bn/", "Inception-BN", "0126"),
    "imagenet1k-resnet-18": ("imagenet/resnet/18-layers/", "resnet-18", "0000"),
    "imagenet1k-resnet-34": ("imagenet/resnet/34-layers/", "resnet-34", "0000"),
    "imagenet1k-resnet-50": ("imagenet/resnet/50-layers/", "resnet-50", "0000"),
    "imagenet1k-resnet-101": ("imagenet/resnet/101-layers/", "resnet-101", "0000"),
    "imagenet1k-resnet-152": ("imagenet/resnet/152-layers/", "resnet-152", "0000"),
    "imagenet1k-resnext-50": ("imagenet/resnext/50-layers/", "resnext-50", "0000"),
    "imagenet1k-resnext-101": ("imagenet/resnext/101-layers/", "resnext-101", "0000"),
    "imagenet1k-resnext-101-64x4d": ("imagenet/resnext/101-layers/", "resnext-101-64x4d",
                                     "0000"),
    "imagenet11k-resnet-152": ("imagenet-11k/resnet-152/", "resnet-152", "0000"),
    "imagenet11k-place365ch-resnet-152": ("imagenet-11k-place365-ch/", "resnet-152", "0000"),
    "imagenet11k-place365ch-resnet-50": ("imagenet-11k-place365-ch/", "resnet-50", "0000"),
}


def _model_urls(name):
    folder, stem, epoch = _MODELS[name]
    base = _DATA_URL + "models/" + folder + stem
    return {"symbol": base + "-symbol.json", "params": f"{base}-{epoch}.params"}


def download_model(model_name, dst_dir="./", meta_info=None):
    """Download a model's symbol and parameters into ``dst_dir``.

    ``meta_info`` maps model names to ``{'symbol': url, 'params': url}``
    (default: MXNet's ImageNet models on data.mxnet.io). Returns
    ``(path prefix, 0)`` for ``mx.model.load_checkpoint``, or ``(None, 0)`` for
    an unknown name.
    """
    known = dict(meta_info) if meta_info is not None else {n: None for n in _MODELS}
    if model_name not in known:
        return None, 0
    meta = dict(known[model_name] or _model_urls(model_name))
    for key in ("symbol", "params"):
        if key not in meta:
            raise GpundaError(f"download_model: meta_info[{model_name!r}] has no {key!r} url")
    os.makedirs(dst_dir, exist_ok=True)
    prefix = os.path.join(dst_dir, model_name)
    download(meta["symbol"], prefix + "-symbol.json")
    download(meta["params"], prefix + "-0000.params")
    return prefix, 0


def _read_idx_labels(path, opener=open):
    with opener(path, "rb") as f:
        struct.unpack(">II", f.read(8))
        return np.frombuffer(f.read(), dtype=np.int8)


def _read_idx_images(path, opener=open):
    """Images of an IDX file as float32 in [0, 1], shape (n, 1, rows, cols)."""
    with opener(path, "rb") as f:
        _, count, rows, cols = struct.unpack(">IIII", f.read(16))
        pixels = np.frombuffer(f.read(), dtype=np.uint8)
    return pixels.reshape(count, 1, rows, cols).astype(np.float32) / 255


def get_mnist():
    """MNIST as a dict of NumPy arrays: train_data, train_label, test_data, test_label.

    Reads (downloading if missing) the four ``*-ubyte.gz`` files in the current
    directory; images are float32 in [0, 1], shape (n, 1, 28, 28); labels int8.
    """
    url = _DATA_URL + "data/mnist/"
    out = {}
    for part, stem in (("train", "train"), ("test", "t10k")):
        labels = _read_idx_labels(download(url + f"{stem}-labels-idx1-ubyte.gz"), gzip.open)
        images = _read_idx_images(download(url + f"{stem}-images-idx3-ubyte.gz"), gzip.open)
        out[f"{part}_data"], out[f"{part}_label"] = images, labels
    return {k: out[k] for k in ("train_data", "train_label", "test_data", "test_label")}


def get_mnist_pkl():
    """Make sure ``data/mnist.pkl.gz`` exists (downloading it if missing)."""
    os.makedirs("data", exist_ok=True)
    if not os.path.exists("data/mnist.pkl.gz"):
        download("http://deeplearning.net/data/mnist/mnist.pkl.gz", dirname="data")


def _unzip_unless_present(files, url):
    os.makedirs("data", exist_ok=True)
    if not all(os.path.exists(f) for f in files):
        with zipfile.ZipFile(download(url, dirname="data")) as zf:
            zf.extractall("data")


_MNIST_UBYTE = ("data/train-images-idx3-ubyte", "data/train-labels-idx1-ubyte",
                "data/t10k-images-idx3-ubyte", "data/t10k-labels-idx1-ubyte")


def get_mnist_ubyte():
    """Make sure the four uncompressed MNIST files are in ``data/`` (from mnist.zip if missing)."""
    _unzip_unless_present(_MNIST_UBYTE, _DATA_URL + "mxnet/data/mnist.zip")


def get_cifar10():
    """Make sure ``data/cifar/{train,test}.{rec,lst}`` exist (from cifar10.zip if missing)."""
    files = [f"data/cifar/{p}.{e}" for p in ("train", "test") for e in ("rec", "lst")]
    _unzip_unless_present(files, _DATA_URL + "mxnet/data/cifar10.zip")


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """(train, validation) iterators over MNIST in ``data/`` (``get_mnist_ubyte``).

    Like MXNet's ``MNISTIter``: batches of ``data`` shaped ``(batch,) +
    input_shape`` (a flat (784,) unless ``input_shape`` has 3 dims), labels
    ``softmax_label``; the training set is shuffled; part ``part_index`` of
    ``num_parts`` equal slices; an incomplete last batch is dropped.
    """
    from gpunda.io import NDArrayIter
    if not 0 <= part_index < num_parts:
        raise GpundaError(f"get_mnist_iterator: part_index={part_index} must be in "
                          f"[0, num_parts={num_parts})")
    get_mnist_ubyte()
    flat = len(input_shape) != 3

    def make(images_file, labels_file, shuffle):
        images = _read_idx_images(images_file)
        labels = _read_idx_labels(labels_file).astype(np.float32)
        step = len(labels) // num_parts
        lo, hi = part_index * step, (part_index + 1) * step
        images = images[lo:hi].reshape((hi - lo, -1) if flat else (hi - lo,) + images.shape[1:])
        return NDArrayIter(images, labels[lo:hi], batch_size, shuffle=shuffle,
                           last_batch_handle="discard")
    train = make(_MNIST_UBYTE[0], _MNIST_UBYTE[1], True)
    val = make(_MNIST_UBYTE[2], _MNIST_UBYTE[3], False)
    return train, val


def get_zip_data(data_dir, url, data_origin_name):
    """Download the zip ``url`` into ``data_dir`` as ``data_origin_name`` and extract it there,
    unless that file exists already."""
    origin = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(origin):
        download(url, dirname=data_dir, overwrite=False)
        with zipfile.ZipFile(origin) as zf:
            zf.extractall(path=data_dir)


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Download the bz2 ``url`` and decompress it into ``data_dir/data_name``, unless that
    exists; the compressed file is removed afterwards."""
    target = os.path.join(data_dir, data_name)
    origin = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(target):
        download(url, fname=data_origin_name, dirname=data_dir, overwrite=False)
        with bz2.BZ2File(origin, "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(origin)


def get_im2rec_path(home_env="MXNET_HOME"):
    """Path of ``tools/im2rec.py``: under ``$MXNET_HOME`` if set, else next to the package.

    Raises ``IOError`` when it is not there.
    """
    if home_env in os.environ:
        root = os.environ[home_env]
    else:
        import gpunda
        root = os.path.dirname(gpunda.__file__)
    for candidate in (os.path.join(root, "tools", "im2rec.py"),
                      os.path.join(root, "..", "..", "tools", "im2rec.py")):
        if os.path.isfile(candidate):
            return candidate
    raise IOError("Could not find path to tools/im2rec.py")


class DummyIter(DataIter):
    """An endless iterator repeating the first batch of ``real_iter`` (for speed tests)."""

    def __init__(self, real_iter):
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch = next(real_iter)

    def __iter__(self):
        return self

    def next(self):
        """The first batch of the real iterator, every time; never raises StopIteration."""
        return self.the_batch
