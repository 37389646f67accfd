"""ONNX importers: arithmetic, comparisons, unary math, reductions, Gemm/MatMul, Where,
TopK, Cast, Clip."""
from __future__ import annotations

import numpy as np

from gpunda.contrib.onnx._import_ops import importer, _op, _axes

_BINARY = {"Add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
           "Sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
           "Mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
           "Div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
           "Pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
           "Equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar"),
           "Greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
           "Less": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
           "GreaterOrEqual": ("broadcast_greater_equal", "_greater_equal_scalar",
                              "_lesser_equal_scalar"),
           "LessOrEqual": ("broadcast_lesser_equal", "_lesser_equal_scalar",
                           "_greater_equal_scalar"),
           "Mod": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
           "And": ("broadcast_logical_and", None, None),
           "Or": ("broadcast_logical_or", None, None),
           "Xor": ("broadcast_logical_xor", None, None)}
_BOOL_INPUTS = {"And", "Or", "Xor"}
_BOOL_RESULT = {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or",
                "Xor"}


def _scalar(v):
    """A Python number if ``v`` is a one-element constant, else None."""
    if v is None or v.size != 1 or v.ndim > 1:
        return None
    return v.reshape(()).item()


@importer(*_BINARY)
def binary(imp, node, attrs, ins):
    full, right, left = _BINARY[node.op_type]
    if node.op_type == "Mod" and attrs.get("fmod", 0):
        raise imp.unsupported("fmod=1 (MXNet's mod takes the divisor's sign)")
    a, b = imp.const(ins[0]), imp.const(ins[1])
    sa, sb = _scalar(a), _scalar(b)
    if sb is not None and right and ins[0] not in imp.consts:
        y = _op(imp, right, imp.get(ins[0]), scalar=sb)
    elif sa is not None and left and ins[1] not in imp.consts:
        y = _op(imp, left, imp.get(ins[1]), scalar=sa)
    elif node.op_type in _BOOL_INPUTS:
        # ONNX's And/Or/Xor take bool, which MXNet's legacy binary kernels refuse: as uint8
        y = _op(imp, full, *[imp.sym.Cast(imp.get(i), dtype="uint8") for i in ins[:2]])
    else:
        y = _op(imp, full, imp.get(ins[0]), imp.get(ins[1]))
    if node.op_type in _BOOL_RESULT:
        # ONNX comparisons give bool; MXNet's give 0/1 in the input dtype
        y = imp.sym.Cast(y, dtype="bool")
    return y


@importer("Max", "Min", "Sum")
def variadic(imp, node, attrs, ins):
    xs = [imp.get(i) for i in ins]
    if node.op_type == "Sum":
        return _op(imp, "add_n", *xs) if len(xs) > 1 else _op(imp, "identity", xs[0])
    name = "broadcast_maximum" if node.op_type == "Max" else "broadcast_minimum"
    y = xs[0]
    for x in xs[1:]:
        y = getattr(imp.sym, name)(y, x)
    return y


_UNARY = {"Abs": "abs", "Neg": "negative", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
          "Reciprocal": "reciprocal", "Floor": "floor", "Ceil": "ceil", "Sign": "sign",
          "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "arcsin", "Acos": "arccos",
          "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "arcsinh",
          "Acosh": "arccosh", "Atanh": "arctanh", "Erf": "erf", "Round": "rint"}


@importer(*_UNARY)
def unary(imp, node, attrs, ins):
    return _op(imp, _UNARY[node.op_type], imp.get(ins[0]))


@importer("Not")
def logical_not(imp, node, attrs, ins):
    # ONNX's Not takes bool, which MXNet's logical_not kernel refuses: through uint8
    x = imp.sym.Cast(imp.get(ins[0]), dtype="uint8")
    return imp.sym.Cast(_op(imp, "logical_not", x), dtype="bool")


@importer("Clip")
def clip(imp, node, attrs, ins):
    lo = attrs.get("min") if "min" in attrs else (
        _scalar(imp.need_const(ins[1], "min")) if len(ins) > 1 and ins[1] else None)
    hi = attrs.get("max") if "max" in attrs else (
        _scalar(imp.need_const(ins[2], "max")) if len(ins) > 2 and ins[2] else None)
    lo = -np.inf if lo is None else lo
    hi = np.inf if hi is None else hi
    return _op(imp, "clip", imp.get(ins[0]), a_min=float(lo), a_max=float(hi))


_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "prod", "ReduceL2": "norm", "ReduceL1": "norm"}


@importer(*_REDUCE)
def reduce(imp, node, attrs, ins):
    axes = _axes(imp, attrs, ins, 1)
    keep = bool(attrs.get("keepdims", 1))
    x = imp.get(ins[0])
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return _op(imp, "identity", x)
        axes = None
    kw = {"axis": tuple(axes) if axes else None, "keepdims": keep}
    if node.op_type in ("ReduceL2", "ReduceL1"):
        kw["ord"] = 2 if node.op_type == "ReduceL2" else 1
        if axes is None:
            kw["axis"] = tuple(range(imp.rank(ins[0])))
    y = _op(imp, _REDUCE[node.op_type], x, **kw)
    if axes is None and not keep:
        y = imp.sym.reshape(y, shape=())   # ONNX: a 0-d result
    return y


@importer("ArgMax", "ArgMin")
def arg(imp, node, attrs, ins):
    if attrs.get("select_last_index", 0):
        raise imp.unsupported("select_last_index=1")
    name = "argmax" if node.op_type == "ArgMax" else "argmin"
    y = _op(imp, name, imp.get(ins[0]), axis=int(attrs.get("axis", 0)),
            keepdims=bool(attrs.get("keepdims", 1)))
    return imp.sym.Cast(y, dtype="int64")


@importer("Gemm")
def gemm(imp, node, attrs, ins):
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    ta, tb = attrs.get("transA", 0), attrs.get("transB", 0)
    w = imp.const(ins[1])
    has_c = len(ins) > 2 and bool(ins[2])
    c = imp.const(ins[2]) if has_c else None
    if not ta and tb and alpha == 1.0 and beta == 1.0 and w is not None and w.ndim == 2 \
            and (not has_c or (c is not None and c.shape == (w.shape[0],))):
        args = [imp.get(ins[0]), imp.get(ins[1])] + ([imp.get(ins[2])] if has_c else [])
        return _op(imp, "FullyConnected", *args, num_hidden=w.shape[0], no_bias=not has_c,
                   flatten=True)
    y = imp.sym.dot(imp.get(ins[0]), imp.get(ins[1]), transpose_a=bool(ta),
                    transpose_b=bool(tb))
    if alpha != 1.0:
        y = y * alpha
    if has_c:
        cs = imp.get(ins[2])
        y = _op(imp, "broadcast_add", y, cs * beta if beta != 1.0 else cs)
    return y


@importer("MatMul")
def matmul(imp, node, attrs, ins):
    ra, rb = imp.rank(ins[0]), imp.rank(ins[1])
    a, b = imp.get(ins[0]), imp.get(ins[1])
    if rb <= 2:
        return _op(imp, "dot", a, b)
    if ra == rb == 3:
        return _op(imp, "batch_dot", a, b)
    raise imp.unsupported(f"MatMul of ranks {ra} and {rb}")


@importer("Where")
def where(imp, node, attrs, ins):
    r = max(imp.rank(i) for i in ins)
    c, x, y = (_to_rank(imp, i, r) for i in ins)
    # MXNet's where does not broadcast: cond and y take x's shape (x is the full shape
    # in the graphs MXNet models give)
    return _op(imp, "where", imp.sym.broadcast_like(c, x), x, imp.sym.broadcast_like(y, x))


def _to_rank(imp, name, rank):
    """Tensor ``name`` with leading 1-dims up to ``rank`` (ONNX broadcasting from the right)."""
    s = imp.get(name)
    for _ in range(rank - imp.rank(name)):
        s = imp.sym.expand_dims(s, axis=0)
    return s


@importer("TopK")
def topk(imp, node, attrs, ins):
    k = int(_scalar(imp.need_const(ins[1], "K")))
    vals, idx = _op(imp, "topk", imp.get(ins[0]), k=k, axis=int(attrs.get("axis", -1)),
                    is_ascend=not attrs.get("largest", 1), ret_typ="both", dtype="int64")
    return [vals, idx]


@importer("Cast")
def cast(imp, node, attrs, ins):
    return _op(imp, "Cast", imp.get(ins[0]), dtype=imp.np_dtype(attrs["to"]).name)
