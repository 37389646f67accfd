"""Element-wise ops: unary math, binary broadcast arithmetic, scalar variants, add_n.

Each op is one ``register(OpDef(...))`` record. Gradient rules follow NOTE
[Gradient rules] in registry.py: ``rule(F, p, ins, outs, ograds)``.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register, parse_dtype, declare_pointwise, declare_view
from gpunda.ops._util import (on_threads, special, scalar_for, sum_to_shape, dtype_mismatch,
                              require_same_dtype, no_bool, wrapped_int, c_cast_float)

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_SQRT_PI = math.sqrt(math.pi)

# ----------------------------------------------------------------------------
# unary


def _int_math(name, f, via_float=True):
    """MXNet's legacy unary math keeps an integer input's dtype: its kernel computes in
    double for integer types (``nd.exp(int32 20)`` is 485165195, float32 would give
    485165216) and casts the result back with C truncation (``nd.exp(int8 [1, 2, 3])``
    is [2, 7, 20]; NaN/inf give INT_MIN, see c_cast_float). NumPy would promote instead
    (float16 for int8)."""
    def compute(xp, p, x):
        k = x.dtype.kind
        if k == "f":
            return f(xp, p, x)
        if k == "b":
            # MXNet's unary kernels are instantiated for numeric types only
            raise GpundaError(f"Operator {name}: bool input is not supported (MXNet's "
                              f"kernel has no bool type); cast it first")
        if k in "iu" and via_float:
            return c_cast_float(xp, f(xp, p, x.astype(np.float64)), x.dtype)
        return f(xp, p, x)
    return compute


# ops whose result on an integer input is the input itself (no float round trip needed)
_INT_EXACT = {"abs", "sign", "negative", "square", "relu"}


# the unary ops that compute enough per element to gain from CPU threads (NOTE [CPU
# threads]; measured: tanh/exp 1.3-3x on 2 threads from 256 Ki elements, while a cheap
# pass such as relu or abs only moves memory and lost at every size tried)
_HEAVY = frozenset(("exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
                    "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
                    "arctanh", "sigmoid", "cbrt", "rcbrt", "erf", "erfinv", "gamma", "gammaln"))


def _unary(name, f, grad=None, *, aliases=(), save=("inputs", "outputs"), nondiff=False,
           doc="", ufunc=None, capture="ok"):
    kernel = on_threads(f) if name in _HEAVY else f
    op = register(OpDef(
        name, _int_math(name, kernel, via_float=name not in _INT_EXACT), gradient=grad,
        aliases=aliases, save=save, nondiff=nondiff, doc=doc, family="elemwise", ufunc=ufunc,
        capture=capture))
    # gradient rules (ops/raw.py) call F.log etc. on integer/bool inputs of mixed-dtype
    # numpy ops and need NumPy's float promotion, not the legacy dtype rule above
    op.raw_compute = f
    return op


def _zero_grad(F, p, ins, outs, og):
    return [F.zeros_like(og[0])]


def _sign(F, x):
    return F.sign(x)


_unary("abs", lambda xp, p, x: xp.abs(x), lambda F, p, i, o, g: [g[0] * F.sign(i[0])],
       save=("inputs",), doc="Absolute value, element-wise.")
_unary("sign", lambda xp, p, x: xp.sign(x), _zero_grad, save=(), doc="Sign (-1, 0, 1).")
_unary("negative", lambda xp, p, x: -x, lambda F, p, i, o, g: [-g[0]], save=(),
       doc="Negation, element-wise.")
_unary("reciprocal", lambda xp, p, x: 1 / x, lambda F, p, i, o, g: [-g[0] * o[0] * o[0]],
       save=("outputs",), doc="1/x, element-wise.")
_unary("square", lambda xp, p, x: x * x, lambda F, p, i, o, g: [2 * i[0] * g[0]],
       save=("inputs",), doc="x*x, element-wise.")
_unary("sqrt", lambda xp, p, x: xp.sqrt(x), lambda F, p, i, o, g: [g[0] / (2 * o[0])],
       save=("outputs",), doc="Square root, element-wise.")
_unary("rsqrt", lambda xp, p, x: 1 / xp.sqrt(x), lambda F, p, i, o, g: [-0.5 * g[0] * o[0] * o[0] * o[0]],
       save=("outputs",), doc="1/sqrt(x), element-wise.")
_unary("cbrt", lambda xp, p, x: xp.cbrt(x), lambda F, p, i, o, g: [g[0] / (3 * o[0] * o[0])],
       save=("outputs",), doc="Cube root, element-wise.")
# d/dx x**(-1/3) = -x**(-4/3) / 3 = -o**4 / 3, written on the output so it differentiates again
_unary("rcbrt", lambda xp, p, x: 1 / xp.cbrt(x),
       lambda F, p, i, o, g: [g[0] * F.square(F.square(o[0])) * (-1.0 / 3)],
       save=("outputs",), doc="1/cbrt(x), element-wise.")
_unary("exp", lambda xp, p, x: xp.exp(x), lambda F, p, i, o, g: [g[0] * o[0]],
       save=("outputs",), doc="e**x, element-wise.")
_unary("expm1", lambda xp, p, x: xp.expm1(x), lambda F, p, i, o, g: [g[0] * (o[0] + 1)],
       save=("outputs",), doc="exp(x) - 1, accurate near 0.")
_unary("log", lambda xp, p, x: xp.log(x), lambda F, p, i, o, g: [g[0] / i[0]],
       save=("inputs",), doc="Natural logarithm.")
_unary("log1p", lambda xp, p, x: xp.log1p(x), lambda F, p, i, o, g: [g[0] / (i[0] + 1)],
       save=("inputs",), doc="log(1 + x), accurate near 0.")
_unary("log2", lambda xp, p, x: xp.log2(x), lambda F, p, i, o, g: [g[0] / (i[0] * _LN2)],
       save=("inputs",), doc="Base-2 logarithm.")
_unary("log10", lambda xp, p, x: xp.log10(x), lambda F, p, i, o, g: [g[0] / (i[0] * _LN10)],
       save=("inputs",), doc="Base-10 logarithm.")
_unary("sin", lambda xp, p, x: xp.sin(x), lambda F, p, i, o, g: [g[0] * F.cos(i[0])],
       save=("inputs",), doc="Sine.")
_unary("cos", lambda xp, p, x: xp.cos(x), lambda F, p, i, o, g: [-g[0] * F.sin(i[0])],
       save=("inputs",), doc="Cosine.")
_unary("tan", lambda xp, p, x: xp.tan(x), lambda F, p, i, o, g: [g[0] * (1 + o[0] * o[0])],
       save=("outputs",), doc="Tangent.")
_unary("arcsin", lambda xp, p, x: xp.arcsin(x),
       lambda F, p, i, o, g: [g[0] * F.rsqrt(1 - i[0] * i[0])], save=("inputs",), doc="Inverse sine.")
_unary("arccos", lambda xp, p, x: xp.arccos(x),
       lambda F, p, i, o, g: [-g[0] * F.rsqrt(1 - i[0] * i[0])], save=("inputs",), doc="Inverse cosine.")
_unary("arctan", lambda xp, p, x: xp.arctan(x),
       lambda F, p, i, o, g: [g[0] / (1 + i[0] * i[0])], save=("inputs",), doc="Inverse tangent.")
_unary("sinh", lambda xp, p, x: xp.sinh(x), lambda F, p, i, o, g: [g[0] * F.cosh(i[0])],
       save=("inputs",), doc="Hyperbolic sine.")
_unary("cosh", lambda xp, p, x: xp.cosh(x), lambda F, p, i, o, g: [g[0] * F.sinh(i[0])],
       save=("inputs",), doc="Hyperbolic cosine.")
_unary("tanh", lambda xp, p, x: xp.tanh(x), lambda F, p, i, o, g: [g[0] * (1 - o[0] * o[0])],
       save=("outputs",), doc="Hyperbolic tangent.")
_unary("arcsinh", lambda xp, p, x: xp.arcsinh(x),
       lambda F, p, i, o, g: [g[0] * F.rsqrt(i[0] * i[0] + 1)], save=("inputs",),
       doc="Inverse hyperbolic sine.")
_unary("arccosh", lambda xp, p, x: xp.arccosh(x),
       lambda F, p, i, o, g: [g[0] * F.rsqrt(i[0] * i[0] - 1)], save=("inputs",),
       doc="Inverse hyperbolic cosine.")
_unary("arctanh", lambda xp, p, x: xp.arctanh(x),
       lambda F, p, i, o, g: [g[0] / (1 - i[0] * i[0])], save=("inputs",),
       doc="Inverse hyperbolic tangent.")
_unary("degrees", lambda xp, p, x: xp.degrees(x), lambda F, p, i, o, g: [g[0] * (180.0 / math.pi)],
       save=(), doc="Radians to degrees.")
_unary("radians", lambda xp, p, x: xp.radians(x), lambda F, p, i, o, g: [g[0] * (math.pi / 180.0)],
       save=(), doc="Degrees to radians.")


def _sigmoid(xp, p, x):
    # exp(-|x|) never overflows; pick the stable form on each side of 0
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


_unary("sigmoid", _sigmoid, lambda F, p, i, o, g: [g[0] * o[0] * (1 - o[0])],
       save=("outputs",), doc="Logistic sigmoid 1/(1+exp(-x)).")
# MXNet's relu_grad is 1 for x > 0, 0 below, and NaN at NaN (relu keeps NaN): that is
# sign(relu(x)), read from the output
_unary("relu", lambda xp, p, x: xp.maximum(x, 0).astype(x.dtype, copy=False),
       lambda F, p, i, o, g: [g[0] * F.sign(o[0])],
       save=("outputs",), doc="max(x, 0); NaN stays NaN.")
_unary("softsign", lambda xp, p, x: x / (1 + xp.abs(x)),
       lambda F, p, i, o, g: [g[0] / F.square(1 + F.abs(i[0]))], save=("inputs",),
       doc="x / (1 + |x|).")
for _n in ("floor", "ceil", "rint", "trunc"):
    _unary(_n, (lambda f: lambda xp, p, x: getattr(xp, f)(x))(_n), _zero_grad, save=(),
           doc=f"{_n}, element-wise (gradient zero).")
_unary("round", lambda xp, p, x: xp.where(x >= 0, xp.floor(x + 0.5), xp.ceil(x - 0.5)).astype(x.dtype, copy=False),
       _zero_grad, save=(), doc="Round half away from zero (MXNet's round).")
_unary("fix", lambda xp, p, x: xp.fix(x), _zero_grad, save=(), doc="Round toward zero.")
_unary("erf", lambda xp, p, x: special(xp).erf(x).astype(x.dtype, copy=False),
       lambda F, p, i, o, g: [g[0] * (2 / _SQRT_PI) * F.exp(-i[0] * i[0])], save=("inputs",),
       doc="Gauss error function.")
_unary("erfinv", lambda xp, p, x: special(xp).erfinv(x).astype(x.dtype, copy=False),
       lambda F, p, i, o, g: [g[0] * (_SQRT_PI / 2) * F.exp(o[0] * o[0])], save=("outputs",),
       doc="Inverse error function.")
_unary("gamma", lambda xp, p, x: special(xp).gamma(x).astype(x.dtype, copy=False),
       lambda F, p, i, o, g: [g[0] * o[0] * F._digamma(i[0])], save=("inputs", "outputs"),
       doc="Gamma function.")
_unary("gammaln", lambda xp, p, x: special(xp).gammaln(x).astype(x.dtype, copy=False),
       lambda F, p, i, o, g: [g[0] * F._digamma(i[0])], save=("inputs",),
       doc="log|Gamma(x)|.")
register(OpDef("_digamma", lambda xp, p, x: special(xp).digamma(x).astype(x.dtype, copy=False),
               gradient=lambda F, p, i, o, g: [g[0] * F._polygamma(i[0], n=1)], save=("inputs",),
               doc="Digamma function psi(x) (derivative of gammaln).", hidden=True))
register(OpDef("_polygamma",
               lambda xp, p, x: special(xp).polygamma(p.n, x).astype(x.dtype, copy=False),
               params=[Param("n", "int", 1)],
               gradient=lambda F, p, i, o, g: [g[0] * F._polygamma(i[0], n=p.n + 1)],
               save=("inputs",), doc="Polygamma function of order n.", hidden=True))


def _cast(xp, p, x):
    return x.astype(p.dtype)


register(OpDef("Cast", _cast, params=[Param("dtype", "dtype")], aliases=("cast",),
               gradient=lambda F, p, i, o, g: [F.Cast(g[0], dtype=i[0].dtype)],
               save=("inputs",), doc="Convert to another dtype.", family="elemwise"))


def _like_grad(F, p, i, o, g):
    return [None]


register(OpDef("zeros_like", lambda xp, p, x: xp.zeros_like(x), gradient=_like_grad, save=(),
               doc="Zeros with the shape and dtype of the input.", family="elemwise"))
register(OpDef("ones_like", lambda xp, p, x: xp.ones_like(x), gradient=_like_grad, save=(),
               doc="Ones with the shape and dtype of the input.", family="elemwise"))
register(OpDef("_copy", lambda xp, p, x: x.copy(), aliases=("identity",),
               gradient=lambda F, p, i, o, g: [g[0]], save=(), doc="A copy of the input."))


def _clip(xp, p, x):
    if x.dtype.kind == "b":     # NOTE [Dtypes a kernel is instantiated for]
        raise no_bool('clip', "data")
    if x.dtype.kind not in "iu" and p.a_min > p.a_max:
        # MXNet accepts a_min > a_max: its kernel tests x > a_max first, then x < a_min
        # (clip([0.5, 1.5], a_min=2, a_max=1) is [2, 1]); xp.clip would give a_max
        lo, hi = scalar_for(x, p.a_min), scalar_for(x, p.a_max)
        return xp.where(x > hi, hi, xp.where(x < lo, lo, x)).astype(x.dtype, copy=False)
    if x.dtype.kind not in "iu":
        return xp.clip(x, scalar_for(x, p.a_min), scalar_for(x, p.a_max))
    # MXNet compares an integer element with the float bounds and writes the bound cast to
    # the dtype: clip(int8, 200, 300) gives int8(200) = -56 everywhere, clip(int8, -300, 300)
    # leaves every element as it is
    lo, hi = wrapped_int(x.dtype, p.a_min), wrapped_int(x.dtype, p.a_max)
    return xp.where(x > p.a_max, hi, xp.where(x < p.a_min, lo, x)).astype(x.dtype, copy=False)


register(OpDef(
    "clip", _clip,
    params=[Param("a_min", "float"), Param("a_max", "float")],
    gradient=lambda F, p, i, o, g: [g[0] * F._greater_equal_scalar(i[0], scalar=p.a_min)
                                    * F._lesser_equal_scalar(i[0], scalar=p.a_max)],
    save=("inputs",), doc="Clip values into [a_min, a_max].", family="elemwise"))

# ----------------------------------------------------------------------------
# binary, broadcasting


def _bin(name, f, grad, *, aliases=(), save=("inputs",), nondiff=False, doc="", same_shape=False):
    # binary rules take need= and skip the side nobody differentiates (a constant operand).
    # ``f`` makes the uniform-dtype check itself (NOTE [Uniform input dtypes]): see _typed
    if same_shape:
        def compute(xp, p, a, b):
            if a.shape != b.shape:
                raise GpundaError(f"Operator {name}: lhs shape {a.shape} and rhs shape "
                                  f"{b.shape} must be equal (use broadcast_* to broadcast)")
            return f(xp, p, a, b)
    else:
        compute = f
    return register(OpDef(name, compute, inputs=("lhs", "rhs"), gradient=grad, aliases=aliases,
                          save=save, nondiff=nondiff, doc=doc, family="elemwise",
                          grad_need=grad is not None))


_LHS_RHS = ("lhs", "rhs")
_BOOL = np.dtype(bool)


def _bool_refused(name):
    return GpundaError(f"Operator {name} does not support boolean type (MXNet's legacy binary "
                       f"kernels have none); cast the inputs first, or use mx.np")


def _typed(name, f, *, pyop=None, same_dtype_out=False, as_input_dtype=False):
    """The compute body of binary op ``name``: refuse mixed input dtypes as MXNet does
    (NOTE [Uniform input dtypes]), then ``pyop(a, b)`` (an ``operator`` function, no
    Python frame) or ``f(xp, p, a, b)``. ``same_dtype_out`` casts a result NumPy
    promoted (int / int) back to the input dtype; ``as_input_dtype`` gives comparison
    results (bool) the input dtype, as MXNet's 1 or 0. A bool input is refused: MXNet's
    legacy binary kernels raise "Operator <name> does not support boolean type" (NOTE
    [Dtypes a kernel is instantiated for]); one identity test of the dtype already read."""
    if pyop is not None:
        def compute(xp, p, a, b):
            dt = a.dtype
            if dt is not b.dtype and dt != b.dtype:
                raise dtype_mismatch(name, _LHS_RHS, (a, b))
            if dt is _BOOL:
                raise _bool_refused(name)
            return pyop(a, b)
    elif same_dtype_out:
        def compute(xp, p, a, b):
            dt = a.dtype
            if dt is not b.dtype and dt != b.dtype:
                raise dtype_mismatch(name, _LHS_RHS, (a, b))
            if dt is _BOOL:
                raise _bool_refused(name)
            r = f(xp, p, a, b)
            return r if r.dtype == a.dtype else r.astype(a.dtype)
    elif as_input_dtype:
        def compute(xp, p, a, b):
            dt = a.dtype
            if dt is not b.dtype and dt != b.dtype:
                raise dtype_mismatch(name, _LHS_RHS, (a, b))
            if dt is _BOOL:
                raise _bool_refused(name)
            return f(xp, p, a, b).astype(a.dtype)
    else:
        def compute(xp, p, a, b):
            dt = a.dtype
            if dt is not b.dtype and dt != b.dtype:
                raise dtype_mismatch(name, _LHS_RHS, (a, b))
            if dt is _BOOL:
                raise _bool_refused(name)
            return f(xp, p, a, b)
    return compute


_BOTH = (True, True)


def _g_add(F, p, i, o, g, need=_BOTH):
    g0 = g[0]
    if need is None:
        need = _BOTH
    if i is None:       # save="broadcast": the shapes were equal, nothing to reduce
        return [g0 if need[0] else None, g0 if need[1] else None]
    a, b = i
    return [(g0 if a.shape == g0.shape else sum_to_shape(F, g0, a.shape)) if need[0] else None,
            (g0 if b.shape == g0.shape else sum_to_shape(F, g0, b.shape)) if need[1] else None]


def _g_sub(F, p, i, o, g, need=_BOTH):
    g0 = g[0]
    if need is None:
        need = _BOTH
    if i is None:
        return [g0 if need[0] else None, -g0 if need[1] else None]
    return [sum_to_shape(F, g0, i[0].shape) if need[0] else None,
            sum_to_shape(F, -g0, i[1].shape) if need[1] else None]


def _g_mul(F, p, i, o, g, need=_BOTH):
    a, b = i
    g0 = g[0]
    if need is None:
        need = _BOTH
    ga = gb = None
    if need[0]:
        ga = g0 * b
        if ga.shape != a.shape:
            ga = sum_to_shape(F, ga, a.shape)
    if need[1]:
        gb = g0 * a
        if gb.shape != b.shape:
            gb = sum_to_shape(F, gb, b.shape)
    return [ga, gb]


def _g_div(F, p, i, o, g, need=_BOTH):
    need = need or _BOTH
    ga = g[0] / i[1]
    return [sum_to_shape(F, ga, i[0].shape) if need[0] else None,
            sum_to_shape(F, -ga * i[0] / i[1], i[1].shape) if need[1] else None]


def _g_mod(F, p, i, o, g, need=_BOTH):
    need = need or _BOTH
    if np.dtype(i[0].dtype).kind != "f":    # MXNet's mod_grad/mod_rgrad are 0 for integer types
        return [F.zeros_like(i[0]) if need[0] else None,
                F.zeros_like(i[1]) if need[1] else None]
    return [sum_to_shape(F, g[0], i[0].shape) if need[0] else None,
            sum_to_shape(F, -g[0] * F.floor(i[0] / i[1]), i[1].shape) if need[1] else None]


def _g_pow(F, p, i, o, g, need=_BOTH):
    need = need or _BOTH
    a, b = i
    return [sum_to_shape(F, g[0] * b * F.broadcast_power(a, b - 1), a.shape) if need[0] else None,
            sum_to_shape(F, g[0] * F.broadcast_power(a, b) * F.log(a), b.shape)
            if need[1] else None]


def _g_max(F, p, i, o, g, need=_BOTH):
    need = need or _BOTH
    m = F.broadcast_greater_equal(i[0], i[1])
    return [sum_to_shape(F, g[0] * m, i[0].shape) if need[0] else None,
            sum_to_shape(F, g[0] * (1 - m), i[1].shape) if need[1] else None]


def _g_min(F, p, i, o, g, need=_BOTH):
    need = need or _BOTH
    m = F.broadcast_lesser_equal(i[0], i[1])
    return [sum_to_shape(F, g[0] * m, i[0].shape) if need[0] else None,
            sum_to_shape(F, g[0] * (1 - m), i[1].shape) if need[1] else None]


def _g_hypot(F, p, i, o, g, need=_BOTH):
    need = need or _BOTH
    y = F.broadcast_hypot(i[0], i[1])
    return [sum_to_shape(F, g[0] * i[0] / y, i[0].shape) if need[0] else None,
            sum_to_shape(F, g[0] * i[1] / y, i[1].shape) if need[1] else None]


def _int_pow(xp, a, b):
    """``a ** b`` as MXNet's kernel computes it: for integer ``a`` in double precision, cast
    back as C casts (``2 ** -1`` is 0, ``0 ** -1`` is INT_MIN; NumPy refuses negative integer
    exponents); float types directly. ``b`` is an array or a scalar of ``a``'s dtype."""
    if a.dtype.kind in "iu":
        bf = b.astype(np.float64) if hasattr(b, "astype") else np.float64(b)
        return c_cast_float(xp, xp.power(a.astype(np.float64), bf), a.dtype)
    return xp.power(a, b)


def _rpow(xp, x, s):
    """``s ** x`` (``s`` already in ``x``'s dtype) as MXNet computes it (see _int_pow)."""
    if x.dtype.kind in "iu":
        return c_cast_float(xp, xp.power(np.float64(s), x.astype(np.float64)), x.dtype)
    return xp.power(s, x)


def _mod(xp, p, a, b):
    # MXNet's mod follows the sign of the divisor like Python's %
    return xp.mod(a, b)


# MXNet registers _plus/_add, _minus/_sub, _mul and _div on the elemwise_ ops: they
# refuse unequal shapes and keep sparse kernels, unlike the broadcast_ forms
_ARITH = [
    ("add", operator.add, _g_add, ("_plus", "_add")),
    ("sub", operator.sub, _g_sub, ("_minus", "_sub")),
    ("mul", operator.mul, _g_mul, ("_mul",)),
    ("div", None, _g_div, ("_div",)),
]
for _n, _pyop, _g, _al in _ARITH:
    # add and sub read their inputs only to reduce over broadcast axes, and the
    # elemwise_ forms have equal shapes: those keep nothing for backward
    _shapes_only = _n in ("add", "sub")
    for _kind in ("broadcast_", "elemwise_"):
        if _pyop is None:    # div: int / int stays int, as in MXNet
            _f = _typed(_kind + _n, lambda xp, p, a, b: a / b, same_dtype_out=True)
        else:
            _f = _typed(_kind + _n, None, pyop=_pyop)
        if _kind == "broadcast_":
            _bin(_kind + _n, _f, _g, doc=f"Element-wise {_n} with broadcasting.",
                 save=("broadcast",) if _shapes_only else ("inputs",),
                 aliases={"add": ("broadcast_plus",), "sub": ("broadcast_minus",)}.get(_n, ()))
        else:
            _bin(_kind + _n, _f, _g, same_shape=True, save=() if _shapes_only else ("inputs",),
                 aliases=_al, doc=f"Element-wise {_n} of equal shapes.")
# each broadcast_<op> has an equal-shape twin _<op>: MXNet registers _mod, _power,
# _maximum, _minimum, _hypot and the comparisons as ops of their own (what Symbol's
# operators and sym.maximum/pow of two Symbols make), refusing unequal shapes
_BINARY = [
    ("mod", _mod, _g_mod, dict(same_dtype_out=True), "Remainder"),
    ("power", lambda xp, p, a, b: _int_pow(xp, a, b), _g_pow, dict(same_dtype_out=True),
     "a ** b"),
    ("maximum", lambda xp, p, a, b: xp.maximum(a, b), _g_max, {}, "Element-wise maximum"),
    ("minimum", lambda xp, p, a, b: xp.minimum(a, b), _g_min, {}, "Element-wise minimum"),
    ("hypot", lambda xp, p, a, b: xp.hypot(a, b), _g_hypot, dict(same_dtype_out=True),
     "sqrt(a**2 + b**2)"),
]
for _n, _f, _g, _kw, _what in _BINARY:
    _bin("broadcast_" + _n, _typed("broadcast_" + _n, _f, **_kw), _g,
         doc=f"{_what} with broadcasting.")
    _bin("_" + _n, _typed("_" + _n, _f, **_kw), _g, same_shape=True,
         doc=f"{_what} of equal shapes.")


_COMPARE = [
    ("equal", lambda xp, p, a, b: a == b), ("not_equal", lambda xp, p, a, b: a != b),
    ("greater", lambda xp, p, a, b: a > b), ("greater_equal", lambda xp, p, a, b: a >= b),
    ("lesser", lambda xp, p, a, b: a < b), ("lesser_equal", lambda xp, p, a, b: a <= b),
    ("logical_and", lambda xp, p, a, b: xp.logical_and(a, b)),
    ("logical_or", lambda xp, p, a, b: xp.logical_or(a, b)),
    ("logical_xor", lambda xp, p, a, b: xp.logical_xor(a, b)),
]
for _n, _f in _COMPARE:
    _bin("broadcast_" + _n, _typed("broadcast_" + _n, _f, as_input_dtype=True), None,
         nondiff=True, save=(),
         doc=f"Element-wise {_n} (1 or 0 in the input dtype) with broadcasting.")
    _bin("_" + _n, _typed("_" + _n, _f, as_input_dtype=True), None, nondiff=True, save=(),
         same_shape=True, doc=f"Element-wise {_n} (1 or 0 in the input dtype) of equal shapes.")
_unary("logical_not", lambda xp, p, x: xp.logical_not(x).astype(x.dtype), None, nondiff=True,
       save=(), doc="Logical not (1 or 0 in the input dtype).")

# ----------------------------------------------------------------------------
# scalar variants

_SCALAR = [Param("scalar", "float", 1.0, "the scalar operand"),
           Param("is_int", "bool", True, "accepted for MXNet compatibility")]


def _scalar_operand(xp, p, x):
    """The input as MXNet's scalar kernels see it (NumpyBinaryScalarType in
    src/operator/tensor/elemwise_binary_scalar_op.h): an integer input with a float
    scalar (``is_int=False``) is computed, and returned, in float64; a bool input in int64
    (float64 when ``is_int=False``). The scalar is then cast to that dtype (truncated for
    integers: ``nd.array([1, 2], dtype='int8') + 0.5`` is int8 [1, 2])."""
    k = x.dtype.kind
    if k == "b":
        return x.astype(np.int64 if p.is_int else np.float64)
    if k in "iu" and not p.is_int:
        return x.astype(np.float64)
    return x


def _sc(name, f, grad, *, save=("inputs",), nondiff=False, doc="", aliases=()):
    def compute(xp, p, x):
        if x.dtype.kind in "biu":
            x = _scalar_operand(xp, p, x)
        return f(xp, x, scalar_for(x, p.scalar))
    return register(OpDef(name, compute, params=_SCALAR, gradient=grad, save=save,
                          nondiff=nondiff, doc=doc, family="elemwise", aliases=aliases))


_sc("_plus_scalar", lambda xp, x, s: x + s, lambda F, p, i, o, g: [g[0]], save=(),
    doc="x + scalar.", aliases=("_PlusScalar",))
_sc("_minus_scalar", lambda xp, x, s: x - s, lambda F, p, i, o, g: [g[0]], save=(),
    doc="x - scalar.", aliases=("_MinusScalar",))
# MXNet's _scatter_* ops (src/operator/tensor/elemwise_scatter_op.cc): on dense arrays
# exactly _plus_scalar / _minus_scalar / elemwise_div; on a sparse lhs they compute only
# the stored values and keep its storage (the kernels are in ops/sparse/ops.py)
_sc("_scatter_plus_scalar", lambda xp, x, s: x + s, lambda F, p, i, o, g: [g[0]], save=(),
    doc="x + scalar; on row_sparse/csr input only the stored values change.")
_sc("_scatter_minus_scalar", lambda xp, x, s: x - s, lambda F, p, i, o, g: [g[0]], save=(),
    doc="x - scalar; on row_sparse/csr input only the stored values change.")
_bin("_scatter_elemwise_div", _typed("_scatter_elemwise_div", lambda xp, p, a, b: a / b,
                                     same_dtype_out=True),
     _g_div, same_shape=True,
     doc="lhs / rhs of equal shapes; with a row_sparse lhs only its stored rows are "
         "computed (row_sparse result).")
_sc("_rminus_scalar", lambda xp, x, s: s - x, lambda F, p, i, o, g: [-g[0]], save=(),
    doc="scalar - x.", aliases=("_RMinusScalar",))
_sc("_mul_scalar", lambda xp, x, s: x * s, lambda F, p, i, o, g: [g[0] * p.scalar], save=(),
    doc="x * scalar.", aliases=("_MulScalar",))
_sc("_div_scalar", lambda xp, x, s: (x / s).astype(x.dtype, copy=False),
    lambda F, p, i, o, g: [g[0] / p.scalar], save=(), doc="x / scalar.", aliases=("_DivScalar",))
_sc("_rdiv_scalar", lambda xp, x, s: (s / x).astype(x.dtype, copy=False),
    lambda F, p, i, o, g: [-g[0] * p.scalar / (i[0] * i[0])], doc="scalar / x.",
    aliases=("_RDivScalar",))
_sc("_mod_scalar", lambda xp, x, s: xp.mod(x, s), lambda F, p, i, o, g: [g[0]], save=(),
    doc="x mod scalar.", aliases=("_ModScalar",))
_sc("_rmod_scalar", lambda xp, x, s: xp.mod(s, x).astype(x.dtype, copy=False),
    lambda F, p, i, o, g: [-g[0] * F.floor(p.scalar / i[0])], doc="scalar mod x.",
    aliases=("_RModScalar",))
_sc("_power_scalar", lambda xp, x, s: _int_pow(xp, x, s).astype(x.dtype, copy=False),
    lambda F, p, i, o, g: [g[0] * p.scalar * F._power_scalar(i[0], scalar=p.scalar - 1)],
    doc="x ** scalar.", aliases=("_PowerScalar",))
_sc("_rpower_scalar", lambda xp, x, s: _rpow(xp, x, s).astype(x.dtype, copy=False),
    lambda F, p, i, o, g: [g[0] * o[0] * math.log(p.scalar)], save=("outputs",),
    doc="scalar ** x.", aliases=("_RPowerScalar",))
_sc("_maximum_scalar", lambda xp, x, s: xp.maximum(x, s),
    lambda F, p, i, o, g: [g[0] * F._greater_equal_scalar(i[0], scalar=p.scalar)],
    doc="max(x, scalar).", aliases=("_MaximumScalar",))
_sc("_minimum_scalar", lambda xp, x, s: xp.minimum(x, s),
    lambda F, p, i, o, g: [g[0] * F._lesser_equal_scalar(i[0], scalar=p.scalar)],
    doc="min(x, scalar).", aliases=("_MinimumScalar",))
_sc("_hypot_scalar", lambda xp, x, s: xp.hypot(x, s).astype(x.dtype, copy=False),
    lambda F, p, i, o, g: [g[0] * i[0] / F._hypot_scalar(i[0], scalar=p.scalar)],
    doc="sqrt(x**2 + scalar**2).", aliases=("_HypotScalar",))
for _n, _f in [("equal", lambda xp, x, s: x == s), ("not_equal", lambda xp, x, s: x != s),
               ("greater", lambda xp, x, s: x > s), ("greater_equal", lambda xp, x, s: x >= s),
               ("lesser", lambda xp, x, s: x < s), ("lesser_equal", lambda xp, x, s: x <= s),
               ("logical_and", lambda xp, x, s: xp.logical_and(x, s)),
               ("logical_or", lambda xp, x, s: xp.logical_or(x, s)),
               ("logical_xor", lambda xp, x, s: xp.logical_xor(x, s))]:
    _sc(f"_{_n}_scalar", (lambda f: lambda xp, x, s: f(xp, x, s).astype(x.dtype))(_f), None,
        nondiff=True, save=(), doc=f"x {_n} scalar (1 or 0 in the input dtype).")

# ----------------------------------------------------------------------------
# n-ary


def _add_n(xp, p, *xs):
    if not xs:
        raise GpundaError("Operator add_n: needs at least one input")
    require_same_dtype("add_n", [f"arg{i}" for i in range(len(xs))], *xs)
    r = xs[0].copy()
    for x in xs[1:]:
        r += x
    return r


register(OpDef(
    "add_n", _add_n, inputs=lambda p: tuple(f"arg{i}" for i in range(p.num_args)),
    params=[Param("num_args", "int", 1)], key_var_num_args="num_args",
    aliases=("ElementWiseSum", "_grad_add"),
    gradient=lambda F, p, i, o, g: [g[0]] * p.num_args, save=(),
    doc="Sum of all inputs (same shapes).", family="elemwise"))


def _sum_to(xp, p, g):
    shape = tuple(p.shape)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                      if d == 1 and g.shape[i + lead] != 1)
    r = g.sum(axis=axes, keepdims=True) if axes else g
    return r.reshape(shape)


register(OpDef("_sum_to", _sum_to, params=[Param("shape", "shape")],
               gradient=lambda F, p, i, o, g: [F._broadcast_back(g[0], like_shape=i[0].shape)],
               save=("inputs",), hidden=True,
               doc="Sum over broadcast axes down to `shape` (gradient of broadcasting)."))
register(OpDef("_broadcast_back",
               lambda xp, p, g: xp.broadcast_to(
                   g.reshape((1,) * (len(p.like_shape) - g.ndim) + g.shape), p.like_shape).copy(),
               params=[Param("like_shape", "shape")],
               gradient=lambda F, p, i, o, g: [F._sum_to(g[0], shape=i[0].shape)],
               save=("inputs",), hidden=True, doc="Broadcast back to `like_shape`."))


def _identity_like_rhs(xp, p, lhs, rhs):
    if lhs.shape != rhs.shape:
        raise GpundaError(f"Operator _identity_with_attr_like_rhs: lhs shape {lhs.shape} and "
                          f"rhs shape {rhs.shape} must be equal")
    return lhs.copy()


# MXNet's shape-constraint op: the value of lhs, with rhs's shape (symbolic inference uses
# it to push a shape backwards); rhs gets no gradient
register(OpDef("_identity_with_attr_like_rhs", _identity_like_rhs, inputs=("lhs", "rhs"),
               gradient=lambda F, p, i, o, g: [g[0], None], save=(), family="elemwise",
               doc="The lhs values; lhs and rhs share one shape."))


# ----------------------------------------------------------------------------
# smooth_l1 (the Huber-like loss of Fast R-CNN)


def _smooth_l1(xp, p, x):
    if x.dtype.kind == "b":     # NOTE [Dtypes a kernel is instantiated for]
        raise no_bool('smooth_l1', "data")
    s2 = p.scalar * p.scalar
    ax = xp.abs(x)
    return xp.where(ax < 1.0 / s2, 0.5 * s2 * x * x, ax - 0.5 / s2).astype(x.dtype, copy=False)


def _grad_smooth_l1(F, p, ins, outs, og):
    x = ins[0]
    s2 = p.scalar * p.scalar
    inner = F._lesser_scalar(F.abs(x), scalar=1.0 / s2)
    return [og[0] * (inner * x * s2 + (1 - inner) * F.sign(x))]


register(OpDef(
    "smooth_l1", _smooth_l1, params=[Param("scalar", "float", 1.0, "sigma")],
    gradient=_grad_smooth_l1, save=("inputs",), family="elemwise",
    doc="0.5 (sigma x)^2 where |x| < 1/sigma^2, else |x| - 0.5/sigma^2."))

# ----------------------------------------------------------------------------
# pointwise records (NOTE [Pointwise records] in registry.py): what the fusion pass
# compiles for a group of these ops; each mirrors the compute body and gradient rule above

declare_pointwise("abs", "abs(data)", ("g * sign(data)",))
declare_pointwise("sign", "sign(data)", ("0",))
declare_pointwise("negative", "-data", ("-g",))
declare_pointwise("reciprocal", "1 / data", ("-g * out * out",))
declare_pointwise("square", "data * data", ("2 * data * g",))
declare_pointwise("sqrt", "sqrt(data)", ("g / (2 * out)",))
declare_pointwise("rsqrt", "rsqrt(data)", ("-0.5 * g * out * out * out",))
declare_pointwise("exp", "exp(data)", ("g * out",))
declare_pointwise("expm1", "expm1(data)", ("g * (out + 1)",))
declare_pointwise("log", "log(data)", ("g / data",))
declare_pointwise("log1p", "log1p(data)", ("g / (data + 1)",))
declare_pointwise("tanh", "tanh(data)", ("g * (1 - out * out)",))
declare_pointwise("sigmoid", "sigmoid(data)", ("g * out * (1 - out)",))
declare_pointwise("relu", "max(data, 0)", ("g * sign(out)",))
declare_pointwise("softsign", "data / (1 + abs(data))", ("g / ((1 + abs(data)) * (1 + abs(data)))",))
declare_pointwise("erf", "erf(data)", (f"g * {2 / _SQRT_PI!r} * exp(-data * data)",))
declare_pointwise(["floor"], "floor(data)", ("0",))
declare_pointwise("sin", "sin(data)", ("g * cos(data)",))
declare_pointwise("cos", "cos(data)", ("-g * sin(data)",))
declare_pointwise("_power_scalar", "pow(data, scalar)", ("g * scalar * pow(data, scalar - 1)",))
declare_pointwise("_rpower_scalar", "pow(scalar, data)", ("g * out * log(scalar)",))
for _kind, _bc in (("broadcast_", "numpy"), ("_", "same")):
    declare_pointwise(_kind + "power", "pow(lhs, rhs)",
                      ("g * rhs * pow(lhs, rhs - 1)", "g * pow(lhs, rhs) * log(lhs)"),
                      broadcast=_bc)
declare_pointwise("_copy", "data", ("g",))
# alone (no element-wise neighbour) in a fused plan, a copy is the input itself
declare_view("_copy", lambda xp, p, x: x, reshape_grad=True)
declare_pointwise("Cast", "data", ("g",), out_dtype=lambda p, dts: p.dtype)
declare_pointwise(
    "clip", lambda p: ("where(data > a_max, a_max, where(data < a_min, a_min, data))",)
    if p.a_min > p.a_max else ("min(max(data, a_min), a_max)",),
    ("g * (data >= a_min) * (data <= a_max)",))
for _kind, _bc in (("broadcast_", "numpy"), ("elemwise_", "same")):
    declare_pointwise(_kind + "add", "lhs + rhs", ("g", "g"), broadcast=_bc)
    declare_pointwise(_kind + "sub", "lhs - rhs", ("g", "-g"), broadcast=_bc)
    declare_pointwise(_kind + "mul", "lhs * rhs", ("g * rhs", "g * lhs"), broadcast=_bc)
    declare_pointwise(_kind + "div", "lhs / rhs", ("g / rhs", "-(g / rhs) * lhs / rhs"),
                      broadcast=_bc)
for _kind, _bc in (("broadcast_", "numpy"), ("_", "same")):
    declare_pointwise(_kind + "maximum", "max(lhs, rhs)",
                      ("g * (lhs >= rhs)", "g * (1 - (lhs >= rhs))"), broadcast=_bc)
    declare_pointwise(_kind + "minimum", "min(lhs, rhs)",
                      ("g * (lhs <= rhs)", "g * (1 - (lhs <= rhs))"), broadcast=_bc)
declare_pointwise(["_plus_scalar", "_scatter_plus_scalar"], "data + scalar", ("g",))
declare_pointwise(["_minus_scalar", "_scatter_minus_scalar"], "data - scalar", ("g",))
declare_pointwise("_rminus_scalar", "scalar - data", ("-g",))
declare_pointwise("_mul_scalar", "data * scalar", ("g * scalar",))
declare_pointwise("_div_scalar", "data / scalar", ("g / scalar",))
declare_pointwise("_rdiv_scalar", "scalar / data", ("-g * scalar / (data * data)",))
declare_pointwise("_maximum_scalar", "max(data, scalar)", ("g * (data >= scalar)",))
declare_pointwise("_minimum_scalar", "min(data, scalar)", ("g * (data <= scalar)",))
for _n, _op in (("greater", ">"), ("greater_equal", ">="), ("lesser", "<"),
                ("lesser_equal", "<="), ("equal", "=="), ("not_equal", "!=")):
    declare_pointwise(f"_{_n}_scalar", f"data {_op} scalar", (None,))
