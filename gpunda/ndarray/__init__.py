"""The ``nd`` namespace: NDArray, creation functions and one function per op."""
from __future__ import annotations

from .. import ops as _ops  # registers the op families
from .. import imperative as _imp
from . import _op
from . import register as _register
from .ndarray import (NDArray, array, empty, zeros, ones, full, arange, waitall, from_dlpack,
                      concatenate, moveaxis, onehot_encode, imdecode, _new, _OPS)

_register.populate(_op, NDArray)
_OPS.update({name: fn.op for name, fn in vars(_op).items() if hasattr(fn, "op")})
_imp._NDArray = NDArray
_imp._new = _new

_internal = _op
op = _op


def _export_public():
    g = globals()
    for name, fn in vars(_op).items():
        if hasattr(fn, "op") and name not in g and not name.startswith("__"):
            g[name] = fn


_export_public()

try:
    from . import sparse  # noqa: F401,E402
    from .sparse import CSRNDArray, RowSparseNDArray  # noqa: F401,E402
except ImportError as _e:   # the sparse module is not there yet
    if "sparse" not in str(_e):
        raise
try:
    from .io import save, load, load_frombuffer, save_to_bytes  # noqa: F401,E402
except ImportError as _e:
    if ".io" not in str(_e) and "io" not in str(_e):
        raise

from . import ndarray  # noqa: E402,F401
from . import random  # noqa: E402,F401
