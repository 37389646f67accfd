"""MXNet's FFI to its C++ packed functions (``mxnet._ffi``); stubs: gpunda has no
C++ library."""
from . import _ctypes, _cy3, base, function, node_generic, object, runtime_ctypes  # noqa: F401,E402
