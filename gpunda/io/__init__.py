"""Data iterators (MXNet's ``mx.io``).

The file-reading iterators load on first use, keeping ``import gpunda`` fast.
"""
from gpunda.io.io import (DataDesc, DataBatch, DataIter, ResizeIter, PrefetchingIter,  # noqa: F401
                 NDArrayIter)

_LAZY = {name: "native" for name in ("MXDataIter", "CSVIter", "LibSVMIter", "MNISTIter")}
_LAZY.update({name: "image_rec" for name in ("ImageRecordIter", "ImageRecordUInt8Iter",
                                             "ImageRecordInt8Iter", "ImageRecordIter_v1",
                                             "ImageRecordUInt8Iter_v1")})
_LAZY.update(ImageDetRecordIter="image_det_rec")
_LAZY.update(utils="utils", native="native", image_rec="image_rec", image_det_rec="image_det_rec")


def __getattr__(name):
    if name in _LAZY:
        import importlib
        mod = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        value = mod if name == _LAZY[name] else getattr(mod, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
