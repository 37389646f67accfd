"""mx.contrib.io.DataLoaderIter: a Gluon DataLoader as a DataIter, last batch padded."""
import numpy as np

import gpunda as mx
from gpunda.contrib.io import DataLoaderIter


def test_dataloader_iter_batches_and_padding():
    x = np.arange(10 * 3, dtype=np.float32).reshape(10, 3)
    y = np.arange(10, dtype=np.float32)
    ds = mx.gluon.data.ArrayDataset(x, y)
    it = DataLoaderIter(mx.gluon.data.DataLoader(ds, 4, last_batch="keep"), dtype="float16")
    assert it.provide_data[0].name == "data" and it.provide_data[0].shape == (4, 3)
    assert it.provide_label[0].name == "softmax_label"
    batches = list(it)
    assert len(batches) == 3 and [b.pad for b in batches] == [0, 0, 2]
    last = batches[-1]
    assert last.data[0].shape == (4, 3) and last.data[0].dtype == np.float16
    np.testing.assert_array_equal(last.data[0].asnumpy()[:2], x[8:])
    np.testing.assert_array_equal(last.label[0].asnumpy()[:2], y[8:])
    it.reset()
    assert len(list(it)) == 3
    it = DataLoaderIter(mx.gluon.data.DataLoader(ds, 4, last_batch="discard"))
    assert [b.pad for b in it] == [0, 0]
