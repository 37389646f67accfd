"""Crop against NumPy slicing (values observed from MXNet 1.9.1 for the centred case)."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd as ag
from gpunda.base import GpundaError

nd = mx.nd


def test_crop_h_w_offset_and_gradient():
    x = np.arange(2 * 3 * 5 * 6, dtype=np.float64).reshape(2, 3, 5, 6)
    a = nd.array(x, dtype="float64")
    a.attach_grad()
    with ag.record():
        y = nd.Crop(a, num_args=1, h_w=(2, 3), offset=(1, 2))
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), x[:, :, 1:3, 2:5])
    ref = np.zeros_like(x)
    ref[:, :, 1:3, 2:5] = 1
    np.testing.assert_array_equal(a.grad.asnumpy(), ref)


def test_crop_like_center_and_symbol_shape():
    x = np.arange(2 * 3 * 5 * 6, dtype=np.float32).reshape(2, 3, 5, 6)
    y = nd.Crop(nd.array(x), nd.zeros((1, 1, 3, 2)), num_args=2, center_crop=True)
    np.testing.assert_array_equal(y.asnumpy(), x[:, :, 1:4, 2:4])
    s = mx.sym.Crop(mx.sym.var("a"), mx.sym.var("b"), num_args=2)
    assert s.list_arguments() == ["a", "b"]
    assert s.infer_shape(a=(2, 3, 5, 6), b=(1, 1, 3, 2))[1] == [(2, 3, 3, 2)]


@pytest.mark.parametrize("kw", [dict(h_w=(6, 2)), dict(h_w=(2, 2), offset=(4, 0)),
                                dict(h_w=(0, 2))])
def test_crop_rejects_windows_outside_data(kw):
    with pytest.raises(GpundaError, match="Crop"):
        nd.Crop(nd.zeros((1, 1, 5, 6)), num_args=1, **kw)
