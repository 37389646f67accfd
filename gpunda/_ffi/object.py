"""Stubs of MXNet's FFI object base (``mxnet._ffi.object``)."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=(),
             classes=('Object',),
             reason="it is MXNet's FFI to the packed functions of its C++ library, which gpunda does not have")
