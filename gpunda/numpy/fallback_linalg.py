"""The ``mx.np.linalg`` functions MXNet 1.9.1 computes with official NumPy on the host
(see fallback.py)."""
from __future__ import annotations

import numpy as _onp

from gpunda.numpy.fallback import make_fallback

__all__ = ["cond", "lstsq", "matrix_power", "matrix_rank", "multi_dot", "qr"]
for _n in __all__:
    globals()[_n] = make_fallback(_n, getattr(_onp.linalg, _n), where="mx.np.linalg")
