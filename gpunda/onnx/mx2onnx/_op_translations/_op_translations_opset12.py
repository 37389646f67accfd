"""``mx.onnx.mx2onnx._op_translations._op_translations_opset12``: MXNet's opset-12 converter module.

The shared helpers work (see ``_helpers``). Each ``convert_*`` name takes MXNet's
arguments (``node`` dict, ``**kwargs``) and returns the ONNX nodes of gpunda's converter for
the node's op; it is registered in ``MXNetGraph.registry_`` for the ops MXNet registers it
for at this opset (the table below); gpunda's exporter converts every op of the table.
"""
from gpunda.onnx.mx2onnx._op_translations._helpers import (  # noqa: F401
    convert_string_to_list, create_basic_op_node, create_const_node, create_const_scalar_node,
    create_helper_trans_node, create_tensor, define_converters, get_boolean_attribute_value,
    get_input_dtypes, get_inputs, parse_helper, scalar_op_helper, transform_padding,
    transpose_last_two_dim)

_CONVERTERS = """
    convert_RNN: RNN
    convert_abs: abs
    convert_acos: arccos
    convert_activation: Activation
    convert_add_scalar: _plus_scalar
    convert_addn: add_n
    convert_arange: _arange
    convert_arange_like: _contrib_arange_like
    convert_argmax: argmax
    convert_argmin: argmin
    convert_argsort: argsort
    convert_asin: arcsin
    convert_atan: arctan
    convert_batch_dot: batch_dot
    convert_batchnorm: BatchNorm
    convert_blockgrad: BlockGrad
    convert_broadcast_axis: broadcast_axis
    convert_broadcast_div: broadcast_div
    convert_broadcast_equal: broadcast_equal
    convert_broadcast_greater: broadcast_greater
    convert_broadcast_greater_equal: broadcast_greater_equal
    convert_broadcast_lesser: broadcast_lesser
    convert_broadcast_lesser_equal: broadcast_lesser_equal
    convert_broadcast_like: broadcast_like
    convert_broadcast_logical_and: broadcast_logical_and
    convert_broadcast_logical_or: broadcast_logical_or
    convert_broadcast_logical_xor: broadcast_logical_xor
    convert_broadcast_min: broadcast_minimum
    convert_broadcast_mod: broadcast_mod
    convert_broadcast_mul: broadcast_mul
    convert_broadcast_not_equal: broadcast_not_equal
    convert_broadcast_power: broadcast_power
    convert_broadcast_to: broadcast_to
    convert_cast: Cast
    convert_ceil: ceil
    convert_clip: clip
    convert_concat: Concat
    convert_contrib_AdaptiveAvgPooling2D: _contrib_AdaptiveAvgPooling2D
    convert_contrib_BilinearResize2D: _contrib_BilinearResize2D
    convert_contrib_box_decode: _contrib_box_decode
    convert_contrib_box_nms: _contrib_box_nms
    convert_contrib_div_sqrt_dim: _contrib_div_sqrt_dim
    convert_contrib_interleaved_matmul_selfatt_valatt: _contrib_interleaved_matmul_selfatt_valatt
    convert_contrib_roialign: _contrib_ROIAlign
    convert_contrib_split_v2: _split_v2
    convert_convolution: Convolution
    convert_copy: _copy
    convert_cos: cos
    convert_crop: Crop
    convert_deconvolution: Deconvolution
    convert_depthtospace: depth_to_space
    convert_div_scalar: _div_scalar
    convert_dot: dot
    convert_dropout: Dropout
    convert_elementwise_add: elemwise_add
    convert_elementwise_sub: elemwise_sub
    convert_elemwise_div: elemwise_div
    convert_elemwise_mul: elemwise_mul
    convert_embedding: Embedding
    convert_equal_scalar: _equal_scalar
    convert_exp: exp
    convert_expand_dims: expand_dims
    convert_flatten: Flatten
    convert_floor: floor
    convert_fully_connected: FullyConnected
    convert_gather_nd: gather_nd
    convert_greater_scalar: _greater_scalar
    convert_hardsigmoid: hard_sigmoid
    convert_identity: identity
    convert_instancenorm: InstanceNorm
    convert_l2normalization: L2Normalization
    convert_layer_norm: LayerNorm
    convert_leakyrelu: LeakyReLU
    convert_lesser_scalar: _lesser_scalar
    convert_linalg_gemm2: _linalg_gemm2
    convert_log: log
    convert_log2: log2
    convert_logical_not: logical_not
    convert_logistic_regression_output: LogisticRegressionOutput
    convert_logsoftmax: log_softmax
    convert_lrn: LRN
    convert_makeloss: MakeLoss
    convert_matmul_selfatt_qk: _contrib_interleaved_matmul_selfatt_qk
    convert_max: max
    convert_maximum: _maximum
    convert_maximum_scalar: _maximum_scalar
    convert_mean: mean
    convert_min: min
    convert_minimum: _minimum
    convert_minimum_scalar: _minimum_scalar
    convert_minus_scalar: _minus_scalar
    convert_mul_scalar: _mul_scalar
    convert_multinomial: _sample_multinomial
    convert_negative: negative
    convert_norm: norm
    convert_one_hot: one_hot
    convert_ones: _ones
    convert_ones_like: ones_like
    convert_pad: Pad
    convert_pooling: Pooling
    convert_pow_scalar: _power_scalar
    convert_power: _power
    convert_prod: prod
    convert_random_normal: _random_normal
    convert_random_uniform: _random_uniform
    convert_random_uniform_like: _random_uniform_like
    convert_rdiv_scalar: _rdiv_scalar
    convert_reciprocal: reciprocal
    convert_relu: relu
    convert_repeat: repeat
    convert_reshape: Reshape
    convert_reshape_like: reshape_like
    convert_reverse: reverse
    convert_rminus_scalar: _rminus_scalar
    convert_rnn_param_concat: _rnn_param_concat
    convert_roipooling: ROIPooling
    convert_sequence_reverse: SequenceReverse
    convert_sequencemask: SequenceMask
    convert_shape: shape_array
    convert_sigmoid: sigmoid
    convert_sin: sin
    convert_size: size_array
    convert_slice: slice
    convert_slice_axis: slice_axis
    convert_slice_channel: SliceChannel
    convert_slice_like: slice_like
    convert_softmax: softmax
    convert_softmax_output: SoftmaxOutput
    convert_spacetodepth: space_to_depth
    convert_sqrt: sqrt
    convert_square: square
    convert_squeeze: squeeze
    convert_stack: stack
    convert_sum: sum sum_axis
    convert_swapaxis: SwapAxis
    convert_take: take
    convert_tan: tan
    convert_tanh: tanh
    convert_tile: tile
    convert_topk: topk
    convert_transpose: transpose
    convert_upsampling: UpSampling
    convert_weights_and_inputs: null
    convert_where: where
    convert_zeros: _zeros
    convert_zeros_like: zeros_like
    covert_broadcast_add: broadcast_add
    covert_broadcast_sub: broadcast_sub
"""

define_converters(globals(), _CONVERTERS, 12)
