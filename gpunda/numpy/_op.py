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
