"""Python data iterators of MXNet's ``mx.io``: DataDesc, DataBatch, DataIter,
ResizeIter, PrefetchingIter and NDArrayIter."""
from __future__ import annotations

import threading
from collections import OrderedDict, namedtuple

import numpy as np

from gpunda.base import GpundaError, mx_real_t

__all__ = ["DataDesc", "DataBatch", "DataIter", "ResizeIter", "PrefetchingIter", "NDArrayIter"]


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name and shape of one input, with ``dtype`` and ``layout`` attributes."""

    def __new__(cls, name, shape, dtype=mx_real_t, layout="NCHW"):
        ret = super().__new__(cls, name, shape)
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout):
        """Position of 'N' in ``layout`` (0 when layout is None, -1 when it has no N)."""
        return 0 if layout is None else layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from ``[(name, shape)]`` and optional ``[(name, dtype)]``."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(x[0], x[1], type_dict[x[0]]) for x in shapes]
        return [DataDesc(x[0], x[1]) for x in shapes]


class DataBatch:
    """One batch: lists of data and label arrays, padding count and indices."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise AssertionError("Data must be list of NDArrays")
        if label is not None and not isinstance(label, (list, tuple)):
            raise AssertionError("Label must be list of NDArrays")
        self.data, self.label, self.pad, self.index = data, label, pad, index
        self.bucket_key = bucket_key
        self.provide_data, self.provide_label = provide_data, provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lb.shape for lb in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"


class DataIter:
    """Base class of iterators: ``next()`` is ``iter_next()`` then the ``get*`` methods."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Go back to the start of the data."""

    def next(self):
        """The next DataBatch; StopIteration at the end."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(),
                             pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Advance to the next batch; False at the end."""

    def getdata(self):
        """Data arrays of the current batch."""

    def getlabel(self):
        """Label arrays of the current batch."""

    def getindex(self):
        """Sample indices of the current batch (None when unknown)."""
        return None

    def getpad(self):
        """How many samples of the current batch are padding."""


class _FromCurrentBatch:
    """``getdata``/``getlabel``/``getindex``/``getpad`` of iterators that keep the batch
    they produced in ``current_batch``."""

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class ResizeIter(_FromCurrentBatch, DataIter):
    """Give exactly ``size`` batches per epoch from ``data_iter``, restarting it as needed."""

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__()
        self.data_iter, self.size, self.reset_internal = data_iter, size, reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True


class PrefetchingIter(_FromCurrentBatch, DataIter):
    """Read the next batch of each of ``iters`` in a background thread.

    ``rename_data``/``rename_label``: one ``{old: new}`` dict per iterator.
    Batches of the iterators are concatenated (data lists, then label lists).
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise GpundaError("PrefetchingIter: iters must hold at least one iterator")
        self.iters, self.n_iter = iters, len(iters)
        self.rename_data, self.rename_label = rename_data, rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.data_ready = [threading.Event() for _ in iters]
        self.data_taken = [threading.Event() for _ in iters]
        for e in self.data_taken:
            e.set()
        self.started = True
        self.current_batch = None
        self.next_batch = [None] * self.n_iter
        self._errors = [None] * self.n_iter
        self.prefetch_threads = [threading.Thread(target=self._prefetch, args=(i,), daemon=True)
                                 for i in range(self.n_iter)]
        for t in self.prefetch_threads:
            t.start()

    def _prefetch(self, i):
        while True:
            self.data_taken[i].wait()
            if not self.started:
                break
            try:
                self.next_batch[i] = self.iters[i].next()
            except StopIteration:
                self.next_batch[i] = None
            except Exception as e:  # surfaced in iter_next, on the caller's thread
                self.next_batch[i], self._errors[i] = None, e
            self.data_taken[i].clear()
            self.data_ready[i].set()

    def __del__(self):
        self.started = False
        for e in getattr(self, "data_taken", []):
            e.set()
        for t in getattr(self, "prefetch_threads", []):
            t.join(timeout=1)

    def _renamed(self, descs_per_iter, renames):
        if renames is None:
            return sum(descs_per_iter, [])
        return sum([[DataDesc(r[x.name], x.shape, x.dtype) if isinstance(x, DataDesc)
                     else DataDesc(*x) for x in descs]
                    for r, descs in zip(renames, descs_per_iter)], [])

    @property
    def provide_data(self):
        return self._renamed([i.provide_data for i in self.iters], self.rename_data)

    @property
    def provide_label(self):
        return self._renamed([i.provide_label for i in self.iters], self.rename_label)

    def reset(self):
        for e in self.data_ready:
            e.wait()
        for it in self.iters:
            it.reset()
        for e in self.data_ready:
            e.clear()
        for e in self.data_taken:
            e.set()

    def iter_next(self):
        for e in self.data_ready:
            e.wait()
        for err in self._errors:
            if err is not None:
                self._errors = [None] * self.n_iter
                raise err
        if self.next_batch[0] is None:
            if any(b is not None for b in self.next_batch):
                raise GpundaError("PrefetchingIter: the iterators have different numbers of batches")
            return False
        if any(b is None or b.pad != self.next_batch[0].pad for b in self.next_batch):
            raise GpundaError("PrefetchingIter: the iterators have different numbers of samples")
        first = self.next_batch[0]
        self.current_batch = DataBatch(sum([b.data for b in self.next_batch], []),
                                       sum([b.label for b in self.next_batch], []),
                                       first.pad, first.index,
                                       provide_data=self.provide_data,
                                       provide_label=self.provide_label)
        for e in self.data_ready:
            e.clear()
        for e in self.data_taken:
            e.set()
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration



def _is_h5(v):
    return type(v).__module__.startswith("h5py")


def _init_data(data, allow_empty, default_name):
    """(name, array) pairs sorted by name; plain arrays become NDArrays (float32 by default)."""
    from gpunda import ndarray as nd
    if data is None:
        if not allow_empty:
            raise GpundaError("NDArrayIter: data must not be None")
        data = []
    if isinstance(data, (np.ndarray, nd.NDArray)) or _is_h5(data) or _is_scipy_csr(data):
        data = [data]
    if isinstance(data, list):
        if not allow_empty and not data:
            raise GpundaError("NDArrayIter: data must not be empty")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict([(f"_{i}_{default_name}", d) for i, d in enumerate(data)])
    if not isinstance(data, dict):
        raise TypeError("Input must be NDArray, numpy.ndarray, h5py.Dataset, "
                        "a list of them or dict with them as values")
    out = {}
    for k, v in data.items():
        if isinstance(v, nd.NDArray) or _is_h5(v):
            out[k] = v
            continue
        try:
            out[k] = nd.array(v)
        except Exception as e:
            raise TypeError(f"Invalid type '{type(v)}' for {k}, should be NDArray, "
                            "numpy.ndarray or h5py.Dataset") from e
    return sorted(out.items())


def _is_scipy_csr(v):
    return type(v).__module__.startswith("scipy.sparse") and getattr(v, "format", None) == "csr"


def _is_csr(v):
    from gpunda.ndarray import NDArray
    return isinstance(v, NDArray) and getattr(v, "stype", "default") == "csr"


class NDArrayIter(DataIter):
    """Batches over in-memory arrays (NDArray, numpy, h5py datasets, CSR).

    ``last_batch_handle``: 'pad' (fill the last batch from the start, ``pad``
    says how many), 'discard' (drop an incomplete last batch) or 'roll_over'
    (the incomplete last batch opens the next epoch).  CSR inputs need
    'discard'.  ``layout``'s 'N' is the batch axis.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad",
                 data_name="data", label_name="softmax_label", layout="NCHW"):
        super().__init__(batch_size)
        if last_batch_handle not in ("pad", "discard", "roll_over"):
            raise GpundaError(f"NDArrayIter: last_batch_handle={last_batch_handle!r} is not one "
                              f"of ['pad', 'discard', 'roll_over']")
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise GpundaError(f"NDArrayIter: batch_size={batch_size!r} must be a positive integer")
        self.data = _init_data(data, allow_empty=False, default_name=data_name)
        self.label = _init_data(label, allow_empty=True, default_name=label_name)
        if any(_is_csr(v) for _, v in self.data + self.label) and last_batch_handle != "discard":
            raise NotImplementedError("`NDArrayIter` only supports ``CSRNDArray`` with "
                                      "`last_batch_handle` set to `discard`.")
        self.layout = layout
        axis = self._axis()
        # as MXNet: the first data array sets the length; longer arrays are read up to it
        # (a label array covering more samples than the data), shorter ones cannot serve
        n = self.data[0][1].shape[axis]
        short = sorted({v.shape[axis] for _, v in self.data + self.label if v.shape[axis] < n})
        if short:
            raise GpundaError(f"NDArrayIter: data and label have different lengths "
                              f"{short + [n]} along the batch axis; every array needs at least "
                              f"the {n} samples of the first data array")
        self.idx = np.arange(self.data[0][1].shape[axis])
        self.num_data = self.idx.shape[0]
        self.shuffle, self.last_batch_handle = shuffle, last_batch_handle
        self.batch_size = batch_size
        self.cursor = -batch_size
        self._cache_data = self._cache_label = None
        self.reset()
        self.data_list = [v for _, v in self.data] + [v for _, v in self.label]
        self.num_source = len(self.data_list)

    def _axis(self):
        return DataDesc.get_batch_axis(getattr(self, "layout", "NCHW"))

    def _descs(self, source):
        ax = self._axis()
        return [DataDesc(k, tuple(v.shape[:ax]) + (self.batch_size,) + tuple(v.shape[ax + 1:]),
                         v.dtype, layout=self.layout) for k, v in source]

    @property
    def provide_data(self):
        """DataDescs of the data, with the batch size on the batch axis."""
        return self._descs(self.data)

    @property
    def provide_label(self):
        """DataDescs of the labels, with the batch size on the batch axis."""
        return self._descs(self.label)

    def hard_reset(self):
        """Start over, dropping any rolled-over samples."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = self._cache_label = None

    def reset(self):
        """Start the next epoch (reshuffled when ``shuffle``; roll_over keeps the leftovers)."""
        if self.shuffle:
            self._shuffle_data()
        if self.last_batch_handle == "roll_over" and \
                self.num_data - self.batch_size < self.cursor < self.num_data:
            # a negative cursor: the cached leftovers fill the first -cursor rows
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data, label = self.getdata(), self.getlabel()
        if data[0].shape[self._axis()] != self.batch_size:
            # incomplete last batch ('discard', 'roll_over'): kept for roll_over's next epoch
            self._cache_data, self._cache_label = data, label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _slice(self, v, start, end):
        from gpunda import ndarray as nd
        ax = self._axis()
        if _is_h5(v):
            # h5py reads only increasing indices: read sorted, then restore the order
            sel = self.idx[start:end]
            order = np.argsort(sel)
            rows = np.asarray(v[np.sort(sel).tolist()])
            out = np.empty_like(rows)
            out[order] = rows
            return nd.array(out)
        if _is_csr(v):
            return v[start:end]
        return v.slice_axis(axis=ax, begin=start, end=end)

    def _getdata(self, source, start=None, end=None):
        start = 0 if start is None else start
        if end is None:
            end = self.num_data if source else 0
        return [self._slice(v, start, end) for _, v in source]

    def _concat(self, first, second):
        from gpunda import ndarray as nd
        if not first or not second:
            return first if first else second
        return [nd.concat(a, b, dim=self._axis()) for a, b in zip(first, second)]

    def _batchify(self, source):
        if self.cursor >= self.num_data:
            raise GpundaError("NDArrayIter: the iterator is exhausted; call reset()")
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            if self._cache_data is None and self._cache_label is None:
                raise GpundaError("NDArrayIter: roll_over has no cached samples for this epoch")
            use_data = self._cache_data is not None
            cached = self._cache_data if use_data else self._cache_label
            rest = self._getdata(source, end=self.cursor + self.batch_size)
            if use_data:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cached, rest)
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            pad = self.batch_size - self.num_data + self.cursor
            first = self._getdata(source, start=self.cursor)
            whole, part = divmod(pad, self.num_data)
            filler = []
            for _ in range(whole):
                filler = self._concat(filler, self._getdata(source, end=self.num_data))
            if part:
                filler = self._concat(filler, self._getdata(source, end=part))
            return self._concat(first, filler)
        end = min(self.cursor + self.batch_size, self.num_data)
        return self._getdata(source, self.cursor, end)

    def getdata(self):
        return self._batchify(self.data)

    def getlabel(self):
        return self._batchify(self.label)

    def getpad(self):
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        from gpunda import ndarray as nd
        np.random.shuffle(self.idx)
        self.data = self._take(self.data, nd)
        self.label = self._take(self.label, nd)

    def _take(self, source, nd):
        out = []
        for k, v in source:
            if _is_h5(v):
                out.append((k, v))
            elif _is_csr(v):
                out.append((k, nd.sparse.array(v.asscipy()[self.idx], ctx=v.context)))
            else:
                out.append((k, nd.array(np.take(v.asnumpy(), self.idx, axis=self._axis()),
                                        ctx=v.context, dtype=v.dtype)))
        return out


# MXNet's io.py defines the C++ iterators' Python functions (and MXDataIter); gpunda's live in
# the package (gpunda.io imports this module), served from there on first access
from gpunda._core.reexports import forwarding_getattr as _forwarding_getattr  # noqa: E402

_NATIVE_ITERS = ("CSVIter", "ImageDetRecordIter", "ImageRecordInt8Iter", "ImageRecordIter",
                 "ImageRecordIter_v1", "ImageRecordUInt8Iter", "ImageRecordUInt8Iter_v1",
                 "LibSVMIter", "MNISTIter")

__getattr__ = _forwarding_getattr(__name__, _NATIVE_ITERS + ("MXDataIter",), "gpunda.io")


def _init_io_module():
    """Put every data iterator of MXNet's C++ library (gpunda's own ``CSVIter``,
    ``MNISTIter``, ``ImageRecordIter``, ...) into this module, as MXNet does at import."""
    import sys
    module_obj = sys.modules[__name__]
    for name in _NATIVE_ITERS:
        setattr(module_obj, name, getattr(module_obj, name))


from gpunda._core.not_built import define_stubs  # noqa: E402

define_stubs(globals(), functions=("_make_io_iterator",),
             reason="it makes an iterator function from a libmxnet DataIterCreator handle, "
                    "which gpunda does not have (its iterators are Python classes: "
                    "mx.io.CSVIter, mx.io.MNISTIter, ...; _init_io_module installs them)")
