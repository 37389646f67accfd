"""The one check behind MXNet's ``_random_helper`` of ``nd.random`` and ``sym.random``."""
from __future__ import annotations

from gpunda.base import GpundaAssertionError, GpundaValueError, numeric_types


def sampler_param_kind(params, array_cls):
    """``array_cls`` when every distribution parameter of ``params`` is one (the
    per-element sampler applies), ``numeric_types`` when every one is a number; MXNet's
    ValueError for anything else and its AssertionError for a mix."""
    kind = array_cls if isinstance(params[0], array_cls) else \
        numeric_types if isinstance(params[0], numeric_types) else None
    if kind is None:
        raise GpundaValueError(f"Distribution parameters must be either {array_cls.__name__} "
                               f"or numbers, but got {type(params[0])}.")
    for p in params[1:]:
        if not isinstance(p, kind):
            raise GpundaAssertionError(f"Distribution parameters must all have the same type, "
                                       f"but got both {type(params[0])} and {type(p)}.")
    return kind
