"""Stubs of MXNet's FFI node conversion (``mxnet._ffi.node_generic``)."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('_scalar_type_inference', 'const', 'convert_to_node'),
             classes=(),
             reason="it is MXNet's FFI to the packed functions of its C++ library, which gpunda does not have")
