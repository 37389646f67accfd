"""The iterators MXNet implements in C++ (CSVIter, LibSVMIter, MNISTIter, the
ImageRecord family), with the C++ parameter names and defaults of MXNet 1.9.1.

They read the whole file into host memory and batch from there.  Batching
follows MXNet's BatchLoader: with ``round_batch`` (the default) an incomplete
last batch is completed from the start of the data, ``pad`` says by how many
samples, and the next epoch starts after those samples; without it the last
batch keeps the previous batch's rows in the padded slots.
"""
from __future__ import annotations

import struct

import numpy as np

from gpunda.base import GpundaError
from gpunda.io.io import DataBatch, DataDesc, DataIter

__all__ = ["MXDataIter", "CSVIter", "LibSVMIter", "MNISTIter"]

_DTYPES = {None: np.float32, "float32": np.float32, "float64": np.float64,
           "int32": np.int32, "int64": np.int64}


class MXDataIter(DataIter):
    """Base of the C++-style iterators: one data and one label array per batch."""

    def __init__(self, data_name="data", label_name="softmax_label"):
        super().__init__()
        self.data_name, self.label_name = data_name, label_name
        self._batch = None

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=[self.getdata()], label=[self.getlabel()],
                         pad=self.getpad(), index=self.getindex())

    def getdata(self):
        return self._batch[0]

    def getlabel(self):
        return self._batch[1]

    def getpad(self):
        return self._batch[2]

    def getindex(self):
        return self._batch[3]

    def get_data(self):
        return self.getdata()

    def debug_skip_load(self):
        """MXNet's benchmarking switch (skip reading); a no-op here."""

    @property
    def provide_data(self):
        return [DataDesc(self.data_name, self._data_batch_shape(), self._dtype)]

    @property
    def provide_label(self):
        return [DataDesc(self.label_name, self._label_batch_shape(), self._label_dtype)]


def _batch_shape(batch_size, shape):
    # MXNet drops a (1,) instance shape to a 1-d batch
    shape = tuple(int(s) for s in shape)
    return (batch_size,) if shape == (1,) else (batch_size,) + shape


def _check_batch_size(name, batch_size):
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise GpundaError(f"{name}: batch_size={batch_size!r} must be a positive integer")
    return int(batch_size)


def _part(count, num_parts, part_index, name):
    if num_parts < 1 or not 0 <= part_index < num_parts:
        raise GpundaError(f"{name}: part_index={part_index} must be in [0, num_parts={num_parts})")
    return int(count / num_parts * part_index), int(count / num_parts * (part_index + 1))


class _RoundBatchIter(MXDataIter):
    """BatchLoader semantics over ``self._num`` in-memory samples."""

    def _init_batching(self, batch_size, round_batch, num):
        self.batch_size, self.round_batch, self._num = batch_size, bool(round_batch), num
        if num == 0:
            raise GpundaError(f"{type(self).__name__}: the input has no samples")
        self._pos, self._overflow, self._last_rows = 0, 0, None

    def reset(self):
        if not self.round_batch or self._overflow == 0:
            self._pos = 0
        else:
            self._overflow = 0

    def iter_next(self):
        if self._overflow:
            return False
        rows = list(range(self._pos, min(self._pos + self.batch_size, self._num)))
        self._pos += len(rows)
        if not rows:
            return False
        pad = self.batch_size - len(rows)
        if pad and self.round_batch:
            if pad > self._num:
                raise GpundaError(f"{type(self).__name__}: number of input must be bigger than "
                                  f"batch size ({self._num} < {self.batch_size})")
            rows += list(range(pad))
            self._pos, self._overflow = pad, pad
        elif pad:
            stale = self._last_rows[len(rows):] if self._last_rows is not None else [rows[-1]] * pad
            rows += list(stale)
        self._last_rows = rows
        idx = np.asarray(rows, dtype=np.int64)
        data, label = self._make(idx)
        self._batch = (data, label, pad, idx.astype(np.uint64))
        return True


def _read_text(path, name):
    try:
        with open(path, "r") as f:
            return f.read().splitlines()
    except OSError as e:
        raise GpundaError(f"{name}: cannot read {path!r}: {e}") from e


class CSVIter(_RoundBatchIter):
    """Batches of rows of a CSV file (``data_csv``), each reshaped to ``data_shape``.

    ``label_csv='NULL'`` gives all-zero labels.  ``dtype``: float32 (default),
    int32 or int64; integers are parsed exactly.
    """

    def __init__(self, data_csv, data_shape, batch_size, label_csv="NULL", label_shape=(1,),
                 round_batch=True, prefetch_buffer=4, ctx="gpu", dtype=None,
                 data_name="data", label_name="softmax_label", **kwargs):
        super().__init__(data_name, label_name)
        if dtype not in ("float32", "int32", "int64", None):
            raise GpundaError(f"CSVIter: dtype={dtype!r} is not supported (float32, int32, int64)")
        self._dtype = self._label_dtype = _DTYPES[dtype]
        self.data_shape, self.label_shape = tuple(data_shape), tuple(label_shape)
        self._data = self._load(data_csv, self.data_shape, "data_csv")
        if label_csv in ("NULL", None):
            self._label = np.zeros((len(self._data),) + self.label_shape, self._dtype)
        else:
            self._label = self._load(label_csv, self.label_shape, "label_csv")
            if len(self._label) != len(self._data):
                raise GpundaError(f"CSVIter: label_csv has {len(self._label)} rows, data_csv "
                                  f"has {len(self._data)}")
        self._init_batching(_check_batch_size("CSVIter", batch_size), round_batch, len(self._data))

    def _load(self, path, shape, param):
        size = int(np.prod(shape))
        rows = []
        for lineno, line in enumerate(_read_text(path, "CSVIter"), 1):
            if not line.strip():
                continue
            fields = line.split(",")
            try:
                vals = [self._dtype(int(v)) if self._dtype in (np.int32, np.int64) else float(v)
                        for v in fields]
            except (ValueError, OverflowError) as e:
                raise GpundaError(f"CSVIter: {param} {path!r} line {lineno}: cannot parse "
                                  f"{line[:60]!r} as {np.dtype(self._dtype).name}") from e
            if len(vals) != size:
                raise GpundaError(f"CSVIter: {param} {path!r} line {lineno} has {len(vals)} "
                                  f"values, the shape {shape} needs {size}")
            rows.append(vals)
        return np.asarray(rows, dtype=self._dtype).reshape((len(rows),) + shape)

    def _data_batch_shape(self):
        return _batch_shape(self.batch_size, self.data_shape)

    def _label_batch_shape(self):
        return _batch_shape(self.batch_size, self.label_shape)

    def _make(self, idx):
        from gpunda import ndarray as nd
        return (nd.array(self._data[idx].reshape(self._data_batch_shape()), dtype=self._dtype),
                nd.array(self._label[idx].reshape(self._label_batch_shape()), dtype=self._dtype))


def _byte_part(lines, num_parts, part_index):
    """Line numbers of part ``part_index``: dmlc splits a text file into equal byte
    ranges and gives each line to the range its first byte falls in, after
    moving each boundary to the start of the next line."""
    if num_parts < 1 or not 0 <= part_index < num_parts:
        raise GpundaError(f"LibSVMIter: part_index={part_index} must be in [0, num_parts={num_parts})")
    starts, pos = [], 0
    for line in lines:
        starts.append(pos)
        pos += len(line.encode()) + 1
    step = -(-pos // num_parts)

    def boundary(b):
        b = min(b, pos)
        return next((s for s in starts if s >= b), pos)
    lo, hi = boundary(step * part_index), boundary(step * (part_index + 1))
    return [i for i, s in enumerate(starts) if lo <= s < hi]


def _parse_libsvm(path, dim, param, num_parts=1, part_index=0):
    """(labels, scipy csr of shape (n, dim)) of part ``part_index`` of a libsvm file."""
    import scipy.sparse as sp
    labels, indptr, indices, values = [], [0], [], []
    lines = _read_text(path, "LibSVMIter")
    for i in _byte_part(lines, num_parts, part_index):
        lineno, line = i + 1, lines[i]
        fields = line.split()
        if not fields:
            continue
        try:
            labels.append(float(fields[0]))
            for tok in fields[1:]:
                k, v = tok.split(":")
                k = int(k)
                if not 0 <= k < dim:
                    raise GpundaError(f"LibSVMIter: {param} {path!r} line {lineno}: feature index "
                                      f"{k} is outside [0, {dim})")
                indices.append(k)
                values.append(float(v))
        except ValueError as e:
            raise GpundaError(f"LibSVMIter: {param} {path!r} line {lineno}: cannot parse "
                              f"{line[:60]!r} as 'label index:value ...'") from e
        indptr.append(len(indices))
    csr = sp.csr_matrix((np.asarray(values, np.float32), np.asarray(indices, np.int64),
                         np.asarray(indptr, np.int64)), shape=(len(labels), dim))
    csr.sort_indices()
    return np.asarray(labels, np.float32), csr


class LibSVMIter(_RoundBatchIter):
    """Batches of a libsvm file as CSRNDArrays of shape ``(batch_size,) + data_shape``.

    Labels are the first column of ``data_libsvm``, or, with ``label_libsvm``,
    that file's features as a CSR of shape ``(batch_size,) + label_shape``.
    """

    def __init__(self, data_libsvm, data_shape, batch_size, label_libsvm="NULL",
                 label_shape=(1,), num_parts=1, part_index=0, round_batch=True,
                 prefetch_buffer=4, ctx="gpu", dtype=None, data_name="data",
                 label_name="softmax_label", **kwargs):
        super().__init__(data_name, label_name)
        self._dtype = self._label_dtype = np.float32
        self.data_shape, self.label_shape = tuple(data_shape), tuple(label_shape)
        if len(self.data_shape) != 1:
            raise GpundaError(f"LibSVMIter: data_shape={data_shape} must be 1-d")
        parts = (num_parts, part_index)
        labels, self._data = _parse_libsvm(data_libsvm, self.data_shape[0], "data_libsvm", *parts)
        if label_libsvm in ("NULL", None):
            self._label, self._label_sparse = labels, False
        else:
            _, self._label = _parse_libsvm(label_libsvm, int(np.prod(self.label_shape)),
                                           "label_libsvm", *parts)
            self._label_sparse = True
            if self._label.shape[0] != self._data.shape[0]:
                raise GpundaError(f"LibSVMIter: label_libsvm has {self._label.shape[0]} rows, "
                                  f"data_libsvm has {self._data.shape[0]}")
        self._init_batching(_check_batch_size("LibSVMIter", batch_size), round_batch,
                            self._data.shape[0])

    def _data_batch_shape(self):
        return (self.batch_size,) + self.data_shape

    def _label_batch_shape(self):
        return _batch_shape(self.batch_size, self.label_shape)

    def _make(self, idx):
        from gpunda import ndarray as nd
        data = nd.sparse.array(self._data[idx])
        label = (nd.sparse.array(self._label[idx]) if self._label_sparse
                 else nd.array(self._label[idx]))
        return data, label


def _read_idx(path, magic, ndim, name):
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except OSError as e:
        raise GpundaError(f"MNISTIter: cannot read {name} file {path!r}: {e}") from e
    head = 4 * (1 + ndim)
    if len(buf) < head or struct.unpack(">I", buf[:4])[0] != magic:
        raise GpundaError(f"MNISTIter: {path!r} is not an MNIST {name} file (idx magic {magic})")
    dims = struct.unpack(f">{ndim}I", buf[4:head])
    need = int(np.prod(dims))
    if len(buf) - head < need:
        raise GpundaError(f"MNISTIter: {path!r} is truncated: header says {dims}, "
                          f"{len(buf) - head} of {need} bytes follow")
    return np.frombuffer(buf, np.uint8, need, head).reshape(dims)


class MNISTIter(MXDataIter):
    """Batches of MNIST idx files: images scaled by 1/256, an incomplete last batch dropped.

    ``flat`` gives ``(batch, rows*cols)`` instead of ``(batch, 1, rows, cols)``.
    With ``shuffle`` (default) the order is a fixed permutation drawn from
    ``seed`` once (not MXNet's sequence for the same seed).
    """

    def __init__(self, image="./train-images-idx3-ubyte", label="./train-labels-idx1-ubyte",
                 batch_size=128, shuffle=True, flat=False, seed=0, silent=False, num_parts=1,
                 part_index=0, prefetch_buffer=4, ctx="gpu", dtype=None, data_name="data",
                 label_name="softmax_label", **kwargs):
        super().__init__(data_name, label_name)
        self._dtype = self._label_dtype = np.float32
        self.batch_size = _check_batch_size("MNISTIter", batch_size)
        self.flat = bool(flat)
        img = _read_idx(image, 2051, 3, "image")
        lab = _read_idx(label, 2049, 1, "label")
        start, end = _part(img.shape[0], num_parts, part_index, "MNISTIter")
        lstart, lend = _part(lab.shape[0], num_parts, part_index, "MNISTIter")
        img, lab = img[start:end], lab[lstart:lend]
        if len(lab) < len(img):
            raise GpundaError(f"MNISTIter: {label!r} has {len(lab)} labels for {len(img)} images")
        self._shape = img.shape[1:]
        self._inst = np.arange(start, end, dtype=np.uint64)
        if shuffle:
            order = np.random.RandomState(seed).permutation(len(img))
            img, lab, self._inst = img[order], lab[order], self._inst[order]
        self._img = img.astype(np.float32) * np.float32(1.0 / 256.0)
        self._lab = lab[:len(img)].astype(np.float32)
        self._loc = 0

    def _data_batch_shape(self):
        r, c = self._shape
        return (self.batch_size, r * c) if self.flat else (self.batch_size, 1, r, c)

    def _label_batch_shape(self):
        return (self.batch_size,)

    def reset(self):
        self._loc = 0

    def iter_next(self):
        from gpunda import ndarray as nd
        lo, hi = self._loc, self._loc + self.batch_size
        if hi > len(self._img):
            return False
        self._loc = hi
        self._batch = (nd.array(self._img[lo:hi].reshape(self._data_batch_shape())),
                       nd.array(self._lab[lo:hi]), 0, self._inst[lo:hi].copy())
        return True
