"""``mx.np`` element-wise functions: unary math, binary arithmetic with broadcasting,
comparisons, logical and bitwise functions (ops in ops/np_elemwise.py)."""
from __future__ import annotations

import functools
import numbers

import numpy as _onp

from gpunda.numpy._helpers import is_tensor, is_scalar, to_tensor, invoke, check_ufunc_kwargs
from gpunda.numpy import _fast

_UNARY = ["abs", "absolute", "sign", "negative", "reciprocal", "square", "sqrt", "cbrt", "exp",
          "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "arcsin", "arccos",
          "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "degrees",
          "radians", "floor", "ceil", "rint", "trunc", "fix", "isnan", "isinf", "isfinite",
          "isposinf", "isneginf", "signbit", "logical_not", "bitwise_not", "invert"]
_BOOL_OUT = ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not")
_ALIAS = ["rad2deg", "deg2rad", "fabs", "positive"]

# name -> (op, scalar op, reversed scalar op or None when commutative)
_BINARY = {
    "add": ("_npi_add", "_npi_add_scalar", None),
    "subtract": ("_npi_subtract", "_npi_subtract_scalar", "_npi_rsubtract_scalar"),
    "multiply": ("_npi_multiply", "_npi_multiply_scalar", None),
    "true_divide": ("_npi_true_divide", "_npi_true_divide_scalar", "_npi_rtrue_divide_scalar"),
    "mod": ("_npi_mod", "_npi_mod_scalar", "_npi_rmod_scalar"),
    "power": ("_npi_power", "_npi_power_scalar", "_npi_rpower_scalar"),
    "maximum": ("_npi_maximum", "_npi_maximum_scalar", None),
    "minimum": ("_npi_minimum", "_npi_minimum_scalar", None),
    "fmax": ("_npi_fmax", "_npi_maximum_scalar", None),
    "fmin": ("_npi_fmin", "_npi_minimum_scalar", None),
    "hypot": ("_npi_hypot", "_npi_hypot_scalar", None),
    "arctan2": ("_npi_arctan2", "_npi_arctan2_scalar", "_npi_rarctan2_scalar"),
    "copysign": ("_npi_copysign", "_npi_copysign_scalar", "_npi_rcopysign_scalar"),
    "ldexp": ("_npi_ldexp", "_npi_ldexp_scalar", "_npi_rldexp_scalar"),
    "floor_divide": ("_npi_floor_divide", "_npi_floor_divide_scalar", "_npi_rfloor_divide_scalar"),
    "equal": ("_npi_equal", "_npi_equal_scalar", None),
    "not_equal": ("_npi_not_equal", "_npi_not_equal_scalar", None),
    "greater": ("_npi_greater", "_npi_greater_scalar", "_npi_less_scalar"),
    "greater_equal": ("_npi_greater_equal", "_npi_greater_equal_scalar", "_npi_less_equal_scalar"),
    "less": ("_npi_less", "_npi_less_scalar", "_npi_greater_scalar"),
    "less_equal": ("_npi_less_equal", "_npi_less_equal_scalar", "_npi_greater_equal_scalar"),
    "logical_and": ("_npi_logical_and", "_npi_logical_and_scalar", None),
    "logical_or": ("_npi_logical_or", "_npi_logical_or_scalar", None),
    "logical_xor": ("_npi_logical_xor", "_npi_logical_xor_scalar", None),
    "bitwise_and": ("_npi_bitwise_and", "_npi_bitwise_and_scalar", None),
    "bitwise_or": ("_npi_bitwise_or", "_npi_bitwise_or_scalar", None),
    "bitwise_xor": ("_npi_bitwise_xor", "_npi_bitwise_xor_scalar", None),
    "lcm": ("_npi_lcm", "_npi_lcm_scalar", None),
    "gcd": ("_npi_gcd", "_npi_gcd_scalar", None),
}
_BIN_ALIAS = ["divide", "remainder", "fmod"]

__all__ = (_UNARY + _ALIAS + list(_BINARY) + _BIN_ALIAS +
           ["clip", "around", "round", "round_", "nan_to_num", "float_power", "heaviside",
            "divmod", "erf"])


def _make_unary(name):
    opname = f"_npi_{'bitwise_not' if name == 'invert' else 'abs' if name == 'absolute' else name}"
    onp_f = getattr(_onp, name)

    bool_out = name in _BOOL_OUT

    def f(x, out=None, **kwargs):
        if kwargs:
            check_ufunc_kwargs(name, kwargs)
        if bool_out and out is not None and _onp.dtype(out.dtype) != _onp.bool_:
            raise TypeError(f"{name}: out must be a bool array, got {_onp.dtype(out.dtype).name}")
        if not is_tensor(x):
            return onp_f(x, **kwargs) if is_scalar(x) else f(to_tensor(x), out=out)
        return invoke(opname, [x], out=out)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"NumPy's ``{name}``, element-wise, on ``mx.np.ndarray`` (dtype kept)."
    return _fast.unary(opname, f)


for _n in _UNARY:
    globals()[_n] = _make_unary(_n)
rad2deg, deg2rad, fabs = degrees, radians, abs  # noqa: F821 (made above)


def positive(x, out=None):
    """``+x`` (a copy)."""
    return invoke("_copy", [to_tensor(x)], out=out)


def _scalar_kw(s):
    return {"scalar": float(s), "is_int": isinstance(s, (numbers.Integral, _onp.integer))
            and not isinstance(s, (bool, _onp.bool_))}


def _make_binary(name, ops):
    op, sop, rop = ops
    onp_f = getattr(_onp, name)

    both = _fast.binary(op)
    nd_cls = _fast._cls

    def f(x1, x2, out=None, **kwargs):
        if type(x1) is nd_cls and type(x2) is nd_cls and out is None and not kwargs:
            return both(x1, x2)
        if kwargs:
            check_ufunc_kwargs(name, kwargs)
        t1, t2 = is_tensor(x1), is_tensor(x2)
        if not t1 and not t2:
            if is_scalar(x1) and is_scalar(x2):
                return onp_f(x1, x2, **kwargs)
            x1 = to_tensor(x1)
            t1 = True
        if t1 and t2:
            return invoke(op, [x1, x2], out=out)
        if t1:
            if not is_scalar(x2):
                return invoke(op, [x1, to_tensor(x2, x1)], out=out)
            return invoke(sop, [x1], out=out, **_scalar_kw(x2))
        if not is_scalar(x1):
            return invoke(op, [to_tensor(x1, x2), x2], out=out)
        return invoke(rop or sop, [x2], out=out, **_scalar_kw(x1))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"NumPy's ``{name}`` with broadcasting; dtypes follow MXNet's np rules "
                 f"(NOTE [np dtype rules] in ops/np_elemwise.py).")
    return f


for _n, _ops in _BINARY.items():
    globals()[_n] = _make_binary(_n, _ops)
divide, remainder = true_divide, mod  # noqa: F821


def fmod(x1, x2, out=None):
    """C-style remainder (sign of the dividend): ``x1 - trunc(x1 / x2) * x2``."""
    q = trunc(true_divide(x1, x2))  # noqa: F821
    return subtract(x1, multiply(q, x2), out=out)  # noqa: F821


def erf(x, out=None):
    """The Gauss error function."""
    return invoke("_npi_erf", [to_tensor(x)], out=out)


def clip(a, a_min, a_max, out=None):
    """Limit values to ``[a_min, a_max]`` (either may be None, not both)."""
    if a_min is None and a_max is None:
        raise ValueError("array_clip: must set either max or min")
    a = to_tensor(a)
    lo = float("-inf") if a_min is None else float(a_min)
    hi = float("inf") if a_max is None else float(a_max)
    return invoke("clip", [a], out=out, a_min=lo, a_max=hi)


def around(x, decimals=0, out=None, **kwargs):
    """Round half to even to ``decimals`` places."""
    if not is_tensor(x):
        return _onp.around(x, decimals)
    return invoke("_npi_around", [x], out=out, decimals=decimals)


round = round_ = around  # noqa: A001 (NumPy's names)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None, **kwargs):
    """Replace NaN and infinities by finite numbers (in place when ``copy=False``)."""
    if not is_tensor(x):
        return _onp.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    out = None if copy else x
    return invoke("_npi_nan_to_num", [x], out=out, nan=nan, posinf=posinf, neginf=neginf)


def float_power(x1, x2, out=None):
    """``x1 ** x2`` computed in float64."""
    x1 = to_tensor(x1) if not is_scalar(x1) else x1
    x2 = to_tensor(x2) if not is_scalar(x2) else x2
    if is_tensor(x1):
        x1 = x1.astype("float64")
    if is_tensor(x2):
        x2 = x2.astype("float64")
    return power(x1, x2, out=out)  # noqa: F821


def heaviside(x1, x2, out=None):
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0."""
    from gpunda.numpy._manip import where
    pos = greater(x1, 0)  # noqa: F821
    zero = equal(x1, 0)  # noqa: F821
    one = add(multiply(x1, 0), 1)  # noqa: F821
    return where(zero, add(multiply(x1, 0), x2), where(pos, one, multiply(x1, 0)))  # noqa: F821


def divmod(x1, x2, out=None):  # noqa: A001
    """``(floor_divide(x1, x2), mod(x1, x2))``."""
    return floor_divide(x1, x2), mod(x1, x2)  # noqa: F821
