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
