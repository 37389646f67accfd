"""Stubs of MXNet's ctypes object layer."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('_return_object',),
             classes=('ObjectBase',),
             reason="it is MXNet's FFI to the packed functions of its C++ library, which gpunda does not have")
