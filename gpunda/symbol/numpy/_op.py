"""MXNet's ``mx.sym.np._op``: ``mx.sym.np``'s array functions that build graph nodes."""
import importlib as _importlib

_NAMES = (
    "all", "amax", "amin", "any", "atleast_1d", "atleast_2d", "atleast_3d", "copy", "cumsum",
    "diag", "diagflat", "diagonal", "dot", "max", "min", "moveaxis", "prod", "product", "repeat",
    "reshape", "roll", "sometrue", "squeeze", "sum", "trace", "transpose",
)
_src = _importlib.import_module("gpunda.symbol.numpy")
for _n in _NAMES:
    globals()[_n] = getattr(_src, _n)
del _n, _src, _importlib
