"""``mx.onnx.mx2onnx._export_onnx``: ``MXNetGraph``, the Symbol -> ONNX graph converter.

``MXNetGraph.register(op_name, opset_version)`` registers a converter in MXNet's
convention (``fn(node, **kwargs)`` on the node's JSON dict, returning ONNX NodeProtos);
``mx.onnx.export_model`` calls it for the nodes of that op, before gpunda's own converter
(``gpunda.onnx._mxconv`` wires its nodes in). ``convert_layer`` calls the converter MXNet
would pick for a node; the built-in ``convert_*`` names of ``_op_translations`` run
gpunda's converters. ``create_onnx_graph_proto`` converts a whole Symbol.
"""
from gpunda.onnx import _mxconv

__all__ = ["MXNetGraph"]


class MXNetGraph:
    """Converts an MXNet Symbol and its parameters to an ONNX graph."""

    registry_ = _mxconv.REGISTRY
    input_output_maps_ = {}

    def __init__(self):
        self.nodes = []
        self.input_tensors = []
        self.output_tensors = []

    @staticmethod
    def register(op_name, opset_version=12):
        """Decorator: the function converts MXNet op ``op_name`` for ONNX opsets from
        ``opset_version`` up (until one registered for a newer opset takes over)."""
        def wrapper(func):
            _mxconv.register(op_name, opset_version, func)
            return func
        return wrapper

    @staticmethod
    def convert_layer(node, **kwargs):
        """Convert one JSON node with the converter registered for its op at the newest
        opset from ``kwargs["opset_version"]`` (default onnx's newest) down to 12.

        Returns ``(nodes, dtypes)``: ``dtypes`` is None when the converter returns only
        a list. Raises AttributeError when no converter is registered for the op."""
        from gpunda.onnx.export import _onnx
        onnx = _onnx()
        op = str(node["op"])
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        if opset < 12:
            import logging
            logging.warning("Your ONNX op set version is %s, which is lower than the lowest "
                            "tested op set (12), please consider updating ONNX", opset)
            opset = 12
        func = _mxconv.lookup(op, opset)
        if func is None:
            raise AttributeError(f"No conversion function registered for op type {op} yet.")
        ret = func(node, **kwargs)
        if isinstance(ret, list):
            return ret, None
        return ret

    @staticmethod
    def split_params(sym, params):
        """``params`` split into ``(arg_params, aux_params)`` by ``sym``'s lists."""
        args, auxs = set(sym.list_arguments()), set(sym.list_auxiliary_states())
        return ({k: v for k, v in params.items() if k in args},
                {k: v for k, v in params.items() if k in auxs})

    @staticmethod
    def get_outputs(sym, params, in_shapes, output_label, in_types, dynamic=False,
                    dynamic_input_shapes=None):
        """``{output name: shape}`` of ``sym`` for inputs of ``in_shapes``."""
        names = [n for n in sym.list_arguments() if n not in params and n != output_label]
        known = {n: tuple(s) for n, s in zip(names, in_shapes)}
        _, out_shapes, _ = sym.infer_shape(**known)
        return dict(zip(sym.list_outputs(), out_shapes))

    @staticmethod
    def convert_weights_to_numpy(weights_dict):
        """``{name (without arg:/aux: prefix): numpy array}``."""
        return {k.split(":", 1)[-1] if k.startswith(("arg:", "aux:")) else k: v.asnumpy()
                for k, v in weights_dict.items()}

    def create_onnx_graph_proto(self, sym, params, in_shapes, in_types, verbose=False,
                                opset_version=None, dynamic=True, dynamic_input_shapes=None):
        """The ``onnx.GraphProto`` of ``sym`` (what ``export_model`` writes, as a graph)."""
        from gpunda.onnx.export import DEFAULT_OPSET_CAP, _check_opset, _onnx, build_model
        onnx = _onnx()
        opset = (min(onnx.defs.onnx_opset_version(), DEFAULT_OPSET_CAP) if opset_version is None
                 else _check_opset(onnx, opset_version))
        model = build_model(onnx, sym, params, in_shapes, in_types, opset, verbose, dynamic,
                            dynamic_input_shapes, check=False)
        return model.graph
