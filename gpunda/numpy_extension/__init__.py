"""MXNet's NumPy extensions (``mx.npx``): not built yet. The module imports; every name
raises NotImplementedForGpunda."""
from .._not_built import missing_module_getattr

__getattr__ = missing_module_getattr("mxnet.numpy_extension",
                                     "MXNet's NumPy interface (mx.npx)")
