"""``contrib.count_sketch``: the count sketch of the rows of 2-D data (or of the last dim
of 4-D data): ``out[..., h[j]] += s[j] * data[..., j]`` with hash indices ``h`` in
[0, out_dim) and signs ``s``, both of shape (1, in_dim). A sketch is linear in the data:
``out = data @ M`` with ``M[j, h[j]] = s[j]``, which is how it is computed here (and its
gradient ``g @ M.T``). MXNet builds it only for its GPUs; here it runs on every device.
"""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register

_PARAMS = [Param("out_dim", "int"), Param("processing_batch_size", "int", 32)]


def _check(x, h, s, out_dim):
    if x.ndim not in (2, 4):
        raise GpundaError(f"Operator _contrib_count_sketch: data must be 2-D or 4-D, got shape "
                          f"{x.shape}")
    n = x.shape[-1]
    for name, v in (("h", h), ("s", s)):
        if v.size != n or (v.ndim == 2 and v.shape[1] != n):
            raise GpundaError(f"Operator _contrib_count_sketch: {name} must have shape (1, {n}) "
                              f"(one entry per input dim), got {v.shape}")
    if out_dim <= 0:
        raise GpundaError(f"Operator _contrib_count_sketch: out_dim={out_dim} must be positive")


def _sketch_matrix(xp, h, s, out_dim, dtype):
    n = h.size
    m = xp.zeros((n, out_dim), dtype=dtype)
    cols = h.reshape(-1).astype("int64")
    if cols.size and (int(cols.min()) < 0 or int(cols.max()) >= out_dim):
        raise GpundaError(f"Operator _contrib_count_sketch: hash indices h must lie in "
                          f"[0, {out_dim}), got values in [{int(cols.min())}, {int(cols.max())}]")
    m[xp.arange(n), cols] = s.reshape(-1).astype(dtype, copy=False)
    return m


def _count_sketch(xp, p, x, h, s):
    _check(x, h, s, p.out_dim)
    m = _sketch_matrix(xp, h, s, p.out_dim, x.dtype)
    out = x.reshape(-1, x.shape[-1]) @ m
    return out.reshape(x.shape[:-1] + (p.out_dim,))


def _g_count_sketch(F, p, i, o, g):
    x, h, s = i
    m = F.one_hot(F.reshape(h, shape=(-1,)), depth=p.out_dim, dtype=x.dtype) * \
        F.reshape(s, shape=(-1, 1))
    g2 = F.reshape(g[0], shape=(-1, p.out_dim))
    gx = F.reshape(F.dot(g2, m, transpose_b=True), shape=tuple(x.shape))
    return [gx, None, None]


register(OpDef(
    "_contrib_count_sketch", _count_sketch, inputs=("data", "h", "s"), params=_PARAMS,
    gradient=_g_count_sketch, save=("inputs",), no_grad_inputs=("h", "s"),
    family="count_sketch",
    doc="Count sketch of the last dim of 2-D or 4-D data into out_dim buckets: "
        "out[..., h[j]] += s[j] * data[..., j]."))
