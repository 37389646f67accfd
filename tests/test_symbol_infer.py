"""Symbol shape inference with unknown dimensions (gpunda/symbol/infer.py, shape_rules.py).

Expected shapes are MXNet 1.9.1's observed answers (its test_infer_shape.py cases and
hand-computed convolution arithmetic), in both conventions: legacy (0 = unknown
dimension, () = unknown shape) and NumPy shape (-1 and None).
"""
import json

import numpy as np
import pytest

import gpunda as mx
from gpunda import sym
from gpunda.base import GpundaError


def _args(s, shapes):
    return dict(zip(s.list_arguments(), shapes))


def test_elementwise_fills_unknown_dims_from_both_operands():
    a = sym.var("a", shape=(0, 10))
    b = sym.var("b", shape=(12, 0))
    arg, out, _ = (a + b).infer_shape()
    assert arg == [(12, 10), (12, 10)] and out == [(12, 10)]


def test_unknown_dims_flow_backwards_through_layers():
    # FullyConnected: the batch comes back from the sum downstream
    a = sym.var("a", shape=(0, 10))
    d = sym.FullyConnected(data=a, num_hidden=21, name="fc") + sym.var("c", shape=(5, 0))
    shapes = _args(d, d.infer_shape()[0])
    assert shapes["a"] == (5, 10) and shapes["fc_weight"] == (21, 10) and shapes["c"] == (5, 21)
    # Convolution with stride 1: spatial size (32 - 1) + 3 - 2*1 = 32 recovered
    x = sym.var("x", shape=(0, 10, 0, 0))
    conv = sym.Convolution(data=x, num_filter=21, kernel=(3, 3), pad=(1, 1), name="cv")
    shapes = _args(conv + sym.var("y", shape=(5, 21, 32, 32)),
                   (conv + sym.var("y", shape=(5, 21, 32, 32))).infer_shape()[0])
    assert shapes["x"] == (5, 10, 32, 32) and shapes["cv_weight"] == (21, 10, 3, 3)


def test_concat_and_slice_channel_partial():
    c = sym.Concat(sym.var("a", shape=(0, 10)), sym.var("b", shape=(0, 5)), dim=1)
    d = sym.var("d", shape=(2, 0)) + c
    assert _args(d, d.infer_shape()[0]) == {"d": (2, 15), "a": (2, 10), "b": (2, 5)}
    a = sym.var("a", shape=(0, 15, 0))
    e = sym.SliceChannel(a, num_outputs=3)[1] + sym.var("c", shape=(3, 5, 2))
    assert _args(e, e.infer_shape()[0])["a"] == (3, 15, 2)


def test_partial_results_in_both_conventions():
    x, y = sym.var("x"), sym.var("y")
    z = sym.dot(x, y)
    assert z.infer_shape_partial(x=(0, 3, 4), y=(4, 5))[1] == [(0, 3, 5)]
    assert sym.sin(x).infer_shape_partial() == ([()], [()], [])
    with mx.np_shape(True):
        assert z.infer_shape_partial(x=(-1, 3, 4), y=(4, 5))[1] == [(-1, 3, 5)]
        assert sym.sin(x).infer_shape_partial() == ([None], [None], [])
        # under NumPy semantics 0 is a real size
        assert sym.sin(x).infer_shape(x=(0, 2))[1] == [(0, 2)]


def test_incomplete_inference_returns_nones_and_a_partial_view():
    fc = sym.FullyConnected(sym.var("prev"), num_hidden=8, name="h")
    out = sym.FullyConnected(sym.var("data"), num_hidden=8, name="x") + fc
    with pytest.warns(UserWarning, match=r"(?s)Cannot decide shape.*prev: \(\)"):
        assert out.infer_shape(data=(4, 3)) == (None, None, None)
    shapes = _args(out, out.infer_shape_partial(data=(4, 3))[0])
    # nothing is said about a layer before its data's rank is known (MXNet's answer)
    assert shapes["x_weight"] == (8, 3) and shapes["h_weight"] == ()


def test_contradictory_shapes_raise_naming_the_node(tmp_path):
    w = sym.var("fc_weight", shape=(32, 20))
    net = sym.FullyConnected(sym.var("data"), weight=w, num_hidden=32, name="fc")
    path = tmp_path / "fc-symbol.json"
    net.save(str(path))
    loaded = sym.load(str(path))
    with pytest.raises(GpundaError, match=r"'fc'.*weight.*\(32, 20\).*\(32, 7\)"):
        loaded.infer_shape(data=(4, 7))
    with pytest.raises(GpundaError, match="fc"):
        loaded.simple_bind(mx.cpu(), data=(4, 7))
    with pytest.raises(GpundaError, match="inconsistent|needs"):
        (sym.var("a") + sym.var("b")).infer_shape(a=(2, 3), b=(3, 2))
    with pytest.raises(GpundaError, match="broadcast"):
        sym.broadcast_add(sym.var("a"), sym.var("b")).infer_shape_partial(a=(2, 3), b=(4, 0))


def test_backward_shape_constraint_op():
    w = sym.var("weight")
    wt = sym.broadcast_add(w, sym.var("wshift", shape=(1,)))
    wt = sym.op._identity_with_attr_like_rhs(wt, w)
    net = sym.FullyConnected(data=sym.var("data"), weight=wt, num_hidden=11, no_bias=True)
    assert _args(net, net.infer_shape(data=(7, 100))[0])["weight"] == (11, 100)
    lhs, rhs = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    out = mx.nd.op._identity_with_attr_like_rhs(mx.nd.array(lhs), mx.nd.array(rhs))
    np.testing.assert_array_equal(out.asnumpy(), lhs)


def test_json_records_numpy_shape_and_reads_legacy_zeros():
    net = sym.FullyConnected(sym.var("data"), sym.var("weight", shape=(8, 0)), num_hidden=8)
    legacy = net.tojson()
    assert "is_np_shape" not in json.loads(legacy)["attrs"]
    with mx.np_shape(True):
        assert json.loads(net.tojson())["attrs"]["is_np_shape"] == ["int", 1]
        # a file written without NumPy shapes: its 0 meant "unknown"
        arg, out, _ = sym.load_json(legacy).infer_shape(data=(2, 5))
    assert arg[1] == (8, 5) and out == [(2, 8)]


def test_infer_type_without_any_given_dtype():
    data = sym.var("data")
    mlp = sym.SoftmaxOutput(sym.FullyConnected(sym.Cast(data, dtype="float32"), num_hidden=4))
    arg, out, _ = mlp.infer_type_partial()
    assert arg == [None, np.float32, np.float32, np.float32] and out == [np.float32]


def test_slice_reshape_flatten_partial():
    # MXNet 1.9.1's test_slice_partial_infer answers: an unknown dimension stays unknown
    v = sym.var("data", shape=(0, 20))
    sl = lambda b, e, s=(): sym.slice(v, begin=b, end=e, step=s).infer_shape_partial()[1]  # noqa
    assert sl((None, None), (None, 10)) == [(0, 10)]
    assert sl((None, None), (None, 10), (None, 2)) == [(0, 5)]
    assert sl((2, 3), (None, 10), (3, 3)) == [(0, 3)]
    w = sym.var("data", shape=(10, 0))
    assert sym.slice_axis(w, axis=0, begin=0, end=5).infer_shape_partial()[1] == [(5, 0)]
    assert sym.slice_axis(w, axis=1, begin=0, end=5).infer_shape_partial()[1] == [(10, 0)]
    # a reshape keeps the size: one unknown input dimension comes back from the output
    net = sym.elemwise_add(sym.var("data").reshape((0, -1)), sym.ones(shape=(2, 75)))
    assert net.infer_shape(data=(2, 0, 5, 5))[0] == [(2, 3, 5, 5)]
    f = sym.Flatten(sym.var("x")) + sym.var("y", shape=(4, 6))
    assert f.infer_shape(x=(0, 2, 3))[0][0] == (4, 2, 3)


def test_creation_shapes_learned_from_the_graph_are_used_to_run_it():
    o = sym.ones(shape=[2, -1]) + sym.transpose(sym.ones(shape=[3, -1]))
    assert o.infer_shape() == ([], [(2, 3)], [])
    out = o.bind(mx.cpu(), args={}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 2.0))


def test_legacy_zero_dims_of_creation_shapes_are_inferred():
    # MXNet's legacy (non-NumPy) shapes: sym.zeros(shape=(0, 3)) leaves dimension 0 to the
    # graph (the mx.rnn cells' begin_state); in NumPy-shape mode a 0 is a real size
    y = mx.sym.Variable("x") + mx.sym.zeros(shape=(0, 3))
    assert y.infer_shape(x=(2, 3))[1] == [(2, 3)]
    out = y.bind(mx.cpu(), {"x": mx.nd.ones((2, 3))}).forward()[0]
    assert out.shape == (2, 3) and (out.asnumpy() == 1).all()


def test_a_sampler_without_a_shape_takes_its_shape_from_the_graph():
    # MXNet's symbol samplers default to shape=(), unknown until the graph around says,
    # and a Symbol keyword given to them (data=...) composes nothing
    import numpy as np
    s = mx.sym.random.normal(loc=10.0, scale=0.5, dtype="float64", data=mx.sym.ones((2,)))
    assert s.list_arguments() == []
    y = s + mx.sym.var("x")
    assert y.infer_shape(x=(3, 4))[1] == [(3, 4)]
    out = y.bind(mx.cpu(), {"x": mx.nd.zeros((3, 4), dtype="float64")}).forward()[0]
    assert out.shape == (3, 4) and out.dtype == np.float64
    assert abs(out.asnumpy().mean() - 10.0) < 1.0


def test_infer_runs_samplers_on_parameters_they_accept():
    # zero parameters are refused by negative_binomial's sampler (k > 0): shape inference
    # must not depend on them
    y = mx.sym.random.negative_binomial(mx.sym.var("k"), mx.sym.var("p"), shape=(3,),
                                        dtype="float16")
    assert y.infer_shape(k=(2, 2), p=(2, 2))[1] == [(2, 2, 3)]
    assert y.infer_type(k="float32", p="float32")[1] == [np.float16]


def test_pick_index_shape_follows_its_rank_as_mxnet():
    # MXNet 1.9.1: with keepdims=True the output keeps the axis, and the index may still
    # have the reduced rank (gluon's SoftmaxCrossEntropyLoss on a (N,) label)
    d, i = mx.sym.Variable("d"), mx.sym.Variable("i")
    s = mx.sym.pick(d, i, axis=-1, keepdims=True)
    assert s.infer_shape(d=(10, 5), i=(10,)) == ([(10, 5), (10,)], [(10, 1)], [])
    assert s.infer_shape(d=(10, 5), i=(10, 1)) == ([(10, 5), (10, 1)], [(10, 1)], [])
    assert mx.sym.pick(d, i, axis=1).infer_shape(d=(10, 5)) == ([(10, 5), (10,)], [(10,)], [])
    with pytest.raises(mx.GpundaError, match="pick index"):
        s.infer_shape(d=(10, 5), i=(9,))


def test_shape_inference_of_value_checking_ops_uses_valid_stand_ins():
    # potrf refuses the zero matrices inference starts with; identity matrices pass
    s = mx.sym.linalg.potrf(mx.sym.Variable("a"))
    _, out, _ = s.infer_shape(a=(4, 4, 1, 1))
    assert out == [(4, 4, 1, 1)]
    ex = s.bind(mx.cpu(), {"a": mx.nd.array(np.full((4, 4, 1, 1), 4.0))})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), 2.0)


def test_where_shape_rule():
    # MXNet 1.9.1's WhereOpShape: x, y and the output share a shape; the condition has it or
    # is 1-D over the first axis. Answers recorded from MXNet 1.9.1.
    s = sym.where(sym.var("c"), sym.var("x"), sym.zeros(shape=(0, 0)))
    assert s.infer_shape(x=(4, 3), c=(4,)) == ([(4,), (4, 3)], [(4, 3)], [])
    assert s.infer_shape(x=(4, 3), c=(4, 3)) == ([(4, 3), (4, 3)], [(4, 3)], [])
    assert s.infer_shape(x=(4, 3)) == (None, None, None)     # the condition stays unknown
    w = sym.where(sym.var("c"), sym.var("x"), sym.var("y"))
    assert w.infer_shape(x=(2, 5), c=(2,)) == ([(2,), (2, 5), (2, 5)], [(2, 5)], [])
    with pytest.raises(GpundaError, match="where"):
        s.infer_shape(x=(4, 3), c=(3,))
    # nothing is said until the condition is wholly known (MXNet's test_where_partial_shape)
    assert s.infer_shape_partial(x=(4, 3))[1] == [()]
    assert w.infer_shape_partial(c=(0, 2), x=(0, 2), y=(0, 2))[1] == [()]
    assert w.infer_shape_partial(c=(0,), x=(2, 2), y=(2, 2))[1] == [()]
    assert (w + sym.var("z")).infer_shape_partial(z=(4, 3))[0] == [(), (), (), (4, 3)]


@pytest.mark.parametrize("shape,kwargs,expected", [
    # MXNet 1.9.1's infer_shape_partial answers
    ((1, 6, 0), dict(kernel=(5,), stride=(2,), adj=(1,), num_filter=4, num_group=2),
     ([(1, 6, 0), (6, 2, 5)], [(1, 4, 0)], [])),
    ((2, 3, 0, 7), dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), num_filter=5, no_bias=True),
     ([(2, 3, 0, 7), (3, 5, 3, 3)], [(2, 5, 0, 13)], [])),
    ((0, 0, 4, 4), dict(kernel=(2, 2), num_filter=3),
     ([(0, 0, 4, 4), (0, 3, 2, 2)], [(0, 3, 5, 5)], [])),
])
def test_deconvolution_partial_shapes_match_mxnet(shape, kwargs, expected):
    d = sym.var("data", shape=shape)
    assert sym.Deconvolution(d, **kwargs).infer_shape_partial() == expected
