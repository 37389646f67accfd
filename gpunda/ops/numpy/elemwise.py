"""``mx.np`` element-wise ops: unary math, binary broadcasting with MXNet's np dtype
rules, scalar variants, comparisons, logical and bitwise ops.

NOTE [np dtype rules]
MXNet's NumPy interface promotes mixed input dtypes, but not as NumPy does
(observed on MXNet 1.9.1): a float meets an int or bool -> the float's dtype (int32 +
float32 is float32, not float64); two floats or two same-signedness ints -> the wider;
a signed and an unsigned int -> at least int32; bool with bool stays bool (True + True
is True), except true division (float32). A Python scalar takes the array's dtype (an int
array + 2.5 stays int), except that true division of an int array gives float32 and a
bool array meets a scalar as int64. Unary math keeps the input dtype for ints
(sin of int32 is int32, computed in floating point and cast back) and refuses bool, as
MXNet's kernels have no bool case (np.sqrt of bool: MXNetError "Unknown type enum 7");
around also refuses float16. ``np_result_type`` is that table; every compute body applies it, so nd, Symbol
and CachedOp see the same dtypes.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register, declare_pointwise
from gpunda.ops._util import special, sum_to_shape, wrapped_int, c_cast_float

_F32 = np.dtype("float32")
_BOOL = np.dtype("bool")


def np_result_type(da, db, bool_bool=_BOOL):
    """The dtype MXNet's np binary arithmetic gives inputs of dtypes ``da``, ``db``."""
    da, db = np.dtype(da), np.dtype(db)
    if da == db:
        return bool_bool if da == _BOOL else da
    ka, kb = da.kind, db.kind
    if ka == "b":
        return db
    if kb == "b":
        return da
    if ka == "f" and kb == "f":
        return da if da.itemsize >= db.itemsize else db
    if ka == "f":
        return da
    if kb == "f":
        return db
    if ka == kb:          # both signed or both unsigned
        return da if da.itemsize >= db.itemsize else db
    return np.dtype(f"int{max(32, 8 * max(da.itemsize, db.itemsize))}")


def _arr(xp, r, dtype=None):
    """A backend array (NumPy returns scalars for 0-d inputs) of ``dtype``."""
    r = xp.asarray(r)
    if dtype is not None and r.dtype != dtype:
        r = r.astype(dtype)
    return r


def _cast_like(F, g, x):
    """Gradient ``g`` in input ``x``'s dtype (an int input gets its float gradient cast)."""
    return g if g.dtype == x.dtype else F.Cast(g, dtype=x.dtype)


# ----------------------------------------------------------------------------
# unary

_LN2, _LN10 = math.log(2.0), math.log(10.0)


def refuse_bool(name, x):
    """MXNet 1.9.1's np math kernels (MSHADOW_TYPE_SWITCH) have no bool case: a bool input
    raises MXNetError "Unknown type enum 7"."""
    raise GpundaError(f"Operator {name}: input dtype bool is not supported (MXNet's kernel "
                      f"has no bool case: Unknown type enum 7)")


def _unary_compute(fn, name):
    f = getattr(np, fn)

    def compute(xp, p, x):
        g = getattr(xp, fn) if xp is not np else f
        dt = x.dtype
        if dt.kind == "f":      # float in, the same float out
            r = g(x)
            return r if r.ndim else xp.asarray(r)
        if x.dtype == _BOOL:
            refuse_bool(name, x)
        return _arr(xp, g(x), dt)
    return compute


def _unary(fn, grad=None, save=("inputs",), name=None, aliases=()):
    name = name or f"_npi_{fn}"
    register(OpDef(name, _unary_compute(fn, name), inputs=("x",), gradient=grad,
                   nondiff=grad is None, save=save, family="np_elemwise", hidden=True,
                   aliases=aliases, doc=f"NumPy's {fn}, element-wise (mx.np.{fn})."))


def _zero(F, p, i, o, g):
    return [F.zeros_like(g[0])]


_unary("abs", lambda F, p, i, o, g: [g[0] * F.sign(i[0])], aliases=("_npi_absolute",))
_unary("sign", _zero, save=())
_unary("negative", lambda F, p, i, o, g: [-g[0]], save=())
_unary("reciprocal", lambda F, p, i, o, g: [-g[0] * o[0] * o[0]], save=("outputs",))
_unary("square", lambda F, p, i, o, g: [2 * i[0] * g[0]])
_unary("sqrt", lambda F, p, i, o, g: [g[0] / (2 * o[0])], save=("outputs",))
_unary("cbrt", lambda F, p, i, o, g: [g[0] / (3 * o[0] * o[0])], save=("outputs",))
_unary("exp", lambda F, p, i, o, g: [g[0] * o[0]], save=("outputs",))
_unary("expm1", lambda F, p, i, o, g: [g[0] * (o[0] + 1)], save=("outputs",))
_unary("log", lambda F, p, i, o, g: [g[0] / i[0]])
_unary("log1p", lambda F, p, i, o, g: [g[0] / (i[0] + 1)])
_unary("log2", lambda F, p, i, o, g: [g[0] / (i[0] * _LN2)])
_unary("log10", lambda F, p, i, o, g: [g[0] / (i[0] * _LN10)])
_unary("sin", lambda F, p, i, o, g: [g[0] * F.cos(i[0])])
_unary("cos", lambda F, p, i, o, g: [-g[0] * F.sin(i[0])])
_unary("tan", lambda F, p, i, o, g: [g[0] * (1 + o[0] * o[0])], save=("outputs",))
_unary("arcsin", lambda F, p, i, o, g: [g[0] * F.rsqrt(1 - i[0] * i[0])])
_unary("arccos", lambda F, p, i, o, g: [-g[0] * F.rsqrt(1 - i[0] * i[0])])
_unary("arctan", lambda F, p, i, o, g: [g[0] / (1 + i[0] * i[0])])
_unary("sinh", lambda F, p, i, o, g: [g[0] * F.cosh(i[0])])
_unary("cosh", lambda F, p, i, o, g: [g[0] * F.sinh(i[0])])
_unary("tanh", lambda F, p, i, o, g: [g[0] * (1 - o[0] * o[0])], save=("outputs",))
_unary("arcsinh", lambda F, p, i, o, g: [g[0] * F.rsqrt(i[0] * i[0] + 1)])
_unary("arccosh", lambda F, p, i, o, g: [g[0] * F.rsqrt(i[0] * i[0] - 1)])
_unary("arctanh", lambda F, p, i, o, g: [g[0] / (1 - i[0] * i[0])])
_unary("degrees", lambda F, p, i, o, g: [g[0] * (180.0 / math.pi)], save=())
_unary("radians", lambda F, p, i, o, g: [g[0] * (math.pi / 180.0)], save=())
for _n in ("floor", "ceil", "rint", "trunc", "fix"):
    _unary(_n, _zero, save=())
for _n in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not"):
    register(OpDef(f"_npi_{_n}", (lambda f: lambda xp, p, x: _arr(xp, getattr(xp, f)(x)))(_n),
                   inputs=("x",), nondiff=True, family="np_elemwise", hidden=True,
                   doc=f"NumPy's {_n}, element-wise (bool output)."))
register(OpDef("_npi_bitwise_not", lambda xp, p, x: _arr(xp, xp.invert(x)), inputs=("x",),
               nondiff=True, family="np_elemwise", hidden=True, aliases=("_npi_invert",),
               doc="Bitwise NOT (logical NOT for bool)."))


def _erf_grad(F, p, i, o, g):
    return [g[0] * (2 / math.sqrt(math.pi)) * F.exp(-i[0] * i[0])]


register(OpDef("_npi_erf", lambda xp, p, x: _arr(xp, special(xp).erf(x), x.dtype), inputs=("x",),
               gradient=_erf_grad, save=("inputs",), family="np_elemwise", hidden=True,
               doc="Gauss error function."))


def _around(xp, p, x):
    if x.dtype == _BOOL or x.dtype == np.float16:
        # MXNet's around kernel has neither a bool nor a float16 case
        raise GpundaError(f"Operator _npi_around: input dtype {x.dtype.name} is not supported")
    if x.dtype.kind in "iu" and p.decimals >= 0:
        return x.copy()
    return _arr(xp, xp.around(x, p.decimals), x.dtype)


register(OpDef("_npi_around", _around, inputs=("x",), params=[Param("decimals", "int", 0)],
               gradient=_zero, save=(), family="np_elemwise", hidden=True,
               doc="Round half to even to ``decimals`` places (NumPy's around)."))


def _nan_to_num(xp, p, x):
    if x.dtype.kind not in "fc":
        return x.copy()
    return _arr(xp, xp.nan_to_num(x, copy=True, nan=p.nan, posinf=p.posinf, neginf=p.neginf),
                x.dtype)


register(OpDef("_npi_nan_to_num", _nan_to_num, inputs=("x",),
               params=[Param("nan", "float", 0.0), Param("posinf", "float", None),
                       Param("neginf", "float", None)],
               gradient=lambda F, p, i, o, g: [g[0] * F.Cast(F._npi_isfinite(i[0]), dtype=g[0].dtype)],
               save=("inputs",), family="np_elemwise", hidden=True,
               doc="NaN -> nan, +inf -> posinf (largest finite), -inf -> neginf."))


# ----------------------------------------------------------------------------
# binary, broadcasting


# NumPy functions whose Python operator is the same ufunc (one call less per use)
_PYOPS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
          "true_divide": operator.truediv, "equal": operator.eq, "not_equal": operator.ne,
          "greater": operator.gt, "greater_equal": operator.ge, "less": operator.lt,
          "less_equal": operator.le}


# NOTE [np binary dtype checks]
# Which dtype pairs MXNet 1.9.1's np binary kernels take (observed, and read from
# np_elemwise_broadcast_op.h): the "mixed precision" ops cast an int operand to the float
# one's type, but two different non-float dtypes meet only on the broadcasting path
# (operands of one shape take the element-wise path, which refuses them), never uint8 with
# int8; subtract and mod have no bool kernel; true division takes no two different floats
# and no two different non-floats; maximum/minimum/copysign/ldexp need one dtype (not bool),
# hypot/arctan2 one float dtype, lcm and the bitwise ops one integer dtype (bool only
# element-wise), comparisons one dtype. Each entry returns the reason a pair is refused, or None.

def _pair_kind(da, db):
    fa, fb = da.kind == "f", db.kind == "f"
    return "same" if da == db else "ff" if fa and fb else "fi" if fa or fb else "ii"


def _mixed(with_bool):
    def check(da, db, same_shape):
        k = _pair_kind(da, db)
        if k == "same":
            return None if with_bool or da != _BOOL else "bool operands"
        if k == "ii":
            if {da.name, db.name} == {"uint8", "int8"}:
                return "uint8 with int8"
            if same_shape and not with_bool:
                return "two different integer dtypes of one shape"
        return None
    return check


def _true_div_check(da, db, same_shape):
    k = _pair_kind(da, db)
    if k == "ff":
        return "two different float dtypes"
    if k == "ii":
        return "two different non-float dtypes"
    return None


def _same_dtype(kinds, bool_elemwise=False):
    def check(da, db, same_shape):
        if da != db:
            return "different dtypes"
        if da == _BOOL and "b" not in kinds:
            return None if bool_elemwise and same_shape else "bool operands"
        return None if da.kind in kinds else f"{da.name} operands"
    return check


_BIN_CHECKS = {
    "add": _mixed(True), "multiply": _mixed(True), "power": _mixed(True),
    "subtract": _mixed(False), "mod": _mixed(False), "true_divide": _true_div_check,
    "maximum": _same_dtype("iuf"), "minimum": _same_dtype("iuf"),
    "copysign": _same_dtype("iuf"), "ldexp": _same_dtype("iuf"),
    "hypot": _same_dtype("f"), "arctan2": _same_dtype("f"),
    "lcm": _same_dtype("iu", True), "bitwise_and": _same_dtype("iu", True),
    "bitwise_or": _same_dtype("iu", True), "bitwise_xor": _same_dtype("iu", True),
}
for _n in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal"):
    _BIN_CHECKS[_n] = _same_dtype("iufb")


def check_binary_dtypes(name, fn, a, b):
    """Refuse operand dtypes MXNet's kernel for ``fn`` does not take (NOTE [np binary
    dtype checks]); a GpundaError naming the op and both dtypes."""
    check = _BIN_CHECKS.get(fn)
    if check is None:
        return
    why = check(np.dtype(a.dtype), np.dtype(b.dtype), tuple(a.shape) == tuple(b.shape))
    if why is not None:
        raise GpundaError(f"Operator {name}: input dtypes {a.dtype.name} and {b.dtype.name} "
                          f"are not supported ({why}; MXNet 1.9.1's kernel refuses them)")


def _bin_compute(fn, kind, name=None):
    """kind: arith (promote), div (true division: ints -> float32), cmp (bool output),
    int (integer/bool only: bitwise, lcm)."""
    pyop = _PYOPS.get(fn)
    name = name or f"_npi_{fn}"
    # inputs of one dtype need no promotion: float for all kinds, any non-bool but for
    # true division (ints give float32) and bool arithmetic (computed on int8)
    same_ok = (lambda dt: dt.kind == "f") if kind == "div" else (lambda dt: dt is not _BOOL) \
        if kind == "arith" else (lambda dt: True)
    ok_dtypes = {}

    def compute(xp, p, a, b):
        dt = a.dtype
        if pyop is not None and dt is b.dtype:
            ok = ok_dtypes.get(dt)
            if ok is None:
                ok = ok_dtypes[dt] = same_ok(dt)
            if ok:
                r = pyop(a, b)
                # NumPy gives a scalar for 0-d operands
                return r if r.ndim else xp.asarray(r)
        return _general(xp, a, b)

    def _general(xp, a, b):
        if a.dtype is not b.dtype or a.dtype.kind != "f" or kind == "int":
            check_binary_dtypes(name, fn, a, b)     # one float dtype: always taken
        if kind == "div":
            dt = np_result_type(a.dtype, b.dtype)
            if dt.kind != "f":
                dt = _F32
        elif kind == "int":
            dt = np.result_type(a.dtype, b.dtype)
            if dt == _BOOL and fn in ("lcm", "gcd"):     # NumPy has no bool lcm; MXNet does
                return _arr(xp, getattr(xp, fn)(a.astype(np.int8), b.astype(np.int8)), _BOOL)
        else:
            dt = np_result_type(a.dtype, b.dtype)
        if kind != "int":
            # bool arithmetic is computed on 0/1 ints and cast back (True + True is True)
            ct = np.dtype("int8") if dt == _BOOL and kind != "cmp" else dt
            if a.dtype != ct:
                a = a.astype(ct)
            if b.dtype != ct:
                b = b.astype(ct)
        r = getattr(xp, fn)(a, b)
        return _arr(xp, r, None if kind == "cmp" else dt)
    return compute


def _bin(name, fn, grad=None, kind="arith", aliases=()):
    register(OpDef(name, _bin_compute(fn, kind, name), inputs=("x1", "x2"), gradient=grad,
                   nondiff=grad is None, save=("inputs", "outputs"), family="np_elemwise",
                   hidden=True, aliases=aliases,
                   doc=f"NumPy's {fn} with broadcasting and MXNet's np dtype rules."))


def _both(da, db):
    """A binary rule from partial derivatives ``da(F, a, b, out)``, ``db(...)``: each
    multiplied by the head gradient, summed over broadcast axes, cast to the input dtype."""
    def rule(F, p, i, o, g):
        a, b = i
        out = []
        for x, d in ((a, da), (b, db)):
            if d is None or np.dtype(x.dtype).kind != "f":   # MXNet: no gradient for ints
                out.append(F.zeros_like(x))
                continue
            dx = d(F, a, b, o[0])
            if getattr(dx, "dtype", None) == _BOOL:
                dx = F.Cast(dx, dtype=g[0].dtype)
            gx = g[0] * dx
            if gx.shape != x.shape:
                gx = sum_to_shape(F, gx, x.shape)
            out.append(_cast_like(F, gx, x))
        return out
    return rule


def _one(F, a, b, o):
    return 1


def _neg_one(F, a, b, o):
    return -1


_bin("_npi_add", "add", _both(_one, _one))
_bin("_npi_subtract", "subtract", _both(_one, _neg_one))
_bin("_npi_multiply", "multiply", _both(lambda F, a, b, o: b, lambda F, a, b, o: a))
_bin("_npi_true_divide", "true_divide",
     _both(lambda F, a, b, o: 1 / b, lambda F, a, b, o: -o / b), kind="div",
     aliases=("_npi_divide",))
_bin("_npi_mod", "mod", _both(_one, lambda F, a, b, o: -F.floor(a / b)),
     aliases=("_npi_remainder",))
_bin("_npi_power", "power",
     _both(lambda F, a, b, o: b * F._npi_power(a, b - 1),
           lambda F, a, b, o: o * F.log(a)))
_bin("_npi_maximum", "maximum", _both(lambda F, a, b, o: F._npi_greater_equal(a, b),
                                      lambda F, a, b, o: F._npi_less(a, b)))
_bin("_npi_minimum", "minimum", _both(lambda F, a, b, o: F._npi_less_equal(a, b),
                                      lambda F, a, b, o: F._npi_greater(a, b)))
_bin("_npi_hypot", "hypot", _both(lambda F, a, b, o: a / o, lambda F, a, b, o: b / o))
_bin("_npi_arctan2", "arctan2", _both(lambda F, a, b, o: b / (a * a + b * b),
                                      lambda F, a, b, o: -a / (a * a + b * b)))
_bin("_npi_copysign", "copysign",
     _both(lambda F, a, b, o: F.sign(a) * F.sign(o), None))
_bin("_npi_fmax", "fmax", _both(lambda F, a, b, o: F._npi_greater_equal(a, b),
                                lambda F, a, b, o: F._npi_less(a, b)))
_bin("_npi_fmin", "fmin", _both(lambda F, a, b, o: F._npi_less_equal(a, b),
                                lambda F, a, b, o: F._npi_greater(a, b)))
_bin("_npi_floor_divide", "floor_divide", None)
def _cmp_zero(F, p, i, o, g):
    # comparisons are recorded with zero gradients, as MXNet's (a backward from a bool
    # head runs and leaves zeros)
    return [F.zeros_like(x) for x in i]


for _n in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
           "logical_and", "logical_or", "logical_xor"):
    _bin(f"_npi_{_n}", _n, _cmp_zero, kind="cmp")
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor", "lcm", "gcd", "left_shift", "right_shift"):
    _bin(f"_npi_{_n}", _n, None, kind="int")


def _ldexp(xp, p, a, b):
    check_binary_dtypes("_npi_ldexp", "ldexp", a, b)
    if a.dtype == b.dtype and a.dtype.kind in "iu":
        # MXNet keeps equal integer dtypes (np.ldexp(int8, int8) is int8), computing in
        # floating point and casting back as C does
        return c_cast_float(xp, a.astype(np.float64) * xp.power(2.0, b.astype(np.float64)),
                            a.dtype)
    dt = a.dtype if a.dtype.kind == "f" else _F32
    return _arr(xp, a.astype(dt) * xp.power(2.0, b.astype(dt)), dt)


register(OpDef("_npi_ldexp", _ldexp, inputs=("x1", "x2"), family="np_elemwise", hidden=True,
               gradient=_both(lambda F, a, b, o: o / a, lambda F, a, b, o: o * math.log(2.0)),
               save=("inputs", "outputs"), doc="x1 * 2**x2."))


# ----------------------------------------------------------------------------
# array op Python scalar

_SCALAR = [Param("scalar", "float", 1.0), Param("is_int", "bool", False)]


def _scalar_dtype(x, div):
    if div and x.dtype.kind != "f":
        return _F32
    if x.dtype == _BOOL:
        return np.dtype("int64")
    return x.dtype


def _int_array_scalar(x, p):
    """The scalar as MXNet 1.9.1's kernels meet it beside array ``x``: cast to an integer
    array's own dtype first (``DType(scalar)``: truncated, and wrapped where it does not fit),
    so int32 [1, 2, 5] * 1.5 is [1, 2, 5] and [1, 2, 5] == 1.5 is [True, False, False]."""
    if p.is_int:
        return int(p.scalar)
    if x.dtype.kind in "iu" and math.isfinite(p.scalar):
        return int(wrapped_int(x.dtype, p.scalar))
    return p.scalar


def _sc(name, f, grad, div=False, save=("inputs", "outputs")):
    def compute(xp, p, x):
        dt = x.dtype
        if dt.kind == "f":      # a float array keeps its dtype: nothing to convert
            r = f(xp, x, int(p.scalar) if p.is_int else p.scalar)
            if r.dtype is not dt:
                r = r.astype(dt)
            return r if r.ndim else xp.asarray(r)
        dt = _scalar_dtype(x, div)
        # true division keeps the float scalar (its result is float32)
        s = (int(p.scalar) if p.is_int else p.scalar) if div else _int_array_scalar(x, p)
        if x.dtype.kind != "f":
            x = x.astype(np.float64 if not p.is_int or div else np.int64)
        return _arr(xp, f(xp, x, s), dt)
    register(OpDef(name, compute, inputs=("x",), params=_SCALAR, gradient=grad,
                   nondiff=grad is None, save=save, family="np_elemwise", hidden=True,
                   doc=f"{name[5:]}: array and Python scalar, the array's dtype kept."))


def _g(expr):
    def rule(F, p, i, o, g):
        if np.dtype(i[0].dtype).kind != "f":
            return [F.zeros_like(i[0])]
        d = expr(F, p, i[0], o[0])
        if getattr(d, "dtype", None) == _BOOL:
            d = F.Cast(d, dtype=g[0].dtype)
        return [_cast_like(F, g[0] * d, i[0])]
    return rule


_sc("_npi_add_scalar", lambda xp, x, s: x + s, _g(lambda F, p, x, o: 1))
_sc("_npi_subtract_scalar", lambda xp, x, s: x - s, _g(lambda F, p, x, o: 1))
_sc("_npi_rsubtract_scalar", lambda xp, x, s: s - x, _g(lambda F, p, x, o: -1))
_sc("_npi_multiply_scalar", lambda xp, x, s: x * s, _g(lambda F, p, x, o: p.scalar))
_sc("_npi_true_divide_scalar", lambda xp, x, s: x / s, _g(lambda F, p, x, o: 1.0 / p.scalar),
    div=True)
_sc("_npi_rtrue_divide_scalar", lambda xp, x, s: s / x, _g(lambda F, p, x, o: -o / x), div=True)
_sc("_npi_mod_scalar", lambda xp, x, s: xp.mod(x, s), _g(lambda F, p, x, o: 1))
_sc("_npi_rmod_scalar", lambda xp, x, s: xp.mod(s, x),
    _g(lambda F, p, x, o: -F.floor(p.scalar / x)))
_sc("_npi_power_scalar", lambda xp, x, s: xp.power(x, s),
    _g(lambda F, p, x, o: p.scalar * F._npi_power_scalar(x, scalar=p.scalar - 1)))
_sc("_npi_rpower_scalar", lambda xp, x, s: xp.power(s, x),
    _g(lambda F, p, x, o: o * math.log(p.scalar)))
_sc("_npi_maximum_scalar", lambda xp, x, s: xp.maximum(x, s),
    _g(lambda F, p, x, o: F._npi_greater_equal_scalar(x, scalar=p.scalar)))
_sc("_npi_minimum_scalar", lambda xp, x, s: xp.minimum(x, s),
    _g(lambda F, p, x, o: F._npi_less_equal_scalar(x, scalar=p.scalar)))
_sc("_npi_hypot_scalar", lambda xp, x, s: xp.hypot(x, s), _g(lambda F, p, x, o: x / o))
_sc("_npi_arctan2_scalar", lambda xp, x, s: xp.arctan2(x, s),
    _g(lambda F, p, x, o: p.scalar / (x * x + p.scalar * p.scalar)))
_sc("_npi_rarctan2_scalar", lambda xp, x, s: xp.arctan2(s, x),
    _g(lambda F, p, x, o: -p.scalar / (x * x + p.scalar * p.scalar)))
_sc("_npi_copysign_scalar", lambda xp, x, s: xp.copysign(x, s),
    _g(lambda F, p, x, o: F.sign(x) * F.sign(o)))
_sc("_npi_rcopysign_scalar", lambda xp, x, s: xp.copysign(s, x), _g(lambda F, p, x, o: 0))
_sc("_npi_ldexp_scalar", lambda xp, x, s: x * 2.0 ** s, _g(lambda F, p, x, o: 2.0 ** p.scalar))
_sc("_npi_rldexp_scalar", lambda xp, x, s: s * xp.power(2.0, x),
    _g(lambda F, p, x, o: o * math.log(2.0)))
_sc("_npi_floor_divide_scalar", lambda xp, x, s: xp.floor_divide(x, s), None)
_sc("_npi_rfloor_divide_scalar", lambda xp, x, s: xp.floor_divide(s, x), None)


def _cmp_sc(name, fn, reverse=False):
    def compute(xp, p, x):
        s = _int_array_scalar(x, p)
        f = getattr(xp, fn)
        return _arr(xp, f(s, x) if reverse else f(x, s))
    register(OpDef(name, compute, inputs=("x",), params=_SCALAR, gradient=_cmp_zero,
                   save=("inputs",), family="np_elemwise", hidden=True,
                   doc=f"{fn} against a Python scalar."))


for _n in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
           "logical_and", "logical_or", "logical_xor"):
    _cmp_sc(f"_npi_{_n}_scalar", _n)


def _int_sc(name, fn, reverse=False):
    def compute(xp, p, x):
        s = int(p.scalar)
        if x.dtype == _BOOL:
            s = bool(s)
        f = getattr(xp, fn)
        return _arr(xp, f(s, x) if reverse else f(x, s), x.dtype)
    register(OpDef(name, compute, inputs=("x",), params=_SCALAR, nondiff=True,
                   family="np_elemwise", hidden=True, doc=f"{fn} with a Python int."))


for _n in ("bitwise_and", "bitwise_or", "bitwise_xor", "lcm", "gcd", "left_shift", "right_shift"):
    _int_sc(f"_npi_{_n}_scalar", _n)
for _n in ("left_shift", "right_shift"):
    _int_sc(f"_npi_r{_n}_scalar", _n, reverse=True)

# ----------------------------------------------------------------------------
# pointwise records (NOTE [Pointwise records] in registry.py). Inputs of one float dtype
# only: the fusion pass runs mixed or integer dtypes (NumPy's promotion) op by op.
declare_pointwise("_npi_add", "x1 + x2", ("g", "g"), broadcast="numpy")
declare_pointwise("_npi_subtract", "x1 - x2", ("g", "-g"), broadcast="numpy")
declare_pointwise("_npi_multiply", "x1 * x2", ("g * x2", "g * x1"), broadcast="numpy")
declare_pointwise("_npi_true_divide", "x1 / x2", ("g / x2", "-(g / x2) * x1 / x2"),
                  broadcast="numpy")
declare_pointwise("_npi_exp", "exp(x)", ("g * out",))
declare_pointwise("_npi_log", "log(x)", ("g / x",))
declare_pointwise("_npi_tanh", "tanh(x)", ("g * (1 - out * out)",))
declare_pointwise("_npi_sqrt", "sqrt(x)", ("g / (2 * out)",))
declare_pointwise("_npi_negative", "-x", ("-g",))
declare_pointwise("_npi_square", "x * x", ("2 * x * g",))
declare_pointwise("_npi_abs", "abs(x)", ("g * sign(x)",))
declare_pointwise("_npi_add_scalar", "x + scalar", ("g",))
declare_pointwise("_npi_subtract_scalar", "x - scalar", ("g",))
declare_pointwise("_npi_rsubtract_scalar", "scalar - x", ("-g",))
declare_pointwise("_npi_multiply_scalar", "x * scalar", ("g * scalar",))
declare_pointwise("_npi_true_divide_scalar", "x / scalar", ("g / scalar",))
