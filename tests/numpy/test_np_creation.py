"""mx.np creation functions against NumPy, with MXNet's float32 default."""
import numpy as onp
import pytest

import gpunda as mx
from gpunda import np, npx


@pytest.fixture(autouse=True)
def _np_mode():
    npx.set_np()
    yield
    npx.reset_np()


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("shape", [(), 0, (2, 0), 3, (2, 3)])
@pytest.mark.parametrize("dtype", [None, "int8", onp.float64, bool])
def test_filled_creation(fn, shape, dtype):
    r = getattr(np, fn)(shape, dtype=dtype) if dtype is not None else getattr(np, fn)(shape)
    want = getattr(onp, fn)(shape, dtype=onp.float32 if dtype is None else dtype)
    assert type(r) is np.ndarray and r.shape == want.shape and r.dtype == want.dtype
    assert r.ctx == mx.current_context()
    if fn != "empty":
        onp.testing.assert_array_equal(r.asnumpy(), want)


def test_order_f_is_not_implemented():
    for fn in (np.zeros, np.ones, np.empty):
        with pytest.raises(NotImplementedError):
            fn((2,), None if fn is not np.empty else onp.float32, "F")


def test_array_dtype_rules():
    assert np.array([]).shape == (0,) and np.array([]).dtype == onp.float32
    assert np.array([[1, 2], [3, 4]], dtype="int32").dtype == onp.int32
    assert np.array(onp.random.uniform(size=(3, 0, 4))).dtype == onp.float64
    assert np.array(2).dtype == onp.float32 and np.array(onp.float64(2)).dtype == onp.float64
    src = np.array([1, 2], dtype="int32")
    c = np.array(src)
    c[0] = 9
    assert src.asnumpy().tolist() == [1, 2]          # a copy


def test_full_and_like_functions():
    assert np.full((2,), 3).dtype == onp.float32
    assert np.full((2,), True).dtype == onp.bool_
    onp.testing.assert_array_equal(np.full((2, 2), np.array([1., 2.])).asnumpy(),
                                   onp.full((2, 2), [1., 2.]))
    a = np.array([1, 2], dtype="int32")
    for fn, want in ((np.zeros_like, 0), (np.ones_like, 1)):
        r = fn(a)
        assert r.dtype == onp.int32 and r.asnumpy().tolist() == [want, want]
    assert np.full_like(a, 7).asnumpy().tolist() == [7, 7]


def test_ranges_and_grids():
    onp.testing.assert_allclose(np.arange(5).asnumpy(), onp.arange(5))
    assert np.arange(5).dtype == onp.float32
    onp.testing.assert_allclose(np.arange(1, 2, 0.25).asnumpy(), onp.arange(1, 2, 0.25))
    onp.testing.assert_allclose(np.linspace(0, 1, 5).asnumpy(), onp.linspace(0, 1, 5))
    onp.testing.assert_allclose(np.linspace(0, 1, 4, endpoint=False).asnumpy(),
                                onp.linspace(0, 1, 4, endpoint=False))
    onp.testing.assert_allclose(np.logspace(0, 2, 3, base=2.0).asnumpy(),
                                onp.logspace(0, 2, 3, base=2.0), rtol=1e-6)
    onp.testing.assert_array_equal(np.eye(3, 4, 1).asnumpy(), onp.eye(3, 4, 1))
    onp.testing.assert_array_equal(np.identity(3, dtype="int32").asnumpy(), onp.identity(3))
    onp.testing.assert_array_equal(np.indices((2, 3)).asnumpy(), onp.indices((2, 3)))
    for indexing in ("xy", "ij"):
        got = np.meshgrid(np.arange(2), np.arange(3), indexing=indexing)
        want = onp.meshgrid(onp.arange(2), onp.arange(3), indexing=indexing)
        for g, w in zip(got, want):
            onp.testing.assert_array_equal(g.asnumpy(), w)


def test_constants_and_dtypes():
    assert np.pi == onp.pi and np.e == onp.e and np.newaxis is None
    assert onp.isnan(np.nan) and np.inf == onp.inf
    assert np.float32 is onp.float32 and np.bool_ is onp.bool_
