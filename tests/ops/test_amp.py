"""amp_cast, amp_multicast, all_finite and multi_all_finite."""
import numpy as np

import gpunda as mx
from gpunda import autograd as ag

nd = mx.nd


def test_amp_cast_casts_floats_and_gradient_casts_back():
    x = nd.array([1.0, 2.5, 60000.0], dtype="float32")
    x.attach_grad()
    with ag.record():
        y = nd.amp_cast(x, dtype="float16")
    y.backward()
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y.asnumpy(), np.array([1.0, 2.5, 60000.0], np.float32)
                                  .astype(np.float16))
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.asnumpy(), np.ones(3))
    i = nd.array([1, 2], dtype="int32")
    assert nd.amp_cast(i, dtype="float16").dtype == np.int32


def test_amp_multicast_widest_and_narrowest():
    a = nd.ones((2,), dtype="float16")
    b = nd.ones((2,), dtype="float32")
    assert [o.dtype for o in nd.amp_multicast(a, b, num_outputs=2)] == [np.float32] * 2
    assert [o.dtype for o in nd.amp_multicast(a, b, num_outputs=2, cast_narrow=True)] == \
        [np.float16] * 2
    s = mx.sym.amp_multicast(mx.sym.var("x"), mx.sym.var("y"), num_outputs=2)
    assert len(s.list_outputs()) == 2


def test_all_finite_and_multi_all_finite():
    fin = nd.array([[0.0, 1.0]])
    bad = nd.array([[np.inf, 0.0]])
    nan = nd.array([np.nan])
    assert nd.all_finite(fin).asnumpy().tolist() == [1.0]
    assert nd.all_finite(bad).asnumpy().tolist() == [0.0]
    assert nd.all_finite(nan).dtype == np.float32
    assert nd.multi_all_finite(fin, fin, num_arrays=2).asnumpy().tolist() == [1.0]
    assert nd.multi_all_finite(fin, nan, num_arrays=2).asnumpy().tolist() == [0.0]
    _, outs, _ = mx.sym.all_finite(mx.sym.var("d")).infer_shape(d=(3, 4))
    assert outs == [(1,)]
