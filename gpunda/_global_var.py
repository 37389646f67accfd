"""MXNet's ``mxnet._global_var``: where its ctypes layer registers the NDArray classes;
stubs (gpunda's NDArray classes are fixed)."""
from gpunda._core.not_built import define_stubs

define_stubs(globals(), functions=('_set_ndarray_class', '_set_np_ndarray_class'),
             classes=(),
             reason="it calls MXNet's C++ library through ctypes, which gpunda does not have")
