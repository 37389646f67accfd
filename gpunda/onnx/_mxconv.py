"""MXNet's per-node converter convention, bridged to gpunda's exporter.

MXNet 1.9.1 converts a Symbol node by node: a converter is ``fn(node, **kwargs)`` where
``node`` is the node's dict in the symbol JSON (``{"op", "name", "attrs", "inputs":
[[index, output, 0], ...]}``) and ``kwargs`` carry ``outputs_lookup`` (per JSON node
index, the ONNX name and dtype of each output), ``initializer`` (a list the converter
appends TensorProtos to), ``weights``, ``mx_graph``, ``proc_nodes``, ``idx``,
``opset_version`` and ``is_input``. It returns ONNX NodeProtos (a list, or ``(list,
dtypes)``) whose outputs are named ``node["name"]`` (or that name plus the output index).
Converters are registered per opset in ``REGISTRY`` (``MXNetGraph.registry_``) and the
newest one at or below the export's opset is used.

Two directions live here:

- ``ExportBridge``: ``export_model`` hands a node whose op has a converter registered by
  the user (``MXNetGraph.register``) to that converter with MXNet's arguments, and wires
  the returned nodes into gpunda's graph; it takes precedence over gpunda's converter.
- ``run_builtin``: MXNet's built-in ``convert_*`` names (``_op_translations``) called with
  MXNet's arguments run gpunda's own converter for the op on a one-node graph and hand
  back its ONNX nodes under MXNet's names (new constants go to ``kwargs["initializer"]``).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError, NotImplementedForGpunda

__all__ = ["REGISTRY", "NodeOutput", "register", "lookup", "has_user_converters",
           "ExportBridge", "run_builtin", "mark_builtin"]

# opset version -> {MXNet op name: converter}; MXNetGraph.registry_ is this dict
REGISTRY: dict = {}

_BUILTIN = "_gpunda_builtin"


class NodeOutput:
    """One entry of ``outputs_lookup`` (MXNet's ``NodeOutput``: ``name`` and ``dtype``);
    gpunda's exporter also fills ``shape`` and ``dynamic`` (the dims that vary with the
    dynamic input dims)."""

    def __init__(self, name, dtype, shape=None, dynamic=()):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.shape = None if shape is None else tuple(shape)
        self.dynamic = tuple(dynamic)

    def __repr__(self):
        return f"NodeOutput(name={self.name!r}, dtype={self.dtype})"


def register(op_name, opset_version, fn):
    REGISTRY.setdefault(int(opset_version), {})[op_name] = fn
    return fn


def mark_builtin(fn):
    """Mark ``fn`` as one of MXNet's built-in converter names: the exporter converts its op
    with gpunda's own converter instead of calling it."""
    setattr(fn, _BUILTIN, True)
    return fn


def lookup(op_name, opset_version):
    """The converter MXNet's ``convert_layer`` picks: the one registered for ``op_name`` at
    the newest opset from ``opset_version`` down to 12, else None."""
    top = max(int(opset_version), 12)
    for v in range(top, 11, -1):
        fn = REGISTRY.get(v, {}).get(op_name)
        if fn is not None:
            return fn
    return None


def has_user_converters():
    return any(not getattr(fn, _BUILTIN, False) for m in REGISTRY.values() for fn in m.values())


def _onnx():
    from gpunda.onnx.export import _onnx as load
    return load()


# ---------------------------------------------------------------------------------------
# export_model -> user converters
# ---------------------------------------------------------------------------------------
class ExportBridge:
    """Calls converters registered in MXNet's convention during one ``build_model``."""

    def __init__(self, sym, order, g, weights, inputs, dyn):
        self._sym, self._order, self._g, self._weights = sym, order, g, weights
        self._inputs, self._dyn = inputs, dyn
        self._graph = None

    def converter_for(self, node):
        fn = lookup(node.op.name, self._g.opset)
        if fn is None or getattr(fn, _BUILTIN, False):
            return None
        return fn

    def _mx_graph(self):
        if self._graph is None:
            import json
            from gpunda.symbol.json_io import to_json
            nodes = json.loads(to_json(self._sym))["nodes"]
            seen = set()
            for k, jn in enumerate(nodes):      # MXNet's exporter renames repeated names
                if jn["name"] in seen:
                    jn["name"] = f"idx_{k}_{jn['name']}"
                else:
                    seen.add(jn["name"])
            self._graph = nodes
        return self._graph

    def _outputs_lookup(self, upto):
        g = self._g
        res = []
        for n in self._order[:upto]:
            row = []
            for i in range(n.nvis):
                key = (id(n), i)
                dt = g._dtypes.get(key)
                row.append(NodeOutput(g._names.get(key), dt if dt is not None else np.float32,
                                      g._shapes.get(key), g._varying.get(key, ())))
            res.append(row)
        return res

    def _proc_nodes(self):
        g = self._g
        res = []
        for (name, shape, dt), dshape in zip(self._inputs, self._dyn):
            dims = [None if dshape[k] is None else int(d) for k, d in enumerate(shape)]
            res.append(g.helper.make_tensor_value_info(name, g.onnx_dtype(dt), dims))
        return res + list(g.nodes)

    def convert(self, idx, node, fn):
        """Run ``fn`` on ``node`` (position ``idx`` of the topological order) and add what
        it returns to the graph."""
        from onnx import NodeProto, ValueInfoProto, TensorProto, numpy_helper
        g = self._g
        graph = self._mx_graph()
        jnode = graph[idx]
        initializer = []
        kwargs = dict(is_input=False, mx_graph=graph, weights=self._weights,
                      proc_nodes=self._proc_nodes(), initializer=initializer,
                      outputs_lookup=self._outputs_lookup(idx), idx=idx,
                      opset_version=g.opset)
        where = (f"export_model: the converter {getattr(fn, '__name__', fn)!r} registered "
                 f"for op {node.op.name!r} (node {node.name!r})")
        ret = fn(jnode, **kwargs)
        if isinstance(ret, tuple) and len(ret) == 2:
            ret = ret[0]
        if not isinstance(ret, list):
            raise GpundaError(f"{where} returned {type(ret).__name__}; a converter returns a "
                              "list of onnx NodeProtos (or (list, dtypes))")
        made = {t.name for t in initializer}
        before = set(g._taken)
        for t in initializer:
            if not isinstance(t, TensorProto):
                raise GpundaError(f"{where} appended a {type(t).__name__} to initializer; "
                                  "only onnx TensorProtos go there")
            if t.name in before:
                raise GpundaError(f"{where} adds the initializer {t.name!r}, a name the "
                                  "graph already uses")
            g.constants[t.name] = numpy_helper.to_array(t)
            g._taken.add(t.name)
        protos = []
        for p in ret:
            if isinstance(p, ValueInfoProto):
                if p.name in made:      # MXNet lists an initializer as a graph input too
                    continue
                raise GpundaError(f"{where} returned a ValueInfoProto {p.name!r} that is not "
                                  "one of its initializers; adding graph inputs from a "
                                  "converter is not supported")
            if not isinstance(p, NodeProto):
                raise GpundaError(f"{where} returned a {type(p).__name__}; expected onnx "
                                  "NodeProtos")
            clash = [o for o in p.output if o in before]
            if clash:
                raise GpundaError(f"{where} writes the tensor(s) {clash}, names the graph "
                                  "already uses")
            protos.append(p)
        if not protos:
            raise GpundaError(f"{where} returned no ONNX node")
        for p in protos:
            g.nodes.append(p)
            g._taken.update(p.output)
            if p.name:
                g._taken.add(p.name)
        name = jnode["name"]
        possible = {name, *(f"{name}{k}" for k in range(100))}
        outs = [o for p in protos for o in p.output if o in possible]
        if not outs:            # as MXNet: the last node stands for the output
            last = protos[-1]
            outs = [last.name if last.name in last.output else last.output[0]]

        def rank(s):
            return -1 if s == name else int(s[len(name):])
        outs = sorted(dict.fromkeys(outs), key=rank)
        for i, o in enumerate(outs[:node.nvis]):
            g.bind(node, i, o)


# ---------------------------------------------------------------------------------------
# MXNet's convert_* names -> gpunda's converters
# ---------------------------------------------------------------------------------------
def _attrs(jnode):
    res = {}
    for key in ("param", "attr", "attrs"):
        res.update(jnode.get(key) or {})
    return res


def _dims(vi_type):
    shape = vi_type.tensor_type.shape
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in shape.dim)


def _known_shape(name, kwargs):
    """The shape of tensor ``name`` from the weights, the initializers or the graph
    inputs among ``proc_nodes`` (None when none of them holds it)."""
    from onnx import ValueInfoProto
    w = (kwargs.get("weights") or {}).get(name)
    if w is not None:
        return tuple(np.shape(w))
    for t in kwargs.get("initializer") or ():
        if t.name == name:
            return tuple(t.dims)
    for p in kwargs.get("proc_nodes") or ():
        if isinstance(p, ValueInfoProto) and p.name == name:
            return _dims(p.type)
    return None


def _infer_input_shapes(jnode, kwargs, missing):
    """Shapes of the node's inputs at positions ``missing``, inferred through the part of
    ``mx_graph`` before the node (the graph inputs' shapes come from ``proc_nodes``)."""
    import json
    from gpunda.symbol import load_json
    graph, idx = kwargs.get("mx_graph"), kwargs.get("idx")
    lookup = kwargs["outputs_lookup"]
    if graph is None or idx is None:
        raise GpundaError(f"{jnode['op']} converter: the shapes of node {jnode['name']!r}'s "
                          "inputs are unknown (kwargs carry no mx_graph/idx to infer them)")
    heads = [list(jnode["inputs"][k][:2]) + [0] for k in missing]
    sub = load_json(json.dumps({"nodes": graph[:idx], "heads": heads,
                                "arg_nodes": [k for k, n in enumerate(graph[:idx])
                                              if n["op"] == "null"]}))
    known = {}
    for k, jn in enumerate(graph[:idx]):
        if jn["op"] != "null":
            continue
        names = [jn["name"]]
        if k < len(lookup) and lookup[k]:
            names.insert(0, lookup[k][0].name)
        for nm in names:
            s = _known_shape(nm, kwargs)
            if s is not None:
                known[jn["name"]] = s
                break
    known = {k: v for k, v in known.items() if k in set(sub.list_inputs())}
    if any(None in s for s in known.values()):
        raise NotImplementedForGpunda(
            f"{jnode['op']} converter: node {jnode['name']!r} sits after inputs with dynamic "
            "dims; gpunda's converters need the static input shapes")
    try:
        _, outs, _ = sub.infer_shape(**known)
    except GpundaError as e:
        raise GpundaError(f"{jnode['op']} converter: cannot infer the input shapes of node "
                          f"{jnode['name']!r}: {e}") from None
    return outs


def run_builtin(fn_name, jnode, kwargs):
    """MXNet's ``fn_name(node, **kwargs)`` done by gpunda's converter for ``node["op"]``."""
    from gpunda.ops.registry import get_op
    from gpunda.onnx._registry import converter_for
    from gpunda.onnx.export import MIN_OPSET, DEFAULT_OPSET_CAP, build_model
    from gpunda.symbol import load_json
    import json
    onnx = _onnx()
    from onnx import numpy_helper
    op_name, name = jnode["op"], jnode["name"]
    try:
        opdef = get_op(op_name)
    except Exception:   # noqa: BLE001
        opdef = None
    if opdef is None or converter_for(opdef) is None:
        raise NotImplementedForGpunda(
            f"{fn_name}: gpunda has no ONNX converter for op {op_name!r} "
            "(mx.onnx.get_operator_support() lists the ops it converts)")
    opset = kwargs.get("opset_version")
    if opset is None:
        opset = min(onnx.defs.onnx_opset_version(), DEFAULT_OPSET_CAP)
    if opset < MIN_OPSET:
        raise NotImplementedForGpunda(
            f"{fn_name}: opset_version={opset} is not supported: gpunda's converters emit "
            f"ONNX opset {MIN_OPSET} or newer")
    lookup_ = kwargs["outputs_lookup"]
    entries = [lookup_[e[0]][e[1]] for e in jnode["inputs"]]
    names = [e.name for e in entries]
    # shapes of the inputs: carried by gpunda's lookup entries, else known by name, else
    # inferred through mx_graph
    shapes = [getattr(e, "shape", None) for e in entries]
    dyn = [tuple(getattr(e, "dynamic", ()) or ()) for e in entries]
    for k, nm in enumerate(names):
        if shapes[k] is None:
            s = _known_shape(nm, kwargs)
            if s is not None and None in s:
                dyn[k] = tuple(j for j, d in enumerate(s) if d is None)
                s = None if all(d is None for d in s) else s
            shapes[k] = s
    missing = [k for k, s in enumerate(shapes) if s is None or None in s]
    if missing:
        for k, s in zip(missing, _infer_input_shapes(jnode, kwargs, missing)):
            shapes[k] = tuple(s)
    # the values of inputs that are parameters
    values = {}
    inits = {t.name: t for t in kwargs.get("initializer") or ()}
    for nm in names:
        w = (kwargs.get("weights") or {}).get(nm)
        if w is None and nm in inits:
            w = numpy_helper.to_array(inits[nm])
        if w is not None:
            values[nm] = np.asarray(w)
    # the one-node graph
    order = list(dict.fromkeys(names))
    pos = {nm: k for k, nm in enumerate(order)}
    nodes = [{"op": "null", "name": nm, "inputs": []} for nm in order]
    op_json = {"op": op_name, "name": name, "inputs": [[pos[nm], 0, 0] for nm in names]}
    if _attrs(jnode):
        op_json["attrs"] = {k: str(v) for k, v in _attrs(jnode).items()}
    nodes.append(op_json)
    one = load_json(json.dumps({"nodes": nodes, "heads": [[len(order), 0, 0]],
                                "arg_nodes": list(range(len(order)))}))
    from gpunda.symbol.symbol import Symbol
    head = one._outputs[0][0]
    one = Symbol([(head, i) for i in range(head.nvis)])
    shape_of = {nm: shapes[k] for k, nm in enumerate(names)}
    dtype_of = {nm: entries[k].dtype for k, nm in enumerate(names)}
    dyn_of = {nm: dyn[k] for k, nm in enumerate(names)}
    label = name + "_label"
    data = [nm for nm in one.list_inputs() if nm not in values and nm != label]
    dynamic = any(dyn_of[nm] for nm in data)
    dyn_shapes = [tuple(None if j in dyn_of[nm] else d for j, d in enumerate(shape_of[nm]))
                  for nm in data] if dynamic else None
    params = {nm: v for nm, v in values.items()}
    model = build_model(onnx, one, params, [shape_of[nm] for nm in data],
                        [dtype_of[nm] for nm in data], int(opset), dynamic=dynamic,
                        dynamic_input_shapes=dyn_shapes, check=False)
    graph = model.graph
    protos = list(graph.node)
    # outputs under MXNet's names; internal names kept clear of the enclosing graph's
    from gpunda.onnx.export import _rename
    outs = [o.name for o in graph.output]
    want = [name] if len(outs) == 1 else [f"{name}{i}" for i in range(len(outs))]
    taken = set(inits) | set((kwargs.get("weights") or {}))
    for p in kwargs.get("proc_nodes") or ():
        taken.update(getattr(p, "output", ()) or ())
        taken.add(getattr(p, "name", ""))
    for row in lookup_:
        taken.update(e.name for e in row if e.name)
    new_consts = [t for t in graph.initializer if t.name not in values]
    internal = [t.name for t in new_consts] + [o for p in protos for o in p.output
                                               if o not in outs]
    used = set(taken) | set(want) | set(names)

    def fresh(base):
        cand, k = base, 0
        while cand in used:
            k += 1
            cand = f"{base}_{k}"
        used.add(cand)
        return cand
    renames = {}
    for nm in internal:
        if nm in taken or nm in want:
            renames[nm] = fresh(nm)
    for old, new in renames.items():
        _rename(protos, old, new)
        for t in new_consts:
            if t.name == old:
                t.name = new
    for old, new in zip(outs, want):
        if old != new:
            _rename(protos, old, new)
    for p in protos:
        if p.name in taken:
            p.name = fresh(p.name)
    kwargs["initializer"].extend(new_consts)
    out_types = [graph.output[i].type.tensor_type.elem_type for i in range(len(outs))]
    first = entries[0].dtype if entries else None
    np_types = [np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t)) for t in out_types]
    if first is not None and all(t == first for t in np_types):
        return protos
    return protos, tuple(np_types)
