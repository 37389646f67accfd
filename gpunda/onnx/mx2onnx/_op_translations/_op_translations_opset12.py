"""``mx.onnx.mx2onnx._op_translations._op_translations_opset12``: MXNet's opset-12 converter module.

The shared helpers work (see ``_helpers``); the per-op ``convert_*`` names exist and raise
saying that gpunda converts whole Symbols (``mx.onnx.export_model``) with its own converters.
"""
from gpunda.onnx.mx2onnx._op_translations._helpers import (  # noqa: F401
    convert_string_to_list, create_basic_op_node, create_const_node, create_const_scalar_node,
    create_helper_trans_node, create_tensor, define_converters, get_boolean_attribute_value,
    get_input_dtypes, get_inputs, parse_helper, scalar_op_helper, transform_padding)

define_converters(globals(), """
    convert_RNN convert_abs convert_acos convert_activation convert_add_scalar
    convert_addn convert_arange convert_arange_like convert_argmax convert_argmin
    convert_argsort convert_asin convert_atan convert_batch_dot convert_batchnorm
    convert_blockgrad convert_broadcast_axis convert_broadcast_div
    convert_broadcast_equal convert_broadcast_greater convert_broadcast_greater_equal
    convert_broadcast_lesser convert_broadcast_lesser_equal convert_broadcast_like
    convert_broadcast_logical_and convert_broadcast_logical_or
    convert_broadcast_logical_xor convert_broadcast_min convert_broadcast_mod
    convert_broadcast_mul convert_broadcast_not_equal convert_broadcast_power
    convert_broadcast_to convert_cast convert_ceil convert_clip convert_concat
    convert_contrib_AdaptiveAvgPooling2D convert_contrib_BilinearResize2D
    convert_contrib_box_decode convert_contrib_box_nms convert_contrib_div_sqrt_dim
    convert_contrib_interleaved_matmul_selfatt_valatt convert_contrib_roialign
    convert_contrib_split_v2 convert_convolution convert_copy convert_cos convert_crop
    convert_deconvolution convert_depthtospace convert_div_scalar convert_dot
    convert_dropout convert_elementwise_add convert_elementwise_sub convert_elemwise_div
    convert_elemwise_mul convert_embedding convert_equal_scalar convert_exp
    convert_expand_dims convert_flatten convert_floor convert_fully_connected
    convert_gather_nd convert_greater_scalar convert_hardsigmoid convert_identity
    convert_instancenorm convert_l2normalization convert_layer_norm convert_leakyrelu
    convert_lesser_scalar convert_linalg_gemm2 convert_log convert_log2
    convert_logical_not convert_logistic_regression_output convert_logsoftmax
    convert_lrn convert_makeloss convert_matmul_selfatt_qk convert_max convert_maximum
    convert_maximum_scalar convert_mean convert_min convert_minimum
    convert_minimum_scalar convert_minus_scalar convert_mul_scalar convert_multinomial
    convert_negative convert_norm convert_one_hot convert_ones convert_ones_like
    convert_pad convert_pooling convert_pow_scalar convert_power convert_prod
    convert_random_normal convert_random_uniform convert_random_uniform_like
    convert_rdiv_scalar convert_reciprocal convert_relu convert_repeat convert_reshape
    convert_reshape_like convert_reverse convert_rminus_scalar convert_rnn_param_concat
    convert_roipooling convert_sequence_reverse convert_sequencemask convert_shape
    convert_sigmoid convert_sin convert_size convert_slice convert_slice_axis
    convert_slice_channel convert_slice_like convert_softmax convert_softmax_output
    convert_spacetodepth convert_sqrt convert_square convert_squeeze convert_stack
    convert_sum convert_swapaxis convert_take convert_tan convert_tanh convert_tile
    convert_topk convert_transpose convert_upsampling convert_weights_and_inputs
    convert_where convert_zeros convert_zeros_like covert_broadcast_add
    covert_broadcast_sub transpose_last_two_dim
""".split())


def __getattr__(name):
    if name == "onnx":                   # MXNet's module holds the onnx package as a name
        from gpunda.onnx.export import _onnx
        return _onnx()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
