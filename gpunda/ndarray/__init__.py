"""The ``nd`` namespace: NDArray, creation functions and one function per op."""
from __future__ import annotations

from gpunda import ops as _ops  # registers the op families
from gpunda._engine import imperative as _imp
from gpunda.ndarray import _op
from gpunda.ndarray import register as _register
from gpunda.ndarray.ndarray import (NDArray, array, empty, zeros, ones, full, arange, waitall, from_dlpack,
                      concatenate, moveaxis, onehot_encode, imdecode, _new, _OPS)
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
from gpunda.ndarray.sparse import CSRNDArray, RowSparseNDArray  # noqa: F401,E402
from gpunda.ndarray.io import save, load, load_frombuffer, save_to_bytes  # noqa: F401,E402


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


def __getattr__(name):
    # CachedOp lives above ndarray in the import order (it needs Symbol): load it on use
    if name == "CachedOp":
        from gpunda._engine.cached_op import CachedOp
        return CachedOp
    if name in ("np", "numpy", "npx"):     # F.np / F.npx of an imperative hybrid_forward
        import importlib
        return importlib.import_module("gpunda.numpy" if name != "npx" else
                                       "gpunda.numpy_extension")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
