"""``mx.np`` reductions (ops in ops/numpy/reduce.py): sum, prod, mean, std, var, max/min,
argmax/argmin, all/any, cumsum, and the NaN-ignoring variants MXNet provides."""
from __future__ import annotations

from gpunda.numpy._helpers import to_tensor, invoke, axis_param
from gpunda.numpy import _fast

__all__ = ["sum", "prod", "product", "mean", "std", "var", "max", "min", "amax", "amin",
           "argmax", "argmin", "all", "any", "alltrue", "sometrue", "cumsum", "ptp",
           "count_nonzero"]


def _dt(dtype):
    return None if dtype is None else dtype


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Sum over ``axis`` (None: all; int or tuple). Ints keep their dtype, bool -> float32."""
    if where is not None:
        raise ValueError("sum: where is not supported (as in MXNet)")
    return invoke("_np_sum", [to_tensor(a)], out=out, axis=axis_param(axis), dtype=_dt(dtype),
                  keepdims=keepdims, initial=initial)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    """Product over ``axis``."""
    return invoke("_np_prod", [to_tensor(a)], out=out, axis=axis_param(axis), dtype=_dt(dtype),
                  keepdims=keepdims, initial=initial)


product = prod


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """Arithmetic mean over ``axis``; ints give float32."""
    return invoke("_npi_mean", [to_tensor(a)], out=out, axis=axis_param(axis),
                  dtype=_dt(dtype), keepdims=keepdims)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Standard deviation over ``axis`` with ``ddof`` delta degrees of freedom."""
    return invoke("_npi_std", [to_tensor(a)], out=out, axis=axis_param(axis), dtype=_dt(dtype),
                  ddof=ddof, keepdims=keepdims)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """Variance over ``axis`` with ``ddof``."""
    return invoke("_npi_var", [to_tensor(a)], out=out, axis=axis_param(axis), dtype=_dt(dtype),
                  ddof=ddof, keepdims=keepdims)


def max(a, axis=None, out=None, keepdims=False, initial=None):  # noqa: A001
    """Maximum over ``axis`` (ties share the gradient); ``initial`` other than None is
    refused, as MXNet 1.9.1's kernel refuses it."""
    return invoke("_np_max", [to_tensor(a)], out=out, axis=axis_param(axis), keepdims=keepdims,
                  initial=initial)


def min(a, axis=None, out=None, keepdims=False, initial=None):  # noqa: A001
    """Minimum over ``axis``; ``initial`` as for ``max``."""
    return invoke("_np_min", [to_tensor(a)], out=out, axis=axis_param(axis), keepdims=keepdims,
                  initial=initial)


amax, amin = max, min


# MXNet 1.9.1's np.argmax/argmin take no keepdims (passing one is a TypeError there)
def argmax(a, axis=None, out=None):
    """Index of the maximum (int64); over the flattened array when ``axis`` is None."""
    return invoke("_npi_argmax", [to_tensor(a)], out=out, axis=axis, keepdims=False)


def argmin(a, axis=None, out=None):
    """Index of the minimum (int64)."""
    return invoke("_npi_argmin", [to_tensor(a)], out=out, axis=axis, keepdims=False)


def all(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Whether every element along ``axis`` is true (bool)."""
    return invoke("_np_all", [to_tensor(a)], out=out, axis=axis_param(axis), keepdims=keepdims)


def any(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Whether any element along ``axis`` is true (bool)."""
    return invoke("_np_any", [to_tensor(a)], out=out, axis=axis_param(axis), keepdims=keepdims)


alltrue, sometrue = all, any


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (None: the flattened array)."""
    return invoke("_np_cumsum", [to_tensor(a)], out=out, axis=axis, dtype=_dt(dtype))


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (max - min) over ``axis``."""
    from gpunda.numpy._math import subtract
    return subtract(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims),
                    out=out)


def count_nonzero(a, axis=None):
    """Number of non-zero elements along ``axis`` (int64)."""
    from gpunda.numpy._math import not_equal
    return sum(not_equal(to_tensor(a), 0), axis=axis, dtype="int64")


# np.sum(a) & co. on one dense host array, default arguments: inline (NOTE [np fast paths])
sum = _fast.unary("_np_sum", sum)  # noqa: A001
prod = product = _fast.unary("_np_prod", prod)
mean = _fast.unary("_npi_mean", mean)
std = _fast.unary("_npi_std", std)
var = _fast.unary("_npi_var", var)
max = amax = _fast.unary("_np_max", max)  # noqa: A001
min = amin = _fast.unary("_np_min", min)  # noqa: A001
argmax = _fast.unary("_npi_argmax", argmax)
argmin = _fast.unary("_npi_argmin", argmin)
all = alltrue = _fast.unary("_np_all", all)  # noqa: A001
any = sometrue = _fast.unary("_np_any", any)  # noqa: A001
