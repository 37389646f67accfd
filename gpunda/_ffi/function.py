"""Stubs of MXNet's packed-function registry (``mxnet._ffi.function``)."""
from gpunda._core.not_built import define_stubs


def list_global_func_names():
    """The packed functions of MXNet's C++ library: none in gpunda."""
    return []


define_stubs(globals(), functions=('_get_api', '_init_api', '_init_api_prefix', 'get_global_func'),
             classes=('Function',),
             reason="it is MXNet's FFI to the packed functions of its C++ library, which gpunda does not have")
