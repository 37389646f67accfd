"""MXNet's ``mxnet.rtc``: not supported yet in gpunda. The module imports (MXNet code
imports it at the top of files) and each name raises NotImplementedForGpunda naming
itself when used; docs/compat.md lists it."""
from gpunda._core.not_built import define_stubs
_DTYPE_CPP_TO_NP = None  # MXNet's value; unused until the module is built
_DTYPE_MX_TO_NP = None  # MXNet's value; unused until the module is built
_DTYPE_NP_TO_MX = None  # MXNet's value; unused until the module is built
_LIB = None  # MXNet's value; unused until the module is built

define_stubs(globals(), functions=(),
             classes=('CudaKernel', 'CudaModule'),
             reason="gpunda does not build mxnet.rtc yet")
