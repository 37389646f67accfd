"""MXNet's ``mx.sym.np._op``: ``mx.sym.np``'s array functions that build graph nodes (the
names of ``mx.np._op``)."""
from gpunda.numpy._op import _NAMES
from gpunda.symbol import numpy as _src

for _n in _NAMES:
    globals()[_n] = getattr(_src, _n)
del _n, _src
