"""``mx.np.io``: reading arrays from text files (through official NumPy)."""
from __future__ import annotations

import numpy as _onp

from gpunda.context import current_context
from gpunda.numpy._helpers import back_to

__all__ = ["genfromtxt"]


def genfromtxt(*args, **kwargs):
    """Official NumPy's ``genfromtxt``; the result is an ``mx.np.ndarray`` on ``ctx``
    (an extra keyword, default the current context)."""
    ctx = kwargs.pop("ctx", None) or current_context()
    return back_to(_onp.genfromtxt(*args, **kwargs), ctx)
