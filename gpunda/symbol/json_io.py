"""Symbol <-> MXNet's symbol JSON (see shared/fixtures/mxnet/FORMAT.md section 2).

The writer reproduces the layout of MXNet's (dmlc) JSON writer byte for byte:
2-space indent, ``", "`` separators before line breaks, arrays of numbers or
entries inline up to 10 items, string maps inline when they have one key.
The reader also accepts the older ``param``/``attr`` node keys, 2-element
entries and files without ``node_row_ptr``.
"""
from __future__ import annotations

import json

from gpunda.base import GpundaError
from gpunda.ops.registry import get_op
from gpunda.symbol.symbol import Symbol, _Node, topo_order, params_from_attrs

MXNET_VERSION = 10901
_NODE_KEYS = {"op", "name", "inputs", "attrs", "attr", "param", "control_deps", "subgraphs"}


def _s(x):
    return json.dumps(x, ensure_ascii=False)


def _inline_list(items):
    return "[" + ", ".join(items) + "]"


def _list(items, indent, multi=None):
    """A JSON array of already-rendered items in dmlc's layout."""
    if multi is None:
        multi = len(items) > 10
    if not multi or not items:
        return _inline_list(items)
    pad = " " * (indent + 2)
    return "[\n" + ", \n".join(pad + it for it in items) + "\n" + " " * indent + "]"


def _map(d, indent):
    keys = sorted(d)
    if len(keys) <= 1:
        return "{" + ", ".join(f"{_s(k)}: {_s(d[k])}" for k in keys) + "}"
    pad = " " * (indent + 2)
    return "{\n" + ", \n".join(f"{pad}{_s(k)}: {_s(d[k])}" for k in keys) + "\n" + \
        " " * indent + "}"


def _entry(e):
    return "[" + ", ".join(str(v) for v in e) + "]"


def to_json(sym):
    """MXNet JSON text for ``sym``."""
    return _graph_json(sym, top=True)


def _graph_json(sym, top):
    """A graph's JSON; a subgraph (``top=False``, a control-flow node's body) carries no
    graph attributes, as in MXNet."""
    order = topo_order(sym._outputs)
    nid = {id(n): i for i, n in enumerate(order)}
    node_texts = []
    for n in order:
        mut = set(n.op.mutated(n.p)) if n.op is not None and n.op.mutates else set()
        entries = [[nid[id(c)], i, 1 if (k in mut and c.op is None) else 0]
                   for k, (c, i) in enumerate(n.inputs)]
        pad = " " * 6
        fields = [f'{pad}"op": {_s(n.op.name if n.op is not None else "null")}',
                  f'{pad}"name": {_s(n.name)}']
        if n.attrs:
            fields.append(f'{pad}"attrs": {_map(n.attrs, 6)}')
        fields.append(f'{pad}"inputs": {_list([_entry(e) for e in entries], 6)}')
        subs = getattr(n.p, "_subgraphs", None) if n.op is not None else None
        if subs:
            texts = [_graph_json(g, top=False).replace("\n", "\n" + " " * 8) for g in subs]
            fields.append(f'{pad}"subgraphs": {_list(texts, 6, multi=True)}')
        node_texts.append("{\n" + ", \n".join(fields) + "\n    }")
    arg_nodes = [str(i) for i, n in enumerate(order) if n.op is None]
    row = [0]
    for n in order:
        row.append(row[-1] + n.nout)
    heads = [_entry([nid[id(n)], i, 0]) for n, i in sym._outputs]
    parts = [
        '  "nodes": ' + _list(node_texts, 2, multi=True),
        '  "arg_nodes": ' + _list(arg_nodes, 2),
        '  "node_row_ptr": ' + _list([str(r) for r in row], 2),
        '  "heads": ' + _list(heads, 2),
    ] + ([_graph_attrs()] if top else [])
    return "{\n" + ", \n".join(parts) + "\n}"


def _graph_attrs():
    from gpunda.util import is_np_shape
    if is_np_shape():
        # MXNet marks graphs written under NumPy shape semantics (0 is then a real size)
        return ('  "attrs": {\n    "is_np_shape": ["int", 1], \n'
                '    "mxnet_version": ["int", %d]\n  }' % MXNET_VERSION)
    return '  "attrs": {"mxnet_version": ["int", %d]}' % MXNET_VERSION


def _legacy_shape_attrs(nodes):
    """A graph written without NumPy shape semantics, read with them on: its ``__shape__``
    zeros meant "unknown", which is -1 now (MXNet converts the same way on load)."""
    from gpunda.symbol.infer import parse_shape_attr
    for n in nodes:
        s = n.attrs.get("__shape__")
        t = parse_shape_attr(s) if s is not None else None
        if t is not None and 0 in t:
            n.attrs["__shape__"] = str(tuple(-1 if d == 0 else d for d in t))


def from_json(text):
    """A Symbol from MXNet JSON text; GpundaError naming the node for anything invalid."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        g = json.loads(text)
    except (ValueError, TypeError) as e:
        raise GpundaError(f"load_json: not valid JSON: {e}") from None
    if not isinstance(g, dict) or "nodes" not in g or "heads" not in g:
        raise GpundaError("load_json: expected an object with 'nodes' and 'heads' (MXNet "
                          "symbol JSON)")
    nodes = []
    for k, jn in enumerate(g["nodes"]):
        if not isinstance(jn, dict):
            raise GpundaError(f"load_json: node {k} is not an object")
        name = jn.get("name", f"node{k}")
        bad = set(jn) - _NODE_KEYS
        if bad:
            raise GpundaError(f"load_json: node {k} ({name!r}) has unknown key(s) {sorted(bad)}")
        subs = jn.get("subgraphs") or []
        if not isinstance(subs, list) or not all(isinstance(sg, dict) for sg in subs):
            raise GpundaError(f"load_json: node {k} ({name!r}): subgraphs must be a list of "
                              f"graphs")
        attrs = {}
        for key in ("param", "attr", "attrs"):
            v = jn.get(key)
            if v:
                if not isinstance(v, dict):
                    raise GpundaError(f"load_json: node {k} ({name!r}): {key} must be an object")
                attrs.update({str(a): str(b) for a, b in v.items()})
        ins = []
        for j, e in enumerate(jn.get("inputs", [])):
            if not isinstance(e, (list, tuple)) or len(e) not in (2, 3):
                raise GpundaError(f"load_json: node {k} ({name!r}) input {j} must be "
                                  f"[node_id, index(, version)], got {e!r}")
            src, idx = int(e[0]), int(e[1])
            if not 0 <= src < k:
                raise GpundaError(f"load_json: node {k} ({name!r}) input {j} refers to node "
                                  f"{src}, which does not come before it (a cycle or a bad "
                                  f"node order)")
            if not 0 <= idx < nodes[src].nout:
                raise GpundaError(f"load_json: node {k} ({name!r}) input {j} uses output {idx} "
                                  f"of node {nodes[src].name!r}, which has {nodes[src].nout}")
            ins.append((nodes[src], idx))
        opname = jn.get("op", "null")
        if opname == "null":
            if ins:
                raise GpundaError(f"load_json: variable node {k} ({name!r}) has inputs")
            nodes.append(_Node(None, name, attrs, [], None))
            continue
        try:
            op = get_op(opname)
        except GpundaError:
            raise GpundaError(f"load_json: node {k} ({name!r}) uses operator {opname!r}, which "
                              f"gpunda does not have") from None
        p = params_from_attrs(op, attrs, len(ins), f"load_json: node {k} ({name!r})")
        if subs:
            from gpunda.ops.control_flow.loops import with_subgraphs
            p = with_subgraphs(p, [from_json(json.dumps(sg)) for sg in subs])
        names = op.input_names(p)
        if not op.variadic and len(names) != len(ins):
            raise GpundaError(f"load_json: node {k} ({name!r}) operator {op.name} expects "
                              f"{len(names)} inputs ({', '.join(names)}) but has {len(ins)}")
        nodes.append(_Node(op, name, attrs, ins, p))
    heads = []
    for j, e in enumerate(g["heads"]):
        if not isinstance(e, (list, tuple)) or len(e) not in (2, 3) or not \
                0 <= int(e[0]) < len(nodes):
            raise GpundaError(f"load_json: head {j} is not a valid entry: {e!r}")
        n = nodes[int(e[0])]
        if not 0 <= int(e[1]) < n.nout:
            raise GpundaError(f"load_json: head {j} uses output {e[1]} of node {n.name!r}, "
                              f"which has {n.nout}")
        heads.append((n, int(e[1])))
    from gpunda.util import is_np_shape
    gattrs = g.get("attrs")
    if is_np_shape() and not (isinstance(gattrs, dict) and "is_np_shape" in gattrs):
        _legacy_shape_attrs(nodes)
    return Symbol(heads)
