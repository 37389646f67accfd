"""The backward ops MXNet registers for three contrib ops and exposes as public
``nd.contrib`` / ``sym.contrib`` functions: ``backward_gradientmultiplier``,
``backward_quadratic`` and ``backward_index_copy``. gpunda's own gradient rules for the
forward ops do not call them; they are here for code that calls them by name. Each is
linear in its output gradient, so each has a gradient of its own.
"""
from __future__ import annotations

from gpunda.ops.tensor.indexing import _index_rows
from gpunda.ops.registry import OpDef, Param, register

register(OpDef(
    "_contrib_backward_gradientmultiplier", lambda xp, p, g: g * g.dtype.type(p.scalar),
    inputs=("ograd",), params=[Param("scalar", "float", 1.0, "factor applied to the gradient")],
    gradient=lambda F, p, i, o, g: [g[0] * p.scalar], save=(), family="contrib",
    doc="gradientmultiplier's backward: the output gradient times scalar."))


def _quadratic_grad(xp, p, g, x):
    return (g * (x * (2.0 * p.a) + p.b)).astype(x.dtype, copy=False)


register(OpDef(
    "_contrib_backward_quadratic", _quadratic_grad, inputs=("ograd", "data"),
    params=[Param("a", "float", 0.0, "coefficient of x**2"),
            Param("b", "float", 0.0, "coefficient of x"),
            Param("c", "float", 0.0, "constant term")],
    gradient=lambda F, p, i, o, g: [
        g[0] * F._contrib_quadratic(i[1], a=0.0, b=2.0 * p.a, c=p.b),
        g[0] * i[0] * (2.0 * p.a)],
    save=("inputs",), family="contrib",
    doc="quadratic's backward: ograd * (2 * a * data + b)."))


def _index_copy_grad(xp, p, g, old, idx, new):
    rows = _index_rows(xp, idx, "_contrib_backward_index_copy")
    g_old = g.copy()
    g_old[rows] = 0
    return g_old, xp.zeros(idx.shape, idx.dtype), g[rows]


def _grad_index_copy_grad(F, p, ins, outs, og):
    # the adjoint of (zero the rows, gather the rows): scatter og2 into og0's zeroed rows
    g_old, g_new = og[0], og[2]
    if g_old is None:
        g_old = F.zeros_like(ins[1])
    if g_new is None:
        g_new = F.zeros_like(ins[3])
    return [F._contrib_index_copy(F._index_zero_rows(g_old, ins[2]), ins[2], g_new),
            None, None, None]


register(OpDef(
    "_contrib_backward_index_copy", _index_copy_grad,
    inputs=("ograd", "old_tensor", "index_vector", "new_tensor"), num_outputs=3,
    gradient=_grad_index_copy_grad, save=("inputs",), family="contrib",
    no_grad_inputs=("old_tensor", "index_vector", "new_tensor"),
    doc="index_copy's backward: (ograd with the indexed rows zeroed, zeros for the index, "
        "the indexed rows of ograd)."))
