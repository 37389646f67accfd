"""Converters: element-wise and broadcast arithmetic, scalar ops, comparisons, unary math,
reductions, arg/top-k, where, Cast, dot products."""
from __future__ import annotations

import math

import numpy as np

from gpunda.onnx._registry import register
from gpunda.ops.registry import get_op

_BINARY = {"broadcast_add": "Add", "elemwise_add": "Add", "broadcast_sub": "Sub",
           "elemwise_sub": "Sub", "broadcast_mul": "Mul", "elemwise_mul": "Mul",
           "broadcast_div": "Div", "elemwise_div": "Div", "broadcast_power": "Pow",
           "broadcast_maximum": "Max", "broadcast_minimum": "Min"}
_COMPARE = {"broadcast_equal": ("Equal", False), "broadcast_not_equal": ("Equal", True),
            "broadcast_greater": ("Greater", False),
            "broadcast_greater_equal": ("GreaterOrEqual", False),
            "broadcast_lesser": ("Less", False), "broadcast_lesser_equal": ("LessOrEqual", False)}
_LOGIC = {"broadcast_logical_and": "And", "broadcast_logical_or": "Or",
          "broadcast_logical_xor": "Xor"}


def _as_dtype(g, x, dtype):
    return g.add("Cast", [x], to=g.onnx_dtype(dtype))


def _emit_binary(g, node, a, b, kind):
    out = g.out(node)
    dt = g.out_dtype(node)
    if kind in _BINARY.values():
        g.add(kind, [a, b], [out])
    elif kind in _COMPARE:
        op, negate = _COMPARE[kind]
        r = g.add(op, [a, b])
        if negate:
            r = g.add("Not", [r])
        g.add("Cast", [r], [out], to=g.onnx_dtype(dt))
    elif kind in _LOGIC:
        r = g.add(_LOGIC[kind], [_as_dtype(g, a, bool), _as_dtype(g, b, bool)])
        g.add("Cast", [r], [out], to=g.onnx_dtype(dt))
    elif kind == "mod":
        if np.issubdtype(dt, np.integer):
            g.add("Mod", [a, b], [out], fmod=0)
        else:   # the sign of the divisor, as Python's %
            q = g.add("Floor", [g.add("Div", [a, b])])
            g.add("Sub", [a, g.add("Mul", [q, b])], [out])
    elif kind == "hypot":
        s = g.add("Add", [g.add("Mul", [a, a]), g.add("Mul", [b, b])])
        g.add("Sqrt", [s], [out])


def _binary_converter(kind):
    def convert(g, node):
        _emit_binary(g, node, g.inp(node, 0), g.inp(node, 1), kind)
    return convert


# op name -> the kind _emit_binary writes
_KINDS = dict(_BINARY, **{n: n for n in list(_COMPARE) + list(_LOGIC)},
              broadcast_mod="mod", broadcast_hypot="hypot")
for _name, _kind in _KINDS.items():
    register(_name)(_binary_converter(_kind))
    _twin = "_" + _name[len("broadcast_"):]
    if _name.startswith("broadcast_") and get_op(_twin).name == _twin:
        # the equal-shape op of its own that Symbol operators make (_power, _mod, _equal,
        # ...; _add is only a name of elemwise_add)
        register(_twin)(_binary_converter(_kind))

# scalar ops: (binary kind, scalar on the left)
_SCALAR = {"_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False),
           "_rminus_scalar": ("Sub", True), "_mul_scalar": ("Mul", False),
           "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
           "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True),
           "_maximum_scalar": ("Max", False), "_minimum_scalar": ("Min", False),
           "_mod_scalar": ("mod", False), "_rmod_scalar": ("mod", True),
           "_hypot_scalar": ("hypot", False),
           "_equal_scalar": ("broadcast_equal", False),
           "_not_equal_scalar": ("broadcast_not_equal", False),
           "_greater_scalar": ("broadcast_greater", False),
           "_greater_equal_scalar": ("broadcast_greater_equal", False),
           "_lesser_scalar": ("broadcast_lesser", False),
           "_lesser_equal_scalar": ("broadcast_lesser_equal", False),
           "_logical_and_scalar": ("broadcast_logical_and", False),
           "_logical_or_scalar": ("broadcast_logical_or", False),
           "_logical_xor_scalar": ("broadcast_logical_xor", False)}


def _scalar_converter(kind, left):
    def convert(g, node):
        x = g.inp(node, 0)
        s = g.scalar(node.p.scalar, g.in_dtype(node, 0))
        a, b = (s, x) if left else (x, s)
        _emit_binary(g, node, a, b, kind)
    return convert


for _name, (_kind, _left) in _SCALAR.items():
    register(_name)(_scalar_converter(_kind, _left))

_UNARY = {"abs": "Abs", "negative": "Neg", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "reciprocal": "Reciprocal", "floor": "Floor", "ceil": "Ceil", "sign": "Sign",
          "sin": "Sin", "cos": "Cos", "tan": "Tan", "arcsin": "Asin", "arccos": "Acos",
          "arctan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh",
          "arcsinh": "Asinh", "arccosh": "Acosh", "arctanh": "Atanh", "sigmoid": "Sigmoid",
          "relu": "Relu", "erf": "Erf", "softsign": "Softsign", "rint": "Round"}


def _unary_converter(op):
    def convert(g, node):
        g.add(op, [g.inp(node, 0)], [g.out(node)])
    return convert


for _name, _op in _UNARY.items():
    register(_name)(_unary_converter(_op))


@register("square", "log2", "log10", "log1p", "expm1", "rsqrt", "cbrt", "rcbrt", "round",
          "trunc", "fix", "degrees", "radians", "logical_not", "hard_sigmoid")
def unary_composite(g, node):
    name = node.op.name
    x, out, dt = g.inp(node, 0), g.out(node), g.in_dtype(node, 0)
    c = lambda v: g.scalar(v, dt)  # noqa: E731
    if name == "square":
        g.add("Mul", [x, x], [out])
    elif name in ("log2", "log10"):
        g.add("Div", [g.add("Log", [x]), c(math.log(2.0 if name == "log2" else 10.0))], [out])
    elif name == "log1p":
        g.add("Log", [g.add("Add", [x, c(1.0)])], [out])
    elif name == "expm1":
        g.add("Sub", [g.add("Exp", [x]), c(1.0)], [out])
    elif name == "rsqrt":
        g.add("Reciprocal", [g.add("Sqrt", [x])], [out])
    elif name in ("cbrt", "rcbrt"):
        r = g.add("Mul", [g.add("Sign", [x]), g.add("Pow", [g.add("Abs", [x]), c(1.0 / 3)])])
        g.add("Reciprocal" if name == "rcbrt" else "Identity", [r], [out])
    elif name == "round":   # half away from zero, unlike ONNX Round (half to even)
        r = g.add("Floor", [g.add("Add", [g.add("Abs", [x]), c(0.5)])])
        g.add("Mul", [g.add("Sign", [x]), r], [out])
    elif name in ("trunc", "fix"):
        r = g.add("Floor", [g.add("Abs", [x])])
        g.add("Mul", [g.add("Sign", [x]), r], [out])
    elif name in ("degrees", "radians"):
        g.add("Mul", [x, c(180 / math.pi if name == "degrees" else math.pi / 180)], [out])
    elif name == "logical_not":
        g.add("Cast", [g.add("Not", [_as_dtype(g, x, bool)])], [out], to=g.onnx_dtype(dt))
    elif name == "hard_sigmoid":
        g.add("HardSigmoid", [x], [out], alpha=float(node.p.alpha), beta=float(node.p.beta))


@register("clip")
def clip(g, node):
    dt = g.in_dtype(node, 0)
    g.add("Clip", [g.inp(node, 0), g.scalar(node.p.a_min, dt), g.scalar(node.p.a_max, dt)],
          [g.out(node)])


def _reduce_axes(g, node):
    nd = len(g.in_shape(node, 0))
    axis = node.p.axis
    if axis is None or axis == ():
        axes = list(range(nd))
    else:
        axes = sorted({a % nd for a in ((axis,) if isinstance(axis, int) else axis)})
    if getattr(node.p, "exclude", False):
        axes = [a for a in range(nd) if a not in axes]
    return axes


_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
           "prod": "ReduceProd"}


def _reduce_converter(op):
    def convert(g, node):
        axes = _reduce_axes(g, node)
        if not axes:
            g.add("Identity", [g.inp(node, 0)], [g.out(node)])
            return
        nd = len(g.in_shape(node, 0))
        y = g.reduce(op, g.inp(node, 0), axes, node.p.keepdims)
        g.bind(node, 0, _fit_rank(g, node, y, nd if node.p.keepdims else nd - len(axes)))
    return convert


def _fit_rank(g, node, y, onnx_rank):
    """MXNet's reduction of every axis is shape (1,), ONNX's 0-d: reshape when they differ."""
    shape = g.out_shape(node)
    if len(shape) != onnx_rank:
        y = g.add("Reshape", [y, g.ints(shape)])
    return y


for _name, _op in _REDUCE.items():
    register(_name)(_reduce_converter(_op))


@register("norm")
def norm(g, node):
    p = node.p
    if p.ord not in (1, 2):
        raise g.unsupported(node, f"ord={p.ord!r}")
    axes = _reduce_axes(g, node)
    nd = len(g.in_shape(node, 0))
    y = g.reduce("ReduceL2" if p.ord == 2 else "ReduceL1", g.inp(node, 0), axes, p.keepdims)
    y = _fit_rank(g, node, y, nd if p.keepdims else nd - len(axes))
    g.bind(node, 0, _cast_out(g, node, y))


def _cast_out(g, node, y):
    if g.out_dtype(node) != g.in_dtype(node, 0):
        y = g.add("Cast", [y], to=g.onnx_dtype(g.out_dtype(node)))
    return y


@register("argmax", "argmin")
def arg_reduce(g, node):
    op = "ArgMax" if node.op.name == "argmax" else "ArgMin"
    x, axis, keep = g.inp(node, 0), node.p.axis, node.p.keepdims
    if axis is None:
        # over the flattened data; MXNet's result is then shape (1,) (or all-ones dims)
        flat = g.add("Reshape", [x, g.ints([-1])])
        y = g.add(op, [flat], axis=0, keepdims=1)
        y = g.add("Reshape", [y, g.ints(g.out_shape(node))])
    else:
        y = g.add(op, [x], axis=int(axis), keepdims=int(bool(keep)))
    g.add("Cast", [y], [g.out(node)], to=g.onnx_dtype(g.out_dtype(node)))


@register("argmax_channel")
def argmax_channel(g, node):
    y = g.add("ArgMax", [g.inp(node, 0)], axis=1, keepdims=0)     # MXNet's axis is 1
    g.add("Cast", [y], [g.out(node)], to=g.onnx_dtype(g.out_dtype(node)))


@register("where")
def where(g, node):
    cond = _as_dtype(g, g.inp(node, 0), bool)
    cs, xs = g.in_shape(node, 0), g.in_shape(node, 1)
    if len(cs) == 1 and len(xs) > 1:
        # MXNet's 1-d condition selects along the first axis
        cond = g.unsqueeze(cond, list(range(1, len(xs))))
    g.add("Where", [cond, g.inp(node, 1), g.inp(node, 2)], [g.out(node)])


@register("topk")
def topk(g, node):
    p = node.p
    if p.ret_typ == "mask":
        raise g.unsupported(node, "ret_typ='mask'")
    x = g.inp(node, 0)
    axis = p.axis
    if axis is None:
        x = g.add("Reshape", [x, g.ints([-1])])
        axis = 0
    k = p.k if p.k > 0 else g.in_shape(node, 0)[axis]
    vals, idx = g.add("TopK", [x, g.ints([k], "k")], 2, axis=int(axis),
                      largest=0 if p.is_ascend else 1, sorted=1)
    outs = g.outs(node)
    if p.ret_typ == "value":
        g.bind(node, 0, vals)
        return
    pos = 1 if p.ret_typ == "both" else 0
    g.add("Cast", [idx], [outs[pos]], to=g.onnx_dtype(g.out_dtype(node, pos)))
    if p.ret_typ == "both":
        g.bind(node, 0, vals)


def _axis_length(g, node, x, axis):
    """The length of ``x`` (input 0 of ``node``, maybe flattened) along ``axis`` as a 1-d
    int64 tensor: a constant unless that dim follows a dynamic input."""
    shape = g.in_shape(node, 0)
    if axis in g.varying_in(node, 0) or (g.varying_in(node, 0) and len(shape) != 1
                                         and node.p.axis is None):
        return g.add("Gather", [g.add("Shape", [x]), g.ints([axis], "axis")], axis=0)
    n = int(np.prod(shape)) if node.p.axis is None else shape[axis]
    return g.ints([n], "k")


@register("argsort")
def argsort(g, node):
    # every index along the axis, best first: TopK with k the axis length
    p = node.p
    x = g.inp(node, 0)
    if p.axis is None:
        x, axis = g.add("Reshape", [x, g.ints([-1])]), 0
    else:
        axis = p.axis % len(g.in_shape(node, 0))
    _, idx = g.add("TopK", [x, _axis_length(g, node, x, axis)], 2, axis=axis,
                   largest=0 if p.is_ascend else 1, sorted=1)
    g.add("Cast", [idx], [g.out(node)], to=g.onnx_dtype(g.out_dtype(node)))


@register("_contrib_div_sqrt_dim")
def div_sqrt_dim(g, node):
    shape, dt = g.in_shape(node, 0), g.in_dtype(node, 0)
    if len(shape) - 1 in g.varying_in(node, 0):
        d = g.add("Gather", [g.add("Shape", [g.inp(node, 0)]), g.ints([-1], "last")], axis=0)
        root = g.add("Sqrt", [g.add("Cast", [d], to=g.onnx_dtype(dt))])
    else:
        root = g.scalar(math.sqrt(shape[-1]), dt, "sqrt_dim")
    g.add("Div", [g.inp(node, 0), root], [g.out(node)])


@register("Cast", "amp_cast")
def cast(g, node):
    g.add("Cast", [g.inp(node, 0)], [g.out(node)], to=g.onnx_dtype(g.out_dtype(node)))


def _swap_last(g, x, nd):
    perm = list(range(nd))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return g.add("Transpose", [x], perm=perm)


@register("dot")
def dot(g, node):
    p = node.p
    a, b = g.inp(node, 0), g.inp(node, 1)
    sa, sb = g.in_shape(node, 0), g.in_shape(node, 1)
    if len(sa) <= 2 and len(sb) <= 2:
        if p.transpose_a and len(sa) == 2:
            a = _swap_last(g, a, 2)
        if p.transpose_b and len(sb) == 2:
            b = _swap_last(g, b, 2)
        g.add("MatMul", [a, b], [g.out(node)])
        return
    if p.transpose_a or p.transpose_b:
        raise g.unsupported(node, "transpose_a/transpose_b with inputs of more than 2 dims")
    k = sa[-1]
    a2 = g.add("Reshape", [a, g.ints([-1, k])])
    b2 = g.add("Reshape", [b, g.ints([k, -1])])
    g.reshape_to(node, g.add("MatMul", [a2, b2]), g.out_shape(node), [g.out(node)])


@register("batch_dot")
def batch_dot(g, node):
    p = node.p
    a, b = g.inp(node, 0), g.inp(node, 1)
    if p.transpose_a:
        a = _swap_last(g, a, len(g.in_shape(node, 0)))
    if p.transpose_b:
        b = _swap_last(g, b, len(g.in_shape(node, 1)))
    g.add("MatMul", [a, b], [g.out(node)])


@register("_linalg_gemm2")
def linalg_gemm2(g, node):
    p = node.p
    a, b = g.inp(node, 0), g.inp(node, 1)
    if p.transpose_a:
        a = _swap_last(g, a, len(g.in_shape(node, 0)))
    if p.transpose_b:
        b = _swap_last(g, b, len(g.in_shape(node, 1)))
    y = g.add("MatMul", [a, b])
    g.add("Mul", [y, g.scalar(p.alpha, g.in_dtype(node, 0))], [g.out(node)])


@register("add_n", "ElementWiseSum")
def add_n(g, node):
    g.add("Sum", [g.inp(node, i) for i in range(len(node.inputs))], [g.out(node)])
