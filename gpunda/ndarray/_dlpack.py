"""DLPack capsules and raw ``DLManagedTensor`` pointers to NDArrays.

MXNet 1.x hands DLPack around as bare ``"dltensor"`` capsules
(``nd.to_dlpack_for_read``) and, in its C API, as ``DLManagedTensor*``.
NumPy and CuPy only consume objects with ``__dlpack__``; ``_Producer`` is that
object for a capsule, and a raw pointer is first wrapped in a new capsule. The
device comes from the tensor's own ``DLDevice``, so a CUDA tensor lands on the
matching ``gpu(i)``. The consumer takes ownership and calls the tensor's
deleter when the array is freed.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..base import GpundaError

_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensorHead(ctypes.Structure):
    # the leading fields of DLTensor: enough to learn where the data lives
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype = ctypes.c_int
_capsule_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _Producer:
    """Presents one capsule through the ``__dlpack__`` protocol NumPy/CuPy consume."""

    def __init__(self, capsule, device):
        self._capsule, self._device = capsule, device

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return self._device


def from_capsule(capsule, ctx=None):
    """An NDArray taking over an unused ``"dltensor"`` capsule."""
    if not _capsule_valid(capsule, b"dltensor"):
        raise GpundaError("from_dlpack: the capsule is not an unused 'dltensor' capsule "
                          "(a DLPack tensor can be consumed only once)")
    head = _DLTensorHead.from_address(_capsule_pointer(capsule, b"dltensor"))
    dev = (head.device.device_type, head.device.device_id)
    return _consume(_Producer(capsule, dev), dev)


def from_managed_tensor_pointer(ptr):
    """An NDArray owning the ``DLManagedTensor`` at address ``ptr``."""
    if not ptr:
        raise GpundaError("MXNDArrayFromDLPack: the DLManagedTensor pointer is NULL")
    head = _DLTensorHead.from_address(ptr)
    dev = (head.device.device_type, head.device.device_id)
    return _consume(_Producer(_capsule_new(ptr, b"dltensor", None), dev), dev)


def _consume(producer, dev):
    from .ndarray import _new, _writable_view
    from ..context import cpu, gpu
    if dev[0] in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        c = gpu(int(dev[1]))
        with c.backend.device_scope():
            return _new(c.backend.xp.from_dlpack(producer), c)
    if dev[0] not in (_KDL_CPU, _KDL_CUDA_HOST):
        raise GpundaError(f"from_dlpack: DLPack device type {dev[0]} is not supported "
                          f"(cpu=1, cuda=2, cuda_host=3, cuda_managed=13 are)")
    data = np.from_dlpack(producer)
    if not data.flags.writeable:
        data = _writable_view(data)   # NumPy marks imports read-only; the memory is shared
    return _new(data, cpu())


def to_dlpack_for_read(data):
    """A ``"dltensor"`` capsule sharing ``data``'s memory, for a consumer that reads it."""
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data):
    """A ``"dltensor"`` capsule sharing ``data``'s memory, for a consumer that writes it."""
    return data.to_dlpack_for_write()
