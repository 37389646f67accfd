"""Ops whose MXNet 1.9.1 kernels have no bool case (MSHADOW_TYPE_SWITCH, not
..._WITH_BOOL): a bool input raises MXNetError ("Unknown type enum 7"; in MXNet the error
surfaces when the result is read). Each listed op's compute body is wrapped once, here, with
the check, so ops without the rule pay nothing. The list is what real MXNet 1.9.1 refused,
function by function, on bool arrays (``mx.np.flip(mx.np.ones((2, 3), dtype='bool'))
.asnumpy()`` raises); the unary math and binary ops check bool in their own bodies
(ops/numpy/elemwise.py, NOTE [np binary dtype checks]).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import get_op

_BOOL = np.dtype("bool")

NO_BOOL_OPS = (
    # mx.np
    "_np_diag", "_np_diagflat", "_np_diagonal", "_np_trace", "_npi_flip", "_npi_argmax",
    "_npi_argmin", "_npi_argsort", "_npi_sort", "_np_roll", "_npi_tril", "_np_transpose",
    "_npi_swapaxes", "_np_moveaxis", "_npi_rot90", "_npi_unique", "_np_dot", "_npi_matmul",
    "_npi_tensordot", "_npi_tensordot_int_axes", "_npi_delete", "_npi_diff", "_npi_bincount",
    "_npi_average", "_npi_percentile", "_npi_split", "_npi_svd",
    # contrib / image
    "_contrib_div_sqrt_dim", "_contrib_quadratic", "_contrib_arange_like",
    "_contrib_index_copy", "_image_flip_top_bottom", "_image_flip_left_right",
    "_image_to_tensor", "_image_crop",
)


# ops refusing further dtypes besides bool (mx.np.sort(mx.np.ones(4, dtype='float16'))
# .asnumpy() -> MXNetError: the CPU sort kernel has no half-precision case)
# mx.np.matmul / dot / tensordot / linalg.svd of integer arrays -> MXNetError (BLAS and LAPACK
# kernels over floating types only)
_INTS = ("uint8", "int8", "int32", "int64")
EXTRA_REFUSED = {"_npi_sort": ("float16",), "_npi_argsort": ("float16",),
                 "_npi_matmul": _INTS, "_np_dot": _INTS, "_npi_tensordot": _INTS,
                 "_npi_tensordot_int_axes": _INTS, "_npi_svd": _INTS}


def _refusing_bool(name, compute):
    refused = (_BOOL,) + tuple(np.dtype(d) for d in EXTRA_REFUSED.get(name, ()))

    def compute_no_bool(xp, p, *ins, **kw):
        for x in ins:
            if getattr(x, "dtype", None) in refused:
                # a kernel whose output is empty returns before its type switch
                r = compute(xp, p, *ins, **kw)
                outs = r if isinstance(r, (tuple, list)) else (r,)
                if all(getattr(o, "size", 1) == 0 for o in outs):
                    return r
                raise GpundaError(f"Operator {name}: input dtype {x.dtype.name} is not "
                                  f"supported (MXNet's kernel has no case for it: Unknown "
                                  f"type enum)")
        return compute(xp, p, *ins, **kw)
    compute_no_bool.__wrapped__ = compute
    compute_no_bool.refuses_bool = True
    compute_no_bool.__name__ = getattr(compute, "__name__", "compute")
    compute_no_bool.__doc__ = getattr(compute, "__doc__", None)
    return compute_no_bool


def apply():
    """Wrap the compute bodies of ``NO_BOOL_OPS`` (idempotent)."""
    for name in NO_BOOL_OPS:
        op = get_op(name)
        if not getattr(op.compute, "refuses_bool", False):
            op.compute = _refusing_bool(name, op.compute)


apply()
