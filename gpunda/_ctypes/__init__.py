"""MXNet's ctypes bindings to its C++ library (``mxnet._ctypes``). gpunda has no C
library: the modules import, and every name raises NotImplementedForGpunda saying so."""
from gpunda._ctypes import ndarray, space, symbol  # noqa: F401,E402
