"""Every registered op as a function on NDArrays (filled in by ``register.populate``).

``gpunda.ndarray`` re-exports the public ones; internal ones (``_plus_scalar``)
stay here and in ``nd._internal``.
"""
from gpunda._core.not_built import stub_function as _stub_function

# MXNet's mxnet.ndarray._internal also holds its ctypes layer's names. Registering the
# array classes with the C library and invoking an op by its C handle have no meaning
# here (gpunda's op functions call the registry directly): those are stubs that say so.
_imperative_invoke = _stub_function(
    "mxnet.ndarray._internal", "_imperative_invoke",
    "it runs an op by its C-API handle; gpunda's op functions call the op registry directly "
    "(mx.nd.<op>)")
_set_ndarray_class = _stub_function(
    "mxnet.ndarray._internal", "_set_ndarray_class",
    "it registers the NDArray class with MXNet's C library, which gpunda does not have "
    "(gpunda's array classes are fixed)")
_set_np_ndarray_class = _stub_function(
    "mxnet.ndarray._internal", "_set_np_ndarray_class",
    "it registers the mx.np.ndarray class with MXNet's C library, which gpunda does not have "
    "(gpunda's array classes are fixed)")


def __getattr__(name):
    # mxnet.ndarray._internal / mxnet.ndarray.op names of classes defined above this module
    # in the import order: NDArrayBase (the base of every array class: NDArray here) and
    # CachedOp (the engine's, which needs Symbol)
    if name == "NDArrayBase":
        from gpunda.ndarray.ndarray import NDArray
        return NDArray
    if name == "CachedOp":
        from gpunda._engine.cached_op import CachedOp
        return CachedOp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
