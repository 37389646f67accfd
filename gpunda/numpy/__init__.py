"""MXNet's NumPy interface (``mx.np``): not built yet. The module imports (MXNet code
imports it at the top of files); every name raises NotImplementedForGpunda."""
from .._not_built import missing_module_getattr

NOT_BUILT = True     # util.set_np() checks this: no NumPy-array semantics yet

__getattr__ = missing_module_getattr("mxnet.numpy", "MXNet's NumPy interface (mx.np)")
from ._math import *  # noqa: E402,F401,F403
from ._reduce import *  # noqa: E402,F401,F403
from ._manip import *  # noqa: E402,F401,F403
from ._products import *  # noqa: E402,F401,F403
