"""MXNet's FFI to its C++ packed functions (``mxnet._ffi``); stubs: gpunda has no
C++ library."""
from gpunda._ffi import _ctypes, _cy3, base, function, node_generic, object, runtime_ctypes  # noqa: F401,E402
