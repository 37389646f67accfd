"""MXNet's per-node ONNX converter convention: ``MXNetGraph.register`` / ``convert_layer``
and the built-in ``convert_*`` names of ``mx.onnx.mx2onnx._op_translations``.

References: the registry tables and helper outputs were recorded from MXNet 1.9.1 (with
onnx 1.13.1); exported graphs are checked by running them in ONNX Runtime against gpunda's
own forward pass."""
import json

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper, numpy_helper, NodeProto, ValueInfoProto  # noqa: E402
from _onnx_check import model_at  # noqa: E402

from gpunda.onnx.mx2onnx._export_onnx import MXNetGraph  # noqa: E402
from gpunda.onnx.mx2onnx._op_translations import _op_translations_opset12 as o12  # noqa: E402
from gpunda.onnx.mx2onnx._op_translations import _op_translations_opset13 as o13  # noqa: E402
from gpunda.onnx._mxconv import NodeOutput  # noqa: E402


@pytest.fixture
def registry():
    """MXNetGraph.registry_, restored after the test (registrations are global)."""
    saved = {v: dict(t) for v, t in MXNetGraph.registry_.items()}
    yield MXNetGraph.registry_
    MXNetGraph.registry_.clear()
    MXNetGraph.registry_.update(saved)


def _w(*shape):
    return mx.nd.array(np.random.RandomState(sum(shape)).randn(*shape).astype(np.float32))


def _run(path, feeds):
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def test_registry_is_mxnets():
    # recorded from MXNet 1.9.1: 149 ops at opset 12, these 23 at opset 13
    reg = MXNetGraph.registry_
    assert len(reg[12]) == 149
    assert sorted(reg[13]) == [
        "LayerNorm", "RNN", "SequenceMask", "SliceChannel", "SoftmaxOutput",
        "_contrib_ROIAlign", "_contrib_arange_like", "_contrib_box_nms", "_split_v2",
        "broadcast_axis", "expand_dims", "log_softmax", "max", "mean", "min", "norm",
        "prod", "repeat", "reverse", "softmax", "squeeze", "stack", "sum"]
    assert reg[12]["sum_axis"] is o12.convert_sum
    assert reg[12]["broadcast_add"] is o12.covert_broadcast_add
    assert reg[12]["null"] is o12.convert_weights_and_inputs
    assert reg[13]["softmax"] is o13.convert_softmax


def test_registered_converter_overrides_builtin(registry, tmp_path):
    seen = {}

    @MXNetGraph.register("relu", opset_version=13)
    def relu_as_max(node, **kwargs):
        seen.update(node=node, keys=sorted(kwargs),
                    src=kwargs["outputs_lookup"][node["inputs"][0][0]][0])
        name, ins, _ = o12.get_inputs(node, kwargs)
        o12.create_const_scalar_node(name + "_zero", np.float32(0), kwargs)
        return [helper.make_node("Max", [ins[0], name + "_zero"], [name], name=name)]

    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    out = mx.sym.relu(fc, name="r") * 2
    params = {"fc_weight": _w(4, 3), "fc_bias": _w(4)}
    path = tmp_path / "m.onnx"
    mx.onnx.export_model(out, params, [(2, 3)], np.float32, str(path))
    # called as MXNet 1.9.1 calls it: the JSON node and these keyword arguments
    assert seen["node"] == {"op": "relu", "name": "r", "inputs": [[3, 0, 0]]}
    assert seen["keys"] == ["idx", "initializer", "is_input", "mx_graph", "opset_version",
                            "outputs_lookup", "proc_nodes", "weights"]
    assert seen["src"].dtype == np.float32
    model = onnx.load(str(path))
    ops = [n.op_type for n in model.graph.node]
    assert "Max" in ops and "Relu" not in ops
    mx_node = next(n for n in model.graph.node if n.op_type == "Max")
    assert mx_node.input[0] == seen["src"].name        # wired to the FullyConnected output
    assert "relu" in mx.onnx.get_operator_support()
    x = np.random.RandomState(0).randn(2, 3).astype(np.float32)
    want = out.eval(data=mx.nd.array(x), **params)[0].asnumpy()
    assert (want == 0).any() and (want > 0).any()
    np.testing.assert_allclose(_run(path, {"data": x})[0], want, rtol=1e-6, atol=1e-6)


def test_converter_for_custom_op(registry, tmp_path):
    class Cube(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] ** 3)

    @mx.operator.register("h28cube")
    class CubeProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Cube()

    @MXNetGraph.register("Custom", opset_version=12)
    def custom(node, **kwargs):
        name, ins, attrs = o12.get_inputs(node, kwargs)
        assert attrs["op_type"] == "h28cube"
        return [helper.make_node("Mul", [ins[0], ins[0]], [name + "_sq"]),
                helper.make_node("Mul", [name + "_sq", ins[0]], [name], name=name)]

    data = mx.sym.var("data")
    out = mx.sym.tanh(mx.sym.Custom(data + 1, op_type="h28cube", name="cube"))
    path = tmp_path / "c.onnx"
    mx.onnx.export_model(out, {}, [(3, 4)], np.float32, str(path))
    x = np.random.RandomState(1).randn(3, 4).astype(np.float32) * 0.5
    want = out.eval(data=mx.nd.array(x))[0].asnumpy()
    np.testing.assert_allclose(_run(path, {"data": x})[0], want, rtol=1e-5, atol=1e-6)


def test_opset_lookup_and_errors(registry, tmp_path):
    calls = []

    @MXNetGraph.register("tanh", opset_version=15)
    def tanh15(node, **kwargs):
        calls.append(kwargs["opset_version"])
        name, ins, _ = o12.get_inputs(node, kwargs)
        return [helper.make_node("Tanh", ins, [name], name=name)]

    data = mx.sym.var("data")
    out = mx.sym.tanh(data, name="t")
    mx.onnx.export_model(out, {}, [(2,)], np.float32, str(tmp_path / "a.onnx"),
                         opset_version=14)
    assert calls == []      # registered for opset 15 and newer only
    mx.onnx.export_model(out, {}, [(2,)], np.float32, str(tmp_path / "b.onnx"),
                         opset_version=16)
    assert calls == [16]
    with pytest.raises(AttributeError, match="No conversion function registered for op "
                                             "type NoSuchOp"):
        MXNetGraph.convert_layer({"op": "NoSuchOp", "name": "n", "inputs": []})

    @MXNetGraph.register("tanh", opset_version=13)
    def bad(node, **kwargs):
        return "Tanh"
    with pytest.raises(GpundaError, match="'bad' registered for op 'tanh'.*returned str"):
        mx.onnx.export_model(out, {}, [(2,)], np.float32, str(tmp_path / "c.onnx"),
                             opset_version=13)


def _mxnet_loop(sym, params, in_shapes, opset=13):
    """MXNet 1.9.1's create_onnx_graph_proto loop, cut down: every JSON node through
    ``MXNetGraph.convert_layer`` with MXNet's keyword arguments."""
    graph = json.loads(sym.tojson())["nodes"]
    weights = {k: v.asnumpy() for k, v in params.items()}
    init, nodes, inputs, lookup, proc = [], [], [], [], []
    k_in = 0
    for idx, node in enumerate(graph):
        name = node["name"]
        if node["op"] == "null" and name not in params:
            conv, dtypes = MXNetGraph.convert_layer(
                node, is_input=True, mx_graph=graph, weights=weights,
                in_shape=in_shapes[k_in], in_type=onnx.TensorProto.FLOAT, proc_nodes=proc,
                initializer=init, outputs_lookup=lookup)
            k_in += 1
        else:
            conv, dtypes = MXNetGraph.convert_layer(
                node, is_input=False, mx_graph=graph, weights=weights, proc_nodes=proc,
                initializer=init, outputs_lookup=lookup, idx=idx, opset_version=opset)
        possible = [name] + [name + str(i) for i in range(100)]
        outs = []
        for c in conv:
            if isinstance(c, ValueInfoProto):
                inputs.append(c)
            else:
                assert isinstance(c, NodeProto)
                nodes.append(c)
                outs += [o for o in c.output if o in possible]
            proc.append(c)
        outs = outs or [conv[-1].name]
        outs.sort(key=lambda s: -1 if s == name else int(s[len(name):]))
        if dtypes is None:
            first = node["inputs"][0]
            dtypes = [lookup[first[0]][first[1]].dtype] * len(outs)
        lookup.append([NodeOutput(o, d) for o, d in zip(outs, dtypes)])
    _, out_shapes, _ = sym.infer_shape(**dict(zip(
        [n for n in sym.list_inputs() if n not in params], in_shapes)))
    out = helper.make_tensor_value_info(lookup[-1][0].name, onnx.TensorProto.FLOAT,
                                        out_shapes[0])
    names = {t.name for t in init}
    g = helper.make_graph(nodes, "m", [i for i in inputs if i.name not in names], [out],
                          initializer=init)
    model = model_at(g, opset)
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("case", ["cnn", "arith", "split"])
def test_builtin_converters_in_mxnets_loop(case):
    data = mx.sym.var("data")
    params = {}
    if case == "cnn":
        c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
        b = mx.sym.BatchNorm(c, name="bn", fix_gamma=False)
        a = mx.sym.Activation(b, act_type="relu", name="act")
        p = mx.sym.Pooling(a, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
        f = mx.sym.FullyConnected(p, num_hidden=5, name="fc")
        sym = mx.sym.softmax(f * 2 + 1, name="sm")
        params = {"conv_weight": _w(4, 3, 3, 3), "conv_bias": _w(4), "bn_gamma": _w(4),
                  "bn_beta": _w(4), "bn_moving_mean": _w(4), "bn_moving_var": mx.nd.ones(4) * 2,
                  "fc_weight": _w(5, 64), "fc_bias": _w(5)}
        feeds = {"data": np.random.RandomState(2).randn(2, 3, 8, 8).astype(np.float32)}
        expect_ops = {"Conv", "BatchNormalization", "Relu", "MaxPool", "Gemm", "Softmax"}
    elif case == "arith":
        x0, x1 = mx.sym.var("data0"), mx.sym.var("data1")
        y = mx.sym.Concat(mx.sym.broadcast_add(x0, x1), mx.sym.elemwise_mul(x0, x0), dim=1,
                          name="cat")
        sym = mx.sym.Reshape(mx.sym.exp(y), shape=(0, 3, -1), name="rs")
        rs = np.random.RandomState(3)
        feeds = {"data0": rs.randn(2, 3).astype(np.float32),
                 "data1": rs.randn(1, 3).astype(np.float32)}
        expect_ops = {"Add", "Mul", "Concat", "Exp", "Reshape"}
    else:
        parts = mx.sym.split(data, num_outputs=2, axis=1, name="sp")
        sym = mx.sym.elemwise_sub(parts[1], parts[0], name="d")
        feeds = {"data": np.random.RandomState(4).randn(2, 4).astype(np.float32)}
        expect_ops = {"Split", "Sub"}
    model = _mxnet_loop(sym, params, [v.shape for v in feeds.values()])
    assert expect_ops <= {n.op_type for n in model.graph.node}
    got = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    want = sym.eval(**{k: mx.nd.array(v) for k, v in feeds.items()}, **params)[0].asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_builtin_converter_alone():
    # a FullyConnected node converted on its own: the input shape comes from proc_nodes
    node = {"op": "FullyConnected", "name": "fc", "attrs": {"num_hidden": "2"},
            "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]}
    w, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -1], np.float32)
    init = []
    proc = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, (4, 3))]
    lookup = [[NodeOutput("x", np.float32)], [NodeOutput("fc_weight", np.float32)],
              [NodeOutput("fc_bias", np.float32)]]
    nodes = o12.convert_fully_connected(node, initializer=init, outputs_lookup=lookup,
                                        weights={"fc_weight": w, "fc_bias": b},
                                        proc_nodes=proc, idx=3, opset_version=13)
    assert isinstance(nodes, list) and nodes[-1].output[0] == "fc"
    g = helper.make_graph(nodes, "g", proc, [helper.make_tensor_value_info(
        "fc", onnx.TensorProto.FLOAT, (4, 2))], initializer=init + [
        numpy_helper.from_array(w, "fc_weight"), numpy_helper.from_array(b, "fc_bias")])
    model = model_at(g, 13)
    x = np.random.RandomState(5).randn(4, 3).astype(np.float32)
    got = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, x @ w.T + b, rtol=1e-6)
    # a node of an op gpunda's exporter does not convert (every op MXNet's table names
    # converts now; box_iou is not in it) says so
    with pytest.raises(GpundaError, match="no ONNX converter for op '_contrib_box_iou'"):
        o12.convert_argsort({"op": "_contrib_box_iou", "name": "a", "inputs": [[0, 0, 0]]},
                            outputs_lookup=lookup, initializer=init, opset_version=13)
    with pytest.raises(GpundaError, match="opset 13 or newer"):
        o12.convert_relu({"op": "relu", "name": "r", "inputs": [[0, 0, 0]]},
                         outputs_lookup=lookup, initializer=init, proc_nodes=proc,
                         opset_version=12)


def test_helpers_answer_as_mxnet():
    # each answer recorded from MXNet 1.9.1's _op_translations_opset12
    init = []
    o12.create_tensor([1.5, 2.0], "w", init, dtype="float32")
    lookup = [[NodeOutput("w", np.float32)], [NodeOutput("x", np.float32)]]
    r = o12.scalar_op_helper({"name": "_rminusscalar0", "op": "_rminus_scalar",
                              "attrs": {"scalar": "3"}, "inputs": [[0, 0, 0]]}, "Sub",
                             initializer=init, outputs_lookup=lookup, idx=2)
    assert [type(p).__name__ for p in r] == ["ValueInfoProto"] and r[0].name == "_rminusscalar0"
    assert init[-1].name == "_rminusscalar0"
    assert numpy_helper.to_array(init[-1]).tolist() == [1.5, 1.0]
    r = o12.scalar_op_helper({"name": "_divscalar0", "op": "_div_scalar",
                              "attrs": {"scalar": "4"}, "inputs": [[1, 0, 0]]}, "Div",
                             initializer=init, outputs_lookup=lookup, idx=7)
    assert [p.name for p in r] == ["scalar_op7", "_divscalar0"]
    assert list(r[1].input) == ["x", "scalar_op7"] and r[1].op_type == "Div"
    assert numpy_helper.to_array(init[-1]).tolist() == [4.0] and list(init[-1].dims) == [1]
    t = o12.create_helper_trans_node("t", "x")
    assert (t.op_type, list(t.input), list(t.output), t.name, len(t.attribute)) == \
        ("Transpose", ["x"], ["t"], "t", 0)
    nodes = o12.transpose_last_two_dim("x", {"initializer": init})
    assert [n.op_type for n in nodes] == ["Shape", "Shape", "Sub", "Concat", "Pad", "Reshape",
                                          "Transpose", "Shape", "Slice", "Reshape"]
    consts = init[-3:]
    assert [c.name for c in consts] == ["x_0", "x_1", "x_8"]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, (2, 3, 4))],
                          [helper.make_tensor_value_info("x_transposed", 1, None)],
                          initializer=consts)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = ort.InferenceSession(model_at(g, 13).SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(got[0], x.swapaxes(1, 2))
    vi, dt = o12.convert_weights_and_inputs(
        {"name": "w2", "op": "null", "inputs": []}, is_input=False,
        weights={"w2": np.ones((2, 3), np.float32)}, initializer=init, outputs_lookup=lookup)
    assert dt == (np.float32,) and vi[0].name == "w2" and list(init[-1].dims) == [2, 3]
    vi, dt = o12.convert_weights_and_inputs(
        {"name": "d", "op": "null", "inputs": []}, is_input=True, in_type=1,
        in_shape=(2, None), initializer=init, outputs_lookup=lookup)
    dims = vi[0].type.tensor_type.shape.dim
    assert dt == (np.float32,) and dims[0].dim_value == 2 and not dims[1].HasField("dim_value")
