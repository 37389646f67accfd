"""Converters: BatchNorm, LayerNorm, InstanceNorm, L2Normalization, LRN."""
from __future__ import annotations

import numpy as np

from gpunda.onnx._registry import register


def _move_axis(g, x, nd, src, dst):
    perm = list(range(nd))
    perm.insert(dst, perm.pop(src))
    return g.add("Transpose", [x], perm=perm), perm


@register("BatchNorm")
def batch_norm(g, node):
    p = node.p
    if p.output_mean_var:
        raise g.unsupported(node, "output_mean_var=True")
    nd = len(g.in_shape(node, 0))
    axis = p.axis % nd
    gamma = g.inp(node, 1)
    c = g.in_shape(node, 1)
    if p.fix_gamma:
        gamma = g.const(np.ones(c, dtype=g.in_dtype(node, 1)), hint="gamma_fixed")
    x = g.inp(node, 0)
    ins = [gamma, g.inp(node, 2), g.inp(node, 3), g.inp(node, 4)]
    if axis == 1 or nd < 2:
        g.add("BatchNormalization", [x] + ins, [g.out(node)], epsilon=float(p.eps))
        return
    xt, perm = _move_axis(g, x, nd, axis, 1)
    y = g.add("BatchNormalization", [xt] + ins, epsilon=float(p.eps))
    g.add("Transpose", [y], [g.out(node)], perm=[perm.index(i) for i in range(nd)])


def _channel_shaped(g, name, nd, axis):
    """Reshape a 1-d per-channel tensor so it broadcasts along ``axis`` of an nd tensor."""
    if axis == nd - 1:
        return name
    return g.add("Reshape", [name, g.ints([-1] + [1] * (nd - 1 - axis))])


@register("LayerNorm")
def layer_norm(g, node):
    p = node.p
    if p.output_mean_var:
        raise g.unsupported(node, "output_mean_var=True")
    nd = len(g.in_shape(node, 0))
    axis = p.axis % nd
    x, gamma, beta = g.inp(node, 0), g.inp(node, 1), g.inp(node, 2)
    if axis == nd - 1 and g.opset >= 17:
        g.add("LayerNormalization", [x, gamma, beta], [g.out(node)], axis=-1,
              epsilon=float(p.eps))
        return
    dt = g.in_dtype(node, 0)
    mean = g.reduce("ReduceMean", x, [axis], True)
    d = g.add("Sub", [x, mean])
    var = g.reduce("ReduceMean", g.add("Mul", [d, d]), [axis], True)
    std = g.add("Sqrt", [g.add("Add", [var, g.scalar(float(p.eps), dt)])])
    y = g.add("Div", [d, std])
    y = g.add("Mul", [y, _channel_shaped(g, gamma, nd, axis)])
    g.add("Add", [y, _channel_shaped(g, beta, nd, axis)], [g.out(node)])


@register("InstanceNorm")
def instance_norm(g, node):
    g.add("InstanceNormalization", [g.inp(node, 0), g.inp(node, 1), g.inp(node, 2)],
          [g.out(node)], epsilon=float(node.p.eps))


@register("L2Normalization")
def l2_normalization(g, node):
    p = node.p
    nd = len(g.in_shape(node, 0))
    axes = {"instance": list(range(1, nd)), "channel": [1],
            "spatial": list(range(2, nd))}[p.mode]
    x, dt = g.inp(node, 0), g.in_dtype(node, 0)
    ss = g.reduce("ReduceSum", g.add("Mul", [x, x]), axes, True)
    norm = g.add("Sqrt", [g.add("Add", [ss, g.scalar(float(p.eps), dt)])])
    g.add("Div", [x, norm], [g.out(node)])


@register("LRN")
def lrn(g, node):
    p = node.p
    g.add("LRN", [g.inp(node, 0)], [g.out(node)], alpha=float(p.alpha), beta=float(p.beta),
          bias=float(p.knorm), size=int(p.nsize))
