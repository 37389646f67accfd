"""``mx.contrib.onnx.onnx2mx.import_onnx``: MXNet's ``GraphProto``, the node-by-node ONNX
walk that calls the per-op translation functions (``_op_translations``, keyed by ONNX op
type in ``convert_map``) with ``(attrs, inputs, proto_obj)``, as MXNet 1.9.1's does.

gpunda's own ``mx.contrib.onnx.import_model`` uses a fuller importer
(``gpunda.contrib.onnx._importer``); this class is MXNet's convention, for code that drives
it or calls the translation functions itself.
"""
import numpy as np

from gpunda.base import GpundaError, GpundaValueError, string_types
from gpunda.contrib.onnx.onnx2mx._import_helper import _convert_map as convert_map
from gpunda.contrib.onnx.onnx2mx._translation_utils import OnnxNotImplementedError

__all__ = ["GraphProto"]


class GraphProto(object):
    """The state of one ONNX import in MXNet's convention.

    Attributes read by the translation functions: ``_params`` (initializer name ->
    NDArray), ``_nodes`` (tensor name -> Symbol), ``opset_version``, ``model_metadata``
    (``get_graph_metadata``'s dict), ``arg_dict``/``aux_dict`` (the parameters the Symbol
    built so far uses), ``_num_input``, ``_num_param``.
    """

    def __init__(self):
        self._nodes = {}
        self._params = {}
        self._num_input = 0
        self._num_param = 0
        self.aux_dict = {}
        self.arg_dict = {}
        self.model_metadata = {}
        self.opset_version = 0

    def _convert_operator(self, node_name, op_name, attrs, inputs):
        """The Symbol of one ONNX node: the translation function of ``op_name`` gives an
        MXNet op name (then called with its attributes and inputs, named ``node_name``)
        or a finished Symbol."""
        fn = convert_map.get(op_name)
        if fn is None:
            raise OnnxNotImplementedError(f"Operator {op_name} not implemented.")
        op, new_attrs, inputs = fn(attrs, inputs, self)
        if not isinstance(op, string_types):
            return op
        from gpunda import symbol
        new_op = getattr(symbol, op, None)
        if not new_op:
            raise GpundaError(f"Unable to map op_name {op} to sym")
        if node_name is not None:
            new_attrs = dict(new_attrs, name=node_name)
        return new_op(*inputs, **new_attrs)

    def from_onnx(self, graph, opset_version):
        """``(sym, arg_params, aux_params)`` of an ``onnx.GraphProto``: initializers
        become parameters, the other graph inputs variables, and each node is translated
        in order."""
        from gpunda import ndarray as nd
        from gpunda import symbol
        self.opset_version = opset_version
        self.model_metadata = self.get_graph_metadata(graph)
        for t in graph.initializer:
            if not t.name.strip():
                raise GpundaValueError("Tensor's name is required.")
            self._params[t.name] = self._parse_array(t)
        for i in graph.input:
            if i.name in self._params:
                self._nodes[i.name] = symbol.Variable(name=i.name,
                                                      shape=self._params[i.name].shape)
            else:
                self._nodes[i.name] = symbol.Variable(name=i.name)
        for node in graph.node:
            name = node.name.strip() or None
            attrs = self._parse_attr(node.attribute)
            missing = [i for i in node.input if i not in self._nodes]
            if missing:
                raise GpundaError(f"import_onnx: node {node.name or node.op_type!r} reads "
                                  f"{missing[0]!r}, which no input, initializer or earlier "
                                  "node gives")
            inputs = [self._nodes[i] for i in node.input]
            sym = self._convert_operator(name, node.op_type, attrs, inputs)
            for k, out in zip(node.output, range(len(sym.list_outputs()))):
                self._nodes[k] = sym[out]
            for a in sym.list_arguments():
                if a in self._params:
                    self.arg_dict[a] = nd.array(self._params[a])
            for a in sym.list_auxiliary_states():
                if a in self._params:
                    self.aux_dict[a] = nd.array(self._params[a])
        out = [self._nodes[o.name] for o in graph.output]
        out = symbol.Group(out) if len(out) > 1 else out[0]
        return out, self.arg_dict, self.aux_dict

    def get_graph_metadata(self, graph):
        """``{'input_tensor_data': [(name, shape, onnx elem type)], 'output_tensor_data':
        [(name, shape)]}``; inputs with an initializer are left out."""
        inits = {t.name for t in graph.initializer}

        def shape(vi):
            return tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
        return {"input_tensor_data": [(vi.name, shape(vi), vi.type.tensor_type.elem_type)
                                      for vi in graph.input if vi.name not in inits],
                "output_tensor_data": [(vi.name, shape(vi)) for vi in graph.output]}

    def graph_to_gluon(self, graph, ctx, opset_version):
        """The graph as a ``gluon.nn.SymbolBlock`` with its parameters loaded on ``ctx``."""
        from gpunda import symbol
        from gpunda.gluon import SymbolBlock
        sym, arg_params, aux_params = self.from_onnx(graph, opset_version)
        meta = self.get_graph_metadata(graph)
        data = [symbol.var(m[0]) for m in meta["input_tensor_data"]]
        net = SymbolBlock(outputs=sym, inputs=data)
        net_params = net.collect_params()
        for params in (arg_params, aux_params):
            for name, value in params.items():
                if name in net_params:
                    net_params[name].shape = value.shape
                    net_params[name]._load_init(value, ctx=ctx)
        return net

    def _parse_array(self, tensor_proto):
        """An ONNX TensorProto as an NDArray (float32 unless given as such, as MXNet's
        ``nd.array`` of a NumPy array); a scalar becomes shape ``(1,)``."""
        from gpunda import ndarray as nd
        from gpunda.contrib.onnx import _onnx
        to_array = _onnx().numpy_helper.to_array
        if len(tuple(tensor_proto.dims)) > 0:
            arr = to_array(tensor_proto).reshape(tuple(tensor_proto.dims))
        else:
            arr = np.array([to_array(tensor_proto)])
        return nd.array(arr)

    def _parse_attr(self, attr_proto):
        """A list of AttributeProto as a dict: numbers and (decoded) strings as they are,
        lists as tuples, tensors and graphs as their protos."""
        attrs = {}
        for a in attr_proto:
            for f in ("f", "i", "s"):
                if a.HasField(f):
                    v = getattr(a, f)
                    attrs[a.name] = v.decode("utf-8") if isinstance(v, bytes) else v
            for f in ("floats", "ints", "strings"):
                if list(getattr(a, f)):
                    if a.name in attrs:
                        raise GpundaValueError(f"attribute {a.name!r}: only one type of "
                                               "attr is allowed")
                    attrs[a.name] = tuple(getattr(a, f))
            for f in ("t", "g"):
                if a.HasField(f):
                    attrs[a.name] = getattr(a, f)
            for f in ("tensors", "graphs"):
                if list(getattr(a, f)):
                    raise OnnxNotImplementedError(
                        f"attribute {a.name!r}: Filed {f} is not supported in mxnet.")
            if a.name not in attrs:
                raise GpundaValueError(f"Cannot parse attribute: \n{a}\n.")
        return attrs
