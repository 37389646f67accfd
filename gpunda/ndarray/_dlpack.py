"""DLPack capsules and raw ``DLManagedTensor`` pointers to NDArrays.

MXNet 1.x hands DLPack around as bare ``"dltensor"`` capsules
(``nd.to_dlpack_for_read``) and, in its C API, as ``DLManagedTensor*``. NumPy
and CuPy only consume objects with ``__dlpack__``: ``CapsuleTensor`` is that
object for a capsule (``nd.from_dlpack`` uses it), and a raw pointer is first
wrapped in a new capsule (``_LIB.MXNDArrayFromDLPack``). The device is read from
the tensor's ``DLTensor`` (``DLManagedTensor`` starts with it: a data pointer,
then the ``DLDevice`` pair of int32s). The consumer takes ownership and calls the
tensor's deleter when the array is freed.
"""
from __future__ import annotations

import ctypes

from gpunda.base import GpundaError

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensorHead(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice)]


class CapsuleTensor:
    """Wraps an unused ``"dltensor"`` capsule; importing it consumes the capsule."""

    def __init__(self, capsule):
        if not _is_valid(capsule, b"dltensor"):
            raise GpundaError("from_dlpack: the capsule is not an unused DLPack tensor (a "
                              "capsule can be imported only once)")
        self._capsule = capsule
        head = _DLTensorHead.from_address(_get_pointer(capsule, b"dltensor"))
        self._device = (int(head.device.device_type), int(head.device.device_id))

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def from_managed_tensor_pointer(ptr):
    """An NDArray owning the ``DLManagedTensor`` at address ``ptr`` (MXNDArrayFromDLPack)."""
    if not ptr:
        raise GpundaError("MXNDArrayFromDLPack: the DLManagedTensor pointer is NULL")
    from gpunda.ndarray.ndarray import from_dlpack
    # no destructor: the new array's importer owns the tensor and calls its deleter
    return from_dlpack(_capsule_new(ptr, b"dltensor", None))
