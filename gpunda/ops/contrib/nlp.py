"""NLP and small contrib ops (MXNet's ``_contrib_*``): the interleaved attention
matmuls of transformer.cc, div_sqrt_dim, quadratic, allclose, arange_like,
gradientmultiplier and the straight-through estimators round_ste/sign_ste.

The interleaved layout: ``queries_keys_values`` is (seq, batch, heads*3*head_dim)
holding, per head, its query, key and value projections one after the other
(``keys_values`` is the same with 2 parts). Attention maps are
(batch*heads, seq_q, seq_k). Gradients are written with registry ops (the
attention ops' adjoints are each other plus a re-interleave), so they can be
differentiated again.
"""
from __future__ import annotations

import math

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import REQUIRED, OpDef, Param, register

_HEADS = [Param("heads", "int", REQUIRED, "number of attention heads")]


def _check3(op, name, x):
    if x.dtype.kind != "f":
        # MXNet's interleaved matmul kernels are GEMMs over floating types only
        raise GpundaError(f"Operator {op}: input {name} of dtype {x.dtype.name} is not "
                          f"supported (floating point only)")
    if x.ndim != 3:
        raise GpundaError(f"Operator {op}: input {name} must be 3-D (seq, batch, proj), got "
                          f"shape {tuple(x.shape)}")


def _heads(op, p):
    if p.heads is None or p.heads <= 0:
        raise GpundaError(f"Operator {op}: parameter heads={p.heads} must be a positive integer")
    return p.heads


# -- backend helpers: (seq, batch, H*parts*D) <-> (batch*H, seq, D) ------------------------

def _part(x, heads, parts, idx):
    s, b, c = x.shape
    if c % (heads * parts):
        raise GpundaError(f"interleaved matmul: last dim {c} is not a multiple of "
                          f"heads*{parts}={heads * parts}")
    t = x.reshape(s, b, heads, parts, c // (heads * parts))[:, :, :, idx, :]
    return t.transpose(1, 2, 0, 3).reshape(b * heads, s, -1)


def _merge(xp, y, heads):
    """(batch*H, seq, D) -> (seq, batch, H*D)."""
    bh, s, d = y.shape
    return xp.ascontiguousarray(y.reshape(bh // heads, heads, s, d).transpose(2, 0, 1, 3)).reshape(
        s, bh // heads, heads * d)


def _selfatt_qk(xp, p, qkv):
    op = "_contrib_interleaved_matmul_selfatt_qk"
    _check3(op, "queries_keys_values", qkv)
    h = _heads(op, p)
    q, k = _part(qkv, h, 3, 0), _part(qkv, h, 3, 1)
    scale = 1.0 / math.sqrt(q.shape[-1])
    return xp.matmul(q * xp.asarray(scale, q.dtype), k.transpose(0, 2, 1))


def _selfatt_valatt(xp, p, qkv, att):
    op = "_contrib_interleaved_matmul_selfatt_valatt"
    _check3(op, "queries_keys_values", qkv)
    h = _heads(op, p)
    if att.shape != (qkv.shape[1] * h, qkv.shape[0], qkv.shape[0]):
        raise GpundaError(f"Operator {op}: attention has shape {tuple(att.shape)}, expected "
                          f"{(qkv.shape[1] * h, qkv.shape[0], qkv.shape[0])}")
    return _merge(xp, xp.matmul(att, _part(qkv, h, 3, 2)), h)


def _encdec_qk(xp, p, q, kv):
    op = "_contrib_interleaved_matmul_encdec_qk"
    _check3(op, "queries", q)
    _check3(op, "keys_values", kv)
    h = _heads(op, p)
    if kv.shape[2] != 2 * q.shape[2] or kv.shape[1] != q.shape[1]:
        raise GpundaError(f"Operator {op}: keys_values shape {tuple(kv.shape)} does not fit "
                          f"queries shape {tuple(q.shape)} (need same batch, twice the proj dim)")
    qh, kh = _part(q, h, 1, 0), _part(kv, h, 2, 0)
    scale = 1.0 / math.sqrt(qh.shape[-1])
    return xp.matmul(qh * xp.asarray(scale, qh.dtype), kh.transpose(0, 2, 1))


def _encdec_valatt(xp, p, kv, att):
    op = "_contrib_interleaved_matmul_encdec_valatt"
    _check3(op, "keys_values", kv)
    h = _heads(op, p)
    if att.ndim != 3 or att.shape[0] != kv.shape[1] * h or att.shape[2] != kv.shape[0]:
        raise GpundaError(f"Operator {op}: attention has shape {tuple(att.shape)}, expected "
                          f"({kv.shape[1] * h}, seq_q, {kv.shape[0]})")
    return _merge(xp, xp.matmul(att, _part(kv, h, 2, 1)), h)


# -- gradient helpers, in registry ops -----------------------------------------------------

def _f_part(F, x, heads, parts, idx):
    t = F.reshape(x, shape=(0, 0, heads, parts, -1))
    t = F.reshape(F.slice_axis(t, axis=3, begin=idx, end=idx + 1), shape=(0, 0, 0, -1))
    return F.reshape(F.transpose(t, axes=(1, 2, 0, 3)), shape=(-1, 0, 0), reverse=True)


def _f_unsplit(F, y, heads):
    """(batch*H, seq, D) -> (seq, batch, H, D)."""
    return F.transpose(F.reshape(y, shape=(-1, heads, 0, 0), reverse=True), axes=(2, 0, 1, 3))


def _f_interleave(F, parts):
    """(seq, batch, H, D) pieces -> (seq, batch, H*len(parts)*D)."""
    return F.reshape(F.stack(*parts, axis=3, num_args=len(parts)), shape=(0, 0, -1))


def _grad_selfatt_qk(F, p, i, o, g):
    qkv, h = i[0], p.heads
    q, k = _f_part(F, qkv, h, 3, 0), _f_part(F, qkv, h, 3, 1)
    scale = 1.0 / math.sqrt(q.shape[-1])
    dq = F.batch_dot(g[0], k) * scale
    dk = F.batch_dot(g[0], q, transpose_a=True) * scale
    dv = F.zeros_like(_f_unsplit(F, dq, h))
    return [_f_interleave(F, [_f_unsplit(F, dq, h), _f_unsplit(F, dk, h), dv])]


def _grad_selfatt_valatt(F, p, i, o, g):
    qkv, att, h = i[0], i[1], p.heads
    v = _f_part(F, qkv, h, 3, 2)
    gy = _f_part(F, g[0], h, 1, 0)                      # (batch*H, seq, D)
    datt = F.batch_dot(gy, v, transpose_b=True)
    dv = _f_unsplit(F, F.batch_dot(att, gy, transpose_a=True), h)
    zero = F.zeros_like(dv)
    return [_f_interleave(F, [zero, zero, dv]), datt]


def _grad_encdec_qk(F, p, i, o, g):
    q, kv, h = i[0], i[1], p.heads
    qh, kh = _f_part(F, q, h, 1, 0), _f_part(F, kv, h, 2, 0)
    scale = 1.0 / math.sqrt(qh.shape[-1])
    dq = F.reshape(_f_unsplit(F, F.batch_dot(g[0], kh) * scale, h), shape=(0, 0, -1))
    dk = _f_unsplit(F, F.batch_dot(g[0], qh, transpose_a=True) * scale, h)
    return [dq, _f_interleave(F, [dk, F.zeros_like(dk)])]


def _grad_encdec_valatt(F, p, i, o, g):
    kv, att, h = i[0], i[1], p.heads
    v = _f_part(F, kv, h, 2, 1)
    gy = _f_part(F, g[0], h, 1, 0)
    datt = F.batch_dot(gy, v, transpose_b=True)
    dv = _f_unsplit(F, F.batch_dot(att, gy, transpose_a=True), h)
    return [_f_interleave(F, [F.zeros_like(dv), dv]), datt]


def _reg_att(name, compute, inputs, gradient, doc):
    register(OpDef(name, compute, params=_HEADS, inputs=inputs, gradient=gradient,
                   save=("inputs",), family="contrib_nlp", doc=doc))


_reg_att("_contrib_interleaved_matmul_selfatt_qk", _selfatt_qk, ("queries_keys_values",),
         _grad_selfatt_qk, "Scaled q.k^T per head from interleaved q/k/v projections.")
_reg_att("_contrib_interleaved_matmul_selfatt_valatt", _selfatt_valatt,
         ("queries_keys_values", "attention"), _grad_selfatt_valatt,
         "attention @ values per head, values read from interleaved q/k/v projections.")
_reg_att("_contrib_interleaved_matmul_encdec_qk", _encdec_qk, ("queries", "keys_values"),
         _grad_encdec_qk, "Scaled q.k^T per head, keys read from interleaved k/v projections.")
_reg_att("_contrib_interleaved_matmul_encdec_valatt", _encdec_valatt,
         ("keys_values", "attention"), _grad_encdec_valatt,
         "attention @ values per head, values read from interleaved k/v projections.")


# -- small elementwise contrib ops ---------------------------------------------------------

def _div_sqrt_dim(xp, p, x):
    if x.ndim == 0:
        raise GpundaError("Operator _contrib_div_sqrt_dim: data must have at least one axis")
    if x.dtype.kind in "iu":
        # MXNet divides by DType(sqrt(d)): an integer divisor, truncating integer division
        return x // max(int(math.sqrt(x.shape[-1])), 1) if (x >= 0).all() else (
            xp.trunc(x / int(math.sqrt(x.shape[-1]))).astype(x.dtype))
    return x / xp.asarray(math.sqrt(x.shape[-1]), x.dtype)


register(OpDef("_contrib_div_sqrt_dim", _div_sqrt_dim, save=(), family="contrib_nlp",
               gradient=lambda F, p, i, o, g: [F._contrib_div_sqrt_dim(g[0])],
               doc="data / sqrt(data.shape[-1])."))


def _quadratic(xp, p, x):
    # Horner form keeps the computation in x's dtype
    return ((x * p.a + p.b) * x + p.c).astype(x.dtype, copy=False)


register(OpDef(
    "_contrib_quadratic", _quadratic, family="contrib_nlp", save=("inputs",),
    params=[Param("a", "float", 0.0, "coefficient of x**2"),
            Param("b", "float", 0.0, "coefficient of x"),
            Param("c", "float", 0.0, "constant term")],
    gradient=lambda F, p, i, o, g: [
        g[0] * F._contrib_quadratic(i[0], a=0.0, b=2.0 * p.a, c=p.b)],
    doc="a*x**2 + b*x + c elementwise."))


def _allclose(xp, p, a, b):
    if a.shape != b.shape:
        raise GpundaError(f"Operator _contrib_allclose: inputs a {tuple(a.shape)} and b "
                          f"{tuple(b.shape)} must have the same shape")
    close = xp.abs(a - b) <= p.atol + p.rtol * xp.abs(b)
    if p.equal_nan:
        close = close | (xp.isnan(a) & xp.isnan(b))
    return xp.asarray(bool(close.all()), dtype=np.uint8).reshape(())


register(OpDef(
    "_contrib_allclose", _allclose, inputs=("a", "b"), nondiff=True, save=(),
    params=[Param("rtol", "float", 1e-05, "relative tolerance"),
            Param("atol", "float", 1e-08, "absolute tolerance"),
            Param("equal_nan", "bool", True, "NaNs in the same place compare equal")],
    family="contrib_nlp",
    doc="1 (uint8, shape ()) when |a-b| <= atol + rtol*|b| everywhere, else 0."))


def _arange_like(xp, p, x):
    if p.repeat < 1:
        raise GpundaError(f"Operator _contrib_arange_like: repeat={p.repeat} must be >= 1")
    if p.axis is None:
        shape = x.shape
    else:
        if not -x.ndim <= p.axis < x.ndim:
            raise GpundaError(f"Operator _contrib_arange_like: axis={p.axis} is out of range "
                              f"for data of shape {tuple(x.shape)}")
        shape = (x.shape[p.axis],)
    n = int(np.prod(shape, dtype=np.int64))
    vals = p.start + (xp.arange(n, dtype=np.float64) // p.repeat) * p.step
    return vals.astype(x.dtype).reshape(shape)


register(OpDef(
    "_contrib_arange_like", _arange_like, nondiff=True, save=(), family="contrib_nlp",
    params=[Param("start", "float", 0.0, "first value"), Param("step", "float", 1.0, "spacing"),
            Param("repeat", "int", 1, "times each value repeats"),
            Param("ctx", "str", "", "unused: the output lives with data"),
            Param("axis", "int", None, "count along this axis only; None: the whole shape")],
    doc="An arange shaped like data (or like data.shape[axis]), in data's dtype."))

register(OpDef(
    "_contrib_gradientmultiplier", lambda xp, p, x: x.copy(), save=(), family="contrib_nlp",
    params=[Param("scalar", "float", 1.0, "factor applied to the gradient")],
    gradient=lambda F, p, i, o, g: [g[0] * p.scalar],
    doc="Identity forward; the backward multiplies the gradient by scalar."))


def _round_half_away(xp, p, x):
    return xp.where(x >= 0, xp.floor(x + 0.5), xp.ceil(x - 0.5)).astype(x.dtype, copy=False)


# straight-through estimators: the gradient passes unchanged through a step function
register(OpDef("_contrib_round_ste", _round_half_away, save=(), family="contrib_nlp",
               gradient=lambda F, p, i, o, g: [F.identity(g[0])],
               doc="round (half away from zero) with an identity gradient."))
register(OpDef("_contrib_sign_ste", lambda xp, p, x: xp.sign(x), save=(), family="contrib_nlp",
               gradient=lambda F, p, i, o, g: [F.identity(g[0])],
               doc="sign with an identity gradient."))
