"""MXNet's ctypes FFI (``mxnet._ffi._ctypes``); stubs."""
from . import function, object, types  # noqa: F401,E402
