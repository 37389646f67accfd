"""The ``nd`` namespace: NDArray, creation functions and one function per op."""
from __future__ import annotations

from gpunda import ops as _ops  # registers the op families
from gpunda._engine import imperative as _imp
from gpunda.ndarray import _op
from gpunda.ndarray import register as _register
from gpunda.ndarray.ndarray import (NDArray, array, empty, zeros, ones, full, arange, waitall, from_dlpack,
                      concatenate, moveaxis, onehot_encode, imdecode, _new, _OPS)
from gpunda.ndarray.ndarray import (_GRAD_REQ_MAP, _new_empty_handle,  # noqa: F401  (MXNet's)
                                    _DTYPE_MX_TO_NP, _DTYPE_NP_TO_MX)
from gpunda.ndarray.functions import (add, subtract, multiply, divide, true_divide, modulo, power,  # noqa: F401
                        maximum, minimum, equal, not_equal, greater, greater_equal, lesser,
                        lesser_equal, logical_and, logical_or, logical_xor, linspace, eye,
                        split_v2, from_numpy, histogram, to_dlpack_for_read, to_dlpack_for_write,
                        reset_arrays)
from gpunda.ndarray.indexing import (indexing_key_expand_implicit_axes, get_indexing_dispatch_code,  # noqa: F401
                       get_oshape_of_gather_nd_op)

_register.populate(_op, NDArray)
_OPS.update({name: fn.op for name, fn in vars(_op).items() if hasattr(fn, "op")})
_imp._NDArray = NDArray
_imp._new = _new
_imp.bind_array_class(NDArray)

_internal = _op
op = _op


def _export_public():
    g = globals()
    for name, fn in vars(_op).items():
        if hasattr(fn, "op") and name not in g and not name.startswith("__"):
            g[name] = fn


_export_public()

from gpunda.ndarray import sparse  # noqa: F401,E402
from gpunda.ndarray.sparse import CSRNDArray, RowSparseNDArray, _ndarray_cls  # noqa: F401,E402
from gpunda.ndarray.io import save, load, load_frombuffer, save_to_bytes  # noqa: F401,E402
from gpunda._core import hooks as _hooks  # noqa: E402


def _from_dlpack_pointer(ptr):
    from gpunda.ndarray._dlpack import from_managed_tensor_pointer   # DLPack loads on use
    return from_managed_tensor_pointer(ptr)


# what the layers below call on NDArrays (NOTE [Upward hooks] in gpunda/_core/hooks.py)
_hooks.register_ndarray(NDArray, _new, __import__("sys").modules[__name__], sparse._wrap)
_hooks.from_dlpack_pointer = _from_dlpack_pointer


def _sync_copy_from_ndarray(dst, src, j):
    from gpunda.ndarray._sparse_create import sync_copy_from_ndarray
    return sync_copy_from_ndarray(dst, src, j)


_hooks.sync_copy_from_ndarray = _sync_copy_from_ndarray


def _python_operators():
    from gpunda import operator as _operator_module
    return _operator_module


_hooks.python_operators = _python_operators


def _prefixed_namespace(name, prefixes):
    """A module holding ops registered as ``<prefix><name>`` under their short names
    (``nd.linalg.gemm2`` for ``_linalg_gemm2``, ``nd.contrib.boolean_mask``)."""
    import types
    mod = types.ModuleType(f"{__name__}.{name}", f"MXNet's nd.{name} namespace.")
    for full, fn in vars(_op).items():
        for pre in prefixes:
            if full.startswith(pre) and hasattr(fn, "op"):
                setattr(mod, full[len(pre):], fn)
    return mod


linalg = _prefixed_namespace("linalg", ("_linalg_",))
contrib = _prefixed_namespace("contrib", ("_contrib_",))
image = _prefixed_namespace("image", ("_image_",))

from gpunda.ndarray import ndarray  # noqa: E402,F401
from gpunda.ndarray import random  # noqa: E402,F401

from gpunda.ndarray import _contrib_extra  # noqa: E402
_contrib_extra.extend(contrib)
from gpunda.ndarray import _contrib_optim  # noqa: E402
_contrib_optim.extend(contrib)
from gpunda.ndarray import _contrib_names  # noqa: E402
_contrib_names.extend(contrib)
from gpunda.ndarray import utils  # noqa: E402,F401

# MXNet's generated op modules, under their names (mx.nd.gen_op.<op>, ...)
gen_op = gen__internal = _op
gen_contrib, gen_linalg, gen_sparse = contrib, linalg, sparse
gen_image = image
gen_random = _prefixed_namespace("gen_random", ("_random_",))
if not hasattr(_op, "reset_arrays"):
    _op.reset_arrays = reset_arrays
from gpunda.ops import backward_names as _backward_names  # noqa: E402
_backward_names.add_stubs(_op, "mxnet.ndarray._internal")     # MXNet's _backward_* ops: named, and say why not


def _fill_out(fill):
    def _set_value(src, out=None, name=None, **kwargs):
        """MXNet's ``_set_value``: fill ``out`` (required) with ``src``."""
        if not isinstance(out, NDArray):
            from gpunda.base import GpundaError
            raise GpundaError("Operator _set_value: the target out= must be an NDArray "
                              "(it takes its shape, dtype and device from it)")
        return fill(src=src, shape=out.shape, dtype=out.dtype, ctx=out.context, out=out,
                    **kwargs)
    return _set_value


_op._set_value = _fill_out(_op._set_value)     # the op fills its out= array


def __getattr__(name):
    # CachedOp lives above ndarray in the import order (it needs Symbol): load it on use
    if name == "CachedOp":
        from gpunda._engine.cached_op import CachedOp
        return CachedOp
    if name in ("np", "numpy", "npx", "numpy_extension"):   # F.np / F.npx, mx.nd.numpy
        import importlib
        return importlib.import_module("gpunda.numpy" if name in ("np", "numpy") else
                                       "gpunda.numpy_extension")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    # the names __getattr__ loads on use are listed, as MXNet's dir(mx.nd) lists them
    return sorted(set(globals()) | {"CachedOp", "np", "numpy", "npx", "numpy_extension"})

# the __future__ import binds `annotations`; MXNet's namespace has no such name (dir())
del annotations
