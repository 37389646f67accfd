"""gpunda: MXNet 1.x's imperative core on CuPy, with NumPy/SciPy on the CPU.

``import gpunda as mx`` gives ``mx.nd``, ``mx.autograd``, ``mx.sym``,
``mx.gluon``, ``mx.cpu()``/``mx.gpu()`` with MXNet 1.x semantics.
"""
from __future__ import annotations

__version__ = "0.1.0"

from gpunda import base
from gpunda.base import GpundaError, MXNetError
from gpunda import context
from gpunda.context import Context, Device, cpu, gpu, cpu_pinned, current_context, num_gpus, gpu_memory_info
from gpunda import util
from gpunda.util import is_np_array, is_np_shape, np_shape, set_np_shape, use_np_shape  # noqa: F401
from gpunda import autograd
from gpunda import ndarray
from gpunda import ndarray as nd
from gpunda import random
from gpunda import name, attribute, runtime

for _m in ("symbol", "gluon", "model", "optimizer", "lr_scheduler",
           "metric", "initializer", "kvstore", "io", "recordio"):
    try:
        __import__(f"{__name__}.{_m}")
    except ModuleNotFoundError as _e:
        if _e.name != f"{__name__}.{_m}":
            raise

if "symbol" in dir():
    sym = symbol  # noqa: F821
from gpunda._engine.cached_op import CachedOp  # noqa: E402
if "kvstore" in dir():
    kv = kvstore  # noqa: F821
if "initializer" in dir():
    init = initializer  # noqa: F821

# MXNet's top-level names from util, attribute and the small modules
from gpunda.util import (is_np_shape, set_np_shape, np_shape, use_np_shape,  # noqa: E402
                   is_np_array, np_array, use_np_array, use_np)
from gpunda.attribute import AttrScope  # noqa: E402
from gpunda import error, libinfo, engine  # noqa: E402
rnd = random


def __getattr__(name):
    # rarely used modules load on first use, keeping ``import gpunda`` fast
    if name in _LAZY_MODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{_LAZY_MODULES[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LAZY_MODULES = {name: name for name in (
    "test_utils", "contrib", "operator", "numpy", "numpy_extension", "profiler", "registry",
    "log", "library", "image", "rnn", "onnx")}
_LAZY_MODULES.update(np="numpy", npx="numpy_extension", img="image")
# MXNet's symbolic training stack: mx.mod and mx.module are one package
_LAZY_MODULES.update(mod="module", module="module", callback="callback", monitor="monitor",
                     mon="monitor")
_LAZY_MODULES.update(visualization="visualization", viz="visualization")
# MXNet's smaller modules, and those standing in for its C++ side (stubs, docs/compat.md)
_LAZY_MODULES.update({name: name for name in (
    "rtc", "notebook", "executor_manager", "numpy_op_fallback", "numpy_dispatch_protocol",
    "misc", "ndarray_doc",
    "symbol_doc", "space", "torch", "tvmop", "api", "cython", "_ctypes", "_ffi", "_cy3",
    "_api_internal", "_global_var")})
_LAZY_MODULES.update(np_symbol="symbol.numpy")     # MXNet's mx.np_symbol: np Symbols, load


def __dir__():
    # the lazily loaded modules are attributes too, as on MXNet (dir(mx) lists mx.np, mx.mod);
    # cython, misc and space are modules `import mxnet` does not load, so MXNet omits them
    return sorted(set(globals()) | (set(_LAZY_MODULES) - {"cython", "misc", "space"}))


def install_mxnet_alias():
    """Make ``import mxnet`` (and every ``mxnet.X.Y``) give gpunda, for code that imports
    mxnet itself; call it before the first ``import mxnet``. Returns the alias module.
    See gpunda/_tools/alias.py (``GPUNDA_AS_MXNET=1`` does the same at start-up)."""
    from gpunda._tools.alias import install_mxnet_alias as _install
    return _install()

# the __future__ import binds `annotations`; MXNet's namespace has no such name (dir())
del annotations
