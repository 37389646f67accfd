"""MXNet's oneDNN fused self-attention nodes (``_sg_mkldnn_selfatt_qk`` / ``_valatt``,
gpunda/ops/quantization/sg_selfatt.py) against MXNet 1.9.1: the float graph its MKLDNN
backend makes from interleaved_matmul_selfatt_qk -> softmax -> valatt, and each node
quantized on random int8/uint8 data (calibrated, float output, uncalibrated), recorded on
a CPU without VNNI by tests/data/quant_flow/selfatt/record_mxnet_selfatt.py."""
import json
import os

import numpy as np
import pytest

import gpunda as mx

_REC = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                                   "quant_flow", "selfatt", "selfatt.json")))


@pytest.fixture(autouse=True)
def _recording_cpu(monkeypatch):
    monkeypatch.setenv("GPUNDA_MKLDNN_S8S8_ADJUST", "0.5")     # no VNNI: int16 pairs
    # the fused nodes are MXNet's CPU (oneDNN) arithmetic: cpu(0), also under --standin-gpu
    with mx.cpu():
        yield


def test_fused_float_attention_loads_and_matches_mxnet():
    r = _REC["float"]
    sym = mx.sym.load_json(json.dumps(r["graph"]))
    assert {"_sg_mkldnn_selfatt_qk", "_sg_mkldnn_selfatt_valatt"} <= {
        n["op"] for n in json.loads(sym.tojson())["nodes"]}
    got = sym.bind(mx.cpu(), {"qkv": mx.nd.array(r["qkv"])}).forward()[0].asnumpy()
    np.testing.assert_allclose(got, np.array(r["out"], np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("key", sorted(k for k in _REC if k != "float"))
def test_quantized_node_is_mxnets_bit_for_bit(key):
    r = _REC[key]
    sym = mx.sym.load_json(json.dumps(r["graph"]))
    ins = [mx.nd.array(np.array(v), dtype=d) for v, d in zip(r["inputs"], r["in_dtypes"])]
    outs = sym.bind(mx.cpu(), dict(zip(sym.list_arguments(), ins))).forward()
    assert len(outs) == len(r["outputs"])
    for got, want, dt in zip(outs, r["outputs"], r["out_dtypes"]):
        got = got.asnumpy()
        assert got.dtype == np.dtype(dt), key
        np.testing.assert_array_equal(got, np.array(want, dt), err_msg=key)


def test_quantized_qk_needs_int8():
    with pytest.raises(mx.base.MXNetError, match="_sg_mkldnn_selfatt_qk.*int8"):
        mx.nd._internal._sg_mkldnn_selfatt_qk(mx.nd.ones((2, 1, 6), dtype="uint8"),
                                              mx.nd.array([0.0]), mx.nd.array([1.0]),
                                              heads=1, quantized=True)
