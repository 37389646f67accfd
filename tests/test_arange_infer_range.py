"""``arange(infer_range=True)`` without stop inside a graph takes its length from the
ops around it, as MXNet 1.9.1's RangeShape does.

Recorded from real MXNet 1.9.1 (/work/mxref)::

    x = mx.sym.var('x'); r = mx.sym.arange(start=0, stop=None, infer_range=True)
    (x + r).bind(mx.cpu(), {'x': mx.nd.zeros((5,))}).forward()[0]   -> [0, 1, 2, 3, 4]
    (x + r).infer_shape(x=(5,))                                      -> ([(5,)], [(5,)], [])
    elemwise_add(x, arange(start=2, stop=None, step=0.5, infer_range=True)), x (4,) -> [2, 2.5, 3, 3.5]
    x + arange(start=0, stop=None, infer_range=True, repeat=2), x (6,) -> [0, 0, 1, 1, 2, 2]
    x + arange(start=3, stop=7, infer_range=True), x (4,)            -> [3, 4, 5, 6]
    x + arange(start=0.1, stop=None, step=0.1, infer_range=True), x (7,)
        -> [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7] (float32)
    arange(start=0, stop=None, infer_range=True).infer_shape()      -> (None, None, None)
    simple_bind(x=(5,)), forward(is_train=True, x=ones), backward(ones) -> out [1..5], grad x ones
    test_operator::test_arange_inferstop: elemwise_add(arange(0, None, infer_range=True), zeros(shape=[5]))
        .bind(args={}) -> [0, 1, 2, 3, 4]
    class B(HybridBlock): hybrid_forward: F.elemwise_add(x, F.arange(start=1, stop=None, step=2,
        infer_range=True, repeat=2)); hybridized, x zeros (4,) -> [1, 1, 3, 3]; (6,) -> [1, 1, 3, 3, 5, 5]
    mx.nd.arange(0, None, infer_range=True)  -> MXNetError (Invalid range)
"""
import warnings

import numpy as np
import pytest

import gpunda as mx


def _run(r, n):
    x = mx.sym.var('x')
    return (x + r).bind(mx.cpu(), {'x': mx.nd.zeros((n,))}).forward()[0].asnumpy()


def test_length_from_consumer():
    r = mx.sym.arange(start=0, stop=None, infer_range=True)
    np.testing.assert_array_equal(_run(r, 5), [0, 1, 2, 3, 4])
    assert (mx.sym.var('x') + r).infer_shape(x=(5,)) == ([(5,)], [(5,)], [])


@pytest.mark.parametrize("kw, n, want", [
    (dict(start=2, step=0.5), 4, [2, 2.5, 3, 3.5]),
    (dict(start=0, repeat=2), 6, [0, 0, 1, 1, 2, 2]),
    (dict(start=3, stop=7), 4, [3, 4, 5, 6]),
    (dict(start=0.1, step=0.1), 7, np.float32([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])),
])
def test_start_step_repeat(kw, n, want):
    kw.setdefault("stop", None)
    np.testing.assert_allclose(_run(mx.sym.arange(infer_range=True, **kw), n), want, rtol=1e-6)


def test_alone_is_unknown_and_imperative_refused():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert mx.sym.arange(start=0, stop=None, infer_range=True).infer_shape() == \
            (None, None, None)
    with pytest.raises(mx.base.MXNetError):
        mx.nd.arange(0, None, infer_range=True)


def test_mxnet_suite_inferstop_and_training():
    s = mx.sym.arange(start=0, stop=None, infer_range=True)
    s = mx.sym.elemwise_add(s, mx.sym.zeros(shape=[5]))
    exe = s.bind(ctx=mx.cpu(), args={})
    exe.forward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [0, 1, 2, 3, 4])
    y = mx.sym.var('x') + mx.sym.arange(start=0, stop=None, infer_range=True)
    ex = y.simple_bind(mx.cpu(), x=(5,))
    out = ex.forward(is_train=True, x=mx.nd.ones((5,)))[0].asnumpy()
    ex.backward(mx.nd.ones((5,)))
    np.testing.assert_array_equal(out, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(ex.grad_dict['x'].asnumpy(), np.ones(5))


def test_hybridized_block_per_input_shape():
    class B(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return F.elemwise_add(x, F.arange(start=1, stop=None, step=2, infer_range=True,
                                              repeat=2))
    b = B()
    b.hybridize()
    np.testing.assert_array_equal(b(mx.nd.zeros((4,))).asnumpy(), [1, 1, 3, 3])
    np.testing.assert_array_equal(b(mx.nd.zeros((6,))).asnumpy(), [1, 1, 3, 3, 5, 5])


def test_empty_legacy_range_is_refused_numpy_allowed():
    # MXNet 1.9.1: mx.nd.arange(3, 3) / (5, 2) / (2, 5, -1) / arange(0), and sym.arange(3, 3)
    # .infer_shape() -> MXNetError "Invalid range (start, stop, step) = (3,3,1)";
    # mx.nd.arange(5, 2, -1) -> [5, 4, 3]; mx.np.arange(3, 3).shape -> (0,)
    for args in [(3, 3), (5, 2), (2, 5, -1), (0,)]:
        with pytest.raises(mx.base.MXNetError, match="Invalid range"):
            mx.nd.arange(*args)
    with pytest.raises(mx.base.MXNetError, match="Invalid range"):
        mx.sym.arange(3, 3).infer_shape()
    np.testing.assert_array_equal(mx.nd.arange(5, 2, -1).asnumpy(), [5, 4, 3])
    assert mx.np.arange(3, 3).shape == (0,) and mx.np.arange(0).shape == (0,)
