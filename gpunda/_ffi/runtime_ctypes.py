"""Stubs of MXNet's FFI runtime types."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=(),
             classes=('TVMByteArray',),
             reason="it is MXNet's FFI to the packed functions of its C++ library, which gpunda does not have")
