"""Helpers of mx.io kept under MXNet's module name (``mx.io.utils``)."""
from gpunda.io.io import _init_data, _is_h5  # noqa: F401
from gpunda._core.reexports import optional_module_getattr


def _has_instance(data, dtype):
    """Whether an array of ``data`` (``(name, array)`` pairs, as ``_init_data`` gives) is an
    instance of ``dtype``."""
    return any(isinstance(arr, dtype) for _, arr in data)


def _getdata_by_idx(data, idx):
    """``data`` (``(name, array)`` pairs) with each array's rows taken at ``idx`` along the
    first axis, as new arrays on the array's context (CSR stays CSR; h5py datasets are kept
    as they are)."""
    from gpunda.ndarray import array
    from gpunda.ndarray.sparse import CSRNDArray, array as sparse_array
    out = []
    for k, v in data:
        if _is_h5(v):
            out.append((k, v))
        elif isinstance(v, CSRNDArray):
            out.append((k, sparse_array(v.asscipy()[idx], v.context)))
        else:
            out.append((k, array(v.asnumpy()[idx], v.context)))
    return out


def _slice_along_batch_axis(data, s, batch_axis):
    """``data[s]`` along ``batch_axis`` (``s`` a slice with start and stop)."""
    return data.slice_axis(axis=batch_axis, begin=s.start, end=s.stop)


# MXNet's io.utils shows h5py (None when it is not installed); imported on first access
__getattr__ = optional_module_getattr(__name__, "h5py", "h5py")
