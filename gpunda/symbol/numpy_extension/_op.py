"""MXNet's ``mx.sym.npx._op``: ``mx.sym.npx``'s operator functions (the names of ``mx.npx._op``)."""
from gpunda.numpy_extension._op import _NAMES
from gpunda.symbol import numpy_extension as _src

for _n in _NAMES:
    globals()[_n] = getattr(_src, _n)
del _n, _src
