"""MXNet's oneDNN fused INT8 nodes (``_sg_mkldnn_conv``, ``_sg_mkldnn_fully_connected``)
and the CPU flow that writes them (quantize_model_mkldnn), against MXNet 1.9.1.

Fixtures in tests/data/quant_flow/sg, recorded with real MXNet 1.9.1 on a CPU with AVX2
and no AVX-512 VNNI (record_*.py there): a small CNN (conv+bn+relu, conv+bn+sum+relu,
max pooling, 1x1 conv, FC+relu, FC), its checkpoint, MXNet's fused float graph, the
graphs and params quantize_model_mkldnn wrote for four settings, MXNet's outputs of
each on held-back data, each fused node alone on random int8/uint8 data, and MXNet's
outputs when it ran the quantized models gpunda wrote.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import gpunda as mx

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "quant_flow", "sg")
# name -> (calib_mode, quantized_dtype, quantize_granularity)
CONFIGS = {"naive_auto_tensor": ("naive", "auto", "tensor-wise"),
           "naive_auto_channel": ("naive", "auto", "channel-wise"),
           "entropy_auto_channel": ("entropy", "auto", "channel-wise"),
           "naive_int8_tensor": ("naive", "int8", "tensor-wise")}


@pytest.fixture(autouse=True)
def _recording_cpu(monkeypatch):
    # the recording CPU's oneDNN halves int8 weights of convs over int8 data
    monkeypatch.setenv("GPUNDA_MKLDNN_S8S8_ADJUST", "0.5")
    # the fused nodes are MXNet's CPU (oneDNN) arithmetic: cpu(0), also under --standin-gpu
    with mx.cpu():
        yield


def _load(prefix):
    d = mx.nd.load(os.path.join(FIX, prefix + "-0000.params"))
    return ({k[4:]: v for k, v in d.items() if k.startswith("arg:")},
            {k[4:]: v for k, v in d.items() if k.startswith("aux:")})


def _results():
    return np.load(os.path.join(FIX, "results.npz"))


def _data():
    return np.load(os.path.join(FIX, "data.npz"))


def _run(sym, args, auxs, x):
    ex = sym.bind(mx.cpu(), {"data": mx.nd.array(x),
                             **{k: v for k, v in args.items() if k in sym.list_arguments()}},
                  aux_states={k: v for k, v in auxs.items()
                              if k in sym.list_auxiliary_states()})
    return ex.forward()[0].asnumpy()


def _quantize(name):
    mode, dtype, gran = CONFIGS[name]
    sym = mx.sym.load(os.path.join(FIX, "cnn-symbol.json"))
    args, auxs = _load("cnn")
    it = mx.io.NDArrayIter(mx.nd.array(_data()["calib"]), batch_size=8)
    return mx.contrib.quant.quantize_model_mkldnn(
        sym, args, auxs, ctx=mx.cpu(), calib_mode=mode, calib_data=it,
        quantized_dtype=dtype, quantize_granularity=gran, label_names=None)


def _strip(sym):
    """Each node's op, name, inputs, attributes (calibration ranges to 4 digits: the
    float runs that give them differ in the last bits) and subgraphs."""
    out = []
    for n in json.loads(sym.tojson())["nodes"]:
        attrs = dict(n.get("attrs", {})) if n["op"] != "null" else {}
        for k in ("min_calib_range", "max_calib_range"):
            if k in attrs:
                attrs[k] = round(float(attrs[k]), 4)
        subs = [[(m["op"], m["name"], m["inputs"]) for m in sg["nodes"]]
                for sg in n.get("subgraphs", [])]
        out.append((n["op"], n["name"], n["inputs"], attrs, subs))
    return out


def test_fused_float_graph_loads_and_matches_mxnet():
    """MXNet's MKLDNN_QUANTIZE fusion of the float CNN loads and runs as MXNet ran it."""
    sym = mx.sym.load(os.path.join(FIX, "fused-symbol.json"))
    ops = {n["op"] for n in json.loads(sym.tojson())["nodes"]}
    assert {"_sg_mkldnn_conv", "_sg_mkldnn_fully_connected"} <= ops
    args, auxs = _load("cnn")
    got = _run(sym, args, auxs, _data()["test"])
    np.testing.assert_allclose(got, _results()["fused_float"], rtol=1e-5, atol=1e-6)


def test_gpunda_fuses_the_float_graph_as_mxnet():
    from gpunda.contrib._mkldnn_fuse import fuse_for_quantization
    sym = fuse_for_quantization(mx.sym.load(os.path.join(FIX, "cnn-symbol.json")))
    want = mx.sym.load(os.path.join(FIX, "fused-symbol.json"))
    assert _strip(sym) == _strip(want)
    assert sym.list_auxiliary_states() == want.list_auxiliary_states()


# The quantized CNN's integer layers are MXNet's bit for bit (on the recording CPU's
# arithmetic, GPUNDA_MKLDNN_S8S8_ADJUST=0.5); what remains is its float softmax, whose last
# bit differs from MXNet's in some probabilities.
_SOFTMAX_ULPS = dict(rtol=1e-6, atol=0)
# gpunda's own entropy calibration of that CNN: on NumPy 1.x (value-based casting) a
# calibrated range can differ from MXNet's in its last float bit, which moves the
# dequantized logits by an ulp of their scale; far below one quantization step (1e-2).
_OWN_CALIBRATION = dict(rtol=1e-5, atol=0)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_mxnets_quantized_cnn_runs_as_in_mxnet(name):
    """gpunda runs the quantized graph MXNet wrote and gets MXNet's outputs: quantize_v2
    rounds as MXNet's CPU (oneDNN), each fused node is MXNet's to the bit (int16 pairs
    saturating as on the recording CPU), so only the softmax's last bit differs."""
    sym = mx.sym.load(os.path.join(FIX, name + "-symbol.json"))
    args, auxs = _load(name)
    x = _data()["test"]
    got, want = _run(sym, args, auxs, x), _results()[name]
    np.testing.assert_array_equal(got.argmax(1), want.argmax(1))
    np.testing.assert_allclose(got, want, **_SOFTMAX_ULPS)


@pytest.mark.parametrize("layers", ["layers_naive_auto_tensor.json",
                                    "layers_naive_auto_tensor_full.json"])
def test_each_fused_node_is_mxnets_bit_for_bit(layers):
    """Each quantized fused node alone on random int8/uint8 data (calibrated and not):
    the outputs MXNet gave, to the bit. In the _full file uint8 data spans 0..255, so the
    recording CPU's oneDNN saturates int16 pairs of u8 x s8 products in the convs over uint8
    and the FC over int8 data (NOTE [int16 pair saturation]); gpunda does the same."""
    rec = json.load(open(os.path.join(FIX, layers)))
    args, auxs = _load("naive_auto_tensor")
    params = {**args, **auxs}
    for key, r in rec.items():
        sym = mx.sym.load_json(json.dumps(r["graph"]))
        feed = {**params, **{k: mx.nd.array(np.array(v), dtype=r["dtypes"][k])
                             for k, v in r["inputs"].items()}}
        ex = sym.bind(mx.cpu(), {k: feed[k] for k in sym.list_arguments()},
                      aux_states={k: feed[k] for k in sym.list_auxiliary_states()})
        got = ex.forward()[0].asnumpy()
        want = np.array(r["outputs"][0]).astype(r["out_dtypes"][0])
        assert got.dtype == want.dtype, key
        np.testing.assert_array_equal(got, want, err_msg=key)
    assert len(rec) >= 9


def test_int16_pairs_saturate_only_without_vnni(monkeypatch):
    """With VNNI (adjust 1) the sums are exact, and differ from the recording CPU's where a
    pair leaves int16: the saturation is what makes them agree (the test above)."""
    rec = json.load(open(os.path.join(FIX, "layers_naive_auto_tensor_full.json")))
    args, auxs = _load("naive_auto_tensor")
    monkeypatch.setenv("GPUNDA_MKLDNN_S8S8_ADJUST", "1")
    for key in ("quantized_sg_mkldnn_fully_connected_eltwise_0:nocalib",      # int8 data
                "quantized_sg_mkldnn_fully_connected_1:calib",                # uint8 data
                "quantized_sg_mkldnn_conv_2:nocalib"):                        # uint8 data
        r = rec[key]
        sym = mx.sym.load_json(json.dumps(r["graph"]))
        feed = {**args, **{k: mx.nd.array(np.array(v), dtype=r["dtypes"][k])
                           for k, v in r["inputs"].items()}}
        ex = sym.bind(mx.cpu(), {k: feed[k] for k in sym.list_arguments()})
        got = ex.forward()[0].asnumpy()
        assert not np.array_equal(got, np.array(r["outputs"][0], got.dtype)), key


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_gpunda_quantizes_as_mxnet(name):
    """quantize_model_mkldnn gives MXNet's graph (ops, names, attributes, subgraphs) and
    params (names, dtypes, int8 weights), and its quantized model gives MXNet's quantized
    model's outputs on the held-back data."""
    qsym, qargs, qauxs = _quantize(name)
    want = mx.sym.load(os.path.join(FIX, name + "-symbol.json"))
    assert _strip(qsym) == _strip(want)
    margs, _ = _load(name)
    assert sorted(qargs) == sorted(margs)
    for k, v in qargs.items():
        assert v.dtype == margs[k].dtype, k
        np.testing.assert_allclose(v.asnumpy().astype(np.float64),
                                   margs[k].asnumpy().astype(np.float64), atol=1, rtol=1e-5)
    got = _run(qsym, qargs, qauxs, _data()["test"])
    np.testing.assert_allclose(got, _results()[name], **_OWN_CALIBRATION)


@pytest.mark.parametrize("name", ["naive_auto_tensor", "entropy_auto_channel"])
def test_mxnet_runs_gpundas_quantized_cnn(name):
    """MXNet 1.9.1 loaded and ran the model gpunda's quantize_model_mkldnn wrote (its
    outputs recorded): gpunda's own run of that model gives them."""
    qsym, qargs, qauxs = _quantize(name)
    got = _run(qsym, qargs, qauxs, _data()["test"])
    np.testing.assert_allclose(got, _results()["mxnet_runs_gpunda_" + name], **_OWN_CALIBRATION)


def test_fused_node_without_subgraph_raises():
    with pytest.raises(mx.base.MXNetError, match="_sg_mkldnn_conv.*no subgraph"):
        mx.nd._internal._sg_mkldnn_conv(mx.nd.ones((1, 1, 3, 3)), mx.nd.ones((1, 1, 1, 1)))


def test_s8s8_adjust_env_is_checked(monkeypatch):
    from gpunda.ops.quantization.sg_fused import s8s8_weight_adjust
    monkeypatch.setenv("GPUNDA_MKLDNN_S8S8_ADJUST", "2")
    with pytest.raises(mx.base.MXNetError, match="GPUNDA_MKLDNN_S8S8_ADJUST"):
        s8s8_weight_adjust()
