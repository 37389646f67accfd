"""``mx.np`` sorting and searching ops: sort, argsort, unique, nonzero."""
from __future__ import annotations

import numpy as np

from gpunda.ops.registry import OpDef, Param, register, get_op

_I64 = np.dtype("int64")


def _axis(p, x):
    return -1 if p.axis is None else p.axis


def _sort(xp, p, a):
    if a.ndim == 0:
        return a.reshape(1) if p.axis is None else a.copy()
    src = a.reshape(-1) if p.axis is None else a
    r = xp.sort(src, axis=-1 if p.axis is None else p.axis)
    if p.descending:
        r = xp.flip(r, axis=-1 if p.axis is None else p.axis)
    return xp.ascontiguousarray(r)


def _g_sort(F, p, i, o, g):
    x = i[0]
    if x.ndim == 0:
        return [F._np_reshape(g[0], newshape=())]
    if p.axis is None:
        x = F._np_reshape(x, newshape=(-1,))
    ax = -1 if p.axis is None else p.axis
    idx = F._npi_argsort(x, axis=ax, descending=p.descending)
    take = get_op("_npi_take_along_axis").parse_params({"axis": ax})
    gx = F._npi_index_grad(g[0], x, idx, op="_npi_take_along_axis", p=take, nout=1, nres=2)[0]
    return [F._np_reshape(gx, newshape=i[0].shape)]


# axis None (flatten) is the default: a Symbol node drops params set to None
_SORT = [Param("axis", "int", None), Param("descending", "bool", False)]
register(OpDef("_npi_sort", _sort, inputs=("a",), params=_SORT, gradient=_g_sort,
               save=("inputs",), family="np_sort", hidden=True,
               doc="Sorted copy along ``axis`` (None: flattened), stable."))


def _argsort(xp, p, a):
    if a.ndim == 0:
        return xp.zeros((1,) if p.axis is None else (), dtype=p.dtype)
    src = a.reshape(-1) if p.axis is None else a
    ax = -1 if p.axis is None else p.axis
    if p.descending:
        r = xp.flip(xp.argsort(xp.flip(src, axis=ax), axis=ax, kind="stable"), axis=ax)
        r = src.shape[ax] - 1 - r
    else:
        r = xp.argsort(src, axis=ax, kind="stable")
    return xp.ascontiguousarray(r).astype(p.dtype)


register(OpDef("_npi_argsort", _argsort, inputs=("a",),
               params=_SORT + [Param("dtype", "dtype", _I64)], nondiff=True,
               family="np_sort", hidden=True, doc="Indices that sort ``a`` along ``axis``."))


def _unique_count(p):
    return 1 + int(p.return_index) + int(p.return_inverse) + int(p.return_counts)


def _unique(xp, p, a):
    host = a.get() if hasattr(a, "get") else a
    r = np.unique(host, return_index=p.return_index, return_inverse=p.return_inverse,
                  return_counts=p.return_counts, axis=p.axis)
    r = r if isinstance(r, tuple) else (r,)
    out = [xp.asarray(r[0])]
    for extra in r[1:]:
        # NumPy 2 gives the inverse the input's shape; MXNet (NumPy 1.x) keeps it flat
        out.append(xp.asarray(np.asarray(extra, dtype=_I64).reshape(-1)))
    return out if len(out) > 1 else out[0]


register(OpDef("_npi_unique", _unique, inputs=("a",),
               params=[Param("return_index", "bool", False), Param("return_inverse", "bool", False),
                       Param("return_counts", "bool", False), Param("axis", "int", None)],
               num_outputs=_unique_count, nondiff=True, family="np_sort", hidden=True,
               capture="output size depends on the data",
               doc="Sorted unique elements (and first indices, inverse, counts)."))


def _nonzero(xp, p, a):
    if a.ndim == 0:
        a = a.reshape(1)
    return xp.ascontiguousarray(xp.stack(xp.nonzero(a), axis=-1).astype(_I64))


# one op under both names, as MXNet registers it: a 0-d array counts as a 1-element one
register(OpDef("_npi_nonzero", _nonzero, inputs=("x",), nondiff=True, family="np_sort",
               aliases=("_npx_nonzero",),
               hidden=True, capture="output size depends on the data",
               doc="Indices of the non-zero elements, one row per element (N, ndim)."))
