"""Small helpers shared by the op families (not ops themselves)."""
from __future__ import annotations

import numpy as np

from ..base import GpundaError


def special(xp):
    """scipy.special or cupyx.scipy.special for array module ``xp``."""
    if xp is np:
        import scipy.special as sps
        return sps
    import cupyx.scipy.special as cps
    return cps


def scalar_for(x, s):
    """Scalar ``s`` in the dtype MXNet would use with array ``x`` (its own dtype)."""
    k = x.dtype.kind
    if k == "f" or k == "c":
        return s
    return x.dtype.type(s)


def norm_axis(axis, ndim, where, name="axis"):
    """Normalise a possibly negative axis; GpundaError when out of range."""
    if not -ndim <= axis < max(ndim, 1):
        raise GpundaError(f"Operator {where}: {name}={axis} is out of range for an array "
                          f"with {ndim} dimension(s)")
    return axis % ndim if ndim else 0


def norm_axes(axis, ndim, where, exclude=False):
    """A sorted tuple of reduction axes from MXNet's axis/exclude params."""
    if axis is None or axis == ():
        axes = tuple(range(ndim))
        return tuple() if exclude and axis == () else axes
    if isinstance(axis, int):
        axis = (axis,)
    axes = tuple(sorted(set(norm_axis(a, ndim, where) for a in axis)))
    if exclude:
        axes = tuple(a for a in range(ndim) if a not in axes)
    return axes


def legacy_scalar(xp, r):
    """MXNet 1.x's legacy shape mode has no 0-d arrays: a 0-d result becomes shape (1,)."""
    if getattr(r, "ndim", 1) == 0:
        from ..util import is_np_shape
        if not is_np_shape():
            return xp.reshape(xp.asarray(r), (1,))
        return xp.asarray(r)
    return r


def sum_to_shape(F, g, shape):
    """Sum ``g`` over broadcast axes so it has ``shape`` (gradient of broadcasting)."""
    gs = g.shape
    if gs == shape or tuple(gs) == tuple(shape):
        return g
    return F._sum_to(g, shape=shape)
