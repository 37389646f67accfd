"""float64 forms of the ONNX ops ONNX Runtime's CPU kernels take only in float32.

ONNX Runtime (1.x) registers Softplus, Softsign, Elu, Selu, HardSigmoid, ThresholdedRelu,
Tan, Sinh, Cosh, Asinh, Acosh, Atanh, Erf, Asin, Acos and Atan for float only, and Cos too
before about 1.24 (1.23 is the last release for Python 3.10): a float64 model holding one is
valid ONNX that ONNX Runtime refuses to load. When the node being converted is float64,
``GraphBuilder.add`` builds the first thirteen (Cos among them) from ops that have float64
kernels (the same function, no rounding to float32) and warns, naming the node, for the last
four, which have no exact form in those ops.
"""
from __future__ import annotations

import warnings

import numpy as np


def _softplus(g, x, out, attrs):
    # log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): no overflow for large |x|
    e = g.add("Exp", [g.add("Neg", [g.add("Abs", [x])])])
    tail = g.add("Log", [g.add("Add", [e, _one(g)])])
    return g.add("Add", [g.add("Relu", [x]), tail], out)


def _softsign(g, x, out, attrs):
    return g.add("Div", [x, g.add("Add", [g.add("Abs", [x]), _one(g)])], out)


def _elu_core(g, x, alpha, out=1):
    # x for x > 0, alpha * (e^x - 1) otherwise
    neg = g.add("Sub", [g.add("Exp", [g.add("Min", [x, _zero(g)])]), _one(g)])
    scaled = g.add("Mul", [neg, g.scalar(alpha, np.float64)])
    return g.add("Add", [g.add("Relu", [x]), scaled], out)


def _elu(g, x, out, attrs):
    return _elu_core(g, x, attrs.get("alpha", 1.0), out)


def _selu(g, x, out, attrs):
    core = _elu_core(g, x, attrs.get("alpha", 1.67326319217681884765625))
    return g.add("Mul", [core, g.scalar(attrs.get("gamma", 1.05070102214813232421875),
                                        np.float64)], out)


def _hard_sigmoid(g, x, out, attrs):
    lin = g.add("Add", [g.add("Mul", [x, g.scalar(attrs.get("alpha", 0.2), np.float64)]),
                        g.scalar(attrs.get("beta", 0.5), np.float64)])
    return g.add("Max", [g.add("Min", [lin, _one(g)]), _zero(g)], out)


def _thresholded_relu(g, x, out, attrs):
    above = g.add("Greater", [x, g.scalar(attrs.get("alpha", 1.0), np.float64)])
    return g.add("Where", [above, x, _zero(g)], out)


def _cos(g, x, out, attrs):
    # 1 - 2 sin^2(x/2): halving is exact, so the error stays near float64's epsilon, where
    # sin(x + pi/2) would carry the rounding of x + pi/2 (an ulp of x)
    s = g.add("Sin", [g.add("Mul", [x, g.scalar(0.5, np.float64)])])
    twice = g.add("Mul", [g.add("Mul", [s, s]), g.scalar(2.0, np.float64)])
    return g.add("Sub", [_one(g), twice], out)


def _tan(g, x, out, attrs):
    return g.add("Div", [g.add("Sin", [x]), _cos(g, x, 1, attrs)], out)


def _exp_pair(g, x):
    return g.add("Exp", [x]), g.add("Exp", [g.add("Neg", [x])])


def _sinh(g, x, out, attrs):
    a, b = _exp_pair(g, x)
    return g.add("Mul", [g.add("Sub", [a, b]), g.scalar(0.5, np.float64)], out)


def _cosh(g, x, out, attrs):
    a, b = _exp_pair(g, x)
    return g.add("Mul", [g.add("Add", [a, b]), g.scalar(0.5, np.float64)], out)


def _asinh(g, x, out, attrs):
    # sign(x) * log(|x| + sqrt(x^2 + 1)): exact for negative x too
    ax = g.add("Abs", [x])
    r = g.add("Sqrt", [g.add("Add", [g.add("Mul", [ax, ax]), _one(g)])])
    return g.add("Mul", [g.add("Sign", [x]), g.add("Log", [g.add("Add", [ax, r])])], out)


def _acosh(g, x, out, attrs):
    r = g.add("Sqrt", [g.add("Sub", [g.add("Mul", [x, x]), _one(g)])])
    return g.add("Log", [g.add("Add", [x, r])], out)


def _atanh(g, x, out, attrs):
    q = g.add("Div", [g.add("Add", [_one(g), x]), g.add("Sub", [_one(g), x])])
    return g.add("Mul", [g.add("Log", [q]), g.scalar(0.5, np.float64)], out)


def _one(g):
    return g.scalar(1.0, np.float64, "one")


def _zero(g):
    return g.scalar(0.0, np.float64, "zero")


FORMS = {"Softplus": _softplus, "Softsign": _softsign, "Elu": _elu, "Selu": _selu,
         "HardSigmoid": _hard_sigmoid, "ThresholdedRelu": _thresholded_relu, "Cos": _cos,
         "Tan": _tan, "Sinh": _sinh, "Cosh": _cosh, "Asinh": _asinh, "Acosh": _acosh, "Atanh": _atanh}
NO_FORM = ("Erf", "Asin", "Acos", "Atan")


def float64_form(g, op_type, inputs, outputs, attrs):
    """The output name(s) of ``op_type`` built for float64 input, or None when the plain
    node is what to add (another dtype, or an op ONNX Runtime runs in float64)."""
    if op_type not in FORMS and op_type not in NO_FORM:
        return None
    node = g.node
    if node is None or not node.inputs or g.in_dtype(node, 0) != np.float64:
        return None
    if op_type in NO_FORM:
        warnings.warn(f"export_model: node {node.name!r} (op {node.op.name}) becomes ONNX "
                      f"{op_type} on float64, for which ONNX Runtime has no kernel (it has "
                      f"float32 only): ONNX Runtime will refuse to load the model; export "
                      f"the model in float32 to run it there", stacklevel=4)
        return None
    return FORMS[op_type](g, inputs[0], outputs, attrs)
