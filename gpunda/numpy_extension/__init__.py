"""MXNet's NumPy extensions (``mx.npx``): not built yet. The module imports; every name
raises NotImplementedForGpunda."""
from .._not_built import missing_module_getattr

NOT_BUILT = True     # util.set_np() checks this: no NumPy-array semantics yet

__getattr__ = missing_module_getattr("mxnet.numpy_extension",
                                     "MXNet's NumPy interface (mx.npx)")
