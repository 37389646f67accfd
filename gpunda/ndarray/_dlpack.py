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


# -- MXNet's ctypes view of DLPack (mxnet.ndarray.ndarray's DLContext ... DLManagedTensor) --

class DLContext(ctypes.Structure):
    """DLPack's device: (device_type, device_id)."""
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    """DLPack's element type: (type_code, bits, lanes); TYPE_MAP gives MXNet's per dtype
    name (type codes 0 int, 1 uint, 2 float)."""
    _fields_ = [("type_code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]
    TYPE_MAP = {"int32": (0, 32, 1), "int64": (0, 64, 1), "bool": (1, 1, 1),
                "uint8": (1, 8, 1), "uint32": (1, 32, 1), "uint64": (1, 64, 1),
                "float16": (2, 16, 1), "float32": (2, 32, 1), "float64": (2, 64, 1)}


class DLTensor(ctypes.Structure):
    """DLPack's tensor description (data pointer, device, ndim, dtype, shape, strides,
    byte offset)."""
    _fields_ = [("data", ctypes.c_void_p), ("ctx", DLContext), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    """A DLTensor with its owner's context pointer and the deleter that frees it."""


DeleterFunc = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DeleterFunc)]

_c_str_dltensor = ctypes.c_char_p(b"dltensor")
_c_str_used_dltensor = ctypes.c_char_p(b"used_dltensor")

_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.restype = ctypes.c_int
_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dlpack_deleter(pycapsule):
    """The destructor MXNet gives its DLPack capsules: ``pycapsule`` is the capsule's
    address; a capsule nobody imported (still named "dltensor") has its tensor's deleter
    called and is renamed "used_dltensor", so no other destructor frees it again. A
    consumed capsule is left alone."""
    addr = pycapsule.value if isinstance(pycapsule, ctypes.c_void_p) else pycapsule
    if not addr:
        return
    capsule = ctypes.cast(addr, ctypes.py_object).value
    if not _is_valid(capsule, _c_str_dltensor.value):
        return
    managed = DLManagedTensor.from_address(_get_pointer(capsule, _c_str_dltensor.value))
    if managed.deleter:
        managed.deleter(ctypes.pointer(managed))
    _set_name(capsule, _c_str_used_dltensor)     # a name that outlives the call
