"""The Python-level functions of MXNet's ``nd.contrib`` (isinf, isfinite, isnan),
added to the namespace of ``_contrib_*`` ops."""
from __future__ import annotations

import numpy as np


def isinf(data):
    """1 where ``data`` is +inf or -inf, else 0 (in ``data``'s dtype)."""
    return data.abs() == np.inf


def isfinite(data):
    """1 where ``data`` is neither inf nor NaN, else 0."""
    is_data_not_nan = data == data
    is_data_not_infinity = data.abs() != np.inf
    return is_data_not_infinity * is_data_not_nan


def isnan(data):
    """1 where ``data`` is NaN, else 0."""
    return data != data


def extend(contrib):
    """Add the functions above to the ``nd.contrib`` module object."""
    for fn in (isinf, isfinite, isnan):
        setattr(contrib, fn.__name__, fn)
    from . import control_flow
    for name in control_flow.__all__:
        setattr(contrib, name, getattr(control_flow, name))
