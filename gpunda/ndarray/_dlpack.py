"""A DLPack capsule seen as a producer object, so ``from_dlpack`` takes MXNet's capsules.

NumPy and CuPy import DLPack only from objects with ``__dlpack__``; MXNet's
``to_dlpack_for_read`` hands out the bare capsule. The capsule's device is read
from its ``DLTensor`` (``DLManagedTensor`` starts with it: a data pointer, then
the ``DLDevice`` pair of int32s).
"""
from __future__ import annotations

import ctypes

from ..base import GpundaError

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


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
