"""MXNet's graph quantization pass (``MXQuantizeSymbol``, quantize_graph_pass.cc) and the
pass that writes calibration ranges into a quantized graph
(``MXSetCalibTableToQuantizedSymbol``), on gpunda Symbols.

NOTE [Quantization pass]
The pass follows quantize_graph_pass.cc step by step, so the graph it gives is the one
MXNet 1.9.1's ``quantize_model`` gives (node order, names, attributes), read back from
MXNet's JSON:
- each op with an ``FQuantizedOp`` (the table ``_QUANTIZABLE``) becomes its
  ``_contrib_quantized_*`` twin named ``quantized_<name>`` with the same attributes, unless
  excluded by name or op, or its kernel does not exist on the target device (MXNet's GPU
  build has only conv, fully_connected, pooling and flatten); Activation only for relu,
  Pooling only max/avg, Concat only dim > 0, Embedding only float32, as MXNet's
  FQuantizedOp functions decide;
- ``smart`` mode keeps a "support" op quantized only when it lies between two "must" ops
  (Convolution, FullyConnected) along chains of quantized ops, both ways;
- a float input of a quantized op gets a ``_contrib_quantize_v2`` node
  (``<producer>[_<output>]_quantize``, shared by every consumer of that entry); the
  quantized op takes its data inputs, then a (min, max) pair per data input;
- an op that sums in int32 (conv, FC, elemwise add/mul) gets ``requantize_<name>`` after it;
- a float consumer of a quantized output, and each graph output that is quantized, gets
  ``<name>_dequantize`` (when both happen, MXNet dequantizes the first dequantize node
  again, reading outputs it does not have, a graph that cannot bind; gpunda makes the
  first one the graph output, docs/compat.md);
- quantize nodes over the parameters named in ``offline_params`` become three variables,
  ``<weight>_quantize``, ``..._min``, ``..._max``, filled by ``_quantize_params``.
The calibration layer names returned are the float outputs whose ranges calibrate each
quantize_v2, requantize and quantized_batch_norm (``data``, ``conv0_output``,
``bn0_output``), as MXNet's monitor names them.
"""
from __future__ import annotations

import json

from gpunda.base import GpundaError, GpundaValueError

# op -> (quantized op, quantize type ('must' | 'support'), needs requantize)
_QUANTIZABLE = {
    "Convolution": ("_contrib_quantized_conv", "must", True),
    "FullyConnected": ("_contrib_quantized_fully_connected", "must", True),
    "Pooling": ("_contrib_quantized_pooling", "support", False),
    "Activation": ("_contrib_quantized_act", "support", False),
    "Flatten": ("_contrib_quantized_flatten", "support", False),
    "Concat": ("_contrib_quantized_concat", "support", False),
    "elemwise_add": ("_contrib_quantized_elemwise_add", "support", True),
    "elemwise_mul": ("_contrib_quantized_elemwise_mul", "support", True),
    "BatchNorm": ("_contrib_quantized_batch_norm", "support", False),
    "Embedding": ("_contrib_quantized_embedding", "support", False),
    # MXNet's oneDNN fused nodes (NOTE [MKLDNN fusion]) quantize into themselves
    "_sg_mkldnn_conv": ("_sg_mkldnn_conv", "must", True),
    "_sg_mkldnn_fully_connected": ("_sg_mkldnn_fully_connected", "must", True),
}
# the "quantized" attribute each fused node's FQuantizedOp writes
_FUSED_QUANTIZED_FLAG = {"_sg_mkldnn_conv": "true", "_sg_mkldnn_fully_connected": "True"}
# the quantized kernels MXNet 1.9.1's GPU build registers (the .cu files)
_GPU_KERNELS = {"_contrib_quantized_conv", "_contrib_quantized_fully_connected",
                "_contrib_quantized_pooling", "_contrib_quantized_flatten"}
# inputs a quantized op takes in float (FAvoidQuantizeInput)
_AVOID_QUANTIZE_INPUT = {"BatchNorm": lambda i: i != 0, "Embedding": lambda i: i == 0}


def _avoid_quantize(n, granularity):
    """FAvoidQuantizeInput of node ``n``: which input positions stay float."""
    name = n.op.name
    if name == "_sg_mkldnn_conv":        # weights, bias and BatchNorm: folded in float
        names = n.op.input_names(n.p)
        return lambda i: names[i] not in ("data", "sum")
    if name == "_sg_mkldnn_fully_connected":
        names = n.op.input_names(n.p)
        cw = granularity == "channel-wise"
        return lambda i: cw and names[i] in ("weight", "bias")
    return _AVOID_QUANTIZE_INPUT.get(name, lambda i: False)
# single-output ops that list their output name (FListOutputNames) in MXNet 1.9.1: the
# quantize node after them is "<name>_output_quantize", after any other "<name>_0_quantize"
_LISTS_OUTPUT_NAMES = {
    "Activation", "BatchNorm", "Concat", "Convolution", "Deconvolution", "Dropout",
    "FullyConnected", "GroupNorm", "LayerNorm", "LeakyReLU", "LRN", "Pooling", "softmax",
    "softmin", "SoftmaxActivation", "SoftmaxOutput", "UpSampling", "elemwise_add",
    "make_loss", "CTCLoss", "Custom", "RNN", "SliceChannel", "_contrib_ROIAlign",
    "_contrib_RROIAlign", "_contrib_BatchNormWithReLU", "im2col", "col2im",
    "_npi_matmul", "_npi_concatenate", "_npi_hstack", "_npi_dstack", "_npi_std", "_npi_var",
    "_contrib_interleaved_matmul_selfatt_qk", "_contrib_interleaved_matmul_selfatt_valatt",
    "_contrib_interleaved_matmul_encdec_qk", "_contrib_interleaved_matmul_encdec_valatt",
    "_contrib_calibrate_entropy", "_contrib_quantize_asym"}
# ops whose calibration range is read from an input (FNeedCalibrateInput) or an output
# (FNeedCalibrateOutput), with that position
_CALIB_INPUT = {"_contrib_quantize_v2": 0, "_contrib_requantize": 0,
                "_contrib_quantize_asym": 0}
_CALIB_OUTPUT = {"_contrib_quantized_batch_norm": 0}


class _QNode:
    """A node of the graph being built: ``op`` None for a variable; inputs (node, index)."""

    __slots__ = ("op", "name", "attrs", "inputs", "src")

    def __init__(self, op, name, attrs=None, inputs=None, src=None):
        self.op, self.name = op, name
        self.attrs = dict(attrs or {})
        self.inputs = list(inputs or [])
        self.src = src            # the JSON dict of a copied node (keeps its other keys)


def _quantized_twin(node, dev_type):
    """The quantized op name for ``node`` (a gpunda _Node), or None when MXNet keeps it."""
    entry = _QUANTIZABLE.get(node.op.name)
    if entry is None:
        return None
    qop = entry[0]
    p = vars(node.p) if node.p is not None else {}
    name = node.op.name
    if name == "Activation" and str(p.get("act_type")) != "relu":
        return None
    if name == "Pooling" and str(p.get("pool_type")) not in ("max", "avg"):
        return None
    if name == "Concat" and int(p.get("dim", 1)) <= 0:
        return None
    if name == "Embedding" and "float32" not in str(p.get("dtype", "float32")):
        return None
    if name in _FUSED_QUANTIZED_FLAG and str(p.get("quantized")) in ("True", "true"):
        return None
    if dev_type == "gpu" and qop not in _GPU_KERNELS:
        return None     # "Neither FCompute nor FComputeEx registered ... excluded"
    return qop


def _mark(topo, excluded_names, excluded_ops, quantize_mode, dev_type):
    """``{id(node): quantized op}`` of the nodes to quantize (MarkQuantizedNodes)."""
    qmap, must, support, consumers = {}, [], {}, {}
    for n in topo:
        for c, _ in n.inputs:
            consumers.setdefault(id(c), []).append(n)
        if n.op is None:
            continue
        qop = _quantized_twin(n, dev_type)
        if qop is None or n.name in excluded_names or n.op.name in excluded_ops:
            continue
        subs = getattr(n.p, "_subgraphs", None) if n.p is not None else None
        if subs and n.op.name in _FUSED_QUANTIZED_FLAG and any(
                m.op is not None and m.name in excluded_names for m in subs[0]._topo()):
            continue        # a fused node is excluded through the layers inside it
        qmap[id(n)] = qop
        if _QUANTIZABLE[n.op.name][1] == "must":
            must.append(n)
        else:
            support[id(n)] = 0
    if quantize_mode == "full":
        return qmap
    if quantize_mode != "smart":
        raise GpundaValueError(f"quantize_graph: unrecognized quantize mode: {quantize_mode}")
    for bit, step in ((1, lambda n: [c for c, _ in n.inputs]),
                      (2, lambda n: consumers.get(id(n), []))):
        queue = list(must)
        while queue:
            n = queue.pop(0)
            for m in step(n):
                if id(m) in support:
                    support[id(m)] |= bit
                    queue.append(m)
    for k, v in support.items():
        if v != 3:
            del qmap[k]
    return qmap


def _n_visible(op_name, attrs):
    """Visible output count of ``op_name`` with string ``attrs``."""
    from gpunda.ops.registry import get_op
    from gpunda.symbol.symbol import params_from_attrs
    op = get_op(op_name)
    try:
        p = params_from_attrs(op, attrs, 0, op_name)
    except GpundaError:
        p = op.parse_params({})
    return op.n_visible(p)


def quantize_symbol(sym, dev_type="cpu", excluded_names=(), excluded_ops=(),
                    offline_params=(), quantized_dtype="int8", quantize_mode="smart",
                    quantize_granularity="tensor-wise"):
    """MXNet's QuantizeGraph pass on ``sym``: ``(quantized Symbol, calibration layer
    names)``. ``dev_type`` is 'cpu' or 'gpu' (which quantized kernels exist)."""
    from gpunda.symbol import load_json
    # channel-wise changes only MXNet's fused _sg_mkldnn_fully_connected nodes; on an
    # unfused graph MXNet's CPU pass gives the tensor-wise graph, its GPU pass refuses
    if quantize_granularity == "channel-wise" and dev_type == "gpu":
        raise GpundaError("`channel-wise` quantization option is not supported yet by GPU, "
                          "please set quantize_granularity to `tensor-wise` when quantizing "
                          "model.")
    topo = sym._topo()
    src_nodes = json.loads(sym.tojson())["nodes"]
    if len(src_nodes) != len(topo) or any(s["name"] != n.name for s, n in zip(src_nodes, topo)):
        raise GpundaError("quantize_graph: the symbol's JSON does not follow its node order")
    qmap = _mark(topo, set(excluded_names), set(excluded_ops), quantize_mode, dev_type)
    mirror, entry_q, reverse = {}, {}, {}
    out_type = quantized_dtype

    def minmax_index(mnode, index):
        k = _n_visible(mnode.op, mnode.attrs) - 2
        return k + 2 * index, k + 2 * index + 1

    for n, src in zip(topo, src_nodes):
        if id(n) in qmap:
            new = _QNode(qmap[id(n)], "quantized_" + n.name, src.get("attrs", {}))
            flag = _FUSED_QUANTIZED_FLAG.get(n.op.name)
            if flag is not None:
                new.attrs["quantized"] = flag
                if quantize_granularity == "channel-wise" and flag == "True":
                    new.attrs["channel_wise_quantize"] = "True"
                new.src = {"subgraphs": src["subgraphs"]}
            avoid = _avoid_quantize(n, quantize_granularity)
            for i, (c, idx) in enumerate(n.inputs):
                m = mirror[id(c)]
                if avoid(i):
                    new.inputs.append((m, idx))
                elif id(c) not in qmap:
                    key = (id(c), idx)
                    if key not in entry_q:
                        suffix = ""
                        if m.op is not None:
                            names = c.op.output_names
                            names = names(c.p) if callable(names) else names
                            if names:
                                suffix = "_" + names[idx]
                            elif c.op.name in _LISTS_OUTPUT_NAMES:
                                suffix = "_output"
                            else:
                                suffix = f"_{idx}"
                        q = _QNode("_contrib_quantize_v2", c.name + suffix + "_quantize",
                                   {"out_type": out_type}, [(m, idx)])
                        entry_q[key] = q
                    new.inputs.append((entry_q[key], 0))
                elif m.op == "_contrib_dequantize":
                    new.inputs.append((m.inputs[0][0], idx))
                else:
                    new.inputs.append((m, idx))
            for i, (c, idx) in enumerate(n.inputs):
                if avoid(i):
                    continue
                m = mirror[id(c)]
                if m.op == "_contrib_dequantize":
                    m = m.inputs[0][0]
                lo, hi = 1, 2
                if id(c) in qmap:
                    lo, hi = minmax_index(m, idx)
                elif (id(c), idx) not in entry_q:
                    raise GpundaError(f"quantize_graph: the input of {n.name} is not "
                                      f"quantize or quantized_op")
                base = entry_q.get((id(c), idx), m)
                new.inputs += [(base, lo), (base, hi)]
            if _QUANTIZABLE[n.op.name][2]:
                new = _QNode("_contrib_requantize", "requantize_" + n.name,
                             {"out_type": out_type}, [(new, 0), (new, 1), (new, 2)])
        else:
            new = _QNode(None if n.op is None else n.op.name, n.name, src.get("attrs", {}),
                         src=src)
            for c, idx in n.inputs:
                m = mirror[id(c)]
                if id(c) in qmap and m.op != "_contrib_dequantize":
                    lo, hi = minmax_index(m, idx)
                    dq = _QNode("_contrib_dequantize", c.name + "_dequantize", {},
                                [(m, idx), (m, lo), (m, hi)])
                    new.inputs.append((dq, 0))
                    mirror[id(c)] = dq
                    reverse[id(dq)] = (c, dq)
                elif (id(c), idx) in entry_q:
                    new.inputs.append((entry_q[(id(c), idx)].inputs[0][0], idx))
                else:
                    new.inputs.append((m, idx))
        mirror[id(n)] = new
        reverse[id(new)] = (n, new)
    heads = []
    for c, idx in sym._outputs:
        m = mirror[id(c)]
        if id(c) in qmap and m.op == "_contrib_dequantize":
            # MXNet dequantizes this dequantize node again, reading outputs 1 and 2 it does
            # not have: a graph no executor binds; its one dequantize is the output here
            heads.append((m, 0))
        elif id(c) in qmap:
            k = c.nvis
            dq = _QNode("_contrib_dequantize", c.name + "_dequantize", {},
                        [(m, idx), (m, k + 2 * idx), (m, k + 2 * idx + 1)])
            heads.append((dq, 0))
        else:
            heads.append((m, idx))
    heads = _offline(heads, set(offline_params))
    qsym = load_json(_to_json(heads))
    return qsym, _calib_layers(heads, reverse)


def _offline(heads, offline):
    """Quantize nodes over the params in ``offline`` become three variables (OfflineParams)."""
    from gpunda.symbol.symbol import topo_order
    if not offline:
        return heads
    made = {}
    for n in topo_order(heads):
        for k, (c, idx) in enumerate(n.inputs):
            if (c.op == "_contrib_quantize_v2" and c.inputs[0][0].op is None
                    and c.inputs[0][0].name in offline):
                key = (id(c), idx)
                if key not in made:
                    made[key] = _QNode(None, c.name + ("", "_min", "_max")[idx])
                n.inputs[k] = (made[key], 0)
    return heads


def _to_json(heads):
    """MXNet's JSON of the graph ending in ``heads`` (nodes in DFS post-order)."""
    from gpunda.symbol.symbol import topo_order
    order = topo_order(heads)
    nid = {id(n): k for k, n in enumerate(order)}
    nodes = []
    for n in order:
        d = {"op": "null" if n.op is None else n.op, "name": n.name}
        if n.src is not None:
            d.update({k: v for k, v in n.src.items() if k not in ("op", "name", "inputs")})
        if n.attrs:
            d["attrs"] = n.attrs
        d["inputs"] = [[nid[id(c)], i, 0] for c, i in n.inputs]
        nodes.append(d)
    return json.dumps({"nodes": nodes,
                       "arg_nodes": [k for k, n in enumerate(order) if n.op is None],
                       "heads": [[nid[id(n)], i, 0] for n, i in heads],
                       "attrs": {"mxnet_version": ["int", 10901]}})


def _entry_name(node, idx):
    """nnvm's ListOutputNames of one entry of an original (gpunda) node."""
    return node.output_names()[idx]


def _calib_layers(heads, reverse):
    """The float outputs whose ranges calibrate the quantized graph (``calib_nodes``)."""
    from gpunda.symbol.symbol import topo_order
    names = []
    for n in topo_order(heads):
        if n.op in _CALIB_INPUT:
            c, idx = n.inputs[_CALIB_INPUT[n.op]]
            if id(n) in reverse:
                names.append(_entry_name(reverse[id(n)][0], idx))
            elif c.op is None:
                names.append(c.name)
            elif id(c) in reverse:
                names.append(_entry_name(reverse[id(c)][0], idx))
            else:
                raise GpundaError(f"quantize_graph: can't find calibration node for {n.name}")
        elif n.op in _CALIB_OUTPUT:
            idx = _CALIB_OUTPUT[n.op]
            names.append(_entry_name(reverse[id(n)][0], idx) if id(n) in reverse
                         else f"{n.name}_output")
    return names


def _calib_str(v):
    """std::to_string of a float: six decimals."""
    import numpy as np
    return "%f" % float(np.asarray(v, dtype=np.float32).reshape(-1)[0])


def set_calib_table(qsym, th_dict):
    """``qsym`` with ``min_calib_range``/``max_calib_range`` set on each quantize_v2,
    requantize and quantized_batch_norm whose float layer has a range in ``th_dict``
    (MXNet's SetCalibTableToQuantizedGraph)."""
    from gpunda.symbol import load_json
    topo = qsym._topo()
    js = json.loads(qsym.tojson())
    for n, d in zip(topo, js["nodes"]):
        if n.op is None:
            continue
        if n.op.name in _CALIB_INPUT:
            c, idx = n.inputs[_CALIB_INPUT[n.op.name]]
        elif n.op.name in _CALIB_OUTPUT:
            c, idx = n, _CALIB_OUTPUT[n.op.name]
        else:
            continue
        name = c.output_names()[idx]
        if c.name.startswith("quantized_"):
            name = name[len("quantized_"):]
        if name in th_dict:
            lo, hi = th_dict[name]
            attrs = d.setdefault("attrs", {})
            attrs["min_calib_range"] = _calib_str(lo)
            attrs["max_calib_range"] = _calib_str(hi)
    return load_json(json.dumps(js))
