"""ONNX -> Symbol: the graph walk of ``mx.contrib.onnx.import_model``.

Each ONNX node is handed to the converter registered for its op type
(``_import_ops.IMPORTERS``), which returns the Symbol(s) of its outputs. Initializers
become the model's parameters when an op consumes them as data; when an op reads them
as settings (Reshape's shape, Slice's starts, Clip's bounds ...) they stay plain values.
Nodes whose inputs are all constants and that only rearrange them (Reshape, Transpose,
Cast, ...) are folded, so a transposed weight is a parameter, not an op.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError

__all__ = ["OnnxImporter", "MIN_IMPORT_OPSET"]

MIN_IMPORT_OPSET = 11

# ops folded when every input is a constant: op type -> numpy evaluation
_FOLD = {
    "Identity": lambda imp, n, a, v: v[0],
    "Cast": lambda imp, n, a, v: v[0].astype(imp.np_dtype(a["to"])),
    "Transpose": lambda imp, n, a, v: np.transpose(v[0], a.get("perm")),
    "Reshape": lambda imp, n, a, v: v[0].reshape(_onnx_reshape(v[0].shape, v[1])),
    "Unsqueeze": lambda imp, n, a, v: _unsqueeze(v[0], a.get("axes", v[1] if len(v) > 1 else None)),
    "Squeeze": lambda imp, n, a, v: _squeeze(v[0], a.get("axes", v[1] if len(v) > 1 else None)),
    "Shape": lambda imp, n, a, v: np.asarray(v[0].shape, dtype=np.int64),
    "Concat": lambda imp, n, a, v: np.concatenate(v, axis=a["axis"]),
}


def _onnx_reshape(shape, target):
    t = [int(d) for d in target]
    return tuple(shape[k] if d == 0 else d for k, d in enumerate(t))


def _unsqueeze(x, axes):
    nd = x.ndim + len(axes)
    for a in sorted(int(a) % nd for a in axes):
        x = np.expand_dims(x, a)
    return x


def _squeeze(x, axes):
    return np.squeeze(x) if axes is None else np.squeeze(x, tuple(int(a) for a in axes))


class OnnxImporter:
    """State of one import: Symbols and constant values by ONNX tensor name."""

    def __init__(self, onnx, model):
        from gpunda import symbol
        self.onnx, self.sym = onnx, symbol
        self.model = model
        self.opset = self._check_opset(model)
        self.consts = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
        self.values = {}         # tensor name -> Symbol
        self.params = {}         # name of a constant used as data -> value
        self.shape_source = {}   # output of a Shape node -> the tensor it measures
        self.dim_source = {}     # a scalar that is one dim (or the size) of a tensor
        self.ranks = self._ranks(model)
        self.node = None

    def _check_opset(self, model):
        opset = None
        for imp in model.opset_import:
            if imp.domain in ("", "ai.onnx"):
                opset = imp.version
            else:
                raise GpundaError(f"import_model: the model uses operator set domain "
                                  f"{imp.domain!r} (version {imp.version}); only the default "
                                  "ONNX domain can be imported")
        newest = self.onnx.defs.onnx_opset_version()
        if opset is None or not MIN_IMPORT_OPSET <= opset <= newest:
            raise GpundaError(f"import_model: ONNX opset {opset} is not supported; "
                              f"import reads opsets {MIN_IMPORT_OPSET}..{newest}")
        return opset

    def _ranks(self, model):
        try:
            inferred = self.onnx.shape_inference.infer_shapes(model)
        except Exception:  # noqa: BLE001 -- ranks are a help, not a requirement
            inferred = model
        g = inferred.graph
        ranks, self.shapes = {}, {}
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            t = vi.type.tensor_type
            if t.HasField("shape"):
                ranks[vi.name] = len(t.shape.dim)
                self.shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None
                                             for d in t.shape.dim)
        for k, v in self.consts.items():
            ranks[k] = v.ndim
            self.shapes[k] = v.shape
        return ranks

    # -- helpers for converters --------------------------------------------------------
    def np_dtype(self, onnx_type):
        return np.dtype(self.onnx.helper.tensor_dtype_to_np_dtype(onnx_type))

    def rank(self, name):
        r = self.ranks.get(name)
        if r is None:
            raise self.unsupported(f"the rank of input {name!r} is unknown")
        return r

    def const(self, name):
        """The constant value of tensor ``name`` (an initializer or folded), else None."""
        return self.consts.get(name) if name else None

    def need_const(self, name, what):
        v = self.const(name)
        if v is None:
            raise self.unsupported(f"{what} ({name!r}) must be a constant")
        return v

    def get(self, name):
        """The Symbol of tensor ``name``; a constant used as data becomes a parameter."""
        if name in self.values:
            return self.values[name]
        if name in self.consts:
            v = self.consts[name]
            self.params[name] = v
            s = self.sym.var(name, shape=v.shape, dtype=v.dtype)
            self.values[name] = s
            return s
        raise GpundaError(f"import_model: tensor {name!r} is used before it is produced")

    def new_param(self, name, value):
        """A parameter made by the importer (a weight re-laid for MXNet)."""
        base, k = name, 0
        while name in self.consts or name in self.values:
            k += 1
            name = f"{base}_{k}"
        self.consts[name] = value
        return self.get(name)

    def op_name(self):
        n = self.node
        return n.name or (n.output[0] if n.output else n.op_type.lower())

    def unsupported(self, why):
        n = self.node
        return GpundaError(f"import_model: node {self.op_name()!r} (ONNX op {n.op_type}) "
                           f"cannot be imported: {why}")

    # -- the walk ----------------------------------------------------------------------
    def run(self, importers):
        g = self.model.graph
        onnx = self.onnx
        for vi in g.input:
            if vi.name in self.consts:
                continue
            t = vi.type.tensor_type
            shape = [d.dim_value if d.HasField("dim_value") else 0 for d in t.shape.dim]
            dtype = self.np_dtype(t.elem_type) if t.elem_type else None
            self.values[vi.name] = self.sym.var(vi.name, shape=tuple(shape) or None,
                                                dtype=dtype)
        for node in g.node:
            self.node = node
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
            if node.domain not in ("", "ai.onnx"):
                raise self.unsupported(f"domain {node.domain!r}")
            if node.op_type == "Constant":
                self.consts[node.output[0]] = self._constant_value(attrs)
                continue
            ins = list(node.input)
            if node.op_type in _FOLD and ins and all(i in self.consts for i in ins if i):
                vals = [self.consts[i] for i in ins if i]
                self.consts[node.output[0]] = np.asarray(_FOLD[node.op_type](self, node, attrs,
                                                                             vals))
                continue
            if node.op_type == "Shape":
                self.shape_source[node.output[0]] = ins[0]
            fn = importers.get(node.op_type)
            if fn is None:
                raise GpundaError(f"import_model: node {self.op_name()!r} has ONNX op "
                                  f"{node.op_type!r}, which has no MXNet conversion (opset "
                                  f"{self.opset})")
            res = fn(self, node, attrs, ins)
            res = list(res) if isinstance(res, (list, tuple)) else [res]
            for name, s in zip(node.output, res):
                if name and s is not None:
                    self.values[name] = s
        self.node = None
        outs = [self.get(o.name) for o in g.output]
        return outs[0] if len(outs) == 1 else self.sym.Group(outs)

    def _constant_value(self, attrs):
        if "value" in attrs:
            return self.onnx.numpy_helper.to_array(attrs["value"])
        for k, dt in (("value_float", np.float32), ("value_int", np.int64)):
            if k in attrs:
                return np.asarray(attrs[k], dtype=dt)
        for k, dt in (("value_floats", np.float32), ("value_ints", np.int64)):
            if k in attrs:
                return np.asarray(list(attrs[k]), dtype=dt)
        raise self.unsupported("a Constant without a dense value")
