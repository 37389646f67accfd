"""Stubs of MXNet's ctypes FFI value types."""
from gpunda._core.not_built import define_stubs

RETURN_SWITCH = {}

define_stubs(globals(), functions=(),
             classes=('MXNetValue', 'TypeCode'),
             reason="it is MXNet's FFI to the packed functions of its C++ library, which gpunda does not have")
