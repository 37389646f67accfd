"""The ``mx.np`` functions MXNet 1.9.1 computes with official NumPy on the host
(``mxnet/numpy/fallback.py``): array arguments are copied to the host, NumPy runs, and
array results come back as ``mx.np.ndarray`` on the first input's context. As in MXNet
they have no gradient: calling one while autograd records raises ValueError."""
from __future__ import annotations

import functools

import numpy as _onp

from gpunda.ndarray.ndarray import NDArray
from gpunda.numpy._helpers import on_host, back_to

_NAMES = [
    "allclose", "apply_along_axis", "apply_over_axes", "argpartition", "argwhere",
    "array_equal", "array_equiv", "choose", "compress", "corrcoef", "correlate", "cov",
    "digitize", "extract", "flatnonzero", "frexp", "histogram2d", "histogram_bin_edges",
    "histogramdd", "i0", "in1d", "interp", "intersect1d", "isclose", "isin", "ix_", "lexsort",
    "min_scalar_type", "modf", "msort", "nanargmax", "nanargmin", "nancumprod", "nancumsum",
    "nanmax", "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd",
    "nansum", "nanvar", "partition", "piecewise", "packbits", "poly", "polyadd", "polydiv",
    "polyfit", "polyint", "polymul", "polysub", "promote_types", "real", "result_type",
    "roots", "searchsorted", "select", "setdiff1d", "setxor1d", "spacing", "trapz",
    "tril_indices_from", "trim_zeros", "triu_indices_from", "union1d", "unpackbits", "unwrap",
    "vander", "mirr", "npv", "pv", "ppmt", "rate",
]


#: MXNet's fallbacks to NumPy's financial functions, which NumPy 1.20 removed (NEP 32)
_NEP32 = frozenset({"mirr", "npv", "pv", "ppmt", "rate"})


def _first_ctx(args, kwargs):
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, NDArray):
            return v.context
        if isinstance(v, (list, tuple)):
            c = _first_ctx(v, {})
            if c is not None:
                return c
    return None


def _resolve(name):
    import warnings
    with warnings.catch_warnings():     # NumPy 1.2x warns on a name it removed (np.mirr)
        warnings.simplefilter("ignore", DeprecationWarning)
        f = getattr(_onp, name, None)
    if f is None:     # removed from NumPy 2 (financial functions, trapz, msort, in1d...)
        alt = {"trapz": "trapezoid", "in1d": "isin", "msort": None}.get(name)
        f = getattr(_onp, alt, None) if alt else None
    if f is None and name == "msort":
        f = lambda a: _onp.sort(a, axis=0)  # noqa: E731 (NumPy 1's msort)
    return f


def make_fallback(name, onp_func=None, where="mx.np"):
    """``where.name``: official NumPy's ``name`` on host copies of the array arguments."""
    f = onp_func or _resolve(name)

    def fallback(*args, **kwargs):
        from gpunda._engine import autograd
        if autograd.is_recording():
            raise ValueError(f"Falling back to NumPy operator {name} with autograd active is "
                             f"not supported. Please consider moving the operator to the "
                             f"outside of the autograd scope.")
        if f is None:
            if name in _NEP32:
                # what MXNet 1.9.1 raises on its NumPy 1.23 (whose stand-in raises it), on
                # every NumPy: the financial functions left NumPy in 1.20
                raise RuntimeError(f"In accordance with NEP 32, the function {name} was "
                                   f"removed from NumPy version 1.20.  A replacement for this "
                                   f"function is available in the numpy_financial library: "
                                   f"https://pypi.org/project/numpy-financial")
            from gpunda.base import NotImplementedForGpunda
            raise NotImplementedForGpunda(f"{where}.{name} is not supported: NumPy "
                                          f"{_onp.__version__} has no numpy.{name}")
        ctx = _first_ctx(args, kwargs)
        out = f(*[on_host(a) for a in args], **{k: on_host(v) for k, v in kwargs.items()})
        return back_to(out, ctx) if ctx is not None else out
    fallback.__name__ = fallback.__qualname__ = name
    fallback.__doc__ = (f"Official NumPy's ``{name}`` computed on the host (MXNet's fallback); "
                        f"array results come back on the input's context.")
    if f is not None:
        functools.update_wrapper(fallback, f, assigned=("__module__",), updated=())
        fallback.__module__ = __name__
    return fallback


__all__ = list(_NAMES)
for _n in _NAMES:
    globals()[_n] = make_fallback(_n)
