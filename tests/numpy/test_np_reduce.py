"""mx.np reductions against official NumPy (axis tuples, keepdims, ddof, dtypes)."""
import numpy as onp
import pytest

from gpunda import numpy as np
from _np_util import mxa, check_grad

X = onp.arange(24, dtype=onp.float64).reshape(2, 3, 4) / 7 + 0.3


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min", "std", "var", "all", "any"])
@pytest.mark.parametrize("axis", [None, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_matches_numpy(name, axis, keepdims):
    r = getattr(np, name)(mxa(X), axis=axis, keepdims=keepdims)
    e = getattr(onp, name)(X, axis=axis, keepdims=keepdims)
    assert r.shape == e.shape
    onp.testing.assert_allclose(r.asnumpy(), e, rtol=1e-6)


@pytest.mark.parametrize("name,kw", [("sum", dict(axis=(0, 2))), ("prod", dict(axis=1)),
                                     ("mean", dict(axis=-1, keepdims=True)), ("max", dict(axis=1)),
                                     ("min", dict()), ("std", dict(axis=2, ddof=1)),
                                     ("var", dict(axis=(1, 2))), ("cumsum", dict(axis=1)),
                                     ("cumsum", dict())])
def test_reduction_gradients(name, kw):
    check_grad(lambda x: getattr(np, name)(x, **kw), X[:, :, :2])


def test_dtypes_follow_mxnet():
    i8 = mxa(onp.arange(6, dtype=onp.int8))
    assert np.sum(i8).dtype == onp.int8        # NumPy would give int64
    assert np.mean(mxa(onp.arange(6, dtype=onp.int32))).dtype == onp.float32
    assert np.sum(mxa(onp.array([True, True, False]))).dtype == onp.int64
    assert float(np.sum(mxa(onp.array([True, True, False])))) == 2.0
    assert np.sum(i8, dtype="float64").dtype == onp.float64
    assert np.argmax(mxa(X)).dtype == onp.int64
    assert np.cumsum(mxa(onp.array([1, 2], dtype=onp.int32))).dtype == onp.int32


def test_argmax_argmin_cumsum_ptp():
    for name in ("argmax", "argmin"):
        for axis in (None, 0, 2, -1):
            onp.testing.assert_array_equal(getattr(np, name)(mxa(X), axis).asnumpy(),
                                           getattr(onp, name)(X, axis))
    # MXNet 1.9.1: mx.np.argmax(x, 1, keepdims=True) raises TypeError (no such argument)
    with pytest.raises(TypeError):
        np.argmax(mxa(X), 1, keepdims=True)
    onp.testing.assert_allclose(np.cumsum(mxa(X), axis=2).asnumpy(), onp.cumsum(X, axis=2))
    onp.testing.assert_allclose(np.cumsum(mxa(X)).asnumpy(), onp.cumsum(X))
    onp.testing.assert_allclose(np.ptp(mxa(X), axis=1).asnumpy(), onp.ptp(X, axis=1))
    assert int(np.count_nonzero(mxa(onp.array([0, 1, 2, 0])))) == 2


def test_errors():
    with pytest.raises(Exception, match="out of bounds"):
        np.sum(mxa(X), axis=3)
    with pytest.raises(Exception, match="zero-size"):
        np.max(mxa(onp.zeros((0, 2))), axis=0)


@pytest.mark.parametrize("itype,dtype", [("int8", "int8"), ("int32", "int8"), ("int64", "int32"),
                                         ("float32", "int32")])
@pytest.mark.parametrize("axis", [None, 0, (1, 2)])
def test_mean_with_an_integer_dtype_accumulates_in_it_as_numpy(itype, dtype, axis):
    x = onp.random.RandomState(3).uniform(-128, 127, (4, 3, 5)).astype(itype)
    r = np.mean(mxa(x), axis=axis, dtype=dtype)
    if itype == "float32":
        # MXNet sums floats in float64, truncates the sum to ``dtype``, then divides (C
        # integer division); NumPy would cast each element first
        s = onp.trunc(x.astype("float64").sum(axis=axis)).astype(dtype)
        n = x.size // s.size
        e = (onp.abs(s) // n * onp.sign(s)).astype(dtype)
    else:
        e = onp.mean(x, axis=axis, dtype=dtype)     # int8 sums wrap; the quotient truncates
    assert r.dtype == e.dtype
    onp.testing.assert_array_equal(r.asnumpy(), e)
