"""``mx.np`` products and linear algebra ops: einsum, dot, matmul, tensordot, and the
``np.linalg`` decompositions/solvers MXNet computes natively (svd, solve, pinv, eig,
norm, tensorinv, tensorsolve).

Products differentiate through ``einsum``: the gradient of ``einsum(s1,s2->out)`` with
respect to operand 1 is ``einsum(out,s2->s1)`` of the head gradient (a letter only
operand 1 has is summed in the forward, so the gradient broadcasts it back: a ones
operand of operand 1's shape carries it). dot/tensordot/matmul build their subscripts
from the shapes at gradient time, so their Symbol forms need no shapes.
"""
from __future__ import annotations

import string

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops.numpy.elemwise import np_result_type
from gpunda.ops._util import sum_to_shape, c_cast_float

_LETTERS = string.ascii_letters


def _promote(a, b):
    dt = np_result_type(a.dtype, b.dtype, bool_bool=np.dtype("bool"))
    return (a if a.dtype == dt else a.astype(dt)), (b if b.dtype == dt else b.astype(dt))


def _explicit(subscripts, shapes):
    """Subscripts with '...' replaced by letters and an explicit output."""
    s = subscripts.replace(" ", "")
    lhs, _, out = s.partition("->")
    ins = lhs.split(",")
    used = set(c for c in s if c.isalpha())
    free = [c for c in _LETTERS if c not in used]
    nell = max((len(sh) - (len(t) - 3) for t, sh in zip(ins, shapes) if "..." in t), default=0)
    ell = "".join(free[:nell])
    full = []
    for t, sh in zip(ins, shapes):
        if "..." in t:
            k = len(sh) - (len(t) - 3)
            t = t.replace("...", ell[nell - k:])
        full.append(t)
    if "->" not in s:
        counts = {}
        for t in full:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return full, out


def _einsum(xp, p, *ops):
    if len(ops) > 1:
        dt = ops[0].dtype
        for o in ops[1:]:
            dt = np_result_type(dt, o.dtype, bool_bool=np.dtype("bool"))
        ops = [o.astype(dt) if o.dtype != dt else o for o in ops]
    return xp.asarray(xp.einsum(p.subscripts, *ops, optimize=bool(p.optimize) and xp is np))


def einsum_grads(F, subs_in, sub_out, ins, g):
    """Gradients of ``einsum(subs_in -> sub_out)`` at ``ins`` for head gradient ``g``."""
    grads = []
    for k, x in enumerate(ins):
        others = [(s, a) for j, (s, a) in enumerate(zip(subs_in, ins)) if j != k]
        terms = [sub_out] + [s for s, _ in others]
        arrays = [g] + [a for _, a in others]
        have = set("".join(terms))
        sub = subs_in[k]
        # a repeated letter (a diagonal, 'ii'): each extra occurrence gets a letter of its
        # own, tied to the first by ones on the diagonal of an identity-like mask
        target, seen = "", set()
        free = [c for c in _LETTERS if c not in "".join(subs_in) + sub_out]
        ties = []
        for c in sub:
            if c in seen:
                nc = free.pop(0)
                ties.append((c, nc))
                target += nc
            else:
                seen.add(c)
                target += c
        if any(c not in have for c in set(sub)) or ties:
            terms.append(target)
            arrays.append(F._npi_diag_mask(x, subscripts=sub) if ties else F.ones_like(x))
        gx = F._npi_einsum(*arrays, subscripts=",".join(terms) + "->" + target,
                           num_args=len(arrays))
        if tuple(gx.shape) != tuple(x.shape):    # a size-1 axis NumPy broadcast in the forward
            gx = sum_to_shape(F, gx, tuple(x.shape))
        grads.append(gx if gx.dtype == x.dtype else F.Cast(gx, dtype=x.dtype))
    return grads


def _diag_mask(xp, p, x):
    """Ones where every repeated letter of ``subscripts`` has equal indices, else zeros."""
    mask = xp.ones(x.shape, dtype=x.dtype)
    sub = p.subscripts
    for k, c in enumerate(sub):
        first = sub.index(c)
        if first != k:
            shape = [1] * x.ndim
            shape[first], shape[k] = x.shape[first], x.shape[k]
            eye = xp.eye(x.shape[first], x.shape[k], dtype=x.dtype).reshape(shape)
            mask = mask * eye
    return mask


register(OpDef("_npi_diag_mask", _diag_mask, inputs=("x",), params=[Param("subscripts", "str")],
               nondiff=True, family="np_linalg", hidden=True,
               doc="The identity pattern of einsum's repeated subscripts over x's shape."))


def _g_einsum(F, p, i, o, g):
    full, out = _explicit(p.subscripts, [x.shape for x in i])
    return einsum_grads(F, full, out, list(i), g[0])


register(OpDef("_npi_einsum", _einsum, inputs=lambda p: tuple(f"arg{k}" for k in range(p.num_args)),
               params=[Param("subscripts", "str"), Param("num_args", "int"),
                       Param("optimize", "int", 0)],
               key_var_num_args="num_args", gradient=_g_einsum, save=("inputs",),
               family="np_linalg", hidden=True, doc="Einstein summation (NumPy's einsum)."))


def _tensordot_subs(na, nb, a_axes, b_axes):
    la = list(_LETTERS[:na])
    lb = list(_LETTERS[na:na + nb])
    for x, y in zip(a_axes, b_axes):
        lb[y] = la[x]
    out = [c for k, c in enumerate(la) if k not in a_axes] + \
          [c for k, c in enumerate(lb) if k not in b_axes]
    return ["".join(la), "".join(lb)], "".join(out)


def _td_axes(p, na, nb):
    if p.axes_int is not None:
        n = p.axes_int
        return list(range(na - n, na)), list(range(n))
    return [a % na for a in p.a_axes_summed], [b % nb for b in p.b_axes_summed]


def _tensordot(xp, p, a, b):
    a, b = _promote(a, b)
    aa, ba = _td_axes(p, a.ndim, b.ndim)
    for x, y in zip(aa, ba):
        if a.shape[x] != b.shape[y]:
            raise GpundaError(f"Operator _npi_tensordot: shape mismatch for sum: a axis {x} "
                              f"has size {a.shape[x]}, b axis {y} has size {b.shape[y]}")
    return xp.asarray(xp.tensordot(a, b, axes=(aa, ba)))


def _g_tensordot(F, p, i, o, g):
    a, b = i
    aa, ba = _td_axes(p, a.ndim, b.ndim)
    subs, out = _tensordot_subs(a.ndim, b.ndim, aa, ba)
    return einsum_grads(F, subs, out, [a, b], g[0])


register(OpDef("_npi_tensordot", _tensordot, inputs=("a", "b"),
               params=[Param("a_axes_summed", "shape", ()), Param("b_axes_summed", "shape", ()),
                       Param("axes_int", "int", None)],
               gradient=_g_tensordot, save=("inputs",), family="np_linalg", hidden=True,
               doc="Sum of products over the given axes (NumPy's tensordot)."))


def _int_axes(p):
    return p.replace(axes_int=p.axes, a_axes_summed=(), b_axes_summed=())


# MXNet's op for an integer ``axes`` (the last ``axes`` axes of a with the first of b)
register(OpDef("_npi_tensordot_int_axes",
               lambda xp, p, a, b: _tensordot(xp, _int_axes(p), a, b), inputs=("a", "b"),
               params=[Param("axes", "int")],
               gradient=lambda F, p, i, o, g: _g_tensordot(F, _int_axes(p), i, o, g),
               save=("inputs",), family="np_linalg", hidden=True,
               doc="Sum of products over the last/first ``axes`` axes (tensordot, int axes)."))


def _dot(xp, p, a, b):
    a, b = _promote(a, b)
    if a.ndim and b.ndim and a.shape[-1] != b.shape[0 if b.ndim == 1 else -2]:
        raise GpundaError(f"Operator _np_dot: shapes {a.shape} and {b.shape} not aligned")
    return xp.asarray(xp.dot(a, b))


def _dot_subs(na, nb):
    if na == 0 or nb == 0:
        return _tensordot_subs(na, nb, [], [])
    return _tensordot_subs(na, nb, [na - 1], [0 if nb == 1 else nb - 2])


def _g_dot(F, p, i, o, g):
    a, b = i
    subs, out = _dot_subs(a.ndim, b.ndim)
    return einsum_grads(F, subs, out, [a, b], g[0])


register(OpDef("_np_dot", _dot, inputs=("a", "b"), gradient=_g_dot, save=("inputs",),
               family="np_linalg", hidden=True, doc="NumPy's dot."))


def _matmul(xp, p, a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise GpundaError("Operator _npi_matmul: matmul does not take 0-d (scalar) operands; "
                          "use multiply")
    a, b = _promote(a, b)
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if ka != kb:
        raise GpundaError(f"Operator _npi_matmul: shapes {a.shape} and {b.shape}: the last "
                          f"axis of a ({ka}) does not match the second-last of b ({kb})")
    return xp.asarray(xp.matmul(a, b))


def _g_matmul(F, p, i, o, g):
    a, b = i
    sa = "...ij" if a.ndim > 1 else "j"
    sb = "...jk" if b.ndim > 1 else "j"
    so = ("...i" if a.ndim > 1 else "...") + ("k" if b.ndim > 1 else "")
    if a.ndim == 1 and b.ndim == 1:
        so = ""
    oa = sa if a.ndim > 1 else ("...j" if b.ndim > 1 else "j")
    ob = sb if b.ndim > 1 else ("...j" if a.ndim > 1 else "j")
    ga = F._npi_einsum(g[0], b, subscripts=f"{so},{sb}->{oa}", num_args=2)
    gb = F._npi_einsum(a, g[0], subscripts=f"{sa},{so}->{ob}", num_args=2)
    ga, gb = sum_to_shape(F, ga, a.shape), sum_to_shape(F, gb, b.shape)
    return [ga if ga.dtype == a.dtype else F.Cast(ga, dtype=a.dtype),
            gb if gb.dtype == b.dtype else F.Cast(gb, dtype=b.dtype)]


register(OpDef("_npi_matmul", _matmul, inputs=("a", "b"), gradient=_g_matmul, save=("inputs",),
               family="np_linalg", hidden=True,
               doc="Matrix product with broadcast batch axes (NumPy's matmul)."))


# ---------------------------------------------------------------------------
# np.linalg

def _swap(x):
    return x.swapaxes(-1, -2)


def _svd(xp, p, a):
    if a.shape[-2] > a.shape[-1]:
        raise GpundaError(f"Operator _npi_svd: the input's shape {a.shape} must have rows <= "
                          f"columns (MXNet's svd)")
    if a.size == 0:
        m, n = a.shape[-2:]
        b = a.shape[:-2]
        return (xp.zeros(b + (m, m), a.dtype), xp.zeros(b + (m,), a.dtype),
                xp.zeros(b + (m, n), a.dtype))
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return u.astype(a.dtype), s.astype(a.dtype), vh.astype(a.dtype)


def _svd_backward(xp, p, dut, dl, dv, ut, l, v):
    """MXNet's SVD gradient (src/operator/numpy/linalg/np_gesvd-inl.h), batched."""
    if ut.size == 0 or l.size == 0:
        return xp.zeros(ut.shape[:-1] + v.shape[-1:], dtype=v.dtype)
    m = v.shape[-2]
    li = l[..., :, None]
    lj = l[..., None, :]
    eye = xp.eye(m, dtype=l.dtype)
    diff = xp.maximum(li - lj, 1e-20)
    summ = xp.maximum(li + lj, 1e-20)
    e = 1.0 / diff / summ
    e = xp.triu(e, 1)
    e = e - _swap(e)
    g1 = xp.matmul((1.0 / li) * dv, _swap(v)) * lj + xp.matmul(_swap(dut), ut)
    x = g1 * e
    g2 = dl[..., None, :] * eye + (x + _swap(x)) * lj - (1.0 / li) * xp.matmul(dv, _swap(v)) * eye
    return xp.matmul(ut, xp.matmul(g2, v) + (1.0 / li) * dv).astype(v.dtype)


def _g_svd(F, p, i, o, g):
    return [F._npi_svd_backward(g[0], g[1], g[2], o[0], o[1], o[2])]


register(OpDef("_npi_svd", _svd, inputs=("A",), num_outputs=3, gradient=_g_svd,
               save=("outputs",), family="np_linalg", hidden=True,
               doc="Reduced SVD ``A = UT @ diag(L) @ V`` of (..., M, N) with M <= N."))
register(OpDef("_npi_svd_backward", _svd_backward,
               inputs=("dUT", "dL", "dV", "UT", "L", "V"), nondiff=True, family="np_linalg",
               hidden=True, doc="Gradient of _npi_svd (once differentiable)."))


def _solve(xp, p, a, b):
    if a.shape[-1] != a.shape[-2]:
        raise GpundaError(f"Operator _npi_solve: a must be square, got shape {a.shape}")
    # MXNet 1.9.1 solves integer systems in float64 and returns float64
    # (mx.np.linalg.solve of int32 [[4, 1], [1, 3]] and [[1], [2]] is float64 [[1/11], [7/11]])
    dt = b.dtype
    if a.dtype.kind != "f" or b.dtype.kind != "f":     # either one an integer array
        dt = np.dtype("float64")
        a, b = a.astype(dt), b.astype(dt)
    if b.ndim == a.ndim - 1:
        return xp.linalg.solve(a, b[..., None])[..., 0].astype(dt)
    return xp.linalg.solve(a, b).astype(dt)


def _g_solve(F, p, i, o, g):
    a, b = i
    x = o[0]
    gb = F._npi_solve(F._npi_transpose_last2(a), g[0])
    if b.ndim == a.ndim - 1:
        ga = -F._npi_einsum(gb, x, subscripts="...i,...j->...ij", num_args=2)
    else:
        ga = -F._npi_matmul(gb, F._npi_transpose_last2(x))
    return [ga, gb]


register(OpDef("_npi_solve", _solve, inputs=("A", "B"), gradient=_g_solve,
               save=("inputs", "outputs"), family="np_linalg", hidden=True,
               doc="The solution X of A @ X = B."))
register(OpDef("_npi_transpose_last2", lambda xp, p, a: xp.ascontiguousarray(_swap(a)),
               inputs=("a",), gradient=lambda F, p, i, o, g: [F._npi_transpose_last2(g[0])],
               save=(), family="np_linalg", hidden=True, doc="Swap the last two axes."))


def _pinv(xp, p, a, rcond=None):
    rc = rcond if rcond is not None else p.rcond
    if a.size == 0:
        return xp.zeros(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)
    # ``hermitian`` only lets NumPy take a faster path (CuPy has no such keyword)
    return xp.linalg.pinv(a, rcond=rc).astype(a.dtype)


def _g_pinv(F, p, i, o, g):
    # d pinv (Golub & Pereyra): three terms, each a product with the head gradient
    a, ap, gt = i[0], o[0], F._npi_transpose_last2(g[0])
    mm = F._npi_matmul
    apt = F._npi_transpose_last2(ap)
    t1 = -mm(mm(apt, g[0]), apt)
    pa = gt - mm(mm(a, ap), gt)                     # (I - A A+) G^T
    t2 = mm(pa, mm(ap, apt))
    qa = gt - mm(gt, mm(ap, a))                     # G^T (I - A+ A)
    t3 = mm(mm(apt, ap), qa)
    return [t1 + t2 + t3] + [None] * (len(i) - 1)


register(OpDef("_npi_pinv_scalar_rcond", _pinv, inputs=("A",),
               params=[Param("rcond", "float", 1e-15), Param("hermitian", "bool", False)],
               gradient=_g_pinv, save=("inputs", "outputs"), family="np_linalg", hidden=True,
               doc="Moore-Penrose pseudo-inverse."))
register(OpDef("_npi_pinv", _pinv, inputs=("A", "rcond"),
               params=[Param("hermitian", "bool", False)], gradient=_g_pinv,
               save=("inputs", "outputs"), family="np_linalg", hidden=True,
               doc="Pseudo-inverse with an array of rcond values."))


def _host_linalg(fn, real=True):
    def compute(xp, p, a):
        from gpunda.backends import backend_of_xp  # noqa: F401 (CuPy has no general eig)
        host = a.get() if hasattr(a, "get") else a
        r = getattr(np.linalg, fn)(host)
        rs = r if isinstance(r, tuple) else (r,)
        out = []
        for x in rs:
            if real and np.iscomplexobj(x):
                x = x.real
            # float64 for integer input (MXNet's eig/eigvals type inference)
            out.append(xp.asarray(x.astype(a.dtype if a.dtype.kind == "f" else np.float64)))
        return tuple(out) if isinstance(r, tuple) else out[0]
    return compute


register(OpDef("_npi_eig", _host_linalg("eig"), inputs=("A",), num_outputs=2, nondiff=True,
               family="np_linalg", hidden=True, capture="runs NumPy's eig on the host",
               doc="Eigenvalues and right eigenvectors (real parts, as MXNet)."))
register(OpDef("_npi_eigvals", _host_linalg("eigvals"), inputs=("A",), nondiff=True,
               family="np_linalg", hidden=True, capture="runs NumPy's eigvals on the host",
               doc="Eigenvalues of a general matrix (real parts)."))


# ---------------------------------------------------------------------------
# norm, tensorinv, tensorsolve

def _ord(p):
    o = p.ord
    if o is None or o in ("fro", "nuc"):
        return o
    return float(o)


def _norm(xp, p, x):
    o = _ord(p)
    if o is not None and o not in ("fro", "nuc") and float(o).is_integer():
        o = int(o)
    ax = p.axis
    src = x if x.dtype.kind == "f" else x.astype(np.float32)
    if ax is None and o is None:
        r = xp.sqrt(xp.sum(src * src))
        if p.keepdims:
            r = xp.reshape(r, (1,) * x.ndim)
    else:
        r = xp.linalg.norm(src, ord=o, axis=ax if ax is None or len(ax) > 1 else ax[0],
                           keepdims=p.keepdims)
    if x.dtype.kind in "iu":
        # MXNet's norm keeps an integer input's dtype (it warns), truncating the result
        return c_cast_float(xp, xp.asarray(r).astype(np.float64), x.dtype)
    return xp.asarray(r).astype(src.dtype)


def _norm_backward(xp, p, g, x, n):
    """d norm / d x for NumPy's vector and matrix norms (once differentiable)."""
    o = _ord(p)
    ax = p.axis
    if ax is None:
        ax = tuple(range(x.ndim)) if (o is None or x.ndim <= 2) else None
    axes = tuple(a % x.ndim for a in ax)
    if not p.keepdims:
        shape = tuple(1 if k in axes else d for k, d in enumerate(x.shape))
        g = g.reshape(shape)
        n = n.reshape(shape)
    sx = xp.sign(x)
    ax_ = xp.abs(x)
    safe = xp.where(n == 0, 1, n)
    if len(axes) == 1 or o is None or o == "fro" or (p.axis is None and o is None):
        if o is None or o == 2 or o == "fro":
            d = x / safe
        elif o == 1:
            d = sx
        elif o in (np.inf, -np.inf):
            d = sx * (ax_ == n)
            d = d / xp.maximum(xp.sum(ax_ == n, axis=axes, keepdims=True), 1)
        elif o == 0:
            d = xp.zeros_like(x)
        else:
            d = sx * ax_ ** (o - 1) / safe ** (o - 1)
        return (g * d).astype(x.dtype)
    r, c = axes
    if o in (1, -1, np.inf, -np.inf):
        inner = r if o in (1, -1) else c
        s = xp.sum(ax_, axis=inner, keepdims=True)
        sel = (s == n).astype(x.dtype)
        sel = sel / xp.maximum(xp.sum(sel, axis=(r, c), keepdims=True), 1)
        return (g * sx * sel).astype(x.dtype)
    # 2, -2, nuc: through the SVD of the (r, c) matrices
    perm = [k for k in range(x.ndim) if k not in (r, c)] + [r, c]
    xt = xp.transpose(x, perm)
    u, s, vh = xp.linalg.svd(xt, full_matrices=False)
    if o == "nuc":
        d = u @ vh
    else:
        k = 0 if o == 2 else -1
        d = u[..., :, k:k + 1 if k == 0 else None] @ vh[..., k:k + 1 if k == 0 else None, :]
    inv = tuple(int(k) for k in np.argsort(perm))  # host ints: an axes argument, not data
    return (g * xp.transpose(d, inv)).astype(x.dtype)


register(OpDef("_npi_norm", _norm, inputs=("x",),
               params=[Param("ord", "str", None), Param("axis", "shape", None),
                       Param("keepdims", "bool", False)],
               gradient=lambda F, p, i, o, g: [F._npi_norm_backward(g[0], i[0], o[0], ord=p.ord,
                                                                    axis=p.axis,
                                                                    keepdims=p.keepdims)],
               save=("inputs", "outputs"), family="np_linalg", hidden=True,
               doc="Matrix or vector norm (NumPy's ord values; ord as a string)."))
register(OpDef("_npi_norm_backward", _norm_backward, inputs=("g", "x", "norm"),
               params=[Param("ord", "str", None), Param("axis", "shape", None),
                       Param("keepdims", "bool", False)],
               nondiff=True, family="np_linalg", hidden=True,
               doc="Gradient of _npi_norm (once differentiable)."))


def _tensorinv(xp, p, a):
    outer, inner = a.shape[:p.ind], a.shape[p.ind:]
    n = int(np.prod(outer))
    if n != int(np.prod(inner)):
        raise GpundaError(f"Operator _npi_tensorinv: prod(a.shape[:ind]) = {n} must equal "
                          f"prod(a.shape[ind:]) = {int(np.prod(inner))}")
    return xp.linalg.inv(a.reshape(n, n)).reshape(inner + outer).astype(a.dtype)


def _g_tensorinv(F, p, i, o, g):
    a, ainv = i[0], o[0]
    n = int(np.prod(a.shape[:p.ind]))
    m = F._np_reshape(ainv, newshape=(n, n))
    gm = F._np_reshape(g[0], newshape=(n, n))
    mt = F._npi_transpose_last2(m)
    ga = -F._npi_matmul(F._npi_matmul(mt, gm), mt)
    return [F._np_reshape(ga, newshape=a.shape)]


register(OpDef("_npi_tensorinv", _tensorinv, inputs=("a",), params=[Param("ind", "int", 2)],
               gradient=_g_tensorinv, save=("inputs", "outputs"), family="np_linalg",
               hidden=True, doc="Inverse of a seen as a matrix over its first ind axes."))


def _x_shape(a, b):
    # NumPy's (and MXNet's) rule, -0 included: equal ndims give x the whole of a's shape
    return tuple(a.shape[-(a.ndim - b.ndim):])


def _tensorsolve(xp, p, a, b):
    xshape = _x_shape(a, b)
    n = int(np.prod(xshape))
    if n * n != a.size or n != b.size:
        raise GpundaError(f"Operator _npi_tensorsolve: a of shape {a.shape} is not square over "
                          f"b of shape {b.shape} (x would have shape {xshape})")
    x = xp.linalg.solve(a.reshape(n, n), b.reshape(n, 1))
    return x.reshape(xshape).astype(np.result_type(a.dtype, b.dtype))


def _g_tensorsolve(F, p, i, o, g):
    a, b = i
    x = o[0]
    m = int(np.prod(_x_shape(a, b)))
    am = F._np_reshape(a, newshape=(m, m))
    gb = F._npi_solve(F._npi_transpose_last2(am), F._np_reshape(g[0], newshape=(m,)))
    ga = -F._npi_einsum(gb, F._np_reshape(x, newshape=(m,)), subscripts="i,j->ij", num_args=2)
    return [F._np_reshape(ga, newshape=a.shape), F._np_reshape(gb, newshape=b.shape)]


register(OpDef("_npi_tensorsolve", _tensorsolve, inputs=("a", "b"), gradient=_g_tensorsolve,
               save=("inputs", "outputs"), family="np_linalg", hidden=True,
               doc="The x with tensordot(a, x, x.ndim) = b."))
