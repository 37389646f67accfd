"""MXNet's ``_npi_*`` ops without their prefix (``F.np._internal.boolean_mask_assign_scalar``
is ``_npi_boolean_mask_assign_scalar``), as ``mx.nd.np._internal`` and ``mx.sym.np._internal``.

One function per registered ``_npi_`` op, made on first use and called as MXNet's generated
functions are (``_helpers.call_op``): ``ndarray`` results for arrays, np Symbols in a graph
(``mx.sym.np._internal`` runs them in ``symbolic_scope()``).
"""
from __future__ import annotations

from gpunda.ops.registry import all_names
from gpunda.numpy._helpers import call_op

_PREFIX = "_npi_"


def _make(name, opname):
    def fn(*args, **kwargs):
        return call_op(opname, args, kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = f"The registered op ``{opname}`` (MXNet's ``_npi`` namespace)."
    return fn


def __getattr__(name):
    opname = _PREFIX + name
    if name.startswith("__") or opname not in all_names():
        raise AttributeError(f"module 'mxnet.ndarray.numpy._internal' has no attribute "
                             f"{name!r} (no registered op {opname})")
    fn = globals()[name] = _make(name, opname)
    return fn


def __dir__():
    return sorted(n[len(_PREFIX):] for n in all_names() if n.startswith(_PREFIX))


def Custom(*args, **kwargs):  # noqa: N802 -- MXNet's op name
    """The ``Custom`` op (a registered ``mx.operator`` type, ``op_type=``) with NumPy-flavoured
    results, as MXNet's ``_npi.Custom``; ``numpy_op_fallback`` registers its ops over it."""
    return call_op("Custom", args, kwargs)


import sys as _sys  # noqa: E402
from gpunda.ops import backward_names as _backward_names  # noqa: E402
_backward_names.add_np_stubs(_sys.modules[__name__], "mxnet.ndarray.numpy._internal")  # say why not
