"""``mx.onnx.mx2onnx._export_onnx``: ``MXNetGraph``, the Symbol -> ONNX graph converter.

gpunda's converters are registered per MXNet op in ``gpunda.onnx._registry`` (signature
``fn(graph_builder, node)``); ``MXNetGraph.create_onnx_graph_proto`` runs them on a whole
Symbol. Registering a converter in MXNet's per-node convention (``register``,
``convert_layer``) is not supported.
"""
from gpunda.base import NotImplementedForGpunda

__all__ = ["MXNetGraph"]


class MXNetGraph:
    """Converts an MXNet Symbol and its parameters to an ONNX graph."""

    registry_ = {}
    input_output_maps_ = {}

    @staticmethod
    def register(op_name, opset_version=12):
        """Not supported: gpunda's converters live in ``gpunda.onnx._registry``."""
        raise NotImplementedForGpunda(
            f"MXNetGraph.register({op_name!r}) is not supported: gpunda's ONNX converters "
            "take (graph_builder, node), not MXNet's (node, **kwargs); see "
            "gpunda.onnx._registry.register")

    @staticmethod
    def convert_layer(node, **kwargs):
        """Not supported: see :meth:`register`."""
        raise NotImplementedForGpunda(
            "MXNetGraph.convert_layer is not supported: gpunda converts whole Symbols "
            "(create_onnx_graph_proto, mx.onnx.export_model)")

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
