"""The INT8 flow of mx.contrib.quantization (quantize_model, quantize_model_mkldnn,
quantize_graph + calib_graph, quantize_net(_v2)) against real MXNet 1.9.1.

Fixture: tests/data/quant_flow/, made by tests/data/make_quant_fixture.py with MXNet 1.9.1
(CPU, oneDNN) from the scenarios of tests/data/quant_scenarios.py: a model-zoo ResNetV1
at 32x32 and a BERT-like encoder block, briefly trained on synthetic data, quantized by
MXNet from the same float checkpoint and calibration batches as here. Recorded: MXNet's
quantized graphs (its symbol JSON, or compact node lists), checksums of its quantized
params, its top-1 and first-batch outputs on held-back data, and its outputs running
gpunda's quantized symbol and params.

The small-graph expectations below quote the MXNet 1.9.1 snippet that gave them
(MXNET_SUBGRAPH_BACKEND=NONE /work/mxref/bin/python).
"""
import json
import os
import sys
import warnings

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"))
import quant_scenarios as S  # noqa: E402


@pytest.fixture(autouse=True)
def _on_the_cpu():
    # the INT8 flow against MXNet's CPU fixture: calibration data and parameters on cpu(0),
    # as MXNet's quantize_* default ctx=cpu()
    with mx.cpu():
        yield


RESULTS = json.load(open(os.path.join(S.FIXTURE, "results.json")))
_CACHE = {}


def _quantized(model, config):
    if (model, config) not in _CACHE:
        _CACHE[(model, config)] = S.quantize(mx, model, config)
    return _CACHE[(model, config)]


def _compact(qsym):
    return _compact_json(json.loads(qsym.tojson()))


def _mx_graph(model, config):
    """MXNet's quantized graph of ``config``: its symbol file for the first config."""
    if config == S.CONFIGS[model][0][0]:
        with open(os.path.join(S.FIXTURE, f"{model}_mx-symbol.json")) as f:
            return _compact_json(json.load(f))
    g = RESULTS[model][config]["graph"]
    return g["nodes"], g["heads"]


def _compact_json(js):
    return ([n["name"] if n["op"] == "null" else
             [n["op"], n["name"], n.get("attrs", {}), [e[:2] for e in n["inputs"]]]
             for n in js["nodes"]], [e[:2] for e in js["heads"]])


GRAPH_CASES = [(m, c) for m, cs in S.CONFIGS.items() for c, fn, _ in cs
               if fn == "quantize_model"]


@pytest.mark.parametrize("model,config", GRAPH_CASES)
def test_quantized_graph_is_mxnets(model, config):
    """Same nodes in the same order, names, attributes and inputs as MXNet's quantize_model;
    the calibration ranges within MXNet's printing (6 decimals) for naive calibration and
    within 3% for the entropy search (its histogram bins move with float rounding)."""
    qsym = _quantized(model, config)[0]
    got_nodes, got_heads = _compact(qsym)
    want_nodes, want_heads = _mx_graph(model, config)
    assert got_heads == want_heads
    assert len(got_nodes) == len(want_nodes)
    rtol = 0.03 if "entropy" in config else 2e-4
    for got, want in zip(got_nodes, want_nodes):
        if isinstance(want, str):
            assert got == want
            continue
        assert got[0] == want[0] and got[1] == want[1] and got[3] == want[3], (got, want)
        plain = {k: v for k, v in want[2].items() if "calib_range" not in k}
        assert {k: v for k, v in got[2].items() if "calib_range" not in k} == plain, got[1]
        for key in ("min_calib_range", "max_calib_range"):
            assert (key in got[2]) == (key in want[2]), (got[1], key)
            if key in want[2]:
                g, w = float(got[2][key]), float(want[2][key])
                assert abs(g - w) <= rtol * max(abs(w), 0.05) + 2e-6, (got[1], key, g, w)


@pytest.mark.parametrize("model,config", GRAPH_CASES)
def test_quantized_params_are_mxnets(model, config):
    """The `_quantize` weights (int8), their ranges and the copied float params have the
    names, dtypes and values MXNet gives (checksums: sum and sum of squares). (MXNet's
    fused quantize_model_mkldnn keeps conv weights float for its fused nodes to quantize
    at run time; gpunda's unfused graph takes them quantized.)"""
    qarg = _quantized(model, config)[1]
    want = RESULTS[model][config]["params"]
    assert sorted(qarg) == sorted(want)
    for name, (dtype, *sums) in want.items():
        v = qarg[name].asnumpy().astype("f8")
        assert np.dtype(qarg[name].dtype).name in dtype, (name, dtype)
        if not sums:             # a float param copied as it is
            continue
        total, squares = sums
        if dtype.endswith("int8'>"):
            assert v.sum() == total and (v ** 2).sum() == squares, name
        else:
            np.testing.assert_allclose([v.sum(), (v ** 2).sum()], [total, squares],
                                       rtol=1e-5, atol=1e-5, err_msg=name)


def _accuracy(top1, model):
    return float(np.mean(np.asarray(top1) == np.asarray(RESULTS[model]["labels"])))


RUN_CASES = [(m, c) for m, cs in S.CONFIGS.items() for c, _, _ in cs
             if isinstance(RESULTS[m][c]["outputs"], dict) and (m, c) not in S.GRAPH_ONLY]


@pytest.mark.parametrize("model,config", RUN_CASES)
def test_quantized_accuracy_matches_mxnet(model, config):
    """gpunda's quantized model, run by gpunda, classifies the held-back data as MXNet's
    quantized model run by MXNet: same accuracy within 2 of 64 samples, top-1 agreement
    >= 95%; for the unfused graphs (same graph both sides) the first batch's outputs within
    0.02 (int8 rounding steps)."""
    qsym, qarg, qaux = _quantized(model, config)
    out = S.predict(mx, qsym, qarg, qaux, model)
    want = RESULTS[model][config]["outputs"]
    assert abs(_accuracy(out.argmax(1), model) - _accuracy(want["top1"], model)) <= 2 / 64
    assert np.mean(out.argmax(1) == np.asarray(want["top1"])) >= 0.95
    float_top1 = RESULTS[model]["float"]["top1"]
    assert np.mean(out.argmax(1) == np.asarray(float_top1)) >= 0.95
    if "mkldnn" not in config:
        np.testing.assert_allclose(out[:S.BATCH], want["head"], atol=0.02)


@pytest.mark.parametrize("config", [c for c, fn, kw in S.CONFIGS["cnn"]
                                    if isinstance(RESULTS["cnn"][c]["outputs"], str)])
def test_unfused_cnn_accuracy_matches_mxnets_fused(config):
    """MXNet's CPU cannot run its own unfused int8 CNN graph (its quantized_conv takes only
    uint8); gpunda runs it and classifies as MXNet's fused quantize_model_mkldnn model."""
    qsym, qarg, qaux = _quantized("cnn", config)
    out = S.predict(mx, qsym, qarg, qaux, "cnn")
    fused = RESULTS["cnn"]["mkldnn_naive_int8"]["outputs"]["top1"]
    assert abs(_accuracy(out.argmax(1), "cnn") - _accuracy(fused, "cnn")) <= 2 / 64
    assert np.mean(out.argmax(1) == np.asarray(fused)) >= 0.95


def test_float_model_is_mxnets():
    for model in S.MODELS:
        sym, args, auxs = S.load_float(mx, model)
        out = S.predict(mx, sym, args, auxs, model)
        np.testing.assert_allclose(out[:S.BATCH], RESULTS[model]["float"]["head"], atol=2e-4)
        assert out.argmax(1).tolist() == RESULTS[model]["float"]["top1"]


def test_gpunda_runs_mxnets_quantized_files():
    """MXNet's quantized BERT block (symbol and params as MXNet saved them) gives MXNet's
    outputs in gpunda; MXNet's quantized ResNet symbol runs with the params gpunda made
    (the same checksums as MXNet's, test_quantized_params_are_mxnets)."""
    sym = mx.sym.load(os.path.join(S.FIXTURE, "bert_mx-symbol.json"))
    saved = mx.nd.load(os.path.join(S.FIXTURE, "bert_mx-0000.params"))
    assert saved["arg:bert_qkv_weight_quantize"].dtype == np.int8
    args = {k[4:]: v for k, v in saved.items() if k.startswith("arg:")}
    auxs = {k[4:]: v for k, v in saved.items() if k.startswith("aux:")}
    out = S.predict(mx, sym, args, auxs, "bert")
    want = RESULTS["bert"][S.CONFIGS["bert"][0][0]]["outputs"]
    np.testing.assert_allclose(out[:S.BATCH], want["head"], atol=0.02)
    assert np.mean(out.argmax(1) == np.asarray(want["top1"])) >= 0.95
    config = S.CONFIGS["cnn"][0][0]
    sym = mx.sym.load(os.path.join(S.FIXTURE, "cnn_mx-symbol.json"))
    _, qarg, qaux = _quantized("cnn", config)
    out = S.predict(mx, sym, qarg, qaux, "cnn")
    assert np.mean(out.argmax(1) == np.asarray(RESULTS["cnn"]["float"]["top1"])) >= 0.95


@pytest.mark.parametrize("model,config", [(m, c) for m, cs in S.CONFIGS.items()
                                          for c, _, _ in cs])
def test_mxnet_ran_gpundas_quantized_files(model, config, tmp_path):
    """MXNet loaded gpunda's saved quantized symbol and params (make_quant_fixture.py, step
    3): where its CPU kernels run the graph, its outputs are gpunda's own within int8
    steps; the unfused CNN graphs MXNet's CPU refuses as it refuses its own."""
    qsym, qarg, qaux = _quantized(model, config)
    mx.model.save_checkpoint(str(tmp_path / "q"), 0, qsym, qarg, qaux)
    qsym, qarg, qaux = mx.model.load_checkpoint(str(tmp_path / "q"), 0)
    ran = RESULTS[model][config]["mxnet_runs_gpunda"]
    own = RESULTS[model][config]["outputs"]
    if (model, config) in S.GRAPH_ONLY:
        assert isinstance(ran, dict)          # MXNet ran it (S.GRAPH_ONLY says why no more)
        return
    if isinstance(own, str):       # MXNet's CPU cannot run this graph at all
        assert ran == own and "uint8" in ran
        return
    if "mkldnn" in config:         # gpunda's unfused graph has int8 convs MXNet refuses
        assert isinstance(ran, str) and "only supports uint8" in ran
        return
    out = S.predict(mx, qsym, qarg, qaux, model)
    np.testing.assert_allclose(out[:S.BATCH], ran["head"], atol=0.02)
    assert np.mean(out.argmax(1) == np.asarray(ran["top1"])) >= 0.95


def _small_graph():
    data = mx.sym.var("data")
    t = mx.sym.Activation(data, act_type="tanh", name="tanh0")
    c = mx.sym.Convolution(t, num_filter=4, kernel=(3, 3), name="conv0", no_bias=True)
    bn = mx.sym.BatchNorm(data, name="bn0", fix_gamma=False)
    c1 = mx.sym.Convolution(bn, num_filter=4, kernel=(3, 3), name="conv1")
    s = mx.sym.sigmoid(c, name="sig0")
    g = mx.sym.Group([s, c1, mx.sym.Pooling(c1, kernel=(2, 2), pool_type="avg",
                                            name="pool0")])
    arg_shapes, _, aux_shapes = g.infer_shape(data=(2, 3, 6, 6))
    rs = np.random.RandomState(0)
    args = {n: mx.nd.array(rs.rand(*s)) for n, s in zip(g.list_arguments(), arg_shapes)
            if n != "data"}
    auxs = {n: mx.nd.ones(s) for n, s in zip(g.list_auxiliary_states(), aux_shapes)}
    return g, args, auxs


def _ops(qsym):
    return [(n["op"], n["name"]) for n in json.loads(qsym.tojson())["nodes"]
            if n["op"] != "null"]


def test_quantize_modes_name_nodes_as_mxnet():
    """MXNet 1.9.1:
        qsym, _, _ = mx.contrib.quant.quantize_model(g, args, auxs, calib_mode='none',
            quantize_mode=mode, label_names=None)     # g as _small_graph builds it
    'full' quantizes BatchNorm and Pooling; 'smart' keeps them float (no conv feeds bn0,
    none follows pool0). There the conv1 output, read by pool0 and by the graph, is
    dequantized once: MXNet dequantizes its dequantize node again for the graph output
    ([[24, 0], [24, 1], [24, 2]] inputs, outputs 1 and 2 do not exist), which no
    executor binds; gpunda outputs the first dequantize (docs/compat.md)."""
    g, args, auxs = _small_graph()
    qsym = mx.contrib.quant.quantize_model(g, args, auxs, calib_mode="none",
                                           quantize_mode="full", label_names=None)[0]
    assert _ops(qsym) == [
        ("Activation", "tanh0"), ("_contrib_quantize_v2", "tanh0_output_quantize"),
        ("_contrib_quantized_conv", "quantized_conv0"), ("_contrib_requantize", "requantize_conv0"),
        ("_contrib_dequantize", "conv0_dequantize"), ("sigmoid", "sig0"),
        ("_contrib_quantize_v2", "data_quantize"),
        ("_contrib_quantized_batch_norm", "quantized_bn0"),
        ("_contrib_quantized_conv", "quantized_conv1"), ("_contrib_requantize", "requantize_conv1"),
        ("_contrib_dequantize", "conv1_dequantize"),
        ("_contrib_quantized_pooling", "quantized_pool0"),
        ("_contrib_dequantize", "pool0_dequantize")]
    assert qsym.list_outputs() == ["sig0_output", "conv1_dequantize_output",
                                   "pool0_dequantize_output"]
    qsym = mx.contrib.quant.quantize_model(g, args, auxs, calib_mode="none",
                                           quantize_mode="smart", label_names=None)[0]
    assert _ops(qsym)[5:] == [
        ("sigmoid", "sig0"), ("BatchNorm", "bn0"),
        ("_contrib_quantize_v2", "bn0_output_quantize"),
        ("_contrib_quantized_conv", "quantized_conv1"), ("_contrib_requantize", "requantize_conv1"),
        ("_contrib_dequantize", "conv1_dequantize"), ("Pooling", "pool0")]
    heads = json.loads(qsym.tojson())["heads"]
    assert [h[:2] for h in heads] == [[9, 0], [24, 0], [25, 0]]


def test_excluded_names_and_ops_stay_float():
    g, args, auxs = _small_graph()
    qsym = mx.contrib.quant.quantize_model(g, args, auxs, calib_mode="none",
                                           quantize_mode="full", label_names=None,
                                           excluded_sym_names=["conv0"],
                                           excluded_op_names=["Pooling"])[0]
    names = dict((n, o) for o, n in _ops(qsym))
    assert names["conv0"] == "Convolution" and names["pool0"] == "Pooling"
    assert "quantized_conv1" in names and "tanh0_output_quantize" not in names
    # with the op excluded, the output quantize after a non-listing op is "<name>_0"
    s = mx.sym.FullyConnected(mx.sym.sigmoid(mx.sym.var("data"), name="n"), num_hidden=2,
                              name="fc", flatten=False)
    q, layers = mx.contrib.quant._quantize_symbol(s, mx.cpu(), quantized_dtype="int8",
                                                  quantize_mode="full")
    # MXNet 1.9.1, the same two calls: ['n_output', 'fc_weight', 'fc_bias', 'fc_output'],
    # and with offline_params=['fc_weight', 'fc_bias'] ['n_output', 'fc_output']
    assert _ops(q)[1][1] == "n_0_quantize"
    assert layers == ["n_output", "fc_weight", "fc_bias", "fc_output"]
    q, layers = mx.contrib.quant._quantize_symbol(s, mx.cpu(), quantized_dtype="int8",
                                                  offline_params=["fc_weight", "fc_bias"],
                                                  quantize_mode="full")
    assert layers == ["n_output", "fc_output"]
    assert "fc_weight_quantize_min" in q.list_arguments()


def test_quantize_graph_then_calib_graph_equals_quantize_model():
    """quantize_graph's collector, filled by monitoring a float run, calibrates as
    quantize_model's naive mode does; 'none' is refused by calib_graph."""
    sym, args, auxs = S.load_float(mx, "bert")
    qsym, qarg, qaux, collector = mx.contrib.quant.quantize_graph(
        sym, args, auxs, calib_mode="naive", quantize_mode="smart")
    mod = mx.mod.Module(sym, context=mx.cpu())
    it = S.calib_iter(mx, "bert")
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label, for_training=False)
    mod.set_params(args, auxs)
    mx.contrib.quant._collect_layer_statistics(mod, it, collector)
    csym, carg, _ = mx.contrib.quant.calib_graph(qsym, args, auxs, collector,
                                                 calib_mode="naive")
    want = _quantized("bert", "naive_int8")[0]
    assert _compact(csym) == _compact(want)
    assert sorted(carg) == sorted(qarg)
    with pytest.raises(ValueError, match="naive or entropy"):
        mx.contrib.quant.calib_graph(qsym, args, auxs, collector, calib_mode="none")


def _bert_net():
    net = S.make_bert(mx)
    sym, args, auxs = S.load_float(mx, "bert")
    net.initialize()
    net(mx.nd.zeros(S.SHAPES["bert"]))
    for name, p in net.collect_params().items():
        p.set_data(args[name])
    return net


@pytest.mark.parametrize("calib", ["loader", "list", "iter"])
def test_quantize_net_v2_takes_mxnets_calibration_inputs(calib):
    """A Gluon block quantized from a DataLoader, a list of NDArrays or a DataIter becomes a
    SymbolBlock of the quantized graph (quantize_mode 'full', dtype 'auto' as MXNet's
    defaults) whose outputs follow the float block's."""
    x, y = S.bert_data(32, seed=7)
    if calib == "loader":
        ds = mx.gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y))
        data = mx.gluon.data.DataLoader(ds, batch_size=16)
    elif calib == "list":     # each batch a list of arrays, as MXNet's wrapper needs
        data = [[mx.nd.array(x[:16])], [mx.nd.array(x[16:])]]
    else:
        data = mx.io.NDArrayIter(x, batch_size=16)
    net = _bert_net()
    want = net(mx.nd.array(S.test_data("bert")[0])).asnumpy()
    qnet = mx.contrib.quant.quantize_net_v2(net, quantized_dtype="int8",
                                            calib_mode="naive", calib_data=data,
                                            num_calib_examples=32)
    assert isinstance(qnet, mx.gluon.SymbolBlock)
    got = qnet(mx.nd.array(S.test_data("bert")[0])).asnumpy()
    assert np.mean(got.argmax(1) == want.argmax(1)) >= 0.95
    np.testing.assert_allclose(got, want, atol=0.15 * np.abs(want).max())


def test_quantize_net_v2_refuses_bare_arrays_as_batches():
    """MXNet 1.9.1, calib_data=[nd.array(x[:16]), nd.array(x[16:])]: the wrapper's batch is
    the bare array, and Module.forward raises AssertionError 'Data must be list of
    NDArrays'."""
    x, _ = S.bert_data(32, seed=7)
    with pytest.raises(AssertionError, match="Data must be list of NDArrays"):
        mx.contrib.quant.quantize_net_v2(_bert_net(), quantized_dtype="int8",
                                         calib_mode="naive",
                                         calib_data=[mx.nd.array(x[:16]),
                                                     mx.nd.array(x[16:])])


def test_quantize_net_warns_and_needs_shapes():
    net = _bert_net()
    with pytest.warns(UserWarning, match="quantize_net_v2"):
        with pytest.raises(ValueError, match="data_shapes required"):
            mx.contrib.quant.quantize_net(net)
    qnet = mx.contrib.quant.quantize_net_v2(
        net, data_shapes=[mx.io.DataDesc("data", S.SHAPES["bert"])],
        exclude_layers_match=["ffn"])
    js = json.loads(qnet(mx.sym.var("data")).tojson())
    names = {n["name"] for n in js["nodes"]}
    # MXNet 1.9.1 on the CPU fuses each FC (ffn1 with its gelu) first; the fused node
    # holding an excluded layer stays float (the node names MXNet's run gives)
    assert "quantized_sg_mkldnn_fully_connected_0" in names
    assert "sg_mkldnn_fully_connected_eltwise_2" in names
    assert "quantized_sg_mkldnn_fully_connected_eltwise_2" not in names


def test_bad_arguments_raise_mxnets_errors():
    g, args, auxs = _small_graph()
    q = mx.contrib.quant
    with pytest.raises(ValueError, match="unknown quantized_dtype int4"):
        q.quantize_model(g, args, auxs, quantized_dtype="int4")
    with pytest.raises(ValueError, match="excluded_sym_names must be a list"):
        q.quantize_model(g, args, auxs, excluded_sym_names="conv0")
    with pytest.raises(ValueError, match="calib_data must be provided"):
        q.quantize_model(g, args, auxs, calib_mode="naive")
    with pytest.raises(ValueError, match="must be of DataIter type"):
        q.quantize_model(g, args, auxs, calib_mode="naive", calib_data=[mx.nd.zeros((1,))])
    with pytest.raises(ValueError, match="unknown calibration mode"):
        q.quantize_graph(g, args, auxs, calib_mode="minmax")
    with pytest.raises(ValueError, match="only support Intel cpu"):
        q.quantize_model_mkldnn(g, args, auxs, ctx=mx.gpu(0), calib_mode="none")
    # channel-wise touches only MXNet's fused FC nodes: the unfused cpu graph is the
    # tensor-wise one (MXNet 1.9.1: the two tojson() are equal), a gpu target refuses it
    cw = q.quantize_model(g, args, auxs, calib_mode="none", label_names=None,
                          quantize_granularity="channel-wise")[0]
    tw = q.quantize_model(g, args, auxs, calib_mode="none", label_names=None)[0]
    assert cw.tojson() == tw.tojson()
    with pytest.raises(GpundaError, match="`channel-wise` quantization option is not "
                                          "supported yet by GPU"):
        q.quantize_model(g, args, auxs, ctx=mx.gpu(0), calib_mode="none",
                         quantize_granularity="channel-wise")
    # the fused CPU flow quantizes FC weights per channel (float weights in the graph)
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc0")
    fc_args = {"fc0_weight": mx.nd.ones((3, 4)), "fc0_bias": mx.nd.zeros((3,))}
    cw = q.quantize_model_mkldnn(fc, fc_args, {}, calib_mode="none", label_names=None,
                                 quantize_granularity="channel-wise")[0]
    fcs = [n for n in json.loads(cw.tojson())["nodes"]
           if n["op"] == "_sg_mkldnn_fully_connected"]
    assert fcs and all(n["attrs"].get("channel_wise_quantize") == "True" for n in fcs)


def test_gpu_target_quantizes_only_mxnets_gpu_kernels():
    """MXNet's GPU build registers quantized conv, FC, pooling and flatten only; the rest
    stays float on a gpu target (\"Neither FCompute nor FComputeEx registered\")."""
    g, args, auxs = _small_graph()
    qsym, _ = mx.contrib.quant._quantize_symbol(g, mx.gpu(0), quantize_mode="full")
    ops = dict((n, o) for o, n in _ops(qsym))
    assert ops["bn0"] == "BatchNorm" and ops["quantized_pool0"] == "_contrib_quantized_pooling"


@pytest.mark.parametrize("kw,want,dtype,rng", [
    (dict(out_type="uint8", min_calib_range=0.0, max_calib_range=2.0),
     [0, 0, 71, 255, 255], np.uint8, (0.0, 2.0)),
    (dict(out_type="auto", min_calib_range=0.0, max_calib_range=2.0),
     [0, 0, 71, 255, 255], np.uint8, (0.0, 2.0)),
    (dict(out_type="auto", min_calib_range=-1.0, max_calib_range=2.0),
     [-118, 0, 35, 127, 127], np.int8, (-2.0, 2.0))])
def test_requantize_to_uint8_and_auto(kw, want, dtype, rng):
    """What the pass writes for quantized_dtype 'uint8'/'auto'. MXNet 1.9.1 (CPU):
        d = mx.nd.array([-1000000000, 5, 300000000, 1073741824, 2147483647], dtype='int32')
        mx.nd.contrib.requantize(d, mx.nd.array([-4.0]), mx.nd.array([4.0]), **kw)"""
    d = mx.nd.array([-1000000000, 5, 300000000, 1073741824, 2147483647], dtype="int32")
    out, lo, hi = mx.nd.contrib.requantize(d, mx.nd.array([-4.0]), mx.nd.array([4.0]), **kw)
    assert out.dtype == dtype and out.asnumpy().tolist() == want
    assert (lo.asscalar(), hi.asscalar()) == rng
    s = mx.sym.contrib.requantize(mx.sym.var("d", dtype="int32"), mx.sym.var("lo"),
                                  mx.sym.var("hi"), **kw)
    assert s.infer_type(d="int32", lo="float32", hi="float32")[1][0] == dtype


def test_quantized_unrolled_lstm_infers_its_begin_state():
    """MXNet's test_quantize_model_with_forward 'sym4': an unrolled LSTMCell, whose begin
    state `_zeros((0, 64))` learns its batch size back through quantize_v2 and quantized FC;
    the quantized outputs follow the float ones."""
    cell = mx.rnn.LSTMCell(num_hidden=64)
    outputs, _ = cell.unroll(4, mx.sym.var("data"))
    sym = mx.sym.Group(outputs)
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind(for_training=False, data_shapes=[("data", (4, 4, 32))])
    mod.init_params(mx.init.Uniform(0.1))
    args, auxs = mod.get_params()
    qsym, qarg, qaux = mx.contrib.quant.quantize_model(
        sym, args, auxs, label_names=None, calib_mode="none", quantize_mode="full",
        excluded_op_names=["elemwise_add", "elemwise_mul"])
    qmod = mx.mod.Module(qsym, label_names=None)
    qmod.bind(for_training=False, data_shapes=[("data", (4, 4, 32))])
    qmod.set_params(qarg, qaux)
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (4, 4, 32)))
    mod.forward(mx.io.DataBatch([x]), is_train=False)
    qmod.forward(mx.io.DataBatch([x]), is_train=False)
    for q, f in zip(qmod.get_outputs(), mod.get_outputs()):
        np.testing.assert_allclose(q.asnumpy(), f.asnumpy(), atol=0.02)


def test_customize_collector_sets_its_ranges():
    """calib_mode='customize': the user's collector is handed back by quantize_graph and its
    ``min_max_dict`` becomes the graph's ranges, printed as std::to_string does."""
    class Fixed:
        def __init__(self):
            self.min_max_dict = {}

        def collect(self, name, arr):
            name = name.decode() if isinstance(name, bytes) else name
            if name in ("data", "bert_qkv_fwd_output"):
                self.min_max_dict[name] = (-1.25, 3.5)

    sym, args, auxs = S.load_float(mx, "bert")
    mine = Fixed()
    qsym, _, _, collector = mx.contrib.quant.quantize_graph(
        sym, args, auxs, calib_mode="customize", LayerOutputCollector=mine)
    assert collector is mine
    mod = mx.mod.Module(sym, context=mx.cpu())
    it = S.calib_iter(mx, "bert")
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label, for_training=False)
    mod.set_params(args, auxs)
    mx.contrib.quant._collect_layer_statistics(mod, it, collector, max_num_examples=16)
    csym, _, _ = mx.contrib.quant.calib_graph(qsym, args, auxs, collector,
                                              calib_mode="customize")
    attrs = csym.attr_dict()
    for node in ("data_quantize", "requantize_bert_qkv_fwd"):
        assert attrs[node]["min_calib_range"] == "-1.250000"
        assert attrs[node]["max_calib_range"] == "3.500000"
    assert "min_calib_range" not in attrs["requantize_bert_proj_fwd"]
