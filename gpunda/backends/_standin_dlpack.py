"""DLPack on the test stand-in GPU: capsules that say "CUDA device 0", as CuPy's do.

The stand-in's device memory is host memory, so an export is NumPy's capsule
with its ``DLDevice`` rewritten to ``(kDLCUDA, 0)``; an import accepts only
CUDA capsules (as ``cupy.from_dlpack`` does for device memory), rewrites the
device back and lets NumPy take the buffer. The memory stays shared and alive
through NumPy's own capsule deleter. ``DLManagedTensor`` starts with its
``DLTensor``: a data pointer, then the ``DLDevice`` pair of int32s.
"""
from __future__ import annotations

import ctypes

_KDL_CPU, _KDL_CUDA = 1, 2

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


def _device_of(capsule):
    """The ``DLDevice`` field of an unused legacy ``"dltensor"`` capsule (writable)."""
    if not _is_valid(capsule, b"dltensor"):
        raise ValueError("DLPack tensor is already consumed or is not a legacy dltensor "
                         "capsule (gpunda test stand-in)")
    return _DLTensorHead.from_address(_get_pointer(capsule, b"dltensor")).device


def export(host_array):
    """A capsule of ``host_array``'s buffer that reports CUDA device 0."""
    capsule = host_array.__dlpack__()
    dev = _device_of(capsule)
    dev.device_type, dev.device_id = _KDL_CUDA, 0
    return capsule


class _HostView:
    """Hands NumPy the capsule back with its device set to the host."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (_KDL_CPU, 0)


def import_(obj):
    """A NumPy array sharing the memory of a CUDA DLPack producer (``cupy.from_dlpack``)."""
    import numpy as np
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(obj).__name__} has no __dlpack__ "
                        f"(gpunda test stand-in)")
    kind = obj.__dlpack_device__()[0] if hasattr(obj, "__dlpack_device__") else None
    if kind not in (None, _KDL_CUDA):
        raise ValueError(f"CuPy cannot import DLPack from device type {kind} (the gpunda test "
                         f"stand-in takes CUDA tensors only)")
    capsule = obj.__dlpack__()
    dev = _device_of(capsule)
    if dev.device_type != _KDL_CUDA or dev.device_id != 0:
        raise ValueError(f"CuPy cannot import DLPack from device ({dev.device_type}, "
                         f"{dev.device_id}) (the gpunda test stand-in is CUDA device 0)")
    dev.device_type = _KDL_CPU
    host = np.from_dlpack(_HostView(capsule))
    if host.flags.writeable:
        return host
    # NumPy marks legacy-capsule imports read-only; CuPy's imports are writable
    iface = dict(host.__array_interface__)
    iface["data"] = (iface["data"][0], False)

    class _Owner:
        __array_interface__ = iface
        keep = host              # the import holds the capsule's deleter
    return np.asarray(_Owner())
