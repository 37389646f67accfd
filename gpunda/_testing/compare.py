"""Tolerances and array comparison (MXNet's ``assert_almost_equal`` family).

Default tolerances are MXNet 1.9.1's numbers, per dtype; the looser of the two
operands' defaults applies. NDArrays (any storage type), CuPy arrays, NumPy
arrays and Python numbers are all accepted and compared on the host.
"""
from __future__ import annotations

import json
import numbers
import os

import numpy as np

__all__ = ["default_rtols", "default_atols", "default_numeric_eps", "effective_dtype",
           "get_tolerance", "get_tols", "get_atol", "get_rtol", "get_etol", "same",
           "checkShapes", "almost_equal", "locationError", "assert_almost_equal",
           "assert_allclose", "assert_almost_equal_with_err", "assert_almost_equal_ignore_nan",
           "assert_exception", "compare_ndarray_tuple", "same_array", "same_symbol_structure"]

_EXACT = (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64)


def default_rtols():
    """Relative tolerance per dtype: float16 1e-2, float32 1e-4, float64 1e-5, integers 0."""
    tols = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
    tols.update((np.dtype(t), 0) for t in _EXACT)
    return tols


def default_atols():
    """Absolute tolerance per dtype: float16 1e-1, float32 1e-3, float64 1e-20, integers 0."""
    tols = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}
    tols.update((np.dtype(t), 0) for t in _EXACT)
    return tols


def default_numeric_eps():
    """Finite-difference step per dtype; powers of two, so adding them drops no bits."""
    return {np.dtype(np.float16): 1.0 / 2 ** 6, np.dtype(np.float32): 1.0 / 2 ** 9,
            np.dtype(np.float64): 1.0 / 2 ** 14}


def _tf32_active(ctx):
    """Whether float32 GEMMs on ``ctx`` run in TF32 (then they are only float16-accurate).

    CuPy uses TF32 only when ``CUPY_TF32=1``, and only on compute capability 8.0+.
    """
    if ctx is None or getattr(ctx, "device_type", None) != "gpu":
        return False
    if os.environ.get("CUPY_TF32", "0") != "1" or os.environ.get("NVIDIA_TF32_OVERRIDE") == "0":
        return False
    try:
        from gpunda._testing.environ import get_cuda_compute_capability
        return get_cuda_compute_capability(ctx) >= 80
    except Exception:     # no driver or no such device: then no TF32 either
        return False


def effective_dtype(dat):
    """The dtype whose tolerances apply to ``dat``: its own, or float16 for TF32 float32."""
    dtype = np.dtype(dat.dtype)
    if dtype == np.float32 and _tf32_active(getattr(dat, "ctx", None)):
        return np.dtype(np.float16)
    return dtype


def get_tolerance(dat, tol, default_tol):
    """``tol`` if it is a number, else its entry (or ``default_tol``'s) for ``dat``'s dtype."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    # keys may be dtypes or scalar types (np.float32): compare them as dtypes
    tol = {} if tol is None else {np.dtype(k): v for k, v in tol.items()}
    if dtype in tol:
        return tol[dtype]
    if dtype not in default_tol:
        raise KeyError(f"get_tolerance: no default tolerance for dtype {dtype}; pass rtol/atol")
    return default_tol[dtype]


def _with_dtype(x):
    if hasattr(x, "dtype"):
        return x
    return np.asarray(x)


def get_tols(x, y, rtol, atol):
    """(rtol, atol) for comparing ``x`` with ``y``: the larger default of the two, unless given."""
    x, y = _with_dtype(x), _with_dtype(y)
    rtol = max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols()))
    atol = max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols()))
    return rtol, atol


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    """``atol``, or the default absolute tolerance of ``dtype`` (float64: 1e-20)."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    """``rtol``, or the default relative tolerance of ``dtype`` (float64: 1e-5)."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol=None):
    """``etol``, or 0: the fraction of elements allowed to mismatch."""
    return 0 if etol is None else etol


def as_host(x):
    """A NumPy array holding the values of an NDArray, a CuPy array, a number or a sequence."""
    from gpunda.ndarray.ndarray import NDArray
    if isinstance(x, NDArray):
        return x.asnumpy()
    if hasattr(x, "__cuda_array_interface__"):
        from gpunda.ndarray.ndarray import _cuda_to_host
        return _cuda_to_host(x)
    return np.asarray(x)


def same(a, b):
    """Whether ``a`` and ``b`` have the same shape and exactly the same values."""
    return bool(np.array_equal(as_host(a), as_host(b)))


def checkShapes(a, b):
    """Raise ``AssertionError`` unless ``a`` and ``b`` have the same shape."""
    if tuple(a.shape) != tuple(b.shape):
        raise AssertionError(np.testing.build_err_msg(
            [as_host(a), as_host(b)],
            err_msg=f"a.shape = {tuple(a.shape)} and b.shape = {tuple(b.shape)} are not equal"))


def _resolve(a, b, rtol, atol):
    """almost_equal's tolerances: numbers as given, None as float64's, dicts per dtype."""
    r = get_rtol(rtol) if rtol is None or isinstance(rtol, numbers.Number) else \
        get_tols(a, b, rtol, 0)[0]
    t = get_atol(atol) if atol is None or isinstance(atol, numbers.Number) else \
        get_tols(a, b, 0, atol)[1]
    return r, t


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether ``|a - b| <= atol + rtol * |b|`` everywhere.

    Unlike ``assert_almost_equal``, omitted tolerances are float64's (rtol 1e-5,
    atol 1e-20) whatever the dtypes. ``use_broadcast=False`` requires equal
    shapes (``AssertionError`` otherwise); shapes that do not broadcast raise
    NumPy's ``ValueError``.
    """
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = _resolve(a, b, rtol, atol)
    return bool(np.allclose(as_host(a), as_host(b), rtol=rtol, atol=atol, equal_nan=equal_nan))


def locationError(a, b, index, names, maxError=False):
    """"Location of [maximum ]error: <index>, <name a>=<a[index]>, <name b>=<b[index]>"."""
    index = tuple(int(i) for i in index)
    kind = "maximum " if maxError else ""
    return (f"Location of {kind}error: {index}, {names[0]}={float(a[index]):.8f}, "
            f"{names[1]}={float(b[index]):.8f}")


def _violations(a, b, rtol, atol):
    """|a - b| / (atol + rtol |b|) in float64, 0 where equal (so inf == inf), NaN kept."""
    a = a.astype(np.float64) if a.dtype.kind in "biu" else a
    b = b.astype(np.float64) if b.dtype.kind in "biu" else b
    with np.errstate(invalid="ignore"):
        diff = np.where(np.equal(a, b), 0, np.abs(a - b))
        return diff / (atol + rtol * np.abs(b) + 1e-20)


def _find_max_violation(a, b, rtol, atol):
    """``(index, value)`` of the largest ``|a - b| / (atol + rtol |b|)`` (equal entries,
    infinities included, count 0), as MXNet's helper of the same name."""
    viol = _violations(np.asarray(a), np.asarray(b), rtol, atol)
    return np.unravel_index(np.argmax(viol), viol.shape), np.max(viol)


def _mismatch_error(a, b, rtol, atol, names, mismatches, bad):
    """The AssertionError for ``a`` vs ``b`` (broadcast NumPy arrays) where ``bad`` is True.

    Prints the ``mismatches[0]`` largest violations and reports the mismatched
    fraction, counting at most ``mismatches[1]`` (then "at least").
    """
    a, b = np.broadcast_arrays(a, b)
    viol = _violations(a, b, rtol, atol)
    flat_bad = np.flatnonzero(bad)
    order = flat_bad[np.argsort(-np.where(np.isnan(viol.ravel()[flat_bad]), np.inf,
                                          viol.ravel()[flat_bad]), kind="stable")]
    shown, counted = mismatches
    if order.size:
        top = np.unravel_index(order[0], a.shape)
        print(f"\n*** Maximum errors for vector of size {a.size}:  rtol={rtol}, atol={atol}\n")
        for k, flat in enumerate(order[:max(shown, 0)]):
            idx = np.unravel_index(flat, a.shape)
            print(f"{k + 1:3d}: Error {viol[idx]:f}  {locationError(a, b, idx, names)}")
        n = order.size
        degree = ""
        if counted > 0 and n > counted:
            n, degree = counted + 1, "at least "
        msg = (f"Error {viol[top]:f} exceeds tolerance rtol={rtol:e}, atol={atol:e} "
               f"(mismatch {degree}{100.0 * n / a.size:f}%).\n"
               f"{locationError(a, b, top, names, maxError=True)}")
    else:
        msg = f"Error exceeds tolerance rtol={rtol:e}, atol={atol:e}.\n"
    with np.printoptions(threshold=4, suppress=True):
        return AssertionError(np.testing.build_err_msg([a, b], err_msg=msg))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raise ``AssertionError`` unless ``|a - b| <= atol + rtol * |b|`` everywhere.

    Args:
        a, b: NDArrays, NumPy/CuPy arrays or numbers.
        rtol, atol: a number, a dict ``{dtype: tol}``, or None for the default of
            each operand's dtype (the larger of the two applies).
        names: what the message calls ``a`` and ``b``.
        equal_nan: NaN equals NaN.
        use_broadcast: with False, the shapes must be equal.
        mismatches: (how many mismatches to print, how many to count at most).

    Boolean arrays must be equal exactly. The message gives the largest
    violation, its location and values, and the mismatched fraction.

    >>> assert_almost_equal(nd.array([1.0, 2.0]), np.array([1.0, 2.0001]))
    """
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = as_host(a), as_host(b)
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        np.testing.assert_equal(a, b)
        return
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if close.all():
        return
    raise _mismatch_error(a, b, rtol, atol, names, mismatches, ~close)


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    """``assert_almost_equal`` with NumPy's ``assert_allclose`` defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan=False, mismatches=(10, 10)):
    """Like ``assert_almost_equal``, but passes while at most a fraction ``etol`` mismatches.

    With ``etol`` None or 0 it is ``assert_almost_equal``.
    """
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan,
                            mismatches=mismatches)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = as_host(a), as_host(b)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    err_rate = 1.0 - np.count_nonzero(close) / close.size if close.size else 0.0
    if err_rate > etol:
        raise _mismatch_error(a, b, rtol, atol, names, mismatches, ~close)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """``assert_almost_equal`` that skips every position where either side is NaN."""
    a, b = np.array(as_host(a)), np.array(as_host(b))
    nan = np.isnan(a) | np.isnan(b)
    a, b = np.broadcast_arrays(a, b)
    a, b, nan = a.copy(), b.copy(), np.broadcast_to(nan, a.shape)
    a[nan] = 0
    b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """Check that ``f(*args, **kwargs)`` raises ``exception_type``; returns the exception."""
    try:
        f(*args, **kwargs)
    except exception_type as e:
        return e
    raise AssertionError(f"{getattr(f, '__name__', f)!s} did not raise "
                         f"{getattr(exception_type, '__name__', exception_type)}")


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """``assert_almost_equal`` on two arrays or (nested) tuples of arrays; None skips."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def same_array(array1, array2):
    """Whether two NDArrays share memory: a change made through one shows in the other.

    ``array1`` is incremented and decremented again in place.
    """
    array1[:] += 1
    shared = same(array1.asnumpy(), array2.asnumpy())
    array1[:] -= 1
    return shared and same(array1.asnumpy(), array2.asnumpy())


def same_symbol_structure(sym1, sym2):
    """Whether two Symbols have the same number of nodes and the same op at each node."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return len(nodes1) == len(nodes2) and all(n1["op"] == n2["op"]
                                              for n1, n2 in zip(nodes1, nodes2))
