"""``mx.onnx.mx2onnx._op_translations._op_translations_opset13``: MXNet's opset-13 converter module.

The shared helpers work (see ``_helpers``). Each ``convert_*`` name takes MXNet's
arguments (``node`` dict, ``**kwargs``) and returns the ONNX nodes of gpunda's converter for
the node's op; it is registered in ``MXNetGraph.registry_`` for the ops MXNet registers it
for at this opset (the table below); gpunda's exporter converts every op of the table.
"""
from gpunda.onnx.mx2onnx._op_translations._helpers import (  # noqa: F401
    convert_string_to_list, create_basic_op_node, create_const_node, create_const_scalar_node,
    create_helper_trans_node, create_tensor, define_converters, get_boolean_attribute_value,
    get_input_dtypes, get_inputs, parse_helper, scalar_op_helper, transform_padding)

OPSET_VERSION = 13

_CONVERTERS = """
    convert_RNN: RNN
    convert_arange_like: _contrib_arange_like
    convert_broadcast_axis: broadcast_axis
    convert_contrib_box_nms: _contrib_box_nms
    convert_contrib_roialign: _contrib_ROIAlign
    convert_contrib_split_v2: _split_v2
    convert_expand_dims: expand_dims
    convert_layer_norm: LayerNorm
    convert_logsoftmax: log_softmax
    convert_max: max
    convert_mean: mean
    convert_min: min
    convert_norm: norm
    convert_prod: prod
    convert_repeat: repeat
    convert_reverse: reverse
    convert_sequencemask: SequenceMask
    convert_slice_channel: SliceChannel
    convert_softmax: softmax
    convert_softmax_output: SoftmaxOutput
    convert_squeeze: squeeze
    convert_stack: stack
    convert_sum: sum
"""

define_converters(globals(), _CONVERTERS, OPSET_VERSION)
