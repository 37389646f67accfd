"""Matrix products and MXNet's ``linalg_*`` family: dot, batch_dot, khatri_rao,
gemm/gemm2/syrk/trmm/trsm/potrf/potri/sumlogdiag/inverse/det/slogdet and the
diagonal/triangle packers, with MXNet 1.x's names, parameters and shape rules.

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

import math

import numpy as _np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops._util import legacy_scalar, matmul, require_same_dtype, not_sgl_dbl


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
    require_same_dtype("dot", ("lhs", "rhs"), a, b)
    lv, ta, rv, tb, out = _views(a.shape, b.shape, p.transpose_a, p.transpose_b)
    a2 = a.reshape(lv)
    b2 = b.reshape(rv)
    r = matmul(xp, a2.T if ta else a2, b2.T if tb else b2)
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
               save=("inputs",), family="linalg", capture="gemm",
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
    require_same_dtype("batch_dot", ("lhs", "rhs"), a, b)
    a2 = xp.swapaxes(a, -1, -2) if p.transpose_a else a
    b2 = xp.swapaxes(b, -1, -2) if p.transpose_b else b
    if a2.shape[-1] != b2.shape[-2]:
        raise GpundaError(f"Operator batch_dot: shape mismatch: lhs shape {a.shape} "
                          f"(transpose_a={p.transpose_a}) and rhs shape {b.shape} "
                          f"(transpose_b={p.transpose_b})")
    return matmul(xp, a2, b2)


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
               gradient=_g_batch_dot, save=("inputs",), family="linalg", capture="gemm",
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

# ----------------------------------------------------------------------------
# MXNet's linalg_* family (``_linalg_<name>``, alias ``linalg_<name>``): batched over
# leading dims, matrices in the last two axes. Gradients use these ops themselves
# plus the hidden helpers _linalg_swap (matrix transpose) and _linalg_tril (triangle
# mask), so they are differentiable again.


def _swap(xp, x):
    return xp.swapaxes(x, -1, -2)


def _tri_mask(xp, n, m, lower, k=0):
    """Boolean (n, m) mask of the lower (or upper) triangle from diagonal k."""
    r = xp.arange(n)[:, None]
    c = xp.arange(m)[None, :]
    return (c - r <= k) if lower else (c - r >= k)


def _tril(xp, x, lower=True, k=0):
    return xp.where(_tri_mask(xp, x.shape[-2], x.shape[-1], lower, k), x, xp.zeros((), x.dtype))


def _check_mat(name, x, square=False, what="A"):
    if x.ndim < 2:
        raise GpundaError(f"Operator {name}: input {what} must have at least 2 dims, got shape "
                          f"{x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise GpundaError(f"Operator {name}: input {what} must hold square matrices, got shape "
                          f"{x.shape}")


def _sgl_dbl(opname, compute, first):
    """``compute`` behind MXNet's MSHADOW_SGL_DBL_TYPE_SWITCH: every linalg kernel is
    instantiated for float32 and float64 only, on every device (NOTE [Dtypes a kernel is
    instantiated for])."""
    def checked(xp, p, a, *rest):
        dt = a.dtype
        if dt.kind != "f" or dt.itemsize < 4:
            raise not_sgl_dbl(opname, first, dt)
        return compute(xp, p, a, *rest)
    return checked


def _la(name, compute, grad, *, inputs=("A",), params=(), save=("inputs",), nondiff=False,
        num_outputs=1, doc=""):
    compute = _sgl_dbl(f"_linalg_{name}", compute, inputs[0])
    return register(OpDef(f"_linalg_{name}", compute, inputs=inputs, params=list(params),
                          gradient=grad, save=save, nondiff=nondiff, num_outputs=num_outputs,
                          aliases=(f"linalg_{name}",), family="linalg", doc=doc,
                          capture="cuBLAS/cuSOLVER"))


register(OpDef("_linalg_swap", lambda xp, p, x: _swap(xp, x).copy(),
               gradient=lambda F, p, i, o, g: [F._linalg_swap(g[0])], save=(), hidden=True,
               family="linalg", doc="Transpose of the matrices in the last two axes."))
register(OpDef("_linalg_tril", lambda xp, p, x: _tril(xp, x, p.lower, p.k),
               params=[Param("lower", "bool", True), Param("k", "int", 0)],
               gradient=lambda F, p, i, o, g: [F._linalg_tril(g[0], lower=p.lower, k=p.k)],
               save=(), hidden=True, family="linalg",
               doc="Lower (or upper) triangle from diagonal k, zeros elsewhere."))

_GEMM_T = [Param("transpose_a", "bool", False), Param("transpose_b", "bool", False),
           Param("alpha", "float", 1.0)]


def _row_axis(name, p, x):
    """The matrices' row axis (MXNet's axis; columns are the last axis) as a negative index."""
    ax = p.axis + x.ndim if p.axis < 0 else p.axis
    if not 0 <= ax < x.ndim - 1:
        raise GpundaError(f"Operator {name}: axis={p.axis} must name a row axis before the "
                          f"last axis of inputs with shape {x.shape}")
    return ax


def _gemm2(xp, p, a, b):
    if p.axis != -2 and a.ndim >= 2:
        # matrices span (axis, last): compute with rows moved to -2, then move them back
        ax = _row_axis("_linalg_gemm2", p, a)
        r = _gemm2_rows(xp, p, xp.moveaxis(a, ax, -2), xp.moveaxis(b, ax, -2))
        return xp.ascontiguousarray(xp.moveaxis(r, -2, ax))
    return _gemm2_rows(xp, p, a, b)


def _gemm2_rows(xp, p, a, b):
    _check_mat("_linalg_gemm2", a)
    _check_mat("_linalg_gemm2", b, what="B")
    a2 = _swap(xp, a) if p.transpose_a else a
    b2 = _swap(xp, b) if p.transpose_b else b
    if a2.shape[-1] != b2.shape[-2] or a.shape[:-2] != b.shape[:-2]:
        raise GpundaError(f"Operator _linalg_gemm2: shape mismatch: A shape {a.shape} "
                          f"(transpose_a={p.transpose_a}) and B shape {b.shape} "
                          f"(transpose_b={p.transpose_b})")
    r = xp.matmul(a2, b2)
    return r * r.dtype.type(p.alpha) if p.alpha != 1.0 else r


def _gemm_grads(F, p, a, b, g):
    ta, tb, al = p.transpose_a, p.transpose_b, p.alpha

    def mm(x, y, **kw):     # the gradients' matrices share the inputs' row axis
        return F._linalg_gemm2(x, y, axis=p.axis, **kw)
    if not ta and not tb:
        return mm(g, b, transpose_b=True, alpha=al), mm(a, g, transpose_a=True, alpha=al)
    if ta and not tb:
        return mm(b, g, transpose_b=True, alpha=al), mm(a, g, alpha=al)
    if not ta and tb:
        return mm(g, b, alpha=al), mm(g, a, transpose_a=True, alpha=al)
    return (mm(b, g, transpose_a=True, transpose_b=True, alpha=al),
            mm(g, a, transpose_a=True, transpose_b=True, alpha=al))


_AXIS2 = Param("axis", "int", -2, "the matrices' row axis (their columns are the last axis)")
_la("gemm2", _gemm2, lambda F, p, i, o, g: list(_gemm_grads(F, p, i[0], i[1], g[0])),
    inputs=("A", "B"), params=_GEMM_T + [_AXIS2],
    doc="alpha * op(A) op(B), batched over leading dims.")


def _gemm(xp, p, a, b, c):
    r = _gemm2(xp, p, a, b)
    if c.shape != r.shape:
        raise GpundaError(f"Operator _linalg_gemm: C shape {c.shape} must be {r.shape}")
    return r + c * c.dtype.type(p.beta)


def _g_gemm(F, p, i, o, g):
    ga, gb = _gemm_grads(F, p, i[0], i[1], g[0])
    return [ga, gb, g[0] * p.beta]


_la("gemm", _gemm, _g_gemm, inputs=("A", "B", "C"),
    params=_GEMM_T + [Param("beta", "float", 1.0), _AXIS2],
    doc="alpha * op(A) op(B) + beta * C, batched over leading dims.")


def _syrk(xp, p, a):
    _check_mat("_linalg_syrk", a)
    r = xp.matmul(_swap(xp, a), a) if p.transpose else xp.matmul(a, _swap(xp, a))
    return r * r.dtype.type(p.alpha)


def _g_syrk(F, p, i, o, g):
    a, g = i[0], g[0]
    mm = F._linalg_gemm2
    if p.transpose:     # B = alpha A^T A: dA = alpha A (G + G^T)
        return [mm(a, g, alpha=p.alpha) + mm(a, g, transpose_b=True, alpha=p.alpha)]
    return [mm(g, a, alpha=p.alpha) + mm(g, a, transpose_a=True, alpha=p.alpha)]


_la("syrk", _syrk, _g_syrk,
    params=[Param("transpose", "bool", False), Param("alpha", "float", 1.0)],
    doc="alpha * A A^T (or A^T A with transpose), batched.")

_TRI = [Param("transpose", "bool", False), Param("rightside", "bool", False),
        Param("lower", "bool", True), Param("alpha", "float", 1.0)]


def _tri_op(xp, p, a):
    t = _tril(xp, a, p.lower)
    return _swap(xp, t) if p.transpose else t


def _check_tri(name, a, b, rightside):
    _check_mat(name, a, square=True)
    _check_mat(name, b, what="B")
    n = a.shape[-1]
    if a.shape[:-2] != b.shape[:-2] or (b.shape[-1] if rightside else b.shape[-2]) != n:
        raise GpundaError(f"Operator {name}: A shape {a.shape} and B shape {b.shape} do not "
                          f"fit (rightside={rightside})")


def _trmm(xp, p, a, b):
    _check_tri("_linalg_trmm", a, b, p.rightside)
    m = _tri_op(xp, p, a)
    r = xp.matmul(b, m) if p.rightside else xp.matmul(m, b)
    return r * r.dtype.type(p.alpha)


def _g_trmm(F, p, i, o, g):
    a, b, g = i[0], i[1], g[0]
    kw = dict(rightside=p.rightside, lower=p.lower, alpha=p.alpha)
    gb = F._linalg_trmm(a, g, transpose=not p.transpose, **kw)
    if p.rightside:     # B op(A): d op(A) = alpha B^T G
        gm = F._linalg_gemm2(b, g, transpose_a=True, alpha=p.alpha)
    else:               # op(A) B: d op(A) = alpha G B^T
        gm = F._linalg_gemm2(g, b, transpose_b=True, alpha=p.alpha)
    if p.transpose:
        gm = F._linalg_swap(gm)
    return [F._linalg_tril(gm, lower=p.lower), gb]


_la("trmm", _trmm, _g_trmm, inputs=("A", "B"), params=_TRI,
    doc="alpha * op(A) B (or B op(A)) with A triangular (only its lower/upper part is read).")


def _trsm(xp, p, a, b):
    _check_tri("_linalg_trsm", a, b, p.rightside)
    m = _tri_op(xp, p, a)
    s = b.dtype.type(p.alpha)
    if p.rightside:     # X op(A) = alpha B  <=>  op(A)^T X^T = alpha B^T
        return _swap(xp, xp.linalg.solve(_swap(xp, m), _swap(xp, b) * s))
    return xp.linalg.solve(m, b * s)


def _g_trsm(F, p, i, o, g):
    a, x, g = i[0], o[0], g[0]
    kw = dict(rightside=p.rightside, lower=p.lower)
    y = F._linalg_trsm(a, g, transpose=not p.transpose, alpha=1.0, **kw)
    if p.rightside:     # X = alpha B M^-1: dM = -X^T Y with Y = G M^-T
        gm = -F._linalg_gemm2(x, y, transpose_a=True)
    else:               # X = alpha M^-1 B: dM = -Y X^T with Y = M^-T G
        gm = -F._linalg_gemm2(y, x, transpose_b=True)
    if p.transpose:
        gm = F._linalg_swap(gm)
    return [F._linalg_tril(gm, lower=p.lower), y * p.alpha]


_la("trsm", _trsm, _g_trsm, inputs=("A", "B"), params=_TRI, save=("inputs", "outputs"),
    doc="Solves op(A) X = alpha B (or X op(A) = alpha B) with A triangular.")


def _potrf(xp, p, a):
    _check_mat("_linalg_potrf", a, square=True)
    l = xp.linalg.cholesky(a)
    return l if p.lower else _swap(xp, l).copy()


def _g_potrf(F, p, i, o, g):
    # Murray (2016): A_bar = sym(L^-T Phi(L^T L_bar) L^-1), Phi = lower triangle, half diagonal
    l, gl = o[0], g[0]
    if not p.lower:
        l, gl = F._linalg_swap(l), F._linalg_swap(gl)
    s = F._linalg_gemm2(l, gl, transpose_a=True)
    phi = (F._linalg_tril(s) + F._linalg_tril(s, k=-1)) * 0.5
    z = F._linalg_trsm(l, phi, transpose=True)
    a0 = F._linalg_trsm(l, z, rightside=True)
    return [(a0 + F._linalg_swap(a0)) * 0.5]


_la("potrf", _potrf, _g_potrf, params=[Param("lower", "bool", True)], save=("outputs",),
    doc="Cholesky factor L (A = L L^T), or upper U (A = U^T U) with lower=False.")


def _potri(xp, p, a):
    _check_mat("_linalg_potri", a, square=True)
    l = _tril(xp, a, p.lower)
    if not p.lower:
        l = _swap(xp, l)
    inv_l = xp.linalg.inv(l)
    return xp.matmul(_swap(xp, inv_l), inv_l)


def _g_potri(F, p, i, o, g):
    # B = (L L^T)^-1: L_bar = tril(-2 B sym(B_bar) B L)
    a, b, gb = i[0], o[0], g[0]
    sym = (gb + F._linalg_swap(gb)) * 0.5
    m = F._linalg_gemm2(F._linalg_gemm2(b, sym), b, alpha=-2.0)
    if p.lower:
        return [F._linalg_tril(F._linalg_gemm2(m, F._linalg_tril(a)))]
    lt = F._linalg_swap(F._linalg_tril(a, lower=False))
    return [F._linalg_swap(F._linalg_tril(F._linalg_gemm2(m, lt)))]


_la("potri", _potri, _g_potri, params=[Param("lower", "bool", True)], save=("inputs", "outputs"),
    doc="(L L^T)^-1 from a Cholesky factor L (upper U with lower=False).")


def _sumlogdiag(xp, p, a):
    _check_mat("_linalg_sumlogdiag", a, square=True)
    d = xp.diagonal(a, axis1=-2, axis2=-1)
    return legacy_scalar(xp, xp.log(d).sum(axis=-1))


def _g_sumlogdiag(F, p, i, o, g):
    a = i[0]
    d = F._linalg_extractdiag(a)
    gv = F._linalg_view(g[0], shape=a.shape[:-2] + (1,))
    return [F._linalg_makediag(F.broadcast_div(gv, d))]


_la("sumlogdiag", _sumlogdiag, _g_sumlogdiag, doc="Sum of the logs of the diagonal.")


def _extractdiag(xp, p, a):
    _check_mat("_linalg_extractdiag", a)
    return xp.diagonal(a, offset=p.offset, axis1=-2, axis2=-1).copy()


def _makediag(xp, p, d):
    if d.ndim < 1:
        raise GpundaError(f"Operator _linalg_makediag: input must have at least 1 dim, got "
                          f"shape {d.shape}")
    k = p.offset
    n = d.shape[-1] + abs(k)
    out = xp.zeros(d.shape[:-1] + (n, n), d.dtype)
    j = xp.arange(d.shape[-1])
    rows, cols = (j, j + k) if k >= 0 else (j - k, j)
    out[..., rows, cols] = d
    return out


_OFFSET = Param("offset", "int", 0, "diagonal offset (negative: below the main diagonal)")
_la("extractdiag", _extractdiag,
    lambda F, p, i, o, g: [F._linalg_diag_back(g[0], offset=p.offset, shape=i[0].shape)],
    params=[_OFFSET], doc="The diagonal (with offset) of each matrix.")
_la("makediag", _makediag,
    lambda F, p, i, o, g: [F._linalg_extractdiag(g[0], offset=p.offset)], save=(),
    params=[_OFFSET], doc="Square matrices with the input on the diagonal (with offset).")


def _diag_back(xp, p, g):
    out = xp.zeros(tuple(p.shape), g.dtype)
    j = xp.arange(g.shape[-1])
    k = p.offset
    rows, cols = (j, j + k) if k >= 0 else (j - k, j)
    out[..., rows, cols] = g
    return out


register(OpDef("_linalg_diag_back", _diag_back,
               params=[_OFFSET, Param("shape", "shape")],
               gradient=lambda F, p, i, o, g: [F._linalg_extractdiag(g[0], offset=p.offset)],
               save=(), hidden=True, family="linalg",
               doc="Zeros of `shape` with the input on the diagonal (extractdiag's adjoint)."))


def _trian_index(xp, n, offset, lower):
    # MXNet: a non-zero offset picks the side; lower only matters for offset 0
    if offset > 0 or (offset == 0 and not lower):
        return xp.triu_indices(n, k=offset)
    return xp.tril_indices(n, k=offset)


def _extracttrian(xp, p, a):
    _check_mat("_linalg_extracttrian", a, square=True)
    r, c = _trian_index(xp, a.shape[-1], p.offset, p.lower)
    return a[..., r, c]


def _maketrian(xp, p, v):
    if v.ndim < 1:
        raise GpundaError(f"Operator _linalg_maketrian: input must have at least 1 dim, got "
                          f"shape {v.shape}")
    m = v.shape[-1]
    k = int(round((math.sqrt(8 * m + 1) - 1) / 2))
    if k * (k + 1) // 2 != m:
        raise GpundaError(f"Operator _linalg_maketrian: last dim {m} is not a triangular "
                          f"number k*(k+1)/2")
    n = k + abs(p.offset)
    out = xp.zeros(v.shape[:-1] + (n, n), v.dtype)
    r, c = _trian_index(xp, n, p.offset, p.lower)
    out[..., r, c] = v
    return out


_TRIAN = [_OFFSET, Param("lower", "bool", True)]
_la("extracttrian", _extracttrian,
    lambda F, p, i, o, g: [F._linalg_maketrian(g[0], offset=p.offset, lower=p.lower)],
    params=_TRIAN, save=(), doc="The lower (or upper) triangle of each matrix, packed row-major.")
_la("maketrian", _maketrian,
    lambda F, p, i, o, g: [F._linalg_extracttrian(g[0], offset=p.offset, lower=p.lower)],
    params=_TRIAN, save=(), doc="Triangular matrices from packed row-major triangles.")


def _syevd(xp, p, a):
    _check_mat("_linalg_syevd", a, square=True)
    w, v = xp.linalg.eigh(a)
    u = _swap(xp, v)        # MXNet returns the eigenvectors as the rows of U
    # MXNet's sign convention: the largest-magnitude entry of each eigenvector is positive
    if u.size:
        big = xp.take_along_axis(u, xp.argmax(xp.abs(u), axis=-1)[..., None], axis=-1)
        u = u * xp.where(big < 0, -1, 1).astype(u.dtype)
    return xp.ascontiguousarray(u), w


def _g_syevd(F, p, i, o, g):
    # A = U^T diag(L) U: A_bar = sym(U^T (diag(L_bar) + K o (U U_bar^T)) U) with
    # K_ij = 1 / (L_j - L_i) off the diagonal and 0 on it
    u, lam = o[0], o[1]
    eye = F._linalg_makediag(F.ones_like(lam))
    gap = F.broadcast_sub(F.expand_dims(lam, axis=-2), F.expand_dims(lam, axis=-1))
    k = (1 - eye) / (gap + eye)
    m = F._linalg_gemm2(u, g[0], transpose_b=True) * k + F._linalg_makediag(g[1])
    a = F._linalg_gemm2(F._linalg_gemm2(u, m, transpose_a=True), u)
    return [(a + F._linalg_swap(a)) * 0.5]


_la("syevd", _syevd, _g_syevd, num_outputs=2, save=("outputs",),
    doc="Eigendecomposition of symmetric matrices: U (eigenvectors as rows, each with its "
        "largest-magnitude entry positive) and L (ascending), with A = U^T diag(L) U.")


# mx.np.linalg's ops (MXNet's src/operator/numpy/linalg): cholesky is potrf with its
# gradient; eigh/eigvalsh read one triangle (UPLO) and, as in MXNet, give zero gradients


def _np_uplo(xp, name, p, a):
    _check_mat(name, a, square=True)
    if p.UPLO not in ("L", "U"):
        raise GpundaError(f"Operator {name}: UPLO={p.UPLO!r} must be 'L' or 'U'")
    # the symmetric matrix the chosen triangle describes
    low = xp.tril(a) if p.UPLO == "L" else _swap(xp, xp.triu(a))
    return low + _swap(xp, xp.tril(low, -1))


def _np_eigh(xp, p, a):
    u, w = _syevd(xp, p, _np_uplo(xp, "_npi_eigh", p, a))
    return w, xp.ascontiguousarray(_swap(xp, u))


def _zero_grad(F, p, i, o, g):
    return [F.zeros_like(i[0])]


def _int_to_float64(xp, p, a):
    return a.astype("float64") if a.dtype.kind in "iu" else a.copy()


def _int_to_float64_type(p, t):
    d = t[0]
    return list(t), [None if d is None else ("float64" if _np.dtype(d).kind in "iu" else d)]


# mx.np.linalg.eigh/eigvalsh of integers compute in float64 (MXNet's _npi_eigh); gpunda's
# front end runs them through _linalg_syevd (float32/float64 only), so a hybridized graph,
# whose input dtype is unknown when it is built, casts through this op
register(OpDef("_linalg_int_to_float64", _int_to_float64, inputs=("A",),
               gradient=lambda F, p, i, o, g: [F.cast(g[0], dtype=i[0].dtype)
                                               if i[0].dtype != g[0].dtype else g[0]],
               infer_type=_int_to_float64_type, save=("inputs",), hidden=True,
               family="np_linalg",
               doc="Integer input as float64, float input as it is (copied)."))


_UPLO = [Param("UPLO", "str", "L", "which triangle to read: 'L' or 'U'")]
register(OpDef("_npi_cholesky", _potrf, inputs=("A",), params=[Param("lower", "bool", True)],
               gradient=_g_potrf, save=("outputs",), hidden=True, family="np_linalg",
               capture="cuBLAS/cuSOLVER",
               doc="NumPy's linalg.cholesky: the lower factor L of A = L L^T."))
register(OpDef("_npi_eigh", _np_eigh, inputs=("A",), params=_UPLO, num_outputs=2,
               gradient=_zero_grad, save=("inputs",), hidden=True, family="np_linalg",
               capture="cuBLAS/cuSOLVER",
               doc="NumPy's linalg.eigh: ascending eigenvalues w and eigenvectors as the "
                   "columns of v (each with its largest-magnitude entry positive); zero "
                   "gradient, as MXNet's."))
register(OpDef("_npi_eigvalsh", lambda xp, p, a: _np_eigh(xp, p, a)[0], inputs=("A",),
               params=_UPLO, gradient=_zero_grad, save=("inputs",), hidden=True,
               family="np_linalg", capture="cuBLAS/cuSOLVER",
               doc="NumPy's linalg.eigvalsh: ascending eigenvalues; zero gradient, as "
                   "MXNet's."))


def _gelqf(xp, p, a):
    _check_mat("_linalg_gelqf", a)
    if a.shape[-2] > a.shape[-1]:
        raise GpundaError(f"Operator _linalg_gelqf: A of shape {tuple(a.shape)} has more rows "
                          f"than columns; LQ needs rows <= columns")
    # A^T = Q R (Householder, as LAPACK's gelqf works on A), so A = R^T Q^T = L Q; the
    # signs are LAPACK's, which is what MXNet returns (its documented example matches)
    q, r = xp.linalg.qr(_swap(xp, a))
    return xp.ascontiguousarray(_swap(xp, q)), xp.ascontiguousarray(_swap(xp, r))


def _g_gelqf(F, p, i, o, g):
    # A = L Q (Q Q^T = I, L lower): A_bar = L^-T (Q_bar + copyltu(M) Q) with
    # M = L^T L_bar - Q_bar Q^T, and copyltu(M) the symmetric matrix from M's lower triangle
    q, l = o[0], o[1]
    gq, gl = g[0], g[1]
    m = F._linalg_gemm2(l, gl, transpose_a=True) - F._linalg_gemm2(gq, q, transpose_b=True)
    low = F._linalg_tril(m)
    sym = low + F._linalg_swap(F._linalg_tril(m, k=-1))
    rhs = gq + F._linalg_gemm2(sym, q)
    return [F._linalg_trsm(l, rhs, transpose=True)]


_la("gelqf", _gelqf, _g_gelqf, num_outputs=2, save=("outputs",),
    doc="LQ factorisation A = L Q of matrices with rows <= columns: Q with orthonormal rows "
        "and L lower triangular (outputs Q, L).")


def _inverse(xp, p, a):
    _check_mat("_linalg_inverse", a, square=True)
    return xp.linalg.inv(a)


_la("inverse", _inverse,
    lambda F, p, i, o, g: [-F._linalg_gemm2(o[0], F._linalg_gemm2(g[0], o[0], transpose_b=True),
                                            transpose_a=True)],
    save=("outputs",), doc="Inverse of each square matrix.")


def _det(xp, p, a):
    _check_mat("_linalg_det", a, square=True)
    return legacy_scalar(xp, xp.linalg.det(a))


def _g_det(F, p, i, o, g):
    a = i[0]
    s = F._linalg_view(g[0] * o[0], shape=a.shape[:-2] + (1, 1))
    return [F.broadcast_mul(s, F._linalg_swap(F._linalg_inverse(a)))]


_la("det", _det, _g_det, save=("inputs", "outputs"), doc="Determinant of each square matrix.")


def _slogdet(xp, p, a):
    _check_mat("_linalg_slogdet", a, square=True)
    s, l = xp.linalg.slogdet(a)
    return legacy_scalar(xp, s), legacy_scalar(xp, l)


def _g_slogdet(F, p, i, o, g):
    a = i[0]
    s = F._linalg_view(g[1], shape=a.shape[:-2] + (1, 1))
    return [F.broadcast_mul(s, F._linalg_swap(F._linalg_inverse(a)))]


_la("slogdet", _slogdet, _g_slogdet, num_outputs=2, save=("inputs",),
    doc="Sign and log|det| of each square matrix (two outputs).")
