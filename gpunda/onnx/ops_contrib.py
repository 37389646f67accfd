"""Converters: MXNet's contrib transformer ops (interleaved self-attention matmuls,
arange_like), ROIPooling, and the random samplers."""
from __future__ import annotations

import math

import numpy as np

from gpunda.onnx._registry import register


def _interleaved_part(g, node, qkv, heads, idx):
    """(seq, batch, H*3*D) -> part ``idx`` of each head as (batch*H, seq, D)."""
    s, b, c = g.in_shape(node, 0)
    d = c // (heads * 3)
    t = g.add("Reshape", [qkv, g.ints([0, 0, heads, 3, d])])
    t = g.add("Gather", [t, g.const(np.asarray(idx, np.int64), hint="part")], axis=3)
    t = g.add("Transpose", [t], perm=[1, 2, 0, 3])
    return g.add("Reshape", [t, g.ints([-1, s, d])]), d


@register("_contrib_interleaved_matmul_selfatt_qk")
def selfatt_qk(g, node):
    heads = int(node.p.heads)
    qkv = g.inp(node, 0)
    q, d = _interleaved_part(g, node, qkv, heads, 0)
    k, _ = _interleaved_part(g, node, qkv, heads, 1)
    q = g.add("Mul", [q, g.scalar(1.0 / math.sqrt(d), g.in_dtype(node, 0))])
    kt = g.add("Transpose", [k], perm=[0, 2, 1])
    g.add("MatMul", [q, kt], [g.out(node)])


@register("_contrib_interleaved_matmul_selfatt_valatt")
def selfatt_valatt(g, node):
    heads = int(node.p.heads)
    v, d = _interleaved_part(g, node, g.inp(node, 0), heads, 2)
    s = g.in_shape(node, 0)[0]
    y = g.add("MatMul", [g.inp(node, 1), v])                    # (batch*H, seq, D)
    y = g.add("Reshape", [y, g.ints([-1, heads, s, d])])
    y = g.add("Transpose", [y], perm=[2, 0, 1, 3])              # (seq, batch, H, D)
    g.add("Reshape", [y, g.ints([0, 0, heads * d])], [g.out(node)])


@register("_contrib_arange_like")
def arange_like(g, node):
    p = node.p
    x = g.inp(node, 0)
    shape = g.add("Shape", [x])
    if p.axis is None:
        n = g.add("Size", [x])
    else:
        n = g.add("Gather", [shape, g.const(np.asarray(p.axis % len(g.in_shape(node, 0)),
                                                       np.int64), hint="axis")], axis=0)
    i = g.add("Range", [g.scalar(0, np.int64), n, g.scalar(1, np.int64)])
    i = g.add("Cast", [i], to=g.onnx_dtype(np.float64))
    if p.repeat != 1:
        i = g.add("Floor", [g.add("Div", [i, g.scalar(float(p.repeat), np.float64)])])
    v = g.add("Add", [g.add("Mul", [i, g.scalar(float(p.step), np.float64)]),
                      g.scalar(float(p.start), np.float64)])
    v = g.add("Cast", [v], to=g.onnx_dtype(g.out_dtype(node)))
    if p.axis is None:
        g.add("Reshape", [v, shape], [g.out(node)])
    else:
        g.bind(node, 0, v)


@register("ROIPooling")
def roi_pooling(g, node):
    p = node.p
    g.add("MaxRoiPool", [g.inp(node, 0), g.inp(node, 1)], [g.out(node)],
          pooled_shape=[int(v) for v in p.pooled_size], spatial_scale=float(p.spatial_scale))


def _sample_dtype(g, node):
    dt = g.out_dtype(node)
    if dt not in (np.float16, np.float32, np.float64):
        raise g.unsupported(node, f"dtype {dt} (ONNX samples floats)")
    return g.onnx_dtype(dt)


@register("_random_uniform")
def random_uniform(g, node):
    p = node.p
    g.add("RandomUniform", [], [g.out(node)], low=float(p.low), high=float(p.high),
          shape=[int(d) for d in g.out_shape(node)], dtype=_sample_dtype(g, node))


@register("_random_uniform_like")
def random_uniform_like(g, node):
    p = node.p
    g.add("RandomUniformLike", [g.inp(node, 0)], [g.out(node)], low=float(p.low),
          high=float(p.high), dtype=_sample_dtype(g, node))


@register("_random_normal")
def random_normal(g, node):
    p = node.p
    g.add("RandomNormal", [], [g.out(node)], mean=float(p.loc), scale=float(p.scale),
          shape=[int(d) for d in g.out_shape(node)], dtype=_sample_dtype(g, node))


@register("_sample_multinomial")
def sample_multinomial(g, node):
    p = node.p
    if p.get_prob:
        raise g.unsupported(node, "get_prob=True")
    in_shape = g.in_shape(node, 0)
    if len(in_shape) != 2:
        raise g.unsupported(node, f"data of {len(in_shape)} dims (ONNX samples from 2-d)")
    n = int(np.prod(p.shape)) if p.shape else 1
    dt = g.out_dtype(node)
    if dt not in (np.int32, np.int64):
        raise g.unsupported(node, f"dtype {dt}")
    # ONNX takes unnormalised log-probabilities; MXNet takes probabilities
    y = g.add("Multinomial", [g.add("Log", [g.inp(node, 0)])], sample_size=n,
              dtype=g.onnx_dtype(dt))
    g.reshape_to(node, y, g.out_shape(node), [g.out(node)])
