"""MXNet's NumPy extensions (``mx.npx``): the switches of NumPy mode, devices, MXNet's
neural-network ops on ``mx.np.ndarray``, ``npx.reshape``'s special codes, save/load."""
from gpunda._core.not_built import absent_module_getattr as _absent_module_getattr
from gpunda.util import set_np, reset_np, is_np_array, is_np_shape, use_np  # noqa: F401
from gpunda.util import get_cuda_compute_capability  # noqa: F401
from gpunda.context import (Context, cpu, gpu, cpu_pinned, num_gpus, current_context,  # noqa: F401
                       gpu_memory_info)
from gpunda.base import check_call, classproperty, with_metaclass  # noqa: F401
from gpunda import numpy as _np  # noqa: F401  (installs the mx.np array class)
from gpunda.numpy_extension._ops import *  # noqa: F401,F403
from gpunda.numpy_extension.utils import save, load  # noqa: F401
from gpunda.numpy_extension import utils  # noqa: F401



def waitall():
    """Wait for all pending work (``mx.nd.waitall``)."""
    from gpunda.ndarray import waitall as _w
    _w()


def __getattr__(name):
    if name in ("image", "random"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    return _missing(name)


_missing = _absent_module_getattr("mxnet.numpy_extension")   # every MXNet name is built

from gpunda.numpy_extension import _op, _register  # noqa: E402,F401  (MXNet's submodules of this package)
