"""MXNet's NumPy interface (``mx.np``): ``ndarray`` with NumPy semantics and NumPy's
functions over gpunda's one op registry (see NOTE [One array, two front ends] in
multiarray.py).

Each functions module adds one ``from .X import *`` line at the end. Every name MXNet
1.9.1 has is built, so any other name is one MXNet lacks as well, and ``__getattr__``
says so.
"""
from gpunda._core.not_built import absent_module_getattr as _absent_module_getattr


from gpunda.numpy import multiarray  # noqa: E402
from gpunda.numpy.multiarray import ndarray  # noqa: E402,F401
from gpunda.numpy._dtypes import *  # noqa: E402,F401,F403
from gpunda.numpy.creation import *  # noqa: E402,F401,F403

multiarray._install()

__getattr__ = _absent_module_getattr("mxnet.numpy", "numpy")   # every MXNet name is built
from gpunda.numpy._math import *  # noqa: E402,F401,F403
from gpunda.numpy._reduce import *  # noqa: E402,F401,F403
from gpunda.numpy._manip import *  # noqa: E402,F401,F403
from gpunda.numpy._products import *  # noqa: E402,F401,F403
from gpunda.numpy.fallback import *  # noqa: E402,F401,F403
from gpunda.numpy import fallback, linalg, random  # noqa: E402,F401
from gpunda.numpy._sort import *  # noqa: E402,F401,F403
from gpunda.numpy._stats import *  # noqa: E402,F401,F403
from gpunda.numpy.arrayprint import *  # noqa: E402,F401,F403
from gpunda.numpy.io import *  # noqa: E402,F401,F403
from gpunda.numpy import arrayprint, io, function_base, stride_tricks, utils  # noqa: E402,F401
from gpunda.numpy.utils import _STR_2_DTYPE_  # noqa: E402,F401  (MXNet re-exports it)
from gpunda.numpy import _internal  # noqa: E402,F401  (F.np._internal: MXNet's _npi ops)

from gpunda.numpy import _op, _register, _api_internal  # noqa: E402,F401  (MXNet's submodules of this package)
