"""``mx.contrib.onnx.onnx2mx._import_helper``: ``_convert_map``, ONNX op type -> MXNet's
translation function (``_op_translations``, ``fn(attrs, inputs, proto_obj)``), the table
``import_onnx.GraphProto`` walks with, as in MXNet 1.9.1.

gpunda's own importer (``mx.contrib.onnx.import_model``) keeps its converters in
``gpunda.contrib.onnx._import_ops.IMPORTERS``.
"""
from gpunda.contrib.onnx.onnx2mx import _op_translations as _t

_convert_map = {
    # generators
    "Constant": _t.identity, "RandomUniform": _t.random_uniform,
    "RandomNormal": _t.random_normal, "RandomUniformLike": _t.random_uniform,
    "RandomNormalLike": _t.random_normal, "Multinomial": _t.sample_multinomial,
    # arithmetic
    "Add": _t.add, "Sub": _t.subtract, "Mul": _t.multiply, "Div": _t.divide,
    "Abs": _t.absolute, "Neg": _t.negative, "Sum": _t.add_n,
    "Tanh": _t.tanh, "Ceil": _t.ceil, "Floor": _t.floor, "Concat": _t.concat,
    # neural network layers
    "Sigmoid": _t.sigmoid, "Relu": _t.relu, "Pad": _t.pad, "MatMul": _t.matrix_multiplication,
    "Conv": _t.conv, "ConvTranspose": _t.deconv, "BatchNormalization": _t.batch_norm,
    "SpatialBN": _t.batch_norm, "LeakyRelu": _t.leaky_relu, "Elu": _t._elu,
    "PRelu": _t._prelu, "Selu": _t._selu, "Softmax": _t.softmax, "FC": _t.fully_connected,
    "GlobalAveragePool": _t.global_avgpooling, "GlobalMaxPool": _t.global_maxpooling,
    "GlobalLpPool": _t.global_lppooling, "Gemm": _t.linalg_gemm,
    "LRN": _t.local_response_norm, "Dropout": _t.dropout,
    # shape and type
    "Reshape": _t.reshape, "Cast": _t.cast, "Split": _t.split, "Slice": _t._slice,
    "Transpose": _t.transpose, "Squeeze": _t.squeeze, "Unsqueeze": _t.unsqueeze,
    "Flatten": _t.flatten, "Identity": _t.identity,
    # powers
    "Reciprocal": _t.reciprocal, "Sqrt": _t.squareroot, "Pow": _t.power,
    "Exp": _t.exponent, "Log": _t._log,
    # reductions, pooling
    "ReduceMax": _t.reduce_max, "ReduceMean": _t.reduce_mean, "ReduceMin": _t.reduce_min,
    "ReduceSum": _t.reduce_sum, "ReduceProd": _t.reduce_prod, "AveragePool": _t.avg_pooling,
    "MaxPool": _t.max_pooling,
    # sorting and searching, the rest
    "ArgMax": _t.argmax, "ArgMin": _t.argmin, "Max": _t.maximum, "Min": _t.minimum,
    "Clip": _t.clip, "ReduceLogSum": _t.reduce_log_sum,
    "ReduceLogSumExp": _t.reduce_log_sum_exp, "ReduceSumSquare": _t.reduce_sum_square,
    "ReduceL1": _t.reduce_l1, "ReduceL2": _t.reduce_l2, "MaxRoiPool": _t.max_roi_pooling,
    "InstanceNormalization": _t.instance_norm, "LogSoftmax": _t.log_softmax,
    "Softsign": _t.softsign, "Less": _t.lesser, "Greater": _t.greater, "Equal": _t.equal,
    "And": _t.logical_and, "Xor": _t.logical_xor, "Not": _t.logical_not,
    "Or": _t.logical_or, "Mean": _t.mean, "Acos": _t.arccos, "Asin": _t.arcsin,
    "Atan": _t.arctan, "Cos": _t._cos, "Sin": _t._sin, "Softplus": _t.softplus,
    "Tan": _t._tan, "Shape": _t.shape, "Size": _t.size, "Gather": _t.gather,
    "HardSigmoid": _t.hardsigmoid, "LpPool": _t.lp_pooling, "DepthToSpace": _t.depthtospace,
    "SpaceToDepth": _t.spacetodepth, "Hardmax": _t.hardmax,
    "LpNormalization": _t.lpnormalization, "TopK": _t.topk,
}
