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

from ..base import GpundaError
from .registry import OpDef, Param, register
from .np_elemwise import np_result_type
from ._util import sum_to_shape

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
        if len(set(subs_in[k])) != len(subs_in[k]):
            raise GpundaError("einsum: the gradient of an operand with a repeated subscript "
                              f"({subs_in[k]!r}) is not supported yet")
        if any(c not in have for c in subs_in[k]):
            terms.append(subs_in[k])
            arrays.append(F.ones_like(x))
        gx = F._npi_einsum(*arrays, subscripts=",".join(terms) + "->" + subs_in[k],
                           num_args=len(arrays))
        grads.append(gx if gx.dtype == x.dtype else F.Cast(gx, dtype=x.dtype))
    return grads


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
