"""The ``_CachedOp`` op: a graph given as symbol JSON, run as one node
(``mx.sym._internal._CachedOp(*inputs, subgraph=sym.tojson())``, MXNet's make_subgraph).

References: MXNet 1.9.1's names, shapes, outputs, gradients and updated auxiliary states
on fixed inputs (recorded with /work/mxref), and NumPy for the imperative gradient.
"""
import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

nd, sym = mx.nd, mx.sym


def _bn_graph():
    with mx.name.NameManager():     # fresh automatic names (_mulscalar0, exp0) in any test order
        data = sym.Variable("data")
        bn = sym.BatchNorm(data, fix_gamma=False, output_mean_var=True, name="bn")
        return sym.Group([bn[0] * 2, bn[1], sym.exp(bn[2])])


def _node():
    orig = _bn_graph()
    ins = [sym.Variable(n) for n in orig.list_inputs()]
    return sym._internal._CachedOp(*ins, subgraph=orig.tojson(), name="_cachedop0")


def test_node_names_shapes_types_as_mxnet():
    s = _node()
    assert s.list_arguments() == ["data", "bn_gamma", "bn_beta"]
    assert s.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert s.list_outputs() == ["_cachedop0__mulscalar0_output", "_cachedop0_bn_mean",
                                "_cachedop0_exp0_output"]
    assert s.infer_shape(data=(2, 3)) == ([(2, 3), (3,), (3,)], [(2, 3), (3,), (3,)],
                                          [(3,), (3,)])
    args, outs, aux = s.infer_type(data="float32")
    assert args == [np.float32] * 3 and outs == [np.float32] * 3 and aux == [np.float32] * 2


def test_bound_forward_backward_and_aux_update_as_mxnet():
    s = _node()
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], "f")
    args = {"data": nd.array(x), "bn_gamma": nd.array([1.0, -2.0, 0.5]),
            "bn_beta": nd.array([0.1, 0.2, 0.3])}
    aux = {"bn_moving_mean": nd.zeros(3), "bn_moving_var": nd.ones(3)}
    grads = {k: nd.zeros(v.shape) for k, v in args.items()}
    e = s.bind(mx.cpu(), args=args, args_grad=grads, aux_states=aux)
    e.forward(is_train=True)
    ref_out = [[[-1.796012, 4.39489, 1.5996802], [2.196012, -3.5948896, -0.39968014]],
               [1.0, -0.375, 0.75], [7.3596478, 4.9429183, 2.2249715]]
    for o, r in zip(e.outputs, ref_out):
        np.testing.assert_allclose(o.asnumpy(), r, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(aux["bn_moving_mean"].asnumpy(), 0)
    np.testing.assert_array_equal(aux["bn_moving_var"].asnumpy(), 1)
    e.backward([nd.array([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]]), nd.zeros(3), nd.zeros(3)])
    np.testing.assert_allclose(grads["data"].asnumpy(),
                               [[0.00397603, -0.02040161, -0.00102306],
                                [-0.00397603, 0.02040161, 0.00102316]], atol=2e-6)
    np.testing.assert_allclose(grads["bn_gamma"].asnumpy(), [-0.99800605, -4.9936123,
                                                             -7.9974413], rtol=1e-5)
    np.testing.assert_allclose(grads["bn_beta"].asnumpy(), [3.0, 3.0, 4.0], rtol=1e-6)
    # the moving statistics are updated once, by the backward (forward alone: unchanged,
    # checked below)
    np.testing.assert_allclose(aux["bn_moving_mean"].asnumpy(), [0.1, -0.0375, 0.075],
                               rtol=1e-5)
    np.testing.assert_allclose(aux["bn_moving_var"].asnumpy(), [0.925, 0.9390625, 1.05625],
                               rtol=1e-5)


def test_imperative_inference_uses_moving_stats_as_mxnet():
    orig = _bn_graph()
    rng = np.random.RandomState(0)
    x, g, b = rng.randn(2, 3).astype("f"), rng.randn(3).astype("f"), rng.randn(3).astype("f")
    r = nd._internal._CachedOp(nd.array(x), nd.array(g), nd.array(b), nd.zeros(3),
                               nd.ones(3), subgraph=orig.tojson())
    assert isinstance(r, list) and len(r) == 3
    np.testing.assert_allclose(r[0].asnumpy(), [[4.171534, 0.16701430, 2.7065995],
                                                [5.0771632, -0.27696711, 3.1101933]],
                               rtol=1e-5)


def test_imperative_autograd_against_numpy():
    a, c = sym.Variable("a"), sym.Variable("c")
    sub = sym.sin(a) * c + a
    va, vc, hg = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -2.0]), np.array([1., 2., 3.])
    xa, xc = nd.array(va), nd.array(vc)
    xa.attach_grad()
    xc.attach_grad()
    with mx.autograd.record():
        y = nd._internal._CachedOp(xa, xc, subgraph=sub.tojson())
    y.backward(nd.array(hg))
    np.testing.assert_allclose(y.asnumpy(), np.sin(va) * vc + va, rtol=1e-5)
    np.testing.assert_allclose(xa.grad.asnumpy(), (np.cos(va) * vc + 1) * hg, rtol=1e-5)
    np.testing.assert_allclose(xc.grad.asnumpy(), np.sin(va) * hg, rtol=1e-5)


def test_bad_subgraph_and_input_count_raise():
    with pytest.raises(GpundaError, match="_CachedOp.*subgraph"):
        nd._internal._CachedOp(nd.ones(2), subgraph="not json")
    sub = sym.Variable("a") + sym.Variable("b")
    with pytest.raises(GpundaError, match="_CachedOp"):
        nd._internal._CachedOp(nd.ones(2), subgraph=sub.tojson())
