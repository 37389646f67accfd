"""``mx.onnx.mx2onnx._op_translations._op_translations_opset13``: MXNet's opset-13 converter module.

The shared helpers work (see ``_helpers``); the per-op ``convert_*`` names exist and raise
saying that gpunda converts whole Symbols (``mx.onnx.export_model``) with its own converters.
"""
from gpunda.onnx.mx2onnx._op_translations._helpers import (  # noqa: F401
    convert_string_to_list, create_basic_op_node, create_const_node, create_const_scalar_node,
    create_helper_trans_node, create_tensor, define_converters, get_boolean_attribute_value,
    get_input_dtypes, get_inputs, parse_helper, scalar_op_helper, transform_padding)

OPSET_VERSION = 13

define_converters(globals(), """
    convert_RNN convert_arange_like convert_broadcast_axis convert_contrib_box_nms
    convert_contrib_roialign convert_contrib_split_v2 convert_expand_dims
    convert_layer_norm convert_logsoftmax convert_max convert_mean convert_min
    convert_norm convert_prod convert_repeat convert_reverse convert_sequencemask
    convert_slice_channel convert_softmax convert_softmax_output convert_squeeze
    convert_stack convert_sum
""".split())
