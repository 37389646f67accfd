"""MXNet's ``MKLDNN_QUANTIZE`` subgraph backend on gpunda Symbols: the fusion MXNet's CPU
INT8 flow runs before and after quantizing (``sym.get_backend_symbol('MKLDNN_QUANTIZE')``
in quantize_model_mkldnn / quantize_net_v2), so that gpunda's quantized CNN is the graph
MXNet writes and loads.

NOTE [MKLDNN fusion]
Before quantizing (mkldnn_conv_property.h, mkldnn_fc_property.h, with ``quantize`` set):
- a Convolution (2-D or 3-D kernel) takes in, along a chain of single consumers, a
  BatchNorm, then an ``elemwise_add`` (its other operand becomes the node's ``sum`` input),
  then one act (Activation relu, LeakyReLU leaky/gelu, clip with a_min 0, no clip after a
  sum): one ``_sg_mkldnn_conv`` node named ``sg_mkldnn_conv_[bn_][add_][act_]<k>`` with
  with_bn / with_sum / with_act / with_postsum_act;
- a FullyConnected takes in one following act (Activation relu, LeakyReLU leaky/elu/gelu,
  abs, clip with a_min 0): ``sg_mkldnn_fully_connected_[eltwise_]<k>``;
- the node's subgraph holds the float layers, each outside input a variable named after
  the entry it stands for plus "0"; the node's inputs are those entries in that order.
After quantizing and calibrating (mkldnn_post_quantize_property.h,
mkldnn_fc_post_quantize_property.h): a calibrated ``_contrib_requantize`` after a quantized
``_sg_mkldnn_conv`` or ``_contrib_quantized_elemwise_add`` gives the node its
``min_calib_range``/``max_calib_range`` and goes; after a quantized FC it does the same,
unless a ``_contrib_dequantize`` follows it, when both go and the FC gets
``enable_float_output``.
"""
from __future__ import annotations

import json

_CONV_ACTS_Q = {"Activation": lambda a: a.get("act_type") == "relu",
                "LeakyReLU": lambda a: a.get("act_type", "leaky") in ("leaky", "gelu")}
_FC_ACTS_Q = {"Activation": lambda a: a.get("act_type") == "relu",
              "LeakyReLU": lambda a: a.get("act_type", "leaky") in ("leaky", "elu", "gelu"),
              "abs": lambda a: True}


def _clip_from_zero(attrs):
    try:
        return float(attrs.get("a_min", "nan")) == 0.0
    except ValueError:
        return False


def _kernel_ndim(attrs):
    k = attrs.get("kernel", "()").strip("()[] ")
    return len([d for d in k.split(",") if d.strip()])


class _Graph:
    """The JSON nodes of a graph with each entry's output name and consumer counts."""

    def __init__(self, sym):
        self.js = json.loads(sym.tojson())
        self.nodes = self.js["nodes"]
        topo = sym._topo()
        self.out_names = [None if n.op is None else n.output_names() for n in topo]
        self.uses = [0] * len(self.nodes)
        self.users = [[] for _ in self.nodes]
        for k, n in enumerate(self.nodes):
            for e in n.get("inputs", []):
                self.uses[e[0]] += 1
                self.users[e[0]].append(k)
        for h in self.js["heads"]:
            self.uses[h[0]] += 1

    def entry_name(self, e):
        n = self.nodes[e[0]]
        return n["name"] if n["op"] == "null" else self.out_names[e[0]][e[1]]

    def single_user(self, k):
        return self.users[k][0] if self.uses[k] == 1 and len(self.users[k]) == 1 else None

    def depends_on(self, k, targets):
        """Whether node ``k`` reads (transitively) any node in ``targets``."""
        seen, stack = set(), [k]
        while stack:
            j = stack.pop()
            if j in targets:
                return True
            if j in seen:
                continue
            seen.add(j)
            stack.extend(e[0] for e in self.nodes[j].get("inputs", []))
        return False


def _conv_chain(g, k):
    chain, state, attrs = [k], "start", {}
    while True:
        nxt = g.single_user(chain[-1])
        if nxt is None:
            break
        n = g.nodes[nxt]
        op, a = n["op"], n.get("attrs", {})
        if state == "start" and op == "BatchNorm" and n["inputs"][0][0] == chain[-1]:
            chain.append(nxt)
            state, attrs["with_bn"] = "bn", "true"
            continue
        if state in ("start", "bn") and op == "elemwise_add":
            other = [e for e in n["inputs"] if e[0] != chain[-1]]
            if len(other) == 1 and not g.depends_on(other[0][0], set(chain)):
                chain.append(nxt)
                state, attrs["with_sum"] = "sum", "true"
                continue
            break
        fused = (_CONV_ACTS_Q.get(op, lambda a: False)(a)
                 or (op == "clip" and state != "sum" and _clip_from_zero(a)))
        if fused:
            chain.append(nxt)
            attrs["with_postsum_act" if state == "sum" else "with_act"] = "true"
        break
    return chain, attrs


def _fc_chain(g, k):
    nxt = g.single_user(k)
    if nxt is not None:
        n = g.nodes[nxt]
        op, a = n["op"], n.get("attrs", {})
        if _FC_ACTS_Q.get(op, lambda a: False)(a) or (op == "clip" and _clip_from_zero(a)):
            return [k, nxt], {"with_eltwise": "True"}
    return [k], {}


_PARTS = {"Convolution": "conv_", "BatchNorm": "bn_", "elemwise_add": "add_",
          "Activation": "act_", "LeakyReLU": "act_", "clip": "act_",
          "FullyConnected": "fully_connected_"}


def _fuse(g, main_op, chain_of, op_name):
    """One property over the graph: ``(nodes, heads)`` with each matched chain a node."""
    nodes, remap, count = g.nodes, {}, 0
    out, done = [], set()
    new_index = {}

    def entry(e):
        src = remap.get(e[0])
        return [src, 0, 0] if src is not None and e[0] in done else [new_index[e[0]], e[1], 0]

    groups = {}
    claimed = set()
    for k, n in enumerate(nodes):
        if n["op"] != main_op or k in claimed:
            continue
        if main_op == "Convolution" and _kernel_ndim(n.get("attrs", {})) not in (2, 3):
            continue
        chain, attrs = chain_of(g, k)
        if any(c in claimed for c in chain):
            continue
        claimed.update(chain)
        groups[chain[-1]] = (chain, attrs, count)
        count += 1
    for k, n in enumerate(nodes):
        if k in claimed and k not in groups:
            continue
        if k not in groups:
            d = dict(n)
            d["inputs"] = [entry(e) for e in n.get("inputs", [])]
            new_index[k] = len(out)
            out.append(d)
            continue
        chain, attrs, sid = groups[k]
        sub_nodes, sub_index, ext, ext_names = [], {}, [], {}
        for c in chain:
            cn = nodes[c]
            ins = list(cn.get("inputs", []))
            if cn["op"] == "elemwise_add" and ins[0][0] not in sub_index:
                ins = ins[::-1]     # the chain is the sum's first operand (MXNet swaps)
            sub_ins = []
            for e in ins:
                if e[0] in sub_index:
                    sub_ins.append([sub_index[e[0]], e[1], 0])
                    continue
                if e[0] in done:       # the output of a node fused before
                    name = out[remap[e[0]]]["name"] + "_output"
                else:
                    name = g.entry_name(e)
                # each use its own variable: <entry>0, <entry>1, ... (no dedup)
                used = ext_names[name] = ext_names.get(name, -1) + 1
                ext.append(e)
                sub_ins.append([len(sub_nodes), 0, 0])
                sub_nodes.append({"op": "null", "name": f"{name}{used}", "inputs": []})
            d = {"op": cn["op"], "name": cn["name"], "inputs": sub_ins}
            if cn.get("attrs"):
                d["attrs"] = dict(cn["attrs"])
            sub_index[c] = len(sub_nodes)
            sub_nodes.append(d)
        sub = {"nodes": sub_nodes,
               "arg_nodes": [i for i, s in enumerate(sub_nodes) if s["op"] == "null"],
               "node_row_ptr": list(range(len(sub_nodes) + 1)),
               "heads": [[len(sub_nodes) - 1, 0, 0]]}
        name = "sg_mkldnn_" + "".join(_PARTS.get(nodes[c]["op"], "eltwise_") for c in chain)
        d = {"op": op_name, "name": f"{name}{sid}", "inputs": [entry(e) for e in ext],
             "subgraphs": [sub]}
        if attrs:
            d["attrs"] = attrs
        if op_name == "_sg_mkldnn_fully_connected":
            d["name"] = "sg_mkldnn_fully_connected_" + ("eltwise_" if attrs else "") + str(sid)
        new_index[k] = len(out)
        for c in chain:
            remap[c] = len(out)
            done.add(c)
        out.append(d)
    heads = [entry(h) for h in g.js["heads"]]
    return out, heads


def _rebuild(js, nodes, heads):
    from gpunda.symbol import load_json
    js = dict(js)
    js["nodes"], js["heads"] = nodes, heads
    js["arg_nodes"] = [k for k, n in enumerate(nodes) if n["op"] == "null"]
    js.pop("node_row_ptr", None)
    return load_json(json.dumps(js))


def fuse_for_quantization(sym):
    """``sym`` with conv/BN/act/sum chains and FC/act pairs fused into ``_sg_mkldnn_*``
    nodes, as MXNet's MKLDNN_QUANTIZE backend fuses a float graph (NOTE [MKLDNN fusion])."""
    for main_op, chain_of, op_name in (("Convolution", _conv_chain, "_sg_mkldnn_conv"),
                                       ("FullyConnected", _fc_chain,
                                        "_sg_mkldnn_fully_connected")):
        g = _Graph(sym)
        nodes, heads = _fuse(g, main_op, chain_of, op_name)
        sym = _rebuild(g.js, nodes, heads)
    return sym


def _calibrated(attrs):
    return "min_calib_range" in attrs and "max_calib_range" in attrs


def _quantized_flag(attrs):
    return str(attrs.get("quantized", "false")).lower() in ("true", "1")


def post_quantize(qsym):
    """Fold each calibrated ``_contrib_requantize`` (and a ``_contrib_dequantize`` after
    a quantized FC's) into the node before it (NOTE [MKLDNN fusion])."""
    g = _Graph(qsym)
    nodes = g.nodes
    # node index -> (replacement node index, output offset map) for removed nodes
    gone = {}
    for k, n in enumerate(nodes):
        if n["op"] != "_contrib_requantize" or not _calibrated(n.get("attrs", {})):
            continue
        src = n["inputs"][0][0]
        if any(e[0] != src for e in n["inputs"]):
            continue
        s = nodes[src]
        attrs = s.setdefault("attrs", {})
        ra = n["attrs"]
        if s["op"] == "_sg_mkldnn_conv" and _quantized_flag(attrs) or \
                s["op"] == "_contrib_quantized_elemwise_add":
            attrs["min_calib_range"] = ra["min_calib_range"]
            attrs["max_calib_range"] = ra["max_calib_range"]
            gone[k] = (src, None)
        elif s["op"] == "_sg_mkldnn_fully_connected" and _quantized_flag(attrs):
            users = set(g.users[k])
            if (len(users) == 1 and g.uses[k] == len(g.users[k])
                    and nodes[min(users)]["op"] == "_contrib_dequantize"):
                users = min(users)
                attrs["enable_float_output"] = "True"
                gone[k] = (src, None)
                gone[users] = (src, 0)
            else:
                attrs["min_calib_range"] = ra["min_calib_range"]
                attrs["max_calib_range"] = ra["max_calib_range"]
                gone[k] = (src, None)
    if not gone:
        return qsym
    out, new_index = [], {}

    def entry(e):
        k, idx = e[0], e[1]
        while k in gone:
            k, fixed = gone[k]
            idx = idx if fixed is None else fixed
        return [new_index[k], idx, 0]

    for k, n in enumerate(nodes):
        if k in gone:
            continue
        d = dict(n)
        d["inputs"] = [entry(e) for e in n.get("inputs", [])]
        new_index[k] = len(out)
        out.append(d)
    return _rebuild(g.js, out, [entry(h) for h in g.js["heads"]])
