"""Legacy ops whose MXNet 1.9.1 kernels depart from NumPy's semantics (issue 38: no silent
difference from MXNet). Expected numbers were printed by real MXNet 1.9.1 (/work/mxref); the
snippet that gave them is quoted above each check."""
import numpy as onp
import pytest

import gpunda as mx
from gpunda.base import GpundaError

nd = mx.nd


def test_unravel_index_truncates_and_never_wraps_the_first_axis():
    # x = mx.nd.array([0.5, -1.7, 3.2, 7, 13, -8], dtype=dt)
    # mx.nd._internal._unravel_index(x, shape=(2, 3))
    # float32 -> [[0, 0, 1, 2, 4, -2], [0, -1, 0, 1, 1, -2]]
    # uint8   -> [[0, 85, 1, 2, 4, 82], [0, 0, 0, 1, 1, 2]]
    src = [0.5, -1.7, 3.2, 7, 13, -8]
    r = nd._internal._unravel_index(nd.array(src, dtype="float32"), shape=(2, 3))
    assert r.dtype == onp.float32
    assert r.asnumpy().tolist() == [[0, 0, 1, 2, 4, -2], [0, -1, 0, 1, 1, -2]]
    r = nd._internal._unravel_index(nd.array(src, dtype="uint8"), shape=(2, 3))
    assert r.asnumpy().tolist() == [[0, 85, 1, 2, 4, 82], [0, 0, 0, 1, 1, 2]]


def test_unravel_index_of_a_2d_input_and_bool_are_refused():
    # MXNet: _unravel_index of a (2, 3) input with shape=(2,) returns a (1, 2) array and
    # writes the other entries past it ("free(): invalid next size"); of bool: MXNetError
    with pytest.raises(GpundaError, match="1-D"):
        nd._internal._unravel_index(nd.array(onp.ones((2, 3))), shape=(2,))
    with pytest.raises(GpundaError, match="bool"):
        nd._internal._unravel_index(nd.array([1, 0], dtype="bool"), shape=(2,))


def test_ravel_multi_index_truncates_each_step():
    # x = mx.nd.array([[0.5, -1.7, 3.2], [1, 2, -3]], dtype=dt)
    # mx.nd._internal._ravel_multi_index(x, shape=(4, 5)): float32 -> [1, -3, 12],
    # uint8 -> [1, 253, 12]; shape=(1, 2) float32 -> [1, 0, 3]
    src = [[0.5, -1.7, 3.2], [1, 2, -3]]
    r = nd._internal._ravel_multi_index(nd.array(src, dtype="float32"), shape=(4, 5))
    assert r.asnumpy().tolist() == [1, -3, 12]
    r = nd._internal._ravel_multi_index(nd.array(src, dtype="uint8"), shape=(4, 5))
    assert r.dtype == onp.uint8 and r.asnumpy().tolist() == [1, 253, 12]
    r = nd._internal._ravel_multi_index(nd.array(src, dtype="float32"), shape=(1, 2))
    assert r.asnumpy().tolist() == [1, 0, 3]


def test_index_copy_truncates_float_indices_and_refuses_out_of_range():
    # old = mx.nd.zeros((3, 2)); new = mx.nd.array([[1, 2], [3, 4]])
    # mx.nd.contrib.index_copy(old, mx.nd.array([2.9, 0.3]), new)
    # -> [[3, 4], [0, 0], [1, 2]]
    old, new = nd.zeros((3, 2)), nd.array([[1, 2], [3, 4]])
    r = nd.contrib.index_copy(old, nd.array([2.9, 0.3]), new)
    assert r.asnumpy().tolist() == [[3, 4], [0, 0], [1, 2]]
    # MXNet writes row index_t(-1.25) = -1 before its output (other memory): refused here
    with pytest.raises(GpundaError, match="outside"):
        nd.contrib.index_copy(old, nd.array([-1.25, 0]), new)
    with pytest.raises(GpundaError, match="outside"):
        nd.contrib.index_copy(old, nd.array([3, 0]), new)


def test_quantize_v2_output_dtype_follows_out_type_only():
    # x = mx.nd.array([1, 200, 255, 128], dtype='uint8'); mx.nd.contrib.quantize_v2(x)
    # -> int8 [1, -56, -1, -128] (the bytes, read as out_type's default int8)
    # x = mx.nd.array([1, -100, 127, -128], dtype='int8')
    # quantize_v2(x, out_type='auto', min_calib_range=0.5, max_calib_range=3.)
    # -> uint8 [1, 156, 127, 128]
    # (the CPU wheel's answers: a GPU build refuses uint8 outputs, tests/ops/test_quantize.py)
    cpu = mx.cpu()
    r = nd.contrib.quantize_v2(nd.array([1, 200, 255, 128], dtype="uint8", ctx=cpu))
    assert r[0].dtype == onp.int8 and r[0].asnumpy().tolist() == [1, -56, -1, -128]
    r = nd.contrib.quantize_v2(nd.array([1, -100, 127, -128], dtype="int8", ctx=cpu),
                               out_type="auto", min_calib_range=0.5, max_calib_range=3.)
    assert r[0].dtype == onp.uint8 and r[0].asnumpy().tolist() == [1, 156, 127, 128]


@pytest.mark.parametrize("sa", ["default", "row_sparse", "csr"])
@pytest.mark.parametrize("sb", ["default", "row_sparse", "csr"])
def test_identity_with_attr_like_rhs_takes_rhs_storage(sa, sb):
    # a = mx.nd.array([[1, 0], [0, 0], [3, 4]])
    # mx.nd._internal._identity_with_attr_like_rhs(a.tostype(sa), (a * 2).tostype(sb))
    # -> stype sb, values of a, for all nine pairs
    a = nd.array([[1, 0], [0, 0], [3, 4]])
    r = nd._internal._identity_with_attr_like_rhs(a.tostype(sa), (a * 2).tostype(sb))
    assert r.stype == sb
    assert r.asnumpy().tolist() == [[1, 0], [0, 0], [3, 4]]
