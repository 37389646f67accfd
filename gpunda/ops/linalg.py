"""Matrix products: dot, batch_dot, khatri_rao, with MXNet 1.x's shape rules.

``dot`` of an N-d and an M-d array views each operand as a matrix (MXNet's
``DotShape``): without transposes the lhs is ``(prod(shape[:-1]), shape[-1])``
and the rhs ``(shape[0], prod(shape[1:]))``; ``transpose_a`` views the lhs as
``(shape[0], prod(shape[1:]))`` transposed, ``transpose_b`` the rhs as
``(prod(shape[:-1]), shape[-1])`` transposed. The result keeps the
uncontracted dims of each operand with more than one dimension; 1-D . 1-D
gives shape ``(1,)``.

Gradients are written with ``dot``/``batch_dot`` and transpose flags on the
matrix views (the hidden ``_linalg_view`` reshape), so they differentiate again.
"""
from __future__ import annotations

from ..base import GpundaError
from .registry import OpDef, Param, register
from ._util import legacy_scalar


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _views(ls, rs, ta, tb):
    """MXNet's dot as a matrix product: (lhs view, effective transpose_a, rhs view,
    effective transpose_b, output shape). A 1-D operand is a row (lhs) or a column
    (rhs) whatever its transpose flag says, as in MXNet's DotShape."""
    if len(ls) == 1 and len(rs) == 1:
        if ta or tb:
            raise GpundaError(f"Operator dot: cannot transpose vectors (transpose_a={ta}, "
                              f"transpose_b={tb}) with lhs shape {ls} and rhs shape {rs}")
        if ls[0] != rs[0]:
            raise GpundaError(f"Operator dot: shape mismatch: lhs shape {ls} and rhs shape {rs}")
        return (1, ls[0]), False, (rs[0], 1), False, ()
    if len(ls) == 1:
        lv, ta, keep_l = (1, ls[0]), False, ()
    elif ta:
        lv, keep_l = (ls[0], _prod(ls[1:])), ls[1:]
    else:
        lv, keep_l = (_prod(ls[:-1]), ls[-1]), ls[:-1]
    if len(rs) == 1:
        rv, tb, keep_r = (rs[0], 1), False, ()
    elif tb:
        rv, keep_r = (_prod(rs[:-1]), rs[-1]), rs[:-1]
    else:
        rv, keep_r = (rs[0], _prod(rs[1:])), rs[1:]
    k_l = lv[0] if ta else lv[1]
    k_r = rv[1] if tb else rv[0]
    if k_l != k_r:
        raise GpundaError(f"Operator dot: shape mismatch: lhs shape {tuple(ls)} "
                          f"(transpose_a={ta}) and rhs shape {tuple(rs)} (transpose_b={tb}) "
                          f"contract dimensions of different sizes ({k_l} vs {k_r})")
    return lv, ta, rv, tb, tuple(keep_l) + tuple(keep_r)


def _dot(xp, p, a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise GpundaError(f"Operator dot: inputs must have at least one dimension, got lhs "
                          f"shape {a.shape} and rhs shape {b.shape}")
    lv, ta, rv, tb, out = _views(a.shape, b.shape, p.transpose_a, p.transpose_b)
    a2 = a.reshape(lv)
    b2 = b.reshape(rv)
    r = xp.matmul(a2.T if ta else a2, b2.T if tb else b2)
    if out == ():
        return legacy_scalar(xp, r.reshape(()))
    return r.reshape(out)


def _view(F, x, shape):
    return x if tuple(x.shape) == tuple(shape) else F._linalg_view(x, shape=shape)


def _g_dot(F, p, ins, outs, og):
    a, b = ins
    g = og[0]
    lv, ta, rv, tb, _ = _views(a.shape, b.shape, p.transpose_a, p.transpose_b)
    a2, b2 = _view(F, a, lv), _view(F, b, rv)
    m = lv[1] if ta else lv[0]
    n = rv[0] if tb else rv[1]
    g2 = _view(F, g, (m, n))
    if not ta and not tb:      # C = A B
        ga, gb = F.dot(g2, b2, transpose_b=True), F.dot(a2, g2, transpose_a=True)
    elif ta and not tb:        # C = A^T B
        ga, gb = F.dot(b2, g2, transpose_b=True), F.dot(a2, g2)
    elif not ta and tb:        # C = A B^T
        ga, gb = F.dot(g2, b2), F.dot(g2, a2, transpose_a=True)
    else:                      # C = A^T B^T
        ga = F.dot(b2, g2, transpose_a=True, transpose_b=True)
        gb = F.dot(g2, a2, transpose_a=True, transpose_b=True)
    return [_view(F, ga, a.shape), _view(F, gb, b.shape)]


_TRANSPOSE = [Param("transpose_a", "bool", False, "use the transpose of lhs"),
              Param("transpose_b", "bool", False, "use the transpose of rhs"),
              Param("forward_stype", "str", None, "accepted for MXNet compatibility")]

register(OpDef("dot", _dot, inputs=("lhs", "rhs"), params=_TRANSPOSE, gradient=_g_dot,
               save=("inputs",), family="linalg", capture="cuBLAS",
               doc="Dot product of two arrays (MXNet's N-d matrix-view rules)."))
register(OpDef("_linalg_view", lambda xp, p, x: x.reshape(tuple(p.shape)),
               params=[Param("shape", "shape")],
               gradient=lambda F, p, i, o, g: [F._linalg_view(g[0], shape=i[0].shape)],
               save=("inputs",), hidden=True, family="linalg",
               doc="Reshape to `shape` (same size); used by the dot gradient."))

# ----------------------------------------------------------------------------
# batch_dot


def _batch_dot(xp, p, a, b):
    if a.ndim < 3 or a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2]:
        raise GpundaError(f"Operator batch_dot: lhs shape {a.shape} and rhs shape {b.shape} "
                          f"must both have >= 3 dims and the same leading batch dims")
    a2 = xp.swapaxes(a, -1, -2) if p.transpose_a else a
    b2 = xp.swapaxes(b, -1, -2) if p.transpose_b else b
    if a2.shape[-1] != b2.shape[-2]:
        raise GpundaError(f"Operator batch_dot: shape mismatch: lhs shape {a.shape} "
                          f"(transpose_a={p.transpose_a}) and rhs shape {b.shape} "
                          f"(transpose_b={p.transpose_b})")
    return xp.matmul(a2, b2)


def _g_batch_dot(F, p, ins, outs, og):
    a, b = ins
    g = og[0]
    ta, tb = p.transpose_a, p.transpose_b
    bd = F.batch_dot
    if not ta and not tb:
        return [bd(g, b, transpose_b=True), bd(a, g, transpose_a=True)]
    if ta and not tb:
        return [bd(b, g, transpose_b=True), bd(a, g)]
    if not ta and tb:
        return [bd(g, b), bd(g, a, transpose_a=True)]
    return [bd(b, g, transpose_a=True, transpose_b=True),
            bd(g, a, transpose_a=True, transpose_b=True)]


register(OpDef("batch_dot", _batch_dot, inputs=("lhs", "rhs"), params=_TRANSPOSE,
               gradient=_g_batch_dot, save=("inputs",), family="linalg", capture="cuBLAS",
               doc="Batched matrix product over the last two axes (3-D: (B, M, K) x (B, K, N))."))

# ----------------------------------------------------------------------------
# khatri_rao


def _khatri_rao(xp, p, *mats):
    if not mats:
        raise GpundaError("Operator khatri_rao: needs at least one input")
    r = mats[0].shape[-1] if mats[0].ndim == 2 else None
    for i, m in enumerate(mats):
        if m.ndim != 2 or m.shape[1] != r:
            raise GpundaError(f"Operator khatri_rao: input arg{i} has shape {m.shape}; every "
                              f"input must be 2-D with the same number of columns ({r})")
    out = mats[0]
    for m in mats[1:]:
        out = (out[:, None, :] * m[None, :, :]).reshape(-1, r)
    return out


def _g_khatri_rao(F, p, ins, outs, og):
    g = og[0]
    rows = [m.shape[0] for m in ins]
    r = ins[0].shape[1]
    grads = []
    for k, m in enumerate(ins):
        before, after = ins[:k], ins[k + 1:]
        pb, pa = _prod(rows[:k]), _prod(rows[k + 1:])
        t = _view(F, g, (pb, rows[k], pa, r))
        if before:
            kb = before[0] if len(before) == 1 else F.khatri_rao(*before)
            t = F.broadcast_mul(t, _view(F, kb, (pb, 1, 1, r)))
        if after:
            ka = after[0] if len(after) == 1 else F.khatri_rao(*after)
            t = F.broadcast_mul(t, _view(F, ka, (1, 1, pa, r)))
        grads.append(F.sum(t, axis=(0, 2)))
    return grads


register(OpDef("khatri_rao", _khatri_rao,
               inputs=lambda p: tuple(f"arg{i}" for i in range(p.num_args)),
               params=[Param("num_args", "int", 1)], key_var_num_args="num_args",
               gradient=_g_khatri_rao, save=("inputs",), family="linalg",
               doc="Column-wise Khatri-Rao product of 2-D matrices with equal column counts."))
