"""MXNet's legacy NDArray functions and graph-pass helper ops (src/ndarray/ndarray.cc,
src/nnvm/legacy_op_util.cc, src/operator/cross_device_copy.cc): ``_set_value``,
``_onehot_encode``, ``_CrossDeviceCopy`` and ``_NoGradient``.

``_set_value`` fills its ``out=`` array (the ``nd`` function passes that array's shape and
dtype, ndarray/__init__.py); ``_onehot_encode`` writes one-hot rows shaped like its second
input; ``_CrossDeviceCopy`` is the copy MXNet's graph places between devices (here an
identity copy with an identity gradient); ``_NoGradient`` marks a gradient MXNet cannot
compute and has no value.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register

_FAMILY = "ndarray_funcs"


def _set_value(xp, p, ctx):
    if any(d < 0 for d in p.shape):
        raise GpundaError(f"Operator _set_value: shape={p.shape} has a negative dimension")
    return xp.full(p.shape, p.src, dtype=p.dtype)


register(OpDef("_set_value", _set_value, inputs=(), wants_ctx=True, nondiff=True, hidden=True,
               params=[Param("src", "float", doc="the value"),
                       Param("shape", "shape", (), "the target's shape (nd: out's)"),
                       Param("ctx", "any", None), Param("dtype", "dtype", np.dtype("float32"))],
               family=_FAMILY, doc="Fill the target (out=) with src."))


def _onehot_encode(xp, p, lhs, rhs):
    if lhs.ndim != 1 or rhs.ndim != 2 or rhs.shape[0] != lhs.shape[0]:
        raise GpundaError(f"Operator _onehot_encode: needs 1-D indices of length n and a 2-D "
                          f"(n, depth) target; got shapes {lhs.shape} and {rhs.shape}")
    idx = lhs.astype(np.int64)
    return (idx[:, None] == xp.arange(rhs.shape[1])[None, :]).astype(rhs.dtype)


register(OpDef("_onehot_encode", _onehot_encode, inputs=("lhs", "rhs"), nondiff=True,
               save=(), hidden=True, family=_FAMILY,
               doc="One-hot rows of rhs's (n, depth) shape and dtype for the n indices in lhs "
                   "(MXNet's deprecated onehot_encode; one_hot is the op to use)."))

register(OpDef("_CrossDeviceCopy", lambda xp, p, x: x.copy(), inputs=("data",),
               gradient=lambda F, p, i, o, g: [g[0]], save=(), hidden=True, family=_FAMILY,
               doc="The copy MXNet's graph places where data crosses devices: a copy."))


def _no_gradient(xp, p):
    raise GpundaError("Operator _NoGradient: it is the placeholder MXNet puts where a "
                      "variable has no gradient; it has no value to compute")


register(OpDef("_NoGradient", _no_gradient, inputs=(), nondiff=True, save=(), hidden=True,
               family=_FAMILY, doc="Placeholder for a gradient that cannot be computed."))
