"""Data iterators (MXNet's ``mx.io``)."""
from .io import (DataDesc, DataBatch, DataIter, ResizeIter, PrefetchingIter,  # noqa: F401
                 NDArrayIter)
from .native import (MXDataIter, CSVIter, LibSVMIter, MNISTIter,  # noqa: F401
                     ImageRecordIter_v1, ImageRecordUInt8Iter_v1, ImageDetRecordIter)
from .image_rec import ImageRecordIter, ImageRecordUInt8Iter, ImageRecordInt8Iter  # noqa: F401
from . import utils  # noqa: F401
