"""Converters: FullyConnected, activations, softmax family, Dropout, Embedding, loss heads."""
from __future__ import annotations

import math

import numpy as np

from gpunda.onnx._registry import register


@register("FullyConnected")
def fully_connected(g, node):
    p = node.p
    x, w = g.inp(node, 0), g.inp(node, 1)
    bias = [] if p.no_bias else [g.inp(node, 2)]
    shape = g.in_shape(node, 0)
    if p.flatten:
        if len(shape) != 2:
            x = g.add("Flatten", [x], axis=1)
        g.add("Gemm", [x, w] + bias, [g.out(node)], transB=1)
        return
    wt = g.add("Transpose", [w], perm=[1, 0])
    if bias:
        y = g.add("MatMul", [x, wt])
        g.add("Add", [y, bias[0]], [g.out(node)])
    else:
        g.add("MatMul", [x, wt], [g.out(node)])


_ACT = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
        "softsign": "Softsign"}


@register("Activation")
def activation(g, node):
    act = node.p.act_type
    if act in _ACT:
        g.add(_ACT[act], [g.inp(node, 0)], [g.out(node)])
    elif act == "log_sigmoid":
        s = g.add("Sigmoid", [g.inp(node, 0)])
        g.add("Log", [s], [g.out(node)])
    elif act == "mish":
        sp = g.add("Softplus", [g.inp(node, 0)])
        t = g.add("Tanh", [sp])
        g.add("Mul", [g.inp(node, 0), t], [g.out(node)])
    else:
        raise g.unsupported(node, f"act_type={act!r}")


def gelu_erf(g, x, dtype, out):
    """x * 0.5 * (1 + erf(x / sqrt(2))): Gelu before opset 20 (the erf form MXNet uses)."""
    e = g.add("Erf", [g.add("Div", [x, g.scalar(math.sqrt(2.0), dtype)])])
    half = g.add("Mul", [g.add("Add", [e, g.scalar(1.0, dtype)]), g.scalar(0.5, dtype)])
    return g.add("Mul", [x, half], [out])


@register("LeakyReLU")
def leaky_relu(g, node):
    p, x, out = node.p, g.inp(node, 0), g.out(node)
    act = p.act_type
    if act == "leaky":
        g.add("LeakyRelu", [x], [out], alpha=float(np.float32(p.slope)))
    elif act == "rrelu":
        # inference: the mean of the random slope's range
        g.add("LeakyRelu", [x], [out], alpha=float((p.lower_bound + p.upper_bound) / 2))
    elif act == "elu":
        g.add("Elu", [x], [out], alpha=float(np.float32(p.slope)))
    elif act == "selu":
        g.add("Selu", [x], [out], alpha=1.6732632423543772, gamma=1.0507009873554805)
    elif act == "gelu":
        gelu_erf(g, x, g.in_dtype(node, 0), out)
    elif act == "prelu":
        gamma = g.inp(node, 1)
        nd = len(g.in_shape(node, 0))
        gshape = g.in_shape(node, 1)
        if nd > 2 and len(gshape) == 1 and gshape[0] != 1:
            # MXNet's gamma is per channel (axis 1); ONNX broadcasts from the right
            gamma = g.add("Reshape", [gamma, g.ints([gshape[0]] + [1] * (nd - 2))])
        g.add("PRelu", [x, gamma], [out])
    else:
        raise g.unsupported(node, f"act_type={act!r}")


def _softmax_input(g, node):
    p = node.p
    if getattr(p, "use_length", False):
        raise g.unsupported(node, "use_length=True")
    x = g.inp(node, 0)
    t = getattr(p, "temperature", None)
    if t is not None and float(t) != 1.0:
        x = g.add("Div", [x, g.scalar(float(t), g.in_dtype(node, 0))])
    return x


def _cast_out(g, node, y):
    if g.out_dtype(node) != g.in_dtype(node, 0):
        y = g.add("Cast", [y], to=g.onnx_dtype(g.out_dtype(node)))
    return y


@register("softmax")
def softmax(g, node):
    y = g.add("Softmax", [_softmax_input(g, node)], axis=int(node.p.axis))
    g.bind(node, 0, _cast_out(g, node, y))


@register("log_softmax")
def log_softmax(g, node):
    y = g.add("LogSoftmax", [_softmax_input(g, node)], axis=int(node.p.axis))
    g.bind(node, 0, _cast_out(g, node, y))


@register("softmin")
def softmin(g, node):
    x = g.add("Neg", [_softmax_input(g, node)])
    g.bind(node, 0, _cast_out(g, node, g.add("Softmax", [x], axis=int(node.p.axis))))


def _softmax_rows(g, node, x):
    """Softmax over all dims but the first (MXNet's 'instance' mode)."""
    shape = g.in_shape(node, 0)
    if len(shape) == 2:
        return g.add("Softmax", [x], [g.out(node)], axis=1)
    flat = g.add("Flatten", [x], axis=1)
    s = g.add("Softmax", [flat], axis=1)
    return g.reshape_to(node, s, shape, [g.out(node)])


@register("SoftmaxActivation")
def softmax_activation(g, node):
    if node.p.mode == "channel":
        g.add("Softmax", [g.inp(node, 0)], [g.out(node)], axis=1)
    else:       # MXNet's instance mode: over the last axis (the same in every opset)
        g.add("Softmax", [g.inp(node, 0)], [g.out(node)], axis=-1)


@register("SoftmaxOutput")
def softmax_output(g, node):
    # inference: the label input is not used
    p, x = node.p, g.inp(node, 0)
    if p.multi_output:
        g.add("Softmax", [x], [g.out(node)], axis=1)
    elif p.preserve_shape:
        g.add("Softmax", [x], [g.out(node)], axis=-1)
    else:
        _softmax_rows(g, node, x)


@register("LogisticRegressionOutput")
def logistic_output(g, node):
    g.add("Sigmoid", [g.inp(node, 0)], [g.out(node)])


@register("LinearRegressionOutput", "MAERegressionOutput", "BlockGrad", "stop_gradient",
          "MakeLoss", "make_loss", "identity", "_copy", "_identity_with_attr_like_rhs")
def identity(g, node):
    g.add("Identity", [g.inp(node, 0)], [g.out(node)])


@register("Dropout")
def dropout(g, node):
    if node.p.mode == "always":
        raise g.unsupported(node, "mode='always' drops at inference too")
    # an exported model is for inference, where Dropout is the identity
    g.add("Identity", [g.inp(node, 0)], [g.out(node)])


@register("Embedding")
def embedding(g, node):
    idx = g.add("Cast", [g.inp(node, 0)], to=g.onnx_dtype(np.int64))
    g.add("Gather", [g.inp(node, 1), idx], [g.out(node)], axis=0)
