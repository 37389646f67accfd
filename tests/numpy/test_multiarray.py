"""mx.np.ndarray: NumPy semantics over gpunda's registry, checked against NumPy and MXNet
1.9.1's documented/observed results."""
import pickle

import numpy as onp
import pytest

import gpunda as mx
from gpunda import np, npx, autograd


@pytest.fixture(autouse=True)
def _np_mode():
    npx.set_np()
    yield
    npx.reset_np()


def test_operator_results_are_ndarray_with_numpy_values():
    a_h = onp.array([[1., 2., 3.], [4., 5., 6.]], dtype=onp.float32)
    b_h = onp.array([[2.], [3.]], dtype=onp.float32)
    a, b = np.array(a_h), np.array(b_h)
    for f in (lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y,
              lambda x, y: x / y, lambda x, y: x ** y, lambda x, y: x % y,
              lambda x, y: 2 - x, lambda x, y: 3 / x, lambda x, y: x // 2):
        r = f(a, b)
        assert type(r) is np.ndarray
        onp.testing.assert_allclose(r.asnumpy(), f(a_h, b_h), rtol=1e-6)
    assert type(-a) is np.ndarray and (-a).asnumpy().tolist() == (-a_h).tolist()


def test_type_promotion_follows_mxnet():
    i32 = np.array([1, 2], dtype="int32")
    assert (i32 / i32).dtype == onp.float32            # int / int: float32, not float64
    assert (i32 + np.array([1.], dtype="float64")).dtype == onp.float64
    assert (i32 + np.array([1, 2], dtype="int64")).dtype == onp.int64
    assert (i32 + 1.5).dtype == onp.int32              # a Python scalar keeps the dtype
    assert (i32 + 1.5).asnumpy().tolist() == [2, 3]
    assert np.array([1, 2]).dtype == onp.float32       # lists default to float32
    assert np.array(onp.array([1, 2])).dtype == onp.int64


def test_comparisons_give_bool_and_broadcast():
    a = np.array([1., 2., 3.])
    assert (a > 1.5).dtype == onp.bool_
    assert (a == np.array([[1.], [3.]])).asnumpy().tolist() == \
        [[True, False, False], [False, False, True]]
    assert (2 < a).asnumpy().tolist() == [False, False, True]


def test_comparison_backward_gives_zeros():
    x = np.array([1., 2., 3.])
    x.attach_grad()
    with autograd.record():
        y = x > 1.5
    y.backward()
    assert x.grad.asnumpy().tolist() == [0., 0., 0.]


def test_repr_and_str_as_mxnet():
    # a CPU array prints no context (MXNet 1.9.1 numpy/multiarray.py __repr__/__str__)
    with mx.cpu(0):
        assert repr(np.array([1., 2.])) == "array([1., 2.])"
        assert repr(np.array(3)) == "array(3.)"
        assert repr(np.array([[1, 2], [3, 4]], dtype="int32")) == \
            "array([[1, 2],\n       [3, 4]], dtype=int32)"
        assert repr(np.array([1, 2], dtype="float64")) == "array([1., 2.], dtype=float64)"
        assert str(np.array([1., 2.])) == "[1. 2.]"
        assert "{:0.3g}".format(np.array(onp.pi)) == "3.14"
        with pytest.raises(TypeError):
            "{:30}".format(np.array([1.]))


def test_repr_and_str_name_a_gpu_context_as_mxnet(fake_gpu):
    # MXNet 1.9.1 appends ", ctx=gpu(N)" to repr and " @gpu(N)" to str off the CPU
    # (its docstring's examples); a 0-d array's str has no context
    assert repr(np.array([1., 2.], ctx=fake_gpu)) == "array([1., 2.], ctx=gpu(7))"
    assert repr(np.array([1, 2], dtype="float64", ctx=fake_gpu)) == \
        "array([1., 2.], dtype=float64, ctx=gpu(7))"
    assert str(np.array([1., 2.], ctx=fake_gpu)) == "[1. 2.] @gpu(7)"
    assert str(np.array(3., ctx=fake_gpu)) == "3.0"


def test_zero_dim_arrays_and_python_scalars():
    a = np.array([[1., 2.], [3., 4.]])
    e = a[1, 0]
    assert type(e) is np.ndarray and e.shape == () and float(e) == 3.0
    assert a.sum().shape == ()
    with pytest.raises(TypeError):
        len(e)
    with pytest.raises(ValueError):
        bool(a)


def test_basic_index_is_a_view_advanced_index_a_copy():
    a = np.arange(12).reshape(3, 4)
    v = a[1]
    v[:] = 0
    assert a.asnumpy()[1].tolist() == [0, 0, 0, 0]
    c = a[[0, 2]]
    c[:] = -1
    assert (a.asnumpy() >= 0).all()


@pytest.mark.parametrize("key", [
    (slice(None), 1), (Ellipsis, None, 2), (None, slice(1, 3)), [2, 0],
    ([0, 2], [1, 3]), (slice(None), [True, False, True, False])])
def test_getitem_setitem_match_numpy(key):
    h = onp.arange(12, dtype=onp.float32).reshape(3, 4)
    a = np.array(h)
    onp.testing.assert_array_equal(a[key].asnumpy(), h[key])
    a[key] = 7
    h[key] = 7
    onp.testing.assert_array_equal(a.asnumpy(), h)


def test_boolean_mask_get_set_and_errors():
    h = onp.array([[1, 2, 3], [4, 5, 6]], dtype=onp.int32)
    a = np.array(h, dtype="int32")
    onp.testing.assert_array_equal(a[a > 2].asnumpy(), h[h > 2])
    a[a > 4] = 0
    h[h > 4] = 0
    onp.testing.assert_array_equal(a.asnumpy(), h)
    with pytest.raises(IndexError):
        a[np.array([True, False, True], dtype=bool)]


def test_getitem_gradient_scatters_back():
    x = np.array(onp.arange(6, dtype=onp.float32).reshape(2, 3))
    x.attach_grad()
    with autograd.record():
        y = x[x < 3.5]
    y.backward()
    assert type(x.grad) is np.ndarray
    assert x.grad.asnumpy().tolist() == [[1, 1, 1], [1, 0, 0]]


def test_autograd_grad_and_detach_are_ndarray():
    x = np.array([1., 2., 3.])
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    y.backward()
    assert type(x.grad) is np.ndarray and x.grad.asnumpy().tolist() == [2., 4., 6.]
    assert type(x.detach()) is np.ndarray


def test_as_nd_and_as_np_share_memory_and_graph():
    a = np.zeros((2, 2))
    n = a.as_nd_ndarray()
    assert type(n) is mx.nd.NDArray
    n[:] = 5
    assert a.asnumpy().tolist() == [[5, 5], [5, 5]]
    b = mx.nd.ones((2,)).as_np_ndarray()
    assert type(b) is np.ndarray
    x = np.array([1., 2.])
    x.attach_grad()
    with autograd.record():
        y = x.as_nd_ndarray() * 3
    y.backward()
    assert x.grad.asnumpy().tolist() == [3., 3.]


def test_legacy_ops_on_np_arrays_give_np_arrays():
    # gpunda: an op's outputs follow its first input (MXNet refuses legacy ops here)
    r = mx.nd.relu(np.array([-1., 2.]))
    assert type(r) is np.ndarray and r.asnumpy().tolist() == [0., 2.]


def test_astype_copy_false_returns_self():
    a = np.array([1, 2], dtype="int32")
    assert a.astype("int32", copy=False) is a
    assert a.astype("float16").dtype == onp.float16


def test_numpy_protocols_dispatch_or_fall_back():
    a = np.array([[1., 2.], [3., 4.]])
    r = onp.sum(a)
    assert float(r) == 10.0
    r = onp.add(a, a)
    assert type(r) is np.ndarray and r.asnumpy().tolist() == [[2., 4.], [6., 8.]]
    r = onp.fliplr(a)       # not in mx.np: NumPy's own function on a host copy
    assert type(r) is np.ndarray and r.asnumpy().tolist() == [[2., 1.], [4., 3.]]


def test_pickle_round_trip_keeps_class_and_dtype():
    a = np.array([1, 2, 3], dtype="int32")
    b = pickle.loads(pickle.dumps(a))
    assert type(b) is np.ndarray and b.dtype == onp.int32 and b.asnumpy().tolist() == [1, 2, 3]


def test_copy_order_f_is_not_implemented():
    with pytest.raises(NotImplementedError):
        np.array([1, 2]).copy(order="F")


def test_clip_method_takes_numpy_min_max_keywords():
    # ndarray.clip(min=None, max=None, out=None) as NumPy's and MXNet's method
    v = onp.array([-2.0, -0.5, 0.5, 2.0], dtype=onp.float32)
    a = np.array(v)
    onp.testing.assert_array_equal(a.clip(min=-1, max=1).asnumpy(), v.clip(min=-1, max=1))
    onp.testing.assert_array_equal(a.clip(max=0.1).asnumpy(), v.clip(max=0.1))
    onp.testing.assert_array_equal(a.clip(-0.1).asnumpy(), v.clip(-0.1))
    out = np.zeros((4,))
    assert a.clip(0, 1, out=out) is out
    onp.testing.assert_array_equal(out.asnumpy(), v.clip(0, 1))
    with pytest.raises(ValueError):
        a.clip()


def test_dtype_is_a_numpy_dtype_as_in_mxnet():
    # MXNet 1.9.1: mx.np.ones(2).dtype is dtype('float32'); mx.nd.ones(2).dtype is the type
    a = np.ones((2,), dtype="int8")
    assert isinstance(a.dtype, onp.dtype) and a.dtype == onp.dtype("int8")
    assert repr(np.ones((2,)).dtype) == "dtype('float32')" and a.dtype.kind == "i"
    assert mx.nd.ones((2,)).dtype is onp.float32
    assert a.as_nd_ndarray().dtype is onp.int8
