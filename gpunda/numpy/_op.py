"""MXNet's ``mx.np._op``: the array functions it defines in Python (the same
functions as ``mx.np``'s)."""
import importlib as _importlib

_NAMES = (
    "all", "amax", "amin", "any", "atleast_1d", "atleast_2d", "atleast_3d", "copy", "cumsum",
    "diag", "diagflat", "diagonal", "dot", "max", "min", "moveaxis", "prod", "product", "repeat",
    "reshape", "roll", "sometrue", "squeeze", "sum", "trace", "transpose",
)
_src = _importlib.import_module("gpunda.numpy")
for _n in _NAMES:
    globals()[_n] = getattr(_src, _n)
del _n, _src, _importlib

# MXNet's ``mx.nd.np._op`` (the same module here: mx.nd.np is mx.np) defines the imperative
# forms of mx.np's functions; they are mx.np's, served on first access
_ND_NP_OP_FUNCTIONS = (
    "abs", "absolute", "add", "append", "arange", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "argmax", "argmin", "argsort", "around", "array_split",
    "average", "bincount", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "blackman",
    "broadcast_to", "cbrt", "ceil", "clip", "column_stack", "concatenate", "copysign", "cos",
    "cosh", "deg2rad", "degrees", "delete", "diag_indices_from", "diff", "divide", "dsplit",
    "dstack", "ediff1d", "einsum", "empty_like", "equal", "exp", "expand_dims", "expm1", "eye",
    "fabs", "fix", "flip", "fliplr", "flipud", "floor", "full", "full_like", "greater",
    "greater_equal", "hamming", "hanning", "histogram", "hsplit", "hstack", "hypot", "identity",
    "indices", "inner", "insert", "invert", "isfinite", "isinf", "isnan", "isneginf", "isposinf",
    "lcm", "ldexp", "less", "less_equal", "linspace", "log", "log10", "log1p", "log2",
    "logical_not", "logspace", "matmul", "maximum", "may_share_memory", "mean", "minimum", "mod",
    "multiply", "nan_to_num", "negative", "nonzero", "not_equal", "ones", "ones_like", "outer",
    "pad", "percentile", "polyval", "power", "quantile", "rad2deg", "radians", "ravel",
    "reciprocal", "remainder", "resize", "rint", "rot90", "round", "round_", "row_stack",
    "shape", "shares_memory", "sign", "sin", "sinh", "sort", "split", "sqrt", "square", "stack",
    "std", "subtract", "swapaxes", "take", "tan", "tanh", "tensordot", "tile", "tril",
    "true_divide", "trunc", "unique", "unravel_index", "var", "vdot", "vsplit", "vstack",
    "where", "zeros", "zeros_like",
)
from gpunda._core.reexports import forwarding_getattr as _forwarding_getattr  # noqa: E402

__getattr__ = _forwarding_getattr(__name__, _ND_NP_OP_FUNCTIONS, "gpunda.numpy")


def _ufunc_helper(lhs, rhs, fn_array, fn_scalar, lfn_scalar, rfn_scalar=None, out=None):
    """MXNet's dispatch of a binary ``mx.np`` function: ``fn_scalar(lhs, rhs, out=)`` for
    two numbers, ``fn_array(lhs, rhs, out=)`` for two ``mx.np.ndarray``s,
    ``lfn_scalar(array, float(number), out=)`` for an array and a number (``rfn_scalar``
    instead when the number is on the left and one is given)."""
    from gpunda.base import GpundaTypeError, numeric_types
    from gpunda.numpy.multiarray import ndarray
    if isinstance(lhs, numeric_types):
        if isinstance(rhs, numeric_types):
            return fn_scalar(lhs, rhs, out=out)
        fn = lfn_scalar if rfn_scalar is None else rfn_scalar
        return fn(rhs, float(lhs), out=out)
    if isinstance(rhs, numeric_types):
        return lfn_scalar(lhs, float(rhs), out=out)
    if isinstance(lhs, ndarray) and isinstance(rhs, ndarray):
        return fn_array(lhs, rhs, out=out)
    raise GpundaTypeError(f"type {type(rhs)} not supported")


def _unary_func_helper(x, fn_array, fn_scalar, out=None, **kwargs):
    """MXNet's dispatch of a unary ``mx.np`` function: ``fn_scalar(x, **kwargs)`` for a
    number, ``fn_array(x, out=, **kwargs)`` for an array."""
    from gpunda.base import GpundaTypeError, numeric_types
    from gpunda.ndarray.ndarray import NDArray
    if isinstance(x, numeric_types):
        return fn_scalar(x, **kwargs)
    if isinstance(x, NDArray):
        return fn_array(x, out=out, **kwargs)
    raise GpundaTypeError(f"type {type(x)} not supported")
