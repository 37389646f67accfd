"""``mx.np`` creation ops with no array inputs, under MXNet's ``_npi_*`` names, so np-mode
graphs (``F.np.zeros`` in a hybridized block) build, save and load as MXNet's do.

``_npi_zeros``/``_npi_ones``/``_npi_full``/``_npi_identity``/``_npi_eye``/``_npi_arange``
share their computes with the ``nd`` creation ops (ops/tensor/creation.py); the others are
NumPy's ``linspace``, ``logspace`` and ``indices``.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register
from gpunda.ops.tensor.creation import np_arange

_CTX = [Param("ctx", "any", None, "device; the current one when None"),
        Param("dtype", "dtype", np.dtype("float32"))]


def _shape(name, shape):
    if any(d < 0 for d in shape):
        raise GpundaError(f"Operator {name}: shape={shape} has a negative dimension")
    return shape


def _creation(name, compute, params, doc):
    register(OpDef(name, compute, inputs=(), wants_ctx=True, nondiff=True, hidden=True,
                   params=params + _CTX, doc=doc, family="np_creation"))


_creation("_npi_zeros", lambda xp, p, ctx: xp.zeros(_shape("_npi_zeros", p.shape), p.dtype),
          [Param("shape", "shape", ())], "Zeros of `shape` (NumPy's zeros).")
_creation("_npi_ones", lambda xp, p, ctx: xp.ones(_shape("_npi_ones", p.shape), p.dtype),
          [Param("shape", "shape", ())], "Ones of `shape` (NumPy's ones).")
_creation("_npi_full",
          lambda xp, p, ctx: xp.full(_shape("_npi_full", p.shape), p.value, p.dtype),
          [Param("shape", "shape", ()), Param("value", "float", 0.0)],
          "`shape` filled with `value` (NumPy's full).")
_creation("_npi_identity", lambda xp, p, ctx: xp.identity(p.shape[0], p.dtype),
          [Param("shape", "shape", ())], "The (n, n) identity; shape is (n, n).")
_creation("_npi_eye", lambda xp, p, ctx: xp.eye(p.N, p.N if p.M is None else p.M, p.k,
                                                dtype=p.dtype),
          [Param("N", "int"), Param("M", "int", None), Param("k", "int", 0)],
          "N x M with ones on diagonal k (NumPy's eye).")
_creation("_npi_arange", np_arange,
          [Param("start", "float", 0.0), Param("stop", "float", None),
           Param("step", "float", 1.0), Param("repeat", "int", 1),
           Param("infer_range", "bool", False)],
          "Evenly spaced values in [start, stop) (NumPy's arange).")


def _linspace(xp, p, ctx):
    if p.num < 0:
        raise GpundaError(f"Operator _npi_linspace: num={p.num} must be non-negative")
    r = xp.linspace(p.start, p.stop, p.num, endpoint=p.endpoint, dtype=np.float64)
    return r.astype(p.dtype)


def _logspace(xp, p, ctx):
    if p.num < 0:
        raise GpundaError(f"Operator _npi_logspace: num={p.num} must be non-negative")
    r = xp.logspace(p.start, p.stop, p.num, endpoint=p.endpoint, base=p.base, dtype=np.float64)
    return r.astype(p.dtype)


_SPACE = [Param("start", "float"), Param("stop", "float"), Param("num", "int", 50),
          Param("endpoint", "bool", True)]
_creation("_npi_linspace", _linspace, list(_SPACE), "`num` evenly spaced values (linspace).")
_creation("_npi_logspace", _logspace, list(_SPACE) + [Param("base", "float", 10.0)],
          "`num` values evenly spaced on a log scale (logspace).")
_creation("_npi_indices",
          lambda xp, p, ctx: xp.indices(_shape("_npi_indices", p.dimensions), dtype=p.dtype),
          [Param("dimensions", "shape")], "A grid of indices (NumPy's indices).")


def _full_like(xp, p, a):
    dt = a.dtype if p.dtype is None else p.dtype
    return xp.full(a.shape, p.fill_value, dtype=dt)


register(OpDef("_npi_full_like", _full_like, inputs=("a",),
               params=[Param("fill_value", "float"),
                       Param("ctx", "any", None, "accepted; the result is on a's device"),
                       Param("dtype", "dtype", None, "a's dtype when None")],
               gradient=lambda F, p, i, o, g: [F.zeros_like(i[0])], save=("inputs",),
               hidden=True, family="np_creation",
               doc="An array of a's shape (and dtype, unless given) filled with fill_value "
                   "(NumPy's full_like); zero gradient, as MXNet's."))
