"""``mx.contrib.io``: ``DataLoaderIter``, a Gluon DataLoader as a Module ``DataIter``."""
from gpunda.io.io import DataDesc, DataIter

__all__ = ["DataLoaderIter"]


class DataLoaderIter(DataIter):
    """Iterates a ``gluon.data.DataLoader`` of ``(data, label)`` batches as DataBatches.

    The batch size and the shapes in ``provide_data``/``provide_label`` come from the
    loader's first batch; a shorter last batch is padded (``getpad``) to that size.

    Args:
        loader: a ``gluon.data.DataLoader`` yielding ``(data, label)``.
        data_name, label_name: the names in ``provide_data``/``provide_label``.
        dtype: the dtype batches are cast to (``'float32'`` or ``'float16'``).
    """

    def __init__(self, loader, data_name="data", label_name="softmax_label", dtype="float32"):
        super().__init__()
        self._loader = loader
        data, label = next(iter(loader))
        self.batch_size = data.shape[0]
        self.dtype = dtype
        self.provide_data = [DataDesc(data_name, data.shape, dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, dtype)]
        self._current_batch = None
        self.reset()

    def reset(self):
        self._iter = iter(self._loader)

    def iter_next(self):
        self._current_batch = next(self._iter, None)
        return self._current_batch is not None

    def _padded(self, arr):
        arr = arr.astype(self.dtype)
        if arr.shape[0] == self.batch_size:
            return [arr]
        from gpunda import ndarray as nd
        out = nd.empty((self.batch_size,) + tuple(arr.shape[1:]), dtype=self.dtype)
        out[:arr.shape[0]] = arr
        return [out]

    def getdata(self):
        return self._padded(self._current_batch[0])

    def getlabel(self):
        return self._padded(self._current_batch[1])

    def getpad(self):
        return self.batch_size - self._current_batch[0].shape[0]

    def getindex(self):
        return None
