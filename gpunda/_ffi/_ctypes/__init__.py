"""MXNet's ctypes FFI (``mxnet._ffi._ctypes``); stubs."""
from gpunda._ffi._ctypes import function, object, types  # noqa: F401,E402
