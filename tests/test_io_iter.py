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
        mx.io.NDArrayIter(np.zeros((3, 1)), np.zeros(2))
    with pytest.raises(mx.GpundaError, match="last_batch_handle='keep'"):
        mx.io.NDArrayIter(np.zeros((3, 1)), last_batch_handle="keep")


def test_label_longer_than_data_is_read_up_to_the_data_length():
    # MXNet's NDArrayIter takes its length from the first data array (test_loss's
    # test_sample_weight_loss scores 10 samples against 20 labels)
    it = mx.io.NDArrayIter(np.zeros((6, 2)), {"l": np.arange(12.0)}, batch_size=4)
    labels = [b.label[0].asnumpy().tolist() for b in it]
    assert labels == [[0, 1, 2, 3], [4, 5, 0, 1]]


def test_roll_over_opens_next_epoch_with_leftovers():
    x = np.arange(10, dtype=np.float32)
    it = mx.io.NDArrayIter(x, batch_size=4, last_batch_handle="roll_over")
    assert [b.data[0].asnumpy().tolist() for b in it] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it.reset()
    first = it.next()
    assert first.data[0].asnumpy().tolist() == [8, 9, 0, 1] and first.pad == 2
    assert it.next().data[0].asnumpy().tolist() == [2, 3, 4, 5]
    it.hard_reset()
    assert it.next().data[0].asnumpy().tolist() == [0, 1, 2, 3]


def test_pad_tiles_when_batch_exceeds_data():
    x = np.arange(3)
    b = mx.io.NDArrayIter(x, batch_size=8).next()
    np.testing.assert_array_equal(b.data[0].asnumpy(), np.resize(x, 8))
    assert b.pad == 5


def test_dict_inputs_sorted_and_list_names():
    a, b = np.zeros((4, 2)), np.ones((4, 3))
    it = mx.io.NDArrayIter({"zz": a, "aa": b}, [a[:, 0], b[:, 0]], batch_size=2)
    assert [d.name for d in it.provide_data] == ["aa", "zz"]
    assert [d.name for d in it.provide_label] == ["_0_softmax_label", "_1_softmax_label"]
    assert it.provide_data[0].shape == (2, 3) and it.provide_data[0].dtype == np.float32
    batch = it.next()
    assert batch.data[0].shape == (2, 3) and batch.data[1].shape == (2, 2)


def test_shuffle_keeps_data_and_label_together():
    np.random.seed(3)
    x = np.arange(20, dtype=np.float32)
    it = mx.io.NDArrayIter(x, x * 10, batch_size=5, shuffle=True)
    assert sorted(it.idx.tolist()) == list(range(20)) and it.idx.tolist() != list(range(20))
    got = [(b.data[0].asnumpy(), b.label[0].asnumpy()) for b in it]
    np.testing.assert_array_equal(np.concatenate([d for d, _ in got]), x[it.idx])
    for d, lb in got:
        np.testing.assert_array_equal(lb, d * 10)


def test_batch_axis_from_layout():
    x = np.arange(2 * 6 * 3, dtype=np.float32).reshape(2, 6, 3)
    it = mx.io.NDArrayIter(x, batch_size=4, layout="TNC", last_batch_handle="discard")
    assert it.provide_data[0].shape == (2, 4, 3) and it.provide_data[0].layout == "TNC"
    batches = list(it)
    assert len(batches) == 1
    np.testing.assert_array_equal(batches[0].data[0].asnumpy(), x[:, :4])


def test_csr_needs_discard_and_batches_rows():
    import scipy.sparse as sp
    dense = np.arange(12, dtype=np.float32).reshape(6, 2) * (np.arange(6)[:, None] % 2)
    with pytest.raises(NotImplementedError):
        mx.io.NDArrayIter(sp.csr_matrix(dense), batch_size=2)
    it = mx.io.NDArrayIter(sp.csr_matrix(dense), dense, batch_size=4, last_batch_handle="discard")
    batches = list(it)
    assert len(batches) == 1 and batches[0].data[0].stype == "csr"
    np.testing.assert_array_equal(batches[0].data[0].asnumpy(), dense[:4])
    np.testing.assert_array_equal(batches[0].label[0].asnumpy(), dense[:4])


def test_databatch_and_datadesc_text():
    b = mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.ones((2,))])
    assert str(b) == "DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]"
    assert repr(mx.io.DataDesc("a", (1, 2))) == "DataDesc[a,(1, 2),<class 'numpy.float32'>,NCHW]"
    assert mx.io.DataDesc.get_batch_axis("TNC") == 1 and mx.io.DataDesc.get_batch_axis(None) == 0
    with pytest.raises(AssertionError):
        mx.io.DataBatch(mx.nd.ones((2,)))


def test_resize_and_prefetching_iters():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    r = mx.io.ResizeIter(mx.io.NDArrayIter(x, batch_size=4), 5)
    got = [b.data[0].asnumpy()[:, 0].tolist() for b in r]
    assert got == [[0, 2, 4, 6], [8, 10, 0, 2]] * 2 + [[0, 2, 4, 6]]
    p = mx.io.PrefetchingIter([mx.io.NDArrayIter({"data": x}, batch_size=3),
                               mx.io.NDArrayIter({"data": -x}, batch_size=3)],
                              rename_data=[{"data": "a"}, {"data": "b"}])
    assert [d.name for d in p.provide_data] == ["a", "b"] and p.batch_size == 3
    for epoch in range(2):
        batches = list(p)
        assert len(batches) == 2
        np.testing.assert_array_equal(batches[1].data[1].asnumpy(), -x[3:])
        p.reset()
