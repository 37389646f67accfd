"""MXNet's ctypes NDArray layer (``mxnet._ctypes.ndarray``). Its classes are the ones the
``nd`` namespace uses (``NDArrayBase`` is gpunda's NDArray, ``CachedOp`` the engine's, as
``mx.nd._internal`` has them); invoking an op by its C handle is a stub that says so."""
from gpunda.ndarray import _op as _nd_internal

_imperative_invoke = _nd_internal._imperative_invoke


def _monitor_callback_wrapper(callback):
    """MXNet's adapter from a CachedOp monitor callback ``callback(name, op_name, array)``
    to the four-argument form the engine calls (the last, an opaque user pointer, is
    dropped)."""
    def callback_handle(name, opr_name, array, _):
        callback(name, opr_name, array)
    return callback_handle


def __getattr__(name):
    # the classes live above this module's import order (the engine's CachedOp needs Symbol)
    if name in ("NDArrayBase", "CachedOp"):
        return getattr(_nd_internal, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
