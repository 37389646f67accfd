"""gpunda.ndarray.indexing: MXNet's indexing helpers and the errors of NDArray indexing."""
from itertools import permutations, combinations_with_replacement

import numpy as np
import pytest

import gpunda as mx
from gpunda.ndarray import ndarray as ndmod


def test_slice_is_contiguous_agrees_with_numpy_flags():
    x = np.arange(6 * 7 * 8).reshape(6, 7, 8)
    slices = [slice(None), slice(2), slice(1, 4), slice(None, None, 2), slice(0, 1),
              slice(None, None, -1), slice(3, None, -2), slice(5, 5)]
    for combo in combinations_with_replacement(slices, 3):
        for key in permutations(combo):
            want = x[key].flags.c_contiguous
            assert mx.nd.NDArray._basic_indexing_slice_is_contiguous(key, x.shape) == want, key


def test_expand_implicit_axes_matches_mxnet():
    shape = (3, 4, 5)
    f = ndmod.indexing_key_expand_implicit_axes
    s = slice(None)
    assert f((2, 1, 1), shape) == ((2, 1, 1), -1)
    assert f(0, shape) == ((0, s, s), -1)
    assert f((0, Ellipsis), shape) == ((0, s, s), -1)
    # printed by MXNet 1.9.1
    assert f((slice(None, 2), None, 0, Ellipsis), shape) == ((slice(None, 2), None, 0, s), -1)
    with pytest.raises(IndexError):
        f((Ellipsis, 0, Ellipsis), shape)


def test_dispatch_codes_and_gather_nd_shape():
    code = ndmod.get_indexing_dispatch_code
    assert code((0, slice(1), None)) == ndmod._NDARRAY_BASIC_INDEXING == 0
    assert code(([0, 1],)) == code((mx.nd.array([0]),)) == ndmod._NDARRAY_ADVANCED_INDEXING == 1
    assert code(((),)) == ndmod._NDARRAY_EMPTY_TUPLE_INDEXING == 2
    with pytest.raises(ValueError, match="does not support slicing"):
        code((1.5,))
    assert ndmod.get_oshape_of_gather_nd_op((3, 4, 5), (2, 7)) == (7, 5)


def test_index_errors_are_python_exceptions_as_in_mxnet():
    a = mx.nd.ones((2, 3))
    with pytest.raises(IndexError):
        a[5]
    with pytest.raises(IndexError):
        a[0, 5]
    with pytest.raises(IndexError):
        a[0, 1, 1]
    with pytest.raises(IndexError):
        a[5] = 1
    for bad in (1.5, "a", (0, 1.5)):
        with pytest.raises(ValueError, match="does not support slicing"):
            a[bad]
        with pytest.raises(ValueError, match="does not support slicing"):
            a[bad] = 0
    # and they are still GpundaErrors for code that catches those
    with pytest.raises(mx.MXNetError):
        a[5]


def test_setitem_fits_a_value_of_the_right_size():
    # MXNet issue 8668: b[0] = np.array([x]) writes x
    b = mx.nd.zeros(1)
    b[0] = np.array([47.844944], dtype=np.float32)
    assert b.asnumpy()[0] == np.float32(47.844944)
    c = mx.nd.zeros((2, 3))
    c[1] = np.arange(3.0).reshape(1, 1, 3)
    assert c.asnumpy().tolist() == [[0, 0, 0], [0, 1, 2]]
    with pytest.raises(ValueError):
        c[1] = np.arange(4.0)


def test_setitem_of_a_recorded_value_is_refused_while_recording():
    x = mx.nd.zeros((3, 4))
    y = mx.nd.ones((4,))
    y.attach_grad()
    with pytest.raises(mx.MXNetError, match="Inplace operations"):
        with mx.autograd.record():
            x[0] = y
    assert x.asnumpy().sum() == 0
    with mx.autograd.record():
        x[0] = 5.0                      # a constant is fine, as in MXNet
    assert x.asnumpy()[0].tolist() == [5, 5, 5, 5]


# -- behaviour recorded from MXNet 1.9.1 (/work/mxref) ------------------------------------

def test_legacy_boolean_mask_is_a_value_error():
    # MXNet: a = nd.array([1, 2, 3, 4], dtype='uint8'); m = nd.array([1, 0, 1, 0], dtype='bool')
    #   a[m] and a[m] = 5 -> ValueError: Cannot perform boolean indexing in legacy mode ...
    #   (a unchanged); a.as_np_ndarray()[m.as_np_ndarray()] -> [1, 3]; a uint8 mask indexes
    a = mx.nd.array([1, 2, 3, 4], dtype="uint8")
    m = mx.nd.array([1, 0, 1, 0], dtype="bool")
    with pytest.raises(ValueError, match="boolean indexing in legacy mode") as e:
        a[m]
    assert not isinstance(e.value, mx.base.MXNetError)
    with pytest.raises(ValueError, match="boolean indexing in legacy mode"):
        a[m] = 5
    with pytest.raises(ValueError, match="boolean indexing in legacy mode"):
        a[(m,)]
    np.testing.assert_array_equal(a.asnumpy(), [1, 2, 3, 4])
    np.testing.assert_array_equal(a.as_np_ndarray()[m.as_np_ndarray()].asnumpy(), [1, 3])
    np.testing.assert_array_equal(a[mx.nd.array([1, 0, 1, 0], dtype="uint8")].asnumpy(),
                                  [2, 1, 2, 1])


@pytest.mark.parametrize("shape, key", [((4,), slice(-1, 1)), ((3, 4), slice(2, 1)),
                                        ((3, 4), (slice(None), slice(3, 1))),
                                        ((3, 4), (slice(-1, 1), 1)),
                                        ((3, 4), (Ellipsis, slice(3, 1)))])
@pytest.mark.parametrize("api", ["nd", "np"])
def test_write_through_a_backward_running_slice_is_an_assertion_error(shape, key, api):
    # MXNet: a = nd.array([1, 2, 3, 4], dtype='uint8'); a[-1:1] = 0 -> AssertionError (a
    # unchanged); b = nd.array(np.arange(12).reshape(3, 4)); b[2:1] = 0, b[:, 3:1] = 0,
    # b[-1:1, 1] = 0 -> AssertionError; the same on b.as_np_ndarray()
    data = np.arange(np.prod(shape)).reshape(shape)
    a = mx.nd.array(data) if api == "nd" else mx.np.array(data)
    with pytest.raises(AssertionError) as e:
        a[key] = 0
    assert not isinstance(e.value, mx.base.MXNetError)
    np.testing.assert_array_equal(a.asnumpy(), data)


def test_write_through_an_empty_equal_bounds_slice_is_allowed():
    # MXNet: a[2:2] = 0 -> no error, a unchanged; a[::-1][...] forms run their own step
    a = mx.nd.array([1, 2, 3, 4])
    a[2:2] = 0
    a[3:1:-1] = 9
    np.testing.assert_array_equal(a.asnumpy(), [1, 2, 9, 9])


def test_negative_entries_of_a_setitem_index_array_wrap():
    # gpunda wraps them as reads do (a[ix] gives [4, 3] in MXNet too). MXNet's
    # _scatter_set_nd writes out of bounds instead (docs/compat.md, "negative-index-write")
    a = mx.nd.array([1, 2, 3, 4], dtype="uint8")
    ix = mx.nd.array([-1, 2], dtype="int32")
    np.testing.assert_array_equal(a[ix].asnumpy(), [4, 3])
    a[ix] = 0
    np.testing.assert_array_equal(a.asnumpy(), [1, 2, 0, 0])
