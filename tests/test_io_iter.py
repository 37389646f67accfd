"""mx.io.NDArrayIter against hand-made batches."""
import numpy as np
import pytest

import gpunda as mx


def test_pad_discard_roll_over():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    y = np.arange(5, dtype=np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=2)
    batches = list(it)
    assert len(batches) == 3 and batches[-1].pad == 1
    np.testing.assert_array_equal(batches[-1].data[0].asnumpy(), x[[4, 0]])
    np.testing.assert_array_equal(batches[1].label[0].asnumpy(), y[2:4])
    assert it.provide_data[0].shape == (2, 2) and it.provide_label[0].name == "softmax_label"
    it = mx.io.NDArrayIter(x, y, batch_size=2, last_batch_handle="discard")
    assert len(list(it)) == 2
    it = mx.io.NDArrayIter(x, batch_size=2, last_batch_handle="roll_over")
    assert len(list(it)) == 2
    it.reset()
    first = next(iter(it))
    np.testing.assert_array_equal(first.data[0].asnumpy(), x[[4, 0]])


def test_bad_input():
    with pytest.raises(mx.GpundaError, match="batch_size=0"):
        mx.io.NDArrayIter(np.zeros((3, 1)), batch_size=0)
    with pytest.raises(mx.GpundaError, match="different lengths"):
        mx.io.NDArrayIter(np.zeros((3, 1)), np.zeros(4))
    with pytest.raises(mx.GpundaError, match="last_batch_handle='keep'"):
        mx.io.NDArrayIter(np.zeros((3, 1)), last_batch_handle="keep")
