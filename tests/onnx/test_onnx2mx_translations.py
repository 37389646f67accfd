"""MXNet's ONNX import convention: ``import_onnx.GraphProto`` and the per-op translation
functions of ``mx.contrib.onnx.onnx2mx._op_translations`` (``fn(attrs, inputs, proto_obj)``)
and the ``_translation_utils`` helpers.

References: every case of tests/data/onnx2mx_scenarios.py was run on real MXNet 1.9.1 (with
onnx 1.13.1) by tests/data/make_onnx2mx_fixture.py; its answers (op name or Symbol JSON,
attributes, inputs; the imported model's graph, parameters and outputs) are in
tests/data/onnx2mx_mxnet191.json. Cases whose ONNX model is valid are also run in ONNX
Runtime, and where MXNet 1.9.1 fails on a valid node ONNX Runtime is the reference.
"""
import builtins
import json
import os
import sys

import numpy as np
import pytest

from _onnx_check import onnx, ort, model_at  # noqa: F401 -- skips when onnx/onnxruntime are missing

import gpunda as mx
from gpunda.base import GpundaError

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
sys.path.insert(0, DATA)
import onnx2mx_scenarios as sc  # noqa: E402

with open(os.path.join(DATA, "onnx2mx_mxnet191.json")) as _f:
    REF = json.load(_f)
CASES = {c["id"]: c for c in sc.CASES}

# MXNet 1.9.1 fails on these valid nodes: Clip (opset 11) without bounds is an
# UnboundLocalError; Slice and TopK of opset 10 pass float32 constants to integer
# parameters. gpunda gives ONNX's answer, checked in ONNX Runtime.
MXNET_FAILS = {"clip11_none", "slice10", "slice10_noaxes", "topk10"}
def _same_error(got, want):
    """gpunda raises a GpundaError that is also the exception class MXNet raised."""
    assert "error" in got, got
    assert "GpundaError" in got["mro"]
    if want["error"] != "MXNetError":
        assert want["error"] in got["mro"], (got, want)


def _ort_outputs(case):
    model = sc.make_model(onnx, case)
    feeds, _, _ = sc.parts(case)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_every_translation_function_is_in_convert_map():
    from gpunda.contrib.onnx.onnx2mx import _import_helper, _op_translations, import_onnx
    table = _import_helper._convert_map
    assert import_onnx.convert_map is table
    # recorded from MXNet 1.9.1: 97 ONNX op types, 93 distinct functions
    assert len(table) == 97
    assert len({f.__name__ for f in table.values()}) == 93
    for op, fn in table.items():
        assert getattr(_op_translations, fn.__name__) is fn, op
    assert table["SpatialBN"] is _op_translations.batch_norm
    assert table["RandomNormalLike"] is _op_translations.random_normal
    # every function has a case
    assert {f.__name__ for f in table.values()} == {c["fn"] for c in sc.CASES}


@pytest.mark.parametrize("cid", sorted(CASES))
def test_translation_as_mxnet(cid):
    case = CASES[cid]
    got = sc.translate(mx, case)
    want = REF["cases"][cid]["translate"]
    if cid == "topk10":
        # MXNet hands k on as a float32 array ([2.0]), which its topk then refuses
        assert want["attrs"]["dict"].pop("k") == {"dtype": "float32", "ndarray": [2.0]}
        assert got["attrs"]["dict"].pop("k") == 2
    elif cid in MXNET_FAILS:
        assert "error" in want     # the fixture says MXNet fails; gpunda does not
        assert "error" not in got, got
        return
    if "error" in want:
        _same_error(got, want)
        return
    assert got == want


@pytest.mark.parametrize("cid", sorted(CASES))
def test_imported_model_as_mxnet(cid):
    case = CASES[cid]
    got = sc.evaluate(mx, case)
    want = REF["cases"][cid]["evaluate"]
    if "error" in want and cid not in MXNET_FAILS:
        _same_error(got, want)
        return
    assert "error" not in got, got
    if cid not in MXNET_FAILS:
        assert got["sym"] == want["sym"]
        assert (got["args"], got["aux"]) == (want["args"], want["aux"])
        assert len(got["outs"]) == len(want["outs"])
        for g, w in zip(got["outs"], want["outs"]):
            assert (g["shape"], g["dtype"]) == (w["shape"], w["dtype"])
            if "value" in w:
                np.testing.assert_allclose(g["value"], w["value"], rtol=1e-5, atol=1e-6)
    if case["ort"] or cid in MXNET_FAILS:
        for g, r in zip(got["outs"], _ort_outputs(case)):
            assert tuple(g["shape"]) == r.shape
            np.testing.assert_allclose(np.asarray(g["value"]).reshape(r.shape),
                                       r.astype(np.float64), rtol=1e-4, atol=1e-5)


def test_random_cases_draw_from_their_distribution():
    # the random ops' outputs are shapes only in the fixture; check their ranges here
    imp = mx.contrib.onnx.onnx2mx.import_onnx
    model = sc.make_model(onnx, CASES["random_uniform"])
    sym, _, _ = imp.GraphProto().from_onnx(model.graph, 13)
    v = sym.eval(ctx=mx.cpu())[0].asnumpy()
    assert v.shape == (2, 3) and v.min() >= -1.0 and v.max() < 2.0
    model = sc.make_model(onnx, CASES["sample_multinomial"])
    sym, _, _ = imp.GraphProto().from_onnx(model.graph, 13)
    p = sc.parts(CASES["sample_multinomial"])[0]["p"]
    v = sym.eval(ctx=mx.cpu(), p=mx.nd.array(p))[0].asnumpy()
    assert v.dtype == np.int32 and v.shape == (2, 3) and 0 <= v.min() and v.max() < 4


def test_translation_utils_as_mxnet():
    got = sc.helpers(mx)
    want = REF["helpers"]
    assert sorted(got) == sorted(want)
    for k in want:
        if k in ("fix_bias1", "fix_channels_missing"):    # MXNet: ValueError
            assert got[k] == "GpundaValueError"
            assert issubclass(GpundaError, RuntimeError)
            continue
        assert got[k] == want[k], k


def test_fix_broadcast_and_pooling_compute_as_onnx():
    from gpunda.contrib.onnx.onnx2mx import _translation_utils as tu, import_onnx
    case = CASES["add_broadcast_axis"]
    model = sc.make_model(onnx, case)
    proto = import_onnx.GraphProto()
    proto.model_metadata = proto.get_graph_metadata(model.graph)
    for t in model.graph.initializer:
        proto._params[t.name] = proto._parse_array(t)
    x, b = mx.sym.var("x"), mx.sym.var("b")
    assert tu.get_input_shape(x, proto) == (2, 3, 2, 2)
    y = tu._fix_broadcast("broadcast_add", [x, b], 1, proto)
    feeds, inits, _ = sc.parts(case)
    got = y.eval(x=mx.nd.array(feeds["x"]), b=mx.nd.array(inits["b"]))[0].asnumpy()
    np.testing.assert_allclose(got, feeds["x"] + inits["b"].reshape(1, 3, 1, 1), rtol=1e-6)
    # asymmetric average pooling: zeros padded, then a valid pooling (NumPy reference)
    a = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    y = tu._fix_pooling("avg", [mx.sym.var("a")], {"kernel": (2, 2), "stride": (2, 2),
                                                   "pad": (1, 0, 1, 0)})
    got = y.eval(a=mx.nd.array(a))[0].asnumpy()
    padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (0, 0)))
    want = padded.reshape(1, 1, 3, 2, 2, 2).mean(axis=(3, 5))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_convert_operator_and_errors():
    from gpunda.contrib.onnx.onnx2mx import import_onnx
    proto = import_onnx.GraphProto()
    x = mx.sym.var("x")
    y = proto._convert_operator("r", "Relu", {}, [x])
    assert json.loads(y.tojson())["nodes"][-1]["name"] == "r"
    with pytest.raises(NotImplementedError, match="Operator NoSuchOp not implemented"):
        proto._convert_operator(None, "NoSuchOp", {}, [x])
    with pytest.raises(GpundaError):
        proto._convert_operator(None, "NoSuchOp", {}, [x])
    with pytest.raises(GpundaError, match="Flatten operator only supports axis=1"):
        proto._convert_operator(None, "Flatten", {"axis": 2}, [x])
    with pytest.raises(NotImplementedError, match="variable splits"):
        proto._convert_operator(None, "Split", {"split": (1, 2)}, [x])
    with pytest.raises(builtins.ValueError, match="Unexpected number of inputs"):
        proto._convert_operator(None, "Conv", {"kernel_shape": (3, 3)}, [x])


def _small_cnn():
    from onnx import helper, numpy_helper, TensorProto
    rs = np.random.RandomState(0)
    w = rs.randn(4, 2, 3, 3).astype(np.float32)
    b = rs.randn(4).astype(np.float32)
    fw = rs.randn(5, 16).astype(np.float32)
    fb = rs.randn(5).astype(np.float32)
    inits = {"w": w, "b": b, "fw": fw, "fb": fb}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    g_in = [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 4, 4))] + \
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inits.items()]
    graph = helper.make_graph(nodes, "cnn", g_in,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 5))],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return model_at(graph, 11)


def test_whole_model_through_graphproto_gluon_and_import_model(tmp_path):
    from gpunda.contrib.onnx.onnx2mx import import_onnx
    model = _small_cnn()
    x = np.random.RandomState(1).randn(1, 2, 4, 4).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    # MXNet's GraphProto makes the parameters on the default context (gpu(0) under
    # --standin-gpu): the data goes there too
    ctx = mx.current_context()
    sym, args, aux = import_onnx.GraphProto().from_onnx(model.graph, 11)
    assert sorted(args) == ["b", "fb", "fw", "w"] and aux == {}
    got = sym.eval(ctx=ctx, x=mx.nd.array(x, ctx=ctx), **args)[0].asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    net = import_onnx.GraphProto().graph_to_gluon(model.graph, ctx, 11)
    np.testing.assert_allclose(net(mx.nd.array(x, ctx=ctx)).asnumpy(), want, rtol=1e-4,
                               atol=1e-5)
    # gpunda's own importer still takes the same model
    path = tmp_path / "cnn.onnx"
    onnx.save(model, str(path))
    sym2, args2, aux2 = mx.contrib.onnx.import_model(str(path))
    got2 = sym2.eval(ctx=ctx, x=mx.nd.array(x, ctx=ctx), **args2)[0].asnumpy()
    np.testing.assert_allclose(got2, want, rtol=1e-4, atol=1e-5)

