"""``mx.np.ndarray``: the NumPy-semantics array class, and the helpers every ``mx.np``
function uses to call registered ops.

NOTE [One array, two front ends]: ``ndarray`` subclasses ``NDArray`` and adds no slots,
so an op's output (an ``NDArray`` made by ``imperative.invoke``) becomes an ``ndarray``
by assigning ``__class__`` -- no copy, and the object keeps its autograd entry
(``_ag``), its version counter and its identity. ``as_nd_ndarray()`` /
``as_np_ndarray()`` make a second object over the same buffer. Every ``mx.np``
function is a thin wrapper: it calls a registered op (``_np_*``/``_npi_*`` OpDefs where
NumPy's semantics differ from MXNet's ``nd`` op) through ``invoke_np`` and so runs on the
same registry, Symbol, CachedOp and CuPy paths as ``nd``.
"""
from __future__ import annotations

from .. import imperative as _imp
from ..ndarray.ndarray import NDArray
from ..ndarray import ndarray as _nd_mod

__all__ = ["ndarray", "as_np", "invoke_np"]


class ndarray(NDArray):  # noqa: N801 (MXNet's class name)
    """An n-dimensional array with NumPy semantics (``mx.np.ndarray``)."""

    __slots__ = ()

    def as_nd_ndarray(self):
        """The same buffer as a classic ``NDArray`` (shares memory and autograd entry)."""
        return _view_as(self, NDArray)

    def as_np_ndarray(self):
        """This array (already an ``mx.np.ndarray``)."""
        return self


def _view_as(x, cls):
    y = _nd_mod._alloc(cls)
    y._data, y._ctx = x._data, x._ctx
    if x._ag is not None:
        y._ag = x._ag
    return y


def _nd_as_np_ndarray(self):
    """``NDArray.as_np_ndarray()``: the same buffer as an ``mx.np.ndarray``."""
    return _view_as(self, ndarray)


def as_np(out):
    """Turn op outputs (an NDArray or a list of them) into ``ndarray`` in place."""
    if isinstance(out, NDArray):
        if out.stype == "default":
            out.__class__ = ndarray
        return out
    for o in out:
        if isinstance(o, NDArray) and o.stype == "default":
            o.__class__ = ndarray
    return out


def invoke_np(opname, inputs, **params):
    """Call registered op ``opname`` on ``inputs`` and return ``ndarray`` outputs."""
    return as_np(_imp.invoke(opname, inputs, **params))
