"""``mx.visualization`` (alias ``mx.viz``): a layer table and a Graphviz drawing of a Symbol.

``print_summary`` prints MXNet 1.9.1's table (layer and op, output shape
without the batch axis, parameter count, previous layers), counting parameters
as MXNet does: from the op's attributes and the first non-batch dimension of
the inputs (so it is exact for FullyConnected on 2-D data and Convolution on
NCHW data). ``plot_network`` builds a ``graphviz.Digraph`` in MXNet's style;
it needs the optional ``graphviz`` package (``pip install 'gpunda[viz]'``).
"""
from __future__ import annotations

import copy
import json
import warnings

__all__ = ["print_summary", "plot_network"]

# MXNet's palette: inputs, conv/fc, activations, batchnorm, pooling, reshaping, softmax, rest
_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69",
           "#fccde5")
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                    "_running_var", "_running_mean")


def _str2tuple(text):
    """``'(3, 3)'`` -> ``['3', '3']``."""
    return [t.strip() for t in text.strip("()[] ").split(",") if t.strip()]


def _check_symbol(symbol, where):
    from gpunda.symbol import Symbol
    if not isinstance(symbol, Symbol):
        raise TypeError(f"{where}: symbol must be a Symbol, got {type(symbol).__name__}")


def _output_shapes(symbol, shape, where):
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise ValueError(f"{where}: Input shape is incomplete: {shape}")
    return dict(zip(internals.list_outputs(), out_shapes))


def _layer_params(node, pre_filter, shape_dict):
    op, attrs = node["op"], node.get("attrs", {})
    if op == "Convolution":
        n = pre_filter * int(attrs["num_filter"]) // int(attrs.get("num_group", "1"))
        for k in _str2tuple(attrs["kernel"]):
            n *= int(k)
        return n if attrs.get("no_bias") == "True" else n + int(attrs["num_filter"])
    if op == "FullyConnected":
        extra = 0 if attrs.get("no_bias") == "True" else 1
        return (pre_filter + extra) * int(attrs["num_hidden"])
    if op == "BatchNorm":
        key = node["name"] + "_output"
        return int(shape_dict[key][1]) * 2 if shape_dict and key in shape_dict else 0
    if op == "Embedding":
        return int(attrs["input_dim"]) * int(attrs["output_dim"])
    return 0


def print_summary(symbol, shape=None, line_length=120, positions=(.44, .64, .74, 1.)):
    """Print a table of the layers of ``symbol``; ``shape`` (name -> shape of the inputs)
    adds output shapes and the parameter counts that need them. Returns None."""
    _check_symbol(symbol, "print_summary")
    shape_dict = _output_shapes(symbol, shape, "print_summary") if shape is not None else None
    conf = json.loads(symbol.tojson())
    nodes = conf["nodes"]
    # as MXNet: the numbers of the first head entry [node, output, version], so node 0
    # (the first input) counts as a head and is shown as a layer and a previous layer
    heads = set(conf["heads"][0])
    positions = list(positions)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def row(fields):
        line = ""
        for field, end in zip(fields, positions):
            line = (line + str(field))[:end]
            line += " " * (end - len(line))
        print(line)

    def out_key(n):
        return n["name"] + "_output" if n["op"] != "null" else n["name"]

    print("_" * line_length)
    row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"])
    print("=" * line_length)
    total = 0
    for i, node in enumerate(nodes):
        if node["op"] == "null" and i > 0:
            continue        # inputs are listed as previous layers, except the first node
        previous, pre_filter = [], 0
        if node["op"] != "null":
            for src, *_ in node["inputs"]:
                src_node = nodes[src]
                if src_node["op"] != "null" or src in heads:
                    previous.append(src_node["name"])
                    if shape_dict is not None and out_key(src_node) in shape_dict:
                        pre_filter += int(shape_dict[out_key(src_node)][1:][0])
        out_shape = []
        if shape_dict is not None and (node["op"] != "null" or i in heads) \
                and out_key(node) in shape_dict:
            out_shape = shape_dict[out_key(node)][1:]
        n = _layer_params(node, pre_filter, shape_dict)
        total += n
        row([f"{node['name']}({node['op']})", "x".join(str(d) for d in out_shape), n,
             previous[0] if previous else ""])
        for p in previous[1:]:
            row(["", "", "", p])
        print(("=" if i == len(nodes) - 1 else "_") * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)


def _label(node):
    op, attrs = node["op"], node.get("attrs", {})
    if op == "Convolution":
        stride = "x".join(_str2tuple(attrs["stride"])) if "stride" in attrs else "1"
        return (f"Convolution\n{'x'.join(_str2tuple(attrs['kernel']))}/{stride}, "
                f"{attrs['num_filter']}"), _COLORS[1]
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs['num_hidden']}", _COLORS[1]
    if op == "BatchNorm":
        return node["name"], _COLORS[3]
    if op == "Activation":
        return f"Activation\n{attrs['act_type']}", _COLORS[2]
    if op == "LeakyReLU":
        return f"LeakyReLU\n{attrs.get('act_type', 'Leaky')}", _COLORS[2]
    if op == "Pooling":
        kernel = "x".join(_str2tuple(attrs["kernel"])) if "kernel" in attrs else "[]"
        stride = "x".join(_str2tuple(attrs["stride"])) if "stride" in attrs else "1"
        return f"Pooling\n{attrs['pool_type']}, {kernel}/{stride}", _COLORS[4]
    if op in ("Concat", "Flatten", "Reshape"):
        return node["name"], _COLORS[5]
    if op == "Softmax":
        return node["name"], _COLORS[6]
    return (attrs["op_type"] if op == "Custom" else node["name"]), _COLORS[7]


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None,
                 node_attrs=None, hide_weights=True):
    """A ``graphviz.Digraph`` of ``symbol``: one box per op, inputs as ovals, edges from
    inputs to consumers labelled with shapes (``shape``) and dtypes (``dtype``) when given.

    ``hide_weights`` leaves out the inputs named like weights (``*_weight``, ``*_bias``,
    BatchNorm's statistics ...). Needs the ``graphviz`` package.
    """
    try:
        from graphviz import Digraph
    except ImportError:
        raise ImportError("plot_network: drawing a network requires the graphviz Python "
                          "package (pip install graphviz, or pip install 'gpunda[viz]') and "
                          "the Graphviz programs to render it") from None
    _check_symbol(symbol, "plot_network")
    shape_dict = _output_shapes(symbol, shape, "plot_network") if shape is not None else None
    type_dict = None
    if dtype is not None:
        internals = symbol.get_internals()
        _, out_types, _ = internals.infer_type(**dtype)
        if out_types is None:
            raise ValueError(f"plot_network: Input type is incomplete: {dtype}")
        type_dict = dict(zip(internals.list_outputs(), out_types))
    nodes = json.loads(symbol.tojson())["nodes"]
    names = [n["name"] for n in nodes]
    if len(names) != len(set(names)):
        repeated = sorted({n for n in names if names.count(n) > 1})
        warnings.warn("There are multiple variables with the same name in your graph, this "
                      "may result in cyclic graph. Repeated names: " + ",".join(repeated),
                      RuntimeWarning, stacklevel=2)
    node_attr = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
                 "style": "filled"}
    node_attr.update(node_attrs or {})
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        attr = copy.deepcopy(node_attr)
        if node["op"] == "null":
            if node["name"].endswith(_WEIGHT_SUFFIXES):
                if hide_weights:
                    hidden.add(node["name"])
                continue
            attr["shape"] = "oval"
            label, attr["fillcolor"] = node["name"], _COLORS[0]
        else:
            label, attr["fillcolor"] = _label(node)
        dot.node(name=node["name"], label=label, **attr)

    def edge_key(src):
        if src["op"] == "null":
            return src["name"]
        key = src["name"] + "_output"
        n_out = src.get("attrs", {}).get("num_outputs")
        return key + str(int(n_out) - 1) if n_out is not None else key

    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"][:1] if node["op"] == "_contrib_BilinearResize2D" \
            else node["inputs"]
        for src_id, *_ in inputs:
            src = nodes[src_id]
            if src["name"] in hidden:
                continue
            attr = {"dir": "back", "arrowtail": "open", "label": ""}
            if shape_dict is not None:
                attr["label"] = "x".join(str(d) for d in shape_dict[edge_key(src)][1:])
            if type_dict is not None:
                import numpy as np
                attr["label"] += "(" + np.dtype(type_dict[edge_key(src)]).name + ")"
            dot.edge(tail_name=node["name"], head_name=src["name"], **attr)
    return dot
