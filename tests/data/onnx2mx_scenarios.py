"""Cases for MXNet's ONNX import convention (``mx.contrib.onnx.onnx2mx``): one small ONNX
model per case, run through ``import_onnx.GraphProto`` and the per-op translation
functions of ``_op_translations`` (``fn(attrs, inputs, proto_obj)``).

The same code runs on real MXNet 1.9.1 (``make_onnx2mx_fixture.py`` records
``onnx2mx_mxnet191.json``) and on gpunda (``tests/onnx/test_onnx2mx_translations.py``
compares). It uses only numpy, onnx.helper and the API MXNet and gpunda share.
"""
import json

import numpy as np

F = "float32"


def C(cid, op, fn, opset, ins, attrs=None, outs=1, ort=False, random=False):
    """One case: ONNX node ``op`` with ``attrs`` on inputs ``ins``; ``fn`` is MXNet's
    translation function. ``ins`` entries: (name, shape, kind) a graph input, (name, shape,
    kind, "init") a random initializer, (name, ndarray) a given initializer. ``ort``: the
    model is valid ONNX and MXNet's result means the same (checked in ONNX Runtime)."""
    return dict(id=cid, op=op, fn=fn, opset=opset, ins=ins, attrs=attrs or {}, outs=outs,
                ort=ort, random=random)


def _i64(*v):
    return np.array(v, dtype=np.int64)


def _f32(*v):
    return np.array(v, dtype=np.float32)


# MXNet's reductions leave out ONNX's default keepdims=1 (reduce_mean, reduce_prod and
# reduce_l1 without keepdims drop the axis), so those cases are not checked in ONNX Runtime
X = ("x", (2, 3, 4, 4), "randn")
X2 = ("x", (3, 4), "randn")
Y2 = ("y", (3, 4), "randn")

CASES = [
    C("identity", "Identity", "identity", 13, [X2], ort=True),
    C("random_uniform", "RandomUniform", "random_uniform", 13, [],
      dict(shape=[2, 3], low=-1.0, high=2.0, seed=3.0), random=True),
    C("random_uniform_f64", "RandomUniform", "random_uniform", 13, [],
      dict(shape=[4], dtype=11), random=True),
    C("random_normal", "RandomNormal", "random_normal", 13, [],
      dict(shape=[3, 2], mean=1.0, scale=0.5, seed=1.0), random=True),
    C("sample_multinomial", "Multinomial", "sample_multinomial", 13,
      [("p", (2, 4), "prob")], dict(sample_size=3), random=True),
    C("add", "Add", "add", 13, [X2, Y2], ort=True),
    C("add_broadcast_axis", "Add", "add", 6,
      [("x", (2, 3, 2, 2), "randn"), ("b", (3,), "randn", "init")],
      dict(broadcast=1, axis=1)),
    C("sub", "Sub", "subtract", 13, [X2, Y2], ort=True),
    C("sub_broadcast_axis", "Sub", "subtract", 6,
      [("x", (2, 3, 2), "randn"), ("b", (3,), "randn", "init")], dict(broadcast=1, axis=1)),
    C("mul", "Mul", "multiply", 13, [X2, ("y", (4,), "randn")], ort=True),
    C("mul_broadcast_axis", "Mul", "multiply", 6,
      [("x", (2, 3, 2), "randn"), ("b", (2,), "randn", "init")], dict(broadcast=1, axis=2)),
    C("div", "Div", "divide", 13, [X2, ("y", (3, 4), "pos")], ort=True),
    C("div_broadcast_axis", "Div", "divide", 6,
      [("x", (2, 3), "randn"), ("b", (2,), "pos", "init")], dict(broadcast=1, axis=0)),
    C("div_broadcast_no_params", "Div", "divide", 6,
      [("x", (2, 3), "randn"), ("y", (3,), "pos")], dict(broadcast=1, axis=1)),
    C("abs", "Abs", "absolute", 13, [X2], ort=True),
    C("neg", "Neg", "negative", 13, [X2], ort=True),
    C("sum", "Sum", "add_n", 13, [X2, Y2, ("z", (3, 4), "randn")], ort=True),
    C("tanh", "Tanh", "tanh", 13, [X2], ort=True),
    C("ceil", "Ceil", "ceil", 13, [X2], ort=True),
    C("floor", "Floor", "floor", 13, [X2], ort=True),
    C("concat", "Concat", "concat", 13, [X2, Y2], dict(axis=1), ort=True),
    C("sigmoid", "Sigmoid", "sigmoid", 13, [X2], ort=True),
    C("relu", "Relu", "relu", 13, [X2], ort=True),
    C("pad11", "Pad", "pad", 11,
      [("x", (1, 2, 3, 3), "randn"), ("pads", _i64(0, 0, 1, 2, 0, 0, 2, 1))], ort=True),
    C("pad11_value", "Pad", "pad", 11,
      [("x", (1, 2, 3, 3), "randn"), ("pads", _i64(0, 0, 1, 1, 0, 0, 1, 1)),
       ("v", _f32(1.5))], ort=True),
    C("pad2_edge", "Pad", "pad", 2, [("x", (1, 1, 3, 3), "randn")],
      dict(mode="edge", pads=[0, 0, 1, 1, 0, 0, 1, 1])),
    C("pad2_value", "Pad", "pad", 2, [("x", (1, 1, 3, 3), "randn")],
      dict(pads=[0, 0, 1, 0, 0, 0, 0, 2], value=2.0)),
    C("matmul", "MatMul", "matrix_multiplication", 13, [X2, ("y", (4, 5), "randn")],
      ort=True),
    C("conv", "Conv", "conv", 13,
      [("x", (1, 2, 5, 5), "randn"), ("w", (4, 2, 3, 3), "randn", "init"),
       ("b", (4,), "randn", "init")],
      dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]), ort=True),
    C("conv_nobias_group", "Conv", "conv", 13,
      [("x", (1, 4, 6, 6), "randn"), ("w", (4, 2, 3, 3), "randn", "init")],
      dict(kernel_shape=[3, 3], group=2, strides=[2, 2], dilations=[1, 1]), ort=True),
    C("conv_asym_pads", "Conv", "conv", 13,
      [("x", (1, 2, 5, 5), "randn"), ("w", (3, 2, 3, 3), "randn", "init"),
       ("b", (3,), "randn", "init")],
      dict(kernel_shape=[3, 3], pads=[0, 1, 1, 2]), ort=True),
    C("convtranspose", "ConvTranspose", "deconv", 13,
      [("x", (1, 2, 3, 3), "randn"), ("w", (2, 3, 2, 2), "randn", "init"),
       ("b", (3,), "randn", "init")],
      dict(kernel_shape=[2, 2], strides=[2, 2]), ort=True),
    C("convtranspose_nobias", "ConvTranspose", "deconv", 13,
      [("x", (1, 2, 3, 3), "randn"), ("w", (2, 2, 3, 3), "randn", "init")],
      dict(kernel_shape=[3, 3])),
    C("batchnorm", "BatchNormalization", "batch_norm", 13,
      [("x", (2, 3, 2, 2), "randn"), ("g", (3,), "pos", "init"), ("b", (3,), "randn", "init"),
       ("m", (3,), "randn", "init"), ("v", (3,), "pos", "init")],
      dict(epsilon=1e-3, momentum=0.8), ort=True),
    C("batchnorm_small_eps", "BatchNormalization", "batch_norm", 13,
      [("x", (2, 3, 2, 2), "randn"), ("g", (3,), "pos", "init"), ("b", (3,), "randn", "init"),
       ("m", (3,), "randn", "init"), ("v", (3,), "pos", "init")],
      dict(epsilon=1e-6), ort=True),
    C("batchnorm_is_test0", "BatchNormalization", "batch_norm", 6,
      [("x", (2, 3, 2, 2), "randn"), ("g", (3,), "pos", "init"), ("b", (3,), "randn", "init"),
       ("m", (3,), "randn", "init"), ("v", (3,), "pos", "init")],
      dict(is_test=0, spatial=1)),
    C("leaky_relu", "LeakyRelu", "leaky_relu", 13, [X2], dict(alpha=0.2), ort=True),
    C("leaky_relu_default", "LeakyRelu", "leaky_relu", 13, [X2], ort=True),
    C("elu", "Elu", "_elu", 13, [X2], dict(alpha=0.5), ort=True),
    C("elu_default", "Elu", "_elu", 13, [X2], ort=True),
    C("prelu", "PRelu", "_prelu", 13,
      [("x", (2, 3, 2), "randn"), ("s", (3,), "pos", "init")]),
    C("selu", "Selu", "_selu", 13, [X2], ort=True),
    C("softmax", "Softmax", "softmax", 13, [X2], ort=True),
    C("softmax_axis0", "Softmax", "softmax", 13, [X2], dict(axis=0), ort=True),
    C("fc", "FC", "fully_connected", 1,
      [("x", (2, 3), "randn"), ("w", (4, 3), "randn", "init"), ("b", (4,), "randn", "init")],
      dict(axis=1)),
    C("global_avg", "GlobalAveragePool", "global_avgpooling", 13, [X], ort=True),
    C("global_max", "GlobalMaxPool", "global_maxpooling", 13, [X], ort=True),
    C("global_lp", "GlobalLpPool", "global_lppooling", 2, [X], dict(p=3)),
    C("gemm", "Gemm", "linalg_gemm", 13,
      [("a", (2, 3), "randn"), ("w", (4, 3), "randn", "init"), ("c", (4,), "randn", "init")],
      dict(alpha=2.0, beta=0.5, transB=1), ort=True),
    C("gemm_plain", "Gemm", "linalg_gemm", 13,
      [("a", (2, 3), "randn"), ("w", (3, 4), "randn", "init"),
       ("c", (2, 4), "randn", "init")], ort=True),
    C("lrn", "LRN", "local_response_norm", 13, [("x", (1, 5, 2, 2), "pos")],
      dict(size=3, alpha=1e-3, beta=0.5, bias=2.0), ort=True),
    C("dropout12_ratio", "Dropout", "dropout", 12,
      [X2, ("r", np.array(0.3, dtype=np.float32))], ort=True),
    C("dropout13", "Dropout", "dropout", 13, [X2], ort=True),
    C("dropout7", "Dropout", "dropout", 7, [X2], dict(ratio=0.25)),
    C("dropout6_is_test0", "Dropout", "dropout", 6, [X2], dict(is_test=0, ratio=0.5),
      random=True),
    C("reshape", "Reshape", "reshape", 13, [X2, ("s", _i64(2, -1, 3))], ort=True),
    C("reshape_attr", "Reshape", "reshape", 1, [X2], dict(shape=[4, 3])),
    C("cast", "Cast", "cast", 13, [X2], dict(to=11), ort=True),
    C("cast_int32", "Cast", "cast", 13, [("x", (3, 4), "pos")], dict(to=6), ort=True),
    C("split_equal", "Split", "split", 11, [("x", (2, 6), "randn")],
      dict(axis=1, split=[3, 3]), outs=2, ort=True),
    C("split_outputs", "Split", "split", 11, [("x", (6, 2), "randn")], outs=3, ort=True),
    C("split_unequal", "Split", "split", 11, [("x", (2, 6), "randn")],
      dict(axis=1, split=[2, 4]), outs=2),
    C("slice10", "Slice", "_slice", 10,
      [("x", (4, 5), "randn"), ("st", _i64(1, 0)), ("en", _i64(3, 4)), ("ax", _i64(0, 1))],
      ort=True),
    C("slice10_noaxes", "Slice", "_slice", 10,
      [("x", (4, 5), "randn"), ("st", _i64(1)), ("en", _i64(100))], ort=True),
    C("slice1", "Slice", "_slice", 1, [("x", (4, 5), "randn")],
      dict(starts=[0, 1], ends=[2, 9], axes=[0, 1])),
    C("transpose", "Transpose", "transpose", 13, [("x", (2, 3, 4), "randn")],
      dict(perm=[2, 0, 1]), ort=True),
    C("squeeze", "Squeeze", "squeeze", 11, [("x", (1, 3, 1, 2), "randn")],
      dict(axes=[0, 2]), ort=True),
    C("unsqueeze", "Unsqueeze", "unsqueeze", 11, [X2], dict(axes=[0, 3]), ort=True),
    C("flatten", "Flatten", "flatten", 13, [X], dict(axis=1), ort=True),
    C("flatten_default", "Flatten", "flatten", 13, [X], ort=True),
    C("flatten_axis2", "Flatten", "flatten", 13, [X], dict(axis=2)),
    C("reciprocal", "Reciprocal", "reciprocal", 13, [("x", (3, 4), "pos")], ort=True),
    C("sqrt", "Sqrt", "squareroot", 13, [("x", (3, 4), "pos")], ort=True),
    C("pow", "Pow", "power", 13, [("x", (3, 4), "pos"), ("y", (3, 4), "randn")], ort=True),
    C("pow_broadcast1", "Pow", "power", 6,
      [("x", (3, 4), "pos"), ("y", (4,), "randn")], dict(broadcast=1)),
    C("pow_broadcast0", "Pow", "power", 6,
      [("x", (3, 4), "pos"), ("y", (3, 4), "randn")], dict(broadcast=0)),
    C("exp", "Exp", "exponent", 13, [X2], ort=True),
    C("log", "Log", "_log", 13, [("x", (3, 4), "pos")], ort=True),
    C("reduce_max", "ReduceMax", "reduce_max", 13, [X], dict(axes=[1, 2], keepdims=0),
      ort=True),
    C("reduce_mean", "ReduceMean", "reduce_mean", 13, [X], dict(axes=[1])),
    C("reduce_min", "ReduceMin", "reduce_min", 13, [X], dict(axes=[-1], keepdims=1),
      ort=True),
    C("reduce_sum", "ReduceSum", "reduce_sum", 11, [X], dict(axes=[0, 3], keepdims=0),
      ort=True),
    C("reduce_prod", "ReduceProd", "reduce_prod", 13, [X2], dict(axes=[1])),
    C("reduce_log_sum", "ReduceLogSum", "reduce_log_sum", 13, [("x", (3, 4), "pos")],
      dict(axes=[1]), ort=True),
    C("reduce_log_sum_nokeep", "ReduceLogSum", "reduce_log_sum", 13,
      [("x", (3, 4), "pos")], dict(axes=[0], keepdims=0), ort=True),
    C("reduce_log_sum_exp", "ReduceLogSumExp", "reduce_log_sum_exp", 13, [X2],
      dict(axes=[1], keepdims=0), ort=True),
    C("reduce_sum_square", "ReduceSumSquare", "reduce_sum_square", 13, [X2],
      dict(axes=[1], keepdims=1), ort=True),
    C("reduce_l1", "ReduceL1", "reduce_l1", 13, [X2], dict(axes=[1])),
    C("reduce_l2", "ReduceL2", "reduce_l2", 13, [X2], dict(axes=[0], keepdims=0), ort=True),
    C("avgpool", "AveragePool", "avg_pooling", 13, [("x", (1, 2, 5, 5), "randn")],
      dict(kernel_shape=[3, 3], strides=[2, 2]), ort=True),
    C("avgpool_pads", "AveragePool", "avg_pooling", 13, [("x", (1, 2, 5, 5), "randn")],
      dict(kernel_shape=[2, 2], pads=[1, 0, 0, 1], count_include_pad=1), ort=True),
    C("maxpool", "MaxPool", "max_pooling", 13, [("x", (1, 2, 5, 5), "randn")],
      dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]), ort=True),
    C("maxpool_1d", "MaxPool", "max_pooling", 13, [("x", (1, 2, 7), "randn")],
      dict(kernel_shape=[3], strides=[2], pads=[1, 2]), ort=True),
    C("lppool", "LpPool", "lp_pooling", 11, [("x", (1, 2, 4, 4), "randn")],
      dict(kernel_shape=[2, 2], strides=[2, 2], p=2), ort=True),
    C("argmax", "ArgMax", "argmax", 13, [("x", (3, 5), "randn")], dict(axis=1), ort=True),
    C("argmin", "ArgMin", "argmin", 13, [("x", (3, 5), "randn")],
      dict(axis=0, keepdims=0), ort=True),
    C("max3", "Max", "maximum", 13, [X2, Y2, ("z", (3, 4), "randn")], ort=True),
    C("max1", "Max", "maximum", 13, [X2], ort=True),
    C("min2", "Min", "minimum", 13, [X2, Y2], ort=True),
    C("min1", "Min", "minimum", 13, [X2], ort=True),
    C("clip11", "Clip", "clip", 11, [X2, ("lo", _f32(-0.5)), ("hi", _f32(0.7))], ort=True),
    C("clip11_min", "Clip", "clip", 11, [X2, ("lo", _f32(-0.2))], ort=True),
    C("clip11_none", "Clip", "clip", 11, [X2], ort=True),
    C("clip6", "Clip", "clip", 6, [X2], dict(min=-0.3, max=0.4)),
    C("clip6_max", "Clip", "clip", 6, [X2], dict(max=0.4)),
    C("max_roi_pool", "MaxRoiPool", "max_roi_pooling", 13,
      [("x", (1, 2, 6, 6), "randn"),
       ("rois", np.array([[0, 0, 0, 3, 3], [0, 1, 2, 5, 5]], dtype=np.float32))],
      dict(pooled_shape=[2, 2], spatial_scale=1.0)),
    C("instance_norm", "InstanceNormalization", "instance_norm", 13,
      [("x", (2, 3, 4), "randn"), ("g", (3,), "pos", "init"), ("b", (3,), "randn", "init")],
      dict(epsilon=1e-4), ort=True),
    C("instance_norm_default", "InstanceNormalization", "instance_norm", 13,
      [("x", (2, 3, 4), "randn"), ("g", (3,), "pos", "init"), ("b", (3,), "randn", "init")],
      ort=True),
    C("log_softmax", "LogSoftmax", "log_softmax", 13, [X2], dict(axis=1), ort=True),
    C("softsign", "Softsign", "softsign", 13, [X2], ort=True),
    C("less", "Less", "lesser", 13, [X2, Y2]),
    C("greater", "Greater", "greater", 13, [X2, Y2]),
    C("equal", "Equal", "equal", 13, [("x", (3, 4), "bin"), ("y", (3, 4), "bin")]),
    C("and", "And", "logical_and", 13, [("x", (3, 4), "bin"), ("y", (3, 4), "bin")]),
    C("or", "Or", "logical_or", 13, [("x", (3, 4), "bin"), ("y", (3, 4), "bin")]),
    C("xor", "Xor", "logical_xor", 13, [("x", (3, 4), "bin"), ("y", (3, 4), "bin")]),
    C("not", "Not", "logical_not", 13, [("x", (3, 4), "bin")]),
    C("mean", "Mean", "mean", 13, [X2, Y2, ("z", (3, 4), "randn")], ort=True),
    C("acos", "Acos", "arccos", 13, [("x", (3, 4), "unit")], ort=True),
    C("asin", "Asin", "arcsin", 13, [("x", (3, 4), "unit")], ort=True),
    C("atan", "Atan", "arctan", 13, [X2], ort=True),
    C("cos", "Cos", "_cos", 13, [X2], ort=True),
    C("sin", "Sin", "_sin", 13, [X2], ort=True),
    C("tan", "Tan", "_tan", 13, [("x", (3, 4), "unit")], ort=True),
    C("softplus", "Softplus", "softplus", 13, [X2], ort=True),
    C("shape", "Shape", "shape", 13, [X], ort=True),
    C("size", "Size", "size", 13, [X]),
    C("gather", "Gather", "gather", 13, [("x", (5, 3), "randn"), ("i", (2, 2), "idx5")],
      dict(axis=0), ort=True),
    C("hardsigmoid", "HardSigmoid", "hardsigmoid", 13, [X2], dict(alpha=0.3, beta=0.4),
      ort=True),
    C("depthtospace", "DepthToSpace", "depthtospace", 13, [("x", (1, 8, 2, 3), "randn")],
      dict(blocksize=2), ort=True),
    C("spacetodepth", "SpaceToDepth", "spacetodepth", 13, [("x", (1, 2, 4, 6), "randn")],
      dict(blocksize=2), ort=True),
    C("hardmax_last", "Hardmax", "hardmax", 13, [("x", (3, 5), "randn")], ort=True),
    C("hardmax_axis1", "Hardmax", "hardmax", 11, [("x", (2, 3, 4), "randn")], ort=True),
    C("lpnormalization", "LpNormalization", "lpnormalization", 13, [X2], dict(p=2)),
    C("topk10", "TopK", "topk", 10, [("x", (3, 5), "randn"), ("k", _i64(2))], dict(axis=1),
      outs=2),
    C("topk1", "TopK", "topk", 1, [("x", (3, 5), "randn")], dict(k=2, axis=-1), outs=2),
]


# -- building and running a case -------------------------------------------------------------
def _input_value(case_id, name, shape, kind):
    rs = np.random.RandomState(sum(map(ord, case_id + name)) % 10007)
    if kind == "pos":
        return rs.uniform(0.5, 2.0, shape).astype(np.float32)
    if kind == "unit":
        return rs.uniform(-0.9, 0.9, shape).astype(np.float32)
    if kind == "bin":
        return rs.randint(0, 2, shape).astype(np.float32)
    if kind == "prob":
        p = rs.uniform(0.1, 1.0, shape).astype(np.float32)
        return p / p.sum(axis=-1, keepdims=True)
    if kind.startswith("idx"):
        return rs.randint(0, int(kind[3:]), shape).astype(np.int64)
    return rs.randn(*shape).astype(np.float32)


def parts(case):
    """(graph inputs {name: value}, initializers {name: value}, node input names)."""
    feeds, inits, names = {}, {}, []
    for e in case["ins"]:
        names.append(e[0])
        if len(e) == 2:
            inits[e[0]] = e[1]
        elif len(e) == 4:
            inits[e[0]] = _input_value(case["id"], e[0], e[1], e[2])
        else:
            feeds[e[0]] = _input_value(case["id"], e[0], e[1], e[2])
    return feeds, inits, names


def make_model(onnx, case):
    """The ONNX model of ``case`` (initializers are listed among the graph inputs, as
    MXNet's importer needs)."""
    from onnx import helper, numpy_helper
    feeds, inits, names = parts(case)
    ttype = helper.np_dtype_to_tensor_dtype if hasattr(helper, "np_dtype_to_tensor_dtype") \
        else (lambda dt: onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[dt])
    g_in = [helper.make_tensor_value_info(n, ttype(v.dtype), v.shape)
            for n, v in list(feeds.items()) + list(inits.items())]
    outs = [f"out{k}" for k in range(case["outs"])]
    g_out = [onnx.ValueInfoProto(name=o) for o in outs]    # types left to inference
    node = helper.make_node(case["op"], names, outs, name=f"n_{case['id']}", **case["attrs"])
    graph = helper.make_graph([node], case["id"], g_in, g_out,
                              [numpy_helper.from_array(v, n) for n, v in inits.items()])
    # the IR version the opset needs (as gpunda's exporter writes): ONNX Runtime 1.23, the last
    # for Python 3.10, refuses the newest onnx's default IR version
    opsets = [helper.make_opsetid("", case["opset"])]
    return helper.make_model(graph, opset_imports=opsets,
                             ir_version=helper.find_min_ir_version_for(opsets, ignore_unknown=True))


def norm(v):
    """A JSON form of an attribute value, keeping its Python/NumPy type."""
    if isinstance(v, dict):
        return {"dict": {str(k): norm(x) for k, x in sorted(v.items())}}
    if isinstance(v, (list, tuple)):
        return {type(v).__name__: [norm(x) for x in v]}
    if isinstance(v, np.ndarray):
        return {"ndarray": v.tolist(), "dtype": str(v.dtype)}
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return {"dtype": np.dtype(v).name}
    if isinstance(v, np.generic):
        return {"np." + type(v).__name__: v.item()}
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, (int, float, str)) or v is None:
        return v
    if hasattr(v, "tojson"):
        return sym_nodes(v)
    if callable(v):
        return {"callable": getattr(v, "__name__", repr(v))}
    return {"repr": type(v).__name__}


def sym_nodes(s):
    """A Symbol as its JSON node list: op, name, attrs, inputs [node, output] and the heads."""
    js = json.loads(s.tojson())
    nodes = [{"op": n["op"], "name": n["name"], "attrs": n.get("attrs", {}),
              "inputs": [list(i[:2]) for i in n["inputs"]]} for n in js["nodes"]]
    return {"sym": nodes, "heads": [list(h[:2]) for h in js["heads"]]}


def error(e):
    """An exception as its class name and the names of the classes it is an instance of."""
    return {"error": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__]}


def translate(mx, case):
    """MXNet's translation function of ``case`` called as ``GraphProto._convert_operator``
    calls it: ``(op name or Symbol, attrs, inputs)``, in JSON form (or the error)."""
    import onnx
    from importlib import import_module
    io_ = import_module(mx.__name__ + ".contrib.onnx.onnx2mx.import_onnx")
    tr = import_module(mx.__name__ + ".contrib.onnx.onnx2mx._op_translations")
    model = make_model(onnx, case)
    proto = io_.GraphProto()
    g = model.graph
    proto.opset_version = case["opset"]
    proto.model_metadata = proto.get_graph_metadata(g)
    for t in g.initializer:
        proto._params[t.name] = proto._parse_array(t)
    for i in g.input:
        shape = proto._params[i.name].shape if i.name in proto._params else None
        proto._nodes[i.name] = mx.sym.Variable(i.name, shape=shape) if shape else \
            mx.sym.Variable(i.name)
    node = g.node[0]
    attrs = proto._parse_attr(node.attribute)
    inputs = [proto._nodes[i] for i in node.input]
    try:
        with mx.name.NameManager():
            op, new_attrs, new_inputs = getattr(tr, case["fn"])(attrs, inputs, proto)
    except Exception as e:  # noqa: BLE001 -- MXNet's own failures are part of the record
        return error(e)
    if isinstance(new_inputs, (list, tuple)):
        ins = [i.name if hasattr(i, "tojson") and i.name in proto._nodes else norm(i)
               for i in new_inputs]
    else:
        ins = norm(new_inputs)
    return {"op": norm(op), "attrs": norm(new_attrs), "inputs": ins}


def evaluate(mx, case):
    """The whole model through ``GraphProto.from_onnx``, run on the case's inputs: the
    Symbol's JSON, the parameter names, and each output (values, or shape and dtype for
    random ops), or the error."""
    import onnx
    from importlib import import_module
    io_ = import_module(mx.__name__ + ".contrib.onnx.onnx2mx.import_onnx")
    model = make_model(onnx, case)
    feeds, _, _ = parts(case)
    try:
        with mx.name.NameManager():
            sym, args, aux = io_.GraphProto().from_onnx(model.graph, case["opset"])
        kw = {k: mx.nd.array(v, dtype=v.dtype) for k, v in feeds.items()}
        kw.update(args)
        ex = sym.bind(mx.cpu(), kw, aux_states=dict(aux), grad_req="null")
        outs = ex.forward(is_train=False)
    except Exception as e:  # noqa: BLE001
        return error(e)
    res = []
    for o in outs:
        a = o.asnumpy()
        d = {"shape": list(a.shape), "dtype": str(a.dtype)}
        if not case["random"]:
            d["value"] = a.astype(np.float64).ravel().tolist()
        res.append(d)
    return {"sym": sym_nodes(sym), "args": sorted(args), "aux": sorted(aux), "outs": res}


def helpers(mx):
    """The ``_translation_utils`` helpers called directly."""
    import onnx
    from importlib import import_module
    io_ = import_module(mx.__name__ + ".contrib.onnx.onnx2mx.import_onnx")
    tu = import_module(mx.__name__ + ".contrib.onnx.onnx2mx._translation_utils")
    out = {}
    case = C("h", "Gemm", "linalg_gemm", 13,
             [("a", (2, 3), "randn"), ("w", (4, 3), "randn", "init"),
              ("c", (4,), "randn", "init")])
    model = make_model(onnx, case)
    proto = io_.GraphProto()
    proto.model_metadata = proto.get_graph_metadata(model.graph)
    for t in model.graph.initializer:
        proto._params[t.name] = proto._parse_array(t)
    a, w, c = (mx.sym.Variable(n) for n in ("a", "w", "c"))
    out["fix_bias3"] = norm(tu._fix_bias("Convolution", {"k": 1}, 3))
    out["fix_bias2"] = norm(tu._fix_bias("Convolution", {}, 2))
    try:
        tu._fix_bias("FullyConnected", {}, 1)
    except Exception as e:  # noqa: BLE001
        out["fix_bias1"] = type(e).__name__
    out["fix_channels_fc"] = norm(tu._fix_channels("FullyConnected", {}, [a, w], proto))
    out["fix_channels_conv"] = norm(tu._fix_channels("Convolution", {}, [a, w], proto))
    out["fix_channels_deconv"] = norm(tu._fix_channels("Deconvolution", {}, [a, w], proto))
    try:
        tu._fix_channels("Convolution", {}, [a, a], proto)
    except Exception as e:  # noqa: BLE001
        out["fix_channels_missing"] = type(e).__name__
    with mx.name.NameManager():
        op, attrs, ins = tu._fix_gemm("FullyConnected", [a, w, c],
                                      {"alpha": 2.0, "transB": 0}, proto)
        out["fix_gemm"] = [norm(op), norm(attrs), [sym_nodes(i) for i in ins]]
    with mx.name.NameManager():
        out["fix_broadcast"] = norm(tu._fix_broadcast("broadcast_mul", [a, c], 1, proto))
    out["fix_broadcast_no_params"] = norm(tu._fix_broadcast("broadcast_mul", [a, c], 1,
                                                             io_.GraphProto()))
    for key, pool, attrs in (("fix_pooling_max", "max", {"kernel": (2, 2)}),
                             ("fix_pooling_avg", "avg", {"kernel": (3, 3), "stride": (2, 2),
                                                         "pad": (1, 0, 0, 1)}),
                             ("fix_pooling_lp1d", "lp", {"kernel": (2,), "pad": (1, 1),
                                                         "p_value": 3})):
        with mx.name.NameManager():
            out[key] = norm(tu._fix_pooling(pool, [a], dict(attrs)))
    out["input_shape"] = list(tu.get_input_shape(mx.sym.relu(a), proto))
    with mx.name.NameManager():
        fc = mx.sym.FullyConnected(a, w, c, num_hidden=4)
    proto.arg_dict = {k: v for k, v in proto._params.items()}
    out["input_shape_fc"] = list(tu.get_input_shape(fc, proto))
    meta = {"dims": io_.GraphProto().get_graph_metadata(model.graph)}
    out["metadata"] = norm(meta)
    node = onnx.helper.make_node("X", [], ["y"], f=1.5, i=3, s="abc", fs=[1.0, 2.0],
                                 ints=[1, 2], strs=["a", "b"])
    out["parse_attr"] = norm(io_.GraphProto()._parse_attr(node.attribute))
    arr = io_.GraphProto()._parse_array(onnx.numpy_helper.from_array(np.float32(2.5), "s"))
    out["parse_array_scalar"] = [list(arr.shape), str(arr.dtype), arr.asnumpy().tolist()]
    arr = io_.GraphProto()._parse_array(onnx.numpy_helper.from_array(_i64(1, 2), "s"))
    out["parse_array_int64"] = [list(arr.shape), str(arr.dtype), arr.asnumpy().tolist()]
    return out
