"""MXNet 1.9.1's oneDNN fused self-attention nodes on a small BERT-like block: the graph its
MKLDNN backend makes from interleaved_matmul_selfatt_qk/valatt (float), and each node
quantized (calibrated, float output, uncalibrated) on random int8/uint8 data with ranges.

Run with real MXNet: /work/mxref/bin/python record_mxnet_selfatt.py  (writes selfatt.json)
"""
import json
import os

import mxnet as mx
import numpy as np

rs = np.random.RandomState(5)
L, B, H, HD = 5, 2, 2, 8
rec = {}
qkv = mx.sym.var("qkv")
att = mx.sym.softmax(mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=H), axis=-1)
out = mx.sym.contrib.interleaved_matmul_selfatt_valatt(qkv, att, heads=H)
fused = out.get_backend_symbol("MKLDNN")
x = rs.uniform(-1, 1, (L, B, 3 * H * HD)).astype(np.float32)
y = fused.bind(mx.cpu(), {"qkv": mx.nd.array(x)}).forward()[0].asnumpy()
rec["float"] = {"graph": json.loads(fused.tojson()), "qkv": x.tolist(), "out": y.tolist()}


def node(op, n_in, **attrs):
    """The node alone; its subgraph is the interleaved op it replaced (MXNet's shape
    function reads it)."""
    names = ["in%d" % i for i in range(n_in)]
    n_data = 2 if op.endswith("valatt") else 1
    inner = "_contrib_interleaved_matmul_selfatt_" + op.rsplit("_", 1)[1]
    sub = {"nodes": [{"op": "null", "name": "d%d" % i, "inputs": []} for i in range(n_data)] +
           [{"op": inner, "name": "inner", "attrs": {"heads": str(attrs["heads"])},
             "inputs": [[i, 0, 0] for i in range(n_data)]}],
           "arg_nodes": list(range(n_data)), "heads": [[n_data, 0, 0]]}
    g = {"nodes": [{"op": "null", "name": n, "inputs": []} for n in names] +
         [{"op": op, "name": "n", "attrs": {k: str(v) for k, v in attrs.items()},
           "inputs": [[i, 0, 0] for i in range(n_in)], "subgraphs": [sub]}],
         "arg_nodes": list(range(n_in)),
         "heads": [[n_in, j, 0] for j in range(1 if attrs.get("enable_float_output") else 3)],
         "attrs": {"mxnet_version": ["int", 10901]}}
    return g


q8 = rs.randint(-127, 128, (L, B, 3 * H * HD)).astype(np.int8)
a8 = rs.randint(0, 256, (B * H, L, L)).astype(np.uint8)
variants = {"calib": dict(min_calib_range=-3.0, max_calib_range=2.5),
            "float": dict(enable_float_output=True), "nocalib": {}}
for op, n_in in (("_sg_mkldnn_selfatt_qk", 3), ("_sg_mkldnn_selfatt_valatt", 6)):
    for vname, kw in variants.items():
        g = node(op, n_in, heads=H, quantized=True, **kw)
        ins = [mx.nd.array(q8, dtype="int8"), mx.nd.array([-1.7]), mx.nd.array([1.9])]
        if n_in == 6:
            ins = [ins[0], mx.nd.array(a8, dtype="uint8"), ins[1], ins[2],
                   mx.nd.array([0.0]), mx.nd.array([0.8])]
        s = mx.sym.load_json(json.dumps(g))
        outs = s.bind(mx.cpu(), dict(zip(s.list_arguments(), ins))).forward()
        rec[f"{op}:{vname}"] = {"graph": g, "inputs": [i.asnumpy().tolist() for i in ins],
                                "in_dtypes": [str(i.dtype.__name__) for i in ins],
                                "outputs": [o.asnumpy().tolist() for o in outs],
                                "out_dtypes": [str(o.dtype.__name__) for o in outs]}
        print(op, vname, [o.dtype for o in outs], [o.shape for o in outs])
json.dump(rec, open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "selfatt.json"), "w"))
