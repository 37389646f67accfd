"""bfloat16: MXNet's 2-byte float type (mshadow kBfloat16, type code 12), as a NumPy dtype.

NumPy has no bfloat16; the ml_dtypes package gives it one (CuPy 14 accepts the same dtype).
It is imported here, and only on first use, so ``import gpunda`` stays as fast as it was:
naming the dtype anywhere (``dtype='bfloat16'``, MXNet's ``amp.bfloat16``, loading a file that
holds one) goes through ``dtype()``, which loads ml_dtypes and then runs the callbacks the
engine registered with ``on_load`` (NOTE [bfloat16 compute] in gpunda/ops/_bf16.py).

MXNet's Python side spells the type ``np.dtype([('bfloat16', np.uint16)])`` (a record of one
2-byte field: NumPy had nothing better), and that is what ``NDArray.dtype``, ``infer_type``
and ``amp.bfloat16`` show, as in MXNet, so code comparing against it keeps working. Every
dtype parser reads that spelling as ml_dtypes' bfloat16, which is what the arrays hold and
``asnumpy`` gives.
"""
import numpy as np

__all__ = ["dtype", "loaded", "is_bf16", "is_name", "MX_RECORD", "on_load", "NAME", "public",
           "np_dtype"]

NAME = "bfloat16"
# MXNet 1.9.1's own spelling (mxnet.contrib.amp.amp.bfloat16, ndarray._DTYPE_MX_TO_NP[12])
MX_RECORD = np.dtype([("bfloat16", np.uint16)])

_dtype = None          # np.dtype(ml_dtypes.bfloat16) once loaded
type_ = None           # ml_dtypes.bfloat16 (the scalar type) once loaded
_callbacks = []


def dtype():
    """ml_dtypes' bfloat16 as a NumPy dtype, loading ml_dtypes on the first call."""
    global _dtype, type_
    if _dtype is None:
        try:
            import ml_dtypes
        except ImportError:     # a dependency; a clear message if it was left out
            from gpunda.base import GpundaError
            raise GpundaError("dtype=bfloat16 needs the ml_dtypes package (pip install "
                              "ml_dtypes), which gives NumPy a bfloat16 type") from None
        _dtype = np.dtype(ml_dtypes.bfloat16)
        type_ = ml_dtypes.bfloat16
        for cb in _callbacks:
            cb()
    return _dtype


def loaded():
    """Whether bfloat16 has been named in this process (no array can be one before)."""
    return _dtype is not None


def on_load(callback):
    """Run ``callback()`` when bfloat16 is first named (at once if it already was)."""
    _callbacks.append(callback)
    if _dtype is not None:
        callback()


def is_name(value):
    """Whether ``value`` names bfloat16 without being ml_dtypes' dtype: the string, MXNet's
    record dtype, or ml_dtypes' scalar type (checked by name, so nothing is imported)."""
    if isinstance(value, str):
        return value.strip() == NAME
    if isinstance(value, np.dtype):
        return value == MX_RECORD or (value.kind == "V" and value.name == NAME)
    return isinstance(value, type) and value.__name__ == NAME and \
        value.__module__.startswith("ml_dtypes")


def is_bf16(dt):
    """Whether dtype ``dt`` is bfloat16 (ml_dtypes'), without loading anything."""
    return _dtype is not None and dt == _dtype


def public(t):
    """The dtype MXNet's Python shows for element type ``t`` (a NumPy scalar type, as
    ``NDArray.dtype`` gives): its record spelling for bfloat16, ``t`` otherwise."""
    return MX_RECORD if t is type_ and t is not None else t


def np_dtype(t):
    """``np.dtype(t)`` for an ``NDArray.dtype`` value: MXNet's bfloat16 record gives ml_dtypes'
    bfloat16 (what the array holds); one identity test more than ``np.dtype``."""
    return np.dtype(t) if t is not MX_RECORD else dtype()
