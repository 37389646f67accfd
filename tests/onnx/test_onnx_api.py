"""RNN export, bad input, operator support, the mxnet alias, the CLI and lazy loading."""
import os
import subprocess
import sys

import numpy as np
import pytest

from _onnx_check import onnx, check_all, run_ort, RTOL, ATOL, model_at

import gpunda as mx
from gpunda.base import GpundaError

S = mx.sym
FIX = os.environ.get("GPUNDA_MXNET_FIXTURES", "")


@pytest.mark.parametrize("mode,layers,bidir", [("lstm", 2, True), ("gru", 1, False),
                                               ("rnn_tanh", 1, True), ("rnn_relu", 2, False)])
def test_rnn_roundtrip(mode, layers, bidir, tmp_path):
    layer = {"lstm": mx.gluon.rnn.LSTM, "gru": mx.gluon.rnn.GRU}.get(mode)
    kw = {"activation": mode[4:]} if layer is None else {}
    layer = layer or mx.gluon.rnn.RNN
    net = layer(5, num_layers=layers, bidirectional=bidir, input_size=3, **kw)
    net.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (4, 2, 3)))
    net.hybridize()
    want = net(x).asnumpy()
    path = tmp_path / "rnn.onnx"
    net.export(str(tmp_path / "rnn"))
    sym, args, auxs = mx.model.load_checkpoint(str(tmp_path / "rnn"), 0)
    params = dict(args)
    params.update(auxs)
    names = [n for n in sym.list_inputs() if n not in params]
    state = (layers * (2 if bidir else 1), 2, 5)
    shapes = [x.shape] + [state] * (len(names) - 1)   # the begin states, zeros
    mx.onnx.export_model(sym, params, shapes, np.float32, str(path))
    feed = {n: (x.asnumpy() if k == 0 else np.zeros(state, np.float32))
            for k, n in enumerate(names)}
    check_all(path, feed, [want])


def _mlp_sym():
    return S.FullyConnected(S.var("data"), num_hidden=3, name="fc1")


def test_unconvertible_op_names_node_and_leaves_no_file(tmp_path):
    sym = S.ctc_loss(S.var("data"), S.var("label"), name="myctc")
    path = tmp_path / "m.onnx"
    with pytest.raises(GpundaError, match="node 'myctc' has op 'CTCLoss'"):
        mx.onnx.export_model(sym, {}, [(5, 2, 4), (2, 3)], np.float32, str(path))
    assert os.listdir(tmp_path) == []


def test_unsupported_params_name_node(tmp_path):
    sym = S.Pooling(S.var("data"), kernel=(2, 2), pool_type="sum", name="p1")
    with pytest.raises(GpundaError, match="'p1'.*Pooling.*pool_type='sum'"):
        mx.onnx.export_model(sym, {}, [(1, 1, 4, 4)], np.float32, str(tmp_path / "m.onnx"))
    assert os.listdir(tmp_path) == []


def test_missing_param_is_named(tmp_path):
    params = {"fc1_weight": mx.nd.ones((3, 4))}
    with pytest.raises(GpundaError, match="fc1_bias"):
        mx.onnx.export_model(_mlp_sym(), params, [(2, 4)], np.float32,
                             str(tmp_path / "m.onnx"))


def test_unwritable_path(tmp_path):
    params = {"fc1_weight": mx.nd.ones((3, 4)), "fc1_bias": mx.nd.zeros((3,))}
    bad = tmp_path / "no_such_dir" / "m.onnx"
    with pytest.raises(GpundaError, match="no_such_dir"):
        mx.onnx.export_model(_mlp_sym(), params, [(2, 4)], np.float32, str(bad))


def test_opset_choice(tmp_path):
    params = {"fc1_weight": mx.nd.ones((3, 4)), "fc1_bias": mx.nd.zeros((3,))}
    path = str(tmp_path / "m.onnx")
    for opset in (13, 17):
        mx.onnx.export_model(_mlp_sym(), params, [(2, 4)], np.float32, path,
                             opset_version=opset)
        assert onnx.load(path).opset_import[0].version == opset
        np.testing.assert_allclose(run_ort(path, {"data": np.ones((2, 4), np.float32)})[0],
                                   np.full((2, 3), 4.0))
    with pytest.raises(GpundaError, match="opset_version=7"):
        mx.onnx.export_model(_mlp_sym(), params, [(2, 4)], np.float32, path, opset_version=7)


def test_layernorm_before_opset17_is_decomposed(tmp_path):
    sym = S.LayerNorm(S.var("data"), S.var("g"), S.var("b"))
    x = np.random.RandomState(0).uniform(size=(2, 5)).astype(np.float32)
    params = {"g": mx.nd.ones((5,)) * 2, "b": mx.nd.ones((5,))}
    want = sym.eval(data=mx.nd.array(x), **params)[0].asnumpy()
    path = tmp_path / "ln.onnx"
    mx.onnx.export_model(sym, params, [x.shape], np.float32, str(path), opset_version=13)
    assert "LayerNormalization" not in {n.op_type for n in onnx.load(str(path)).graph.node}
    check_all(path, {"data": x}, [want])


def test_import_unsupported_op_and_opset(tmp_path):
    h = onnx.helper
    vi = lambda n: h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [2])  # noqa: E731
    graph = h.make_graph([h.make_node("Hardmax", ["x"], ["y"], name="hm")], "g", [vi("x")],
                         [vi("y")])
    path = str(tmp_path / "m.onnx")
    onnx.save(model_at(graph, 17), path)
    with pytest.raises(GpundaError, match="'hm'.*Hardmax"):
        mx.contrib.onnx.import_model(path)
    graph = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [vi("x")], [vi("y")])
    onnx.save(model_at(graph, 6), path)
    with pytest.raises(GpundaError, match="opset 6"):
        mx.contrib.onnx.import_model(path)


def test_operator_support_and_names():
    ops = mx.onnx.get_operator_support()
    assert ops == sorted(ops)
    for op in ("Convolution", "Deconvolution", "Pooling", "BatchNorm", "LayerNorm", "RNN",
               "FullyConnected", "Reshape", "softmax", "Embedding", "where", "topk", "Pad",
               "UpSampling", "SoftmaxOutput", "_plus_scalar", "broadcast_add"):
        assert op in ops
    assert mx.contrib.onnx.export_model is not None
    # MXNet 1.9.1: onnx2mx.import_model is the module holding the function of that name
    assert callable(mx.contrib.onnx.onnx2mx.import_model.import_model)


def test_metadata_and_gluon_import(tmp_path):
    params = {"fc1_weight": mx.nd.ones((3, 4)), "fc1_bias": mx.nd.arange(3)}
    path = str(tmp_path / "m.onnx")
    mx.onnx.export_model(_mlp_sym(), params, [(2, 4)], np.float32, path)
    meta = mx.contrib.onnx.get_model_metadata(path)
    assert meta == {"input_tensor_data": [("data", (2, 4), onnx.TensorProto.FLOAT)],
                    "output_tensor_data": [("fc1_output", (2, 3))]}
    mx.onnx.export_model(_mlp_sym(), params, [(2, 4)], np.float32, path, dynamic=True,
                         dynamic_input_shapes=[(None, 4)])
    meta = mx.contrib.onnx.get_model_metadata(path)
    assert meta["input_tensor_data"] == [("data", (0, 4), onnx.TensorProto.FLOAT)]
    assert meta["output_tensor_data"] == [("fc1_output", (0, 3))]
    ctx = mx.current_context()        # gpu(0) under --standin-gpu
    net = mx.contrib.onnx.import_to_gluon(path, ctx)
    np.testing.assert_allclose(net(mx.nd.ones((2, 4), ctx=ctx)).asnumpy(),
                               np.tile([4.0, 5.0, 6.0], (2, 1)))


def test_mxnet_alias_names():
    code = ("import gpunda; gpunda.install_mxnet_alias(); import mxnet.onnx, "
            "mxnet.contrib.onnx; import gpunda.onnx, gpunda.contrib.onnx; "
            "assert mxnet.onnx is gpunda.onnx and mxnet.contrib.onnx is gpunda.contrib.onnx; "
            "print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert r.stdout.strip() == "ok", r.stderr


def test_import_gpunda_does_not_import_onnx():
    code = "import sys, gpunda; print('onnx' in sys.modules, 'onnxruntime' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert r.stdout.strip() == "False False", r.stderr


@pytest.mark.mxnet_fixtures
def test_cli_export_onnx(tmp_path):
    out = tmp_path / "cnn.onnx"
    r = subprocess.run([sys.executable, "-m", "gpunda", "export-onnx",
                        os.path.join(FIX, "cnn"), "0", "--shape", "data=2,3,16,16", "-o",
                        str(out)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert r.returncode == 0, r.stderr
    assert "Convolution x2" in r.stdout and "Conv x2" in r.stdout
    exp = np.load(os.path.join(FIX, "cnn-expected.npz"))
    np.testing.assert_allclose(run_ort(out, {"data": exp["in__data"]})[0],
                               exp["predict__out__0"], rtol=RTOL, atol=ATOL)
    r = subprocess.run([sys.executable, "-m", "gpunda", "export-onnx",
                        os.path.join(FIX, "cnn"), "0", "--shape", "bogus=1,2"],
                       capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.getcwd()))
    assert r.returncode == 1 and "bogus" in r.stderr


def test_random_samplers_export(tmp_path):
    # samples cannot match gpunda's draw for draw: shape, dtype and range are checked
    x = S.var("data")
    sym = S.Group([S.broadcast_add(x, S.random.uniform(low=2, high=3, shape=(2, 500))),
                   S.broadcast_add(x, S.random.normal(loc=5, scale=0.1, shape=(2, 500))),
                   S.sample_multinomial(S.softmax(x), shape=(3,))])
    path = tmp_path / "r.onnx"
    mx.onnx.export_model(sym, {}, [(2, 500)], np.float32, str(path))
    u, n, m = run_ort(path, {"data": np.zeros((2, 500), np.float32)})
    assert u.shape == n.shape == (2, 500) and m.shape == (2, 3) and m.dtype == np.int32
    assert 2 <= u.min() and u.max() <= 3 and abs(n.mean() - 5) < 0.05
    assert 0 <= m.min() and m.max() < 500


def test_import_opset11_attribute_forms(tmp_path):
    # a graph written the opset-11 way (axes/split as attributes), as older exporters do
    h, T = onnx.helper, onnx.TensorProto
    nodes = [h.make_node("Unsqueeze", ["x"], ["u"], axes=[0]),
             h.make_node("Squeeze", ["u"], ["s"], axes=[0]),
             h.make_node("ReduceMean", ["s"], ["m"], axes=[1], keepdims=1),
             h.make_node("Split", ["s"], ["a", "b"], axis=1, split=[1, 3]),
             h.make_node("Sub", ["b", "m"], ["d"]),
             h.make_node("Softmax", ["d"], ["y"], axis=1),
             h.make_node("Concat", ["a", "y"], ["z"], axis=1),
             h.make_node("Clip", ["z", "lo", "hi"], ["c"])]
    inits = [onnx.numpy_helper.from_array(np.asarray(-0.5, np.float32), "lo"),
             onnx.numpy_helper.from_array(np.asarray(0.8, np.float32), "hi")]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                         [h.make_tensor_value_info("c", T.FLOAT, [2, 4])], initializer=inits)
    path = tmp_path / "old.onnx"
    onnx.save(model_at(graph, 11), str(path))
    x = np.random.RandomState(3).uniform(-2, 2, (2, 4)).astype(np.float32)
    want = run_ort(path, {"x": x})[0]
    from _onnx_check import run_imported
    np.testing.assert_allclose(run_imported(path, {"x": x})[0], want, rtol=RTOL, atol=ATOL)


def test_import_flatten_other_axes(tmp_path):
    h, T = onnx.helper, onnx.TensorProto
    graph = h.make_graph([h.make_node("Flatten", ["x"], ["y"], axis=2),
                          h.make_node("Flatten", ["x"], ["z"], axis=0)], "g",
                         [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4, 5])],
                         [h.make_tensor_value_info("y", T.FLOAT, None),
                          h.make_tensor_value_info("z", T.FLOAT, None)])
    path = tmp_path / "f.onnx"
    onnx.save(model_at(graph, 17), str(path))
    x = np.random.RandomState(4).uniform(size=(2, 3, 4, 5)).astype(np.float32)
    check_all(path, {"x": x}, [x.reshape(6, 20), x.reshape(1, 120)])


DTYPE_CKPT = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "dtype_ckpt")


def test_legacy_softmax_checkpoint_with_data_and_label_shapes(tmp_path):
    # a checkpoint saved by real MXNet 1.9.1's Module (FullyConnected -> SoftmaxOutput,
    # its json holds softmax_label); MXNet's exporter takes in_shapes for data and label
    # and drops the label input. softmax.npz: MXNet's output on x.
    sym, args, auxs = mx.model.load_checkpoint(os.path.join(DTYPE_CKPT, "softmax_float32"), 0)
    assert sym.list_inputs()[-1] == "softmax_label"
    ref = np.load(os.path.join(DTYPE_CKPT, "softmax.npz"))
    for k, kw in enumerate([dict(in_types=np.float32),
                            dict(in_types=[np.float32, np.float32]),
                            dict(in_types=np.float32, dynamic=True,
                                 dynamic_input_shapes=[(None, 4), (None,)])]):
        path = str(tmp_path / f"softmax{k}.onnx")
        mx.onnx.export_model(sym, dict(args, **auxs), [(2, 4), (2,)], onnx_file_path=path,
                             **kw)
        sess = onnx.load(path)
        assert [i.name for i in sess.graph.input
                if i.name not in {t.name for t in sess.graph.initializer}] == ["data"]
        np.testing.assert_allclose(run_ort(path, {"data": ref["x"]})[0], ref["out"],
                                   rtol=1e-6, atol=1e-7)
    with pytest.raises(GpundaError, match=r"3 in_shapes.*\['data'\].*softmax_label"):
        mx.onnx.export_model(sym, dict(args, **auxs), [(2, 4), (2,), (2,)],
                             onnx_file_path=str(tmp_path / "bad.onnx"))


def test_float64_activations_export_in_forms_onnxruntime_runs(tmp_path):
    # ONNX Runtime has float32-only kernels for Softplus, Softsign, Elu, Selu, HardSigmoid,
    # Sinh, Cosh, Tan, Asinh, Acosh, Atanh (and Cos before 1.24): a float64 export builds them from ops it runs
    # in float64, with float64 accuracy (NumPy is the reference)
    x = S.var("data")
    cases = [
        (S.Activation(x, act_type="softrelu"), lambda v: np.logaddexp(0, v)),
        (S.Activation(x, act_type="softsign"), lambda v: v / (1 + np.abs(v))),
        (S.LeakyReLU(x, act_type="elu", slope=0.25), lambda v: np.where(v > 0, v, 0.25 * np.expm1(v))),
        (S.LeakyReLU(x, act_type="selu"),
         lambda v: 1.0507009873554805 * np.where(v > 0, v, 1.6732632423543772 * np.expm1(v))),
        (S.hard_sigmoid(x, alpha=0.25, beta=0.5), lambda v: np.clip(0.25 * v + 0.5, 0, 1)),
        (S.sinh(x), np.sinh), (S.cosh(x), np.cosh), (S.tan(x), np.tan), (S.cos(x), np.cos),
        (S.arcsinh(x), np.arcsinh), (S.arccosh(x * x + 1.5), lambda v: np.arccosh(v * v + 1.5)),
        (S.arctanh(x * 0.03), lambda v: np.arctanh(v * 0.03)),
    ]
    v = np.concatenate([[-30.0, -1.5, -0.3, 0.0], np.linspace(0.2, 30.0, 8)]).reshape(3, 4)
    path = str(tmp_path / "act64.onnx")
    mx.onnx.export_model(S.Group([c[0] for c in cases]), {}, [(3, 4)], np.float64, path)
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert not ops & {"Softplus", "Softsign", "Elu", "Selu", "HardSigmoid", "Sinh", "Cosh",
                      "Cos", "Tan", "Asinh", "Acosh", "Atanh"}
    got = run_ort(path, {"data": v})
    for k, ((_, ref), g) in enumerate(zip(cases, got)):
        assert g.dtype == np.float64
        # (absolute 1e-15: softplus(-30) = 9.36e-14 is log(1 + e^-30), rounded at 1 + e^-30)
        np.testing.assert_allclose(g, ref(v), rtol=1e-12, atol=1e-15, err_msg=f"case {k}")
    # float32 keeps the single ONNX op
    path32 = str(tmp_path / "act32.onnx")
    mx.onnx.export_model(cases[0][0], {}, [(3, 4)], np.float32, path32)
    assert [n.op_type for n in onnx.load(path32).graph.node] == ["Softplus"]
    np.testing.assert_allclose(run_ort(path32, {"data": v.astype(np.float32)})[0],
                               np.logaddexp(0, v), rtol=1e-6)


def test_float64_node_without_runnable_form_is_named_at_export(tmp_path):
    # ONNX Runtime has no float64 Erf and no exact form from its float64 ops: say so
    with pytest.warns(UserWarning, match=r"node 'myerf' \(op erf\).*Erf on float64.*ONNX "
                                         r"Runtime has no kernel"):
        mx.onnx.export_model(S.erf(S.var("data"), name="myerf"), {}, [(3,)], np.float64,
                             str(tmp_path / "erf.onnx"))
