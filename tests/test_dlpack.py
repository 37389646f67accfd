"""DLPack: MXNet's bare 'dltensor' capsules in and out (gpunda/ndarray/_dlpack.py), host arrays."""
import gc

import numpy as np
import pytest

import gpunda as mx


def test_capsule_round_trip_shares_memory():
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3), ctx=mx.cpu())
    z = mx.nd.from_dlpack(mx.nd.to_dlpack_for_read(x))
    assert z.shape == (2, 3) and z.dtype == np.float32
    x[:] = 5
    assert (z.asnumpy() == 5).all()
    z[0, 0] = 1                            # writable, like MXNet's import
    assert x.asnumpy()[0, 0] == 1


def test_import_outlives_the_exporter():
    x = mx.nd.array([1.0, 2.0, 3.0], ctx=mx.cpu())
    z = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(x))
    del x
    gc.collect()
    assert z.asnumpy().tolist() == [1.0, 2.0, 3.0]


def test_capsule_consumed_once():
    cap = mx.nd.to_dlpack_for_read(mx.nd.ones((2,), ctx=mx.cpu()))
    mx.nd.from_dlpack(cap)
    with pytest.raises(mx.MXNetError, match="imported only once"):
        mx.nd.from_dlpack(cap)


def test_numpy_producer_still_works():
    z = mx.nd.from_dlpack(np.arange(4.0))
    assert z.asnumpy().tolist() == [0.0, 1.0, 2.0, 3.0]
