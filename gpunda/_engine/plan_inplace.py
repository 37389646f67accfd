"""In-place work of a training plan's backward on the CPU: gradient sums and the ReLU
rule written into arrays nothing else can see (NOTE [Gradients in place]).

NOTE [Gradients in place]
A plain backward makes a fresh array for every gradient sum (``g + gr`` where a value
has several readers: a residual block's input) and for every ReLU rule (``g * (x > 0)``).
Writing into one of the operands instead saves the allocation and a pass of cold
memory, but only where no one else holds that operand: a gradient rule may hand the
same array to two inputs (an addition's rule returns its output gradient twice), or a
view of a value the forward kept, or a head gradient the caller still holds.

Whether an array is held elsewhere is read from CPython's reference count, the test
NumPy itself makes before reusing a temporary: a NumPy array whose memory it owns (or
a view of one, the only view of that owner) referenced by no more than the caller's
own names cannot be seen by anything else once the caller drops it. The count of
references a call itself adds is measured at import (``_OWN``), so an interpreter that
borrows references on its stack reads the same. Used for NumPy arrays only (a CuPy
array's memory may be reached through its pool and streams).
"""
from __future__ import annotations

import sys

import numpy as np

__all__ = ["sole", "accumulate", "relu_grad"]

_getrefcount = sys.getrefcount
_ndarray = np.ndarray


def _count(a):
    return _getrefcount(a)


def _own_refs(a):
    """What ``sole`` counts for ``a``: the caller's names plus what the calls add."""
    return _count(a)


def _base_refs(a):
    """What ``sole`` counts for the owner of view ``a``."""
    b = a.base
    return _count(b)


# the references the calls themselves add, measured the way ``sole`` counts: an array
# held by one name of the caller, the owner of a view held by that view only
_OWN = _own_refs(np.ones(4)) - 0
_BASE = _base_refs(np.ones(4).reshape(2, 2)) - 1


def sole(a, names=1):
    """Whether NumPy array ``a`` is held by at most ``names`` references of the caller and
    by nothing else, memory included (NOTE [Gradients in place])."""
    if type(a) is not _ndarray or _count(a) - _OWN > names or not a.flags.writeable:
        return False
    b = a.base
    if b is None:
        return a.flags.owndata
    # a view of an owner that only this view holds
    return (type(b) is _ndarray and b.base is None and b.flags.owndata
            and _count(b) - _BASE <= 1)


def accumulate(xp, a, b):
    """``a + b`` (gradients of one value), into ``a`` or ``b`` where the caller holds the
    only reference to it (one name each: its list entry was cleared); IEEE addition
    commutes, so either order gives the same bits."""
    if xp is np and a.shape == b.shape and a.dtype == b.dtype:
        if sole(a, 2):
            return np.add(a, b, out=a)
        if sole(b, 2):
            return np.add(a, b, out=b)
    return a + b


def relu_grad(xp, y, og, scratch):
    """Activation(relu)'s rule ``og * (y > 0)``: into ``og`` where the caller holds the
    only reference to it (with the 0/1 mask in ``scratch``, a buffer the plan keeps per
    shape), else into the mask's own fresh array."""
    if xp is np and og.flags.c_contiguous and sole(og, 2):
        m = scratch(y.shape, og.dtype)
        np.greater(y, 0, out=m)
        return np.multiply(og, m, out=og)
    gr = xp.greater(y, 0, out=xp.empty(og.shape, og.dtype))
    return xp.multiply(og, gr, out=gr)
