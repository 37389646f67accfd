"""``mx.np.utils``: the dtype names and constants of ``mx.np`` (see _dtypes.py)."""
import numpy as _onp

from gpunda.numpy._dtypes import (float16, float32, float64, uint8, int32, int8, int64, bool, bool_,  # noqa: F401,A004
                      pi, inf, nan, PZERO, NZERO, newaxis, finfo, e, NINF, PINF, NAN, NaN)

__all__ = ["float16", "float32", "float64", "uint8", "int32", "int8", "int64", "bool", "bool_",
           "pi", "inf", "nan", "PZERO", "NZERO", "newaxis", "finfo", "e", "NINF", "PINF",
           "NAN", "NaN", "_STR_2_DTYPE_"]

_STR_2_DTYPE_ = {"float16": _onp.float16, "float32": _onp.float32, "float64": _onp.float64,
                 "float": _onp.float64, "uint8": _onp.uint8, "int8": _onp.int8,
                 "int32": _onp.int32, "int64": _onp.int64, "int": _onp.int64,
                 "bool": _onp.bool_, "bool_": _onp.bool_, "None": None}

# the NumPy modules whose functions mx.np may stand in for, searched in this order
_ONP_OP_MODULES = [_onp, _onp.linalg, _onp.random, _onp.fft]


def _get_np_op(name):
    """NumPy's function ``name`` (from the first of ``_ONP_OP_MODULES`` that has it);
    ValueError when none has it."""
    for mod in _ONP_OP_MODULES:
        op = getattr(mod, name, None)
        if op is not None:
            return op
    from gpunda.base import GpundaValueError
    raise GpundaValueError(f"Operator `{name}` is not supported by `mxnet.numpy`.")
