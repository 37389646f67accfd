"""``npx.save`` / ``npx.load``: mx.np arrays in MXNet's NDArray file format (NumPy-shape
records, so 0-d and zero-size arrays round-trip)."""
from __future__ import annotations

from gpunda.ndarray.ndarray import NDArray

__all__ = ["save", "load"]


def save(file, arr):
    """Save an ndarray, a list of them or a dict str -> ndarray to ``file``."""
    from gpunda.ndarray import io
    from gpunda.util import np_shape
    if isinstance(arr, NDArray):
        arr = [arr]
    if isinstance(arr, dict):
        data = {k: v.as_nd_ndarray() for k, v in arr.items()}
    elif isinstance(arr, (list, tuple)):
        data = [v.as_nd_ndarray() for v in arr]
    else:
        raise ValueError(f"npx.save: data must be an ndarray, a list or a dict of them, got "
                         f"{type(arr).__name__}")
    with np_shape(True):
        io.save(file, data)


def load(file):
    """Load ``file`` saved by ``npx.save``: a list or a dict str -> ``mx.np.ndarray``."""
    from gpunda.ndarray import io
    from gpunda.util import np_shape
    from gpunda.numpy.multiarray import as_np
    with np_shape(True):
        loaded = io.load(file)
    if isinstance(loaded, dict):
        return {k: as_np(v) for k, v in loaded.items()}
    return [as_np(v) for v in loaded]
