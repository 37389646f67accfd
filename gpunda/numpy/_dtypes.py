"""``mx.np``'s dtype names and constants, and the dtype rules of its creation functions
(float32 is the default float, as in MXNet; NumPy would use float64)."""
from __future__ import annotations

import numpy as _onp

__all__ = ["bool_", "bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64",
           "pi", "e", "euler_gamma", "inf", "nan", "NAN", "NaN", "NINF", "PINF", "NZERO",
           "PZERO", "newaxis", "finfo", "iinfo", "dtype"]

bool_ = _onp.bool_
bool = _onp.bool_  # noqa: A001 (MXNet exports np.bool as numpy.bool_)
int8, uint8, int32, int64 = _onp.int8, _onp.uint8, _onp.int32, _onp.int64
float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
pi, e, euler_gamma = _onp.pi, _onp.e, _onp.euler_gamma
inf = PINF = _onp.inf
nan = NAN = NaN = _onp.nan
NINF = -_onp.inf
NZERO, PZERO = -0.0, 0.0
newaxis = None
finfo, iinfo, dtype = _onp.finfo, _onp.iinfo, _onp.dtype

default_float = _onp.dtype(_onp.float32)
# bfloat16: ml_dtypes' dtype (gpunda/_core/bf16.py), beyond MXNet's mx.np
_SUPPORTED = {"float16", "float32", "float64", "uint8", "int8", "int32", "int64", "bool", "bfloat16"}


def resolve_dtype(dt, where, default=default_float):
    """A NumPy dtype from what ``mx.np`` accepts (names, NumPy types, Python ``int``,
    ``float``, ``bool``); ``default`` for None. Unsupported dtypes raise TypeError as
    MXNet's (NumPy's) dtype check does."""
    if dt is None:
        return default
    from gpunda.base import np_dtype
    try:
        d = np_dtype(dt)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: data type {dt!r} not understood") from None
    if d.name not in _SUPPORTED:
        raise TypeError(f"{where}: dtype {d.name} is not supported by mx.np (supported: "
                        f"{', '.join(sorted(_SUPPORTED))})")
    return d

