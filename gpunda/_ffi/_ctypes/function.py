"""Stubs of MXNet's ctypes packed-function layer."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('_make_mxnet_args', '_set_class_object'),
             classes=('FunctionBase',),
             reason="it is MXNet's FFI to the packed functions of its C++ library, which gpunda does not have")
