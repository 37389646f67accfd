"""``mx.contrib.onnx.onnx2mx._op_translations``: MXNet 1.9.1's per-op ONNX translation
functions. Each is ``fn(attrs, inputs, proto_obj)`` with the node's parsed attributes, the
Symbols of its inputs and the importer object (``import_onnx.GraphProto``), and returns
``(op, new_attrs, inputs)``: ``op`` an MXNet op name (``GraphProto._convert_operator``
calls ``mx.sym.<op>(*inputs, **new_attrs)``) or an already built Symbol.

The answers are MXNet's (op names, attribute dicts, Symbol graphs). Where MXNet 1.9.1 fails
on a valid node (``Clip`` of opset 11 without bounds, ``Slice`` of opset 10 and ``TopK`` of
opset 10, which hand float constants to integer parameters), these give ONNX's meaning.
"""
import numpy as np

from gpunda.base import GpundaError
from gpunda.contrib.onnx.onnx2mx import _translation_utils as _tu
from gpunda.contrib.onnx.onnx2mx._translation_utils import OnnxNotImplementedError


def _sym():
    from gpunda import symbol
    return symbol


def _np_dtype(onnx_type):
    """The NumPy dtype of an ONNX TensorProto element type."""
    from gpunda.contrib.onnx import _onnx
    return np.dtype(_onnx().helper.tensor_dtype_to_np_dtype(int(onnx_type)))


def _param(proto_obj, sym):
    """The value (NumPy) of the initializer a node input reads."""
    if sym.name not in proto_obj._params:
        raise GpundaError(f"onnx2mx: input {sym.name!r} must be an initializer "
                          "(a constant), as MXNet's importer reads it as a setting")
    return proto_obj._params[sym.name].asnumpy()


def _renamed(attrs, change):
    return _tu._fix_attribute_names(attrs, change)


def _same(mx_op):
    """A translation that keeps the attributes and inputs and names the MXNet op."""
    def fn(attrs, inputs, proto_obj):
        return mx_op, attrs, inputs
    fn.__doc__ = f"``{mx_op}`` of the inputs, with the node's attributes."
    return fn


# -- generators ------------------------------------------------------------------------------
def identity(attrs, inputs, proto_obj):
    """``identity`` of the input."""
    return "identity", attrs, inputs


def random_uniform(attrs, inputs, proto_obj):
    """Uniform samples: ``seed`` dropped, ``dtype`` the NumPy type of ONNX's (float)."""
    new_attrs = _tu._remove_attributes(attrs, ["seed"])
    new_attrs["dtype"] = _np_dtype(new_attrs.get("dtype", 1))
    return "random_uniform", new_attrs, inputs


def random_normal(attrs, inputs, proto_obj):
    """Normal samples: ``mean`` as ``loc``, ``seed`` dropped, ``dtype`` as NumPy's."""
    new_attrs = _renamed(_tu._remove_attributes(attrs, ["seed"]), {"mean": "loc"})
    new_attrs["dtype"] = _np_dtype(new_attrs.get("dtype", 1))
    return "random_normal", new_attrs, inputs


def sample_multinomial(attrs, inputs, proto_obj):
    """Multinomial samples: ``sample_size`` as ``shape``, ``dtype`` (int32 by default)."""
    new_attrs = _renamed(_tu._remove_attributes(attrs, ["seed"]), {"sample_size": "shape"})
    new_attrs["dtype"] = _np_dtype(attrs.get("dtype", 6))
    return "sample_multinomial", new_attrs, inputs


# -- arithmetic ------------------------------------------------------------------------------
def _binary(mx_op):
    def fn(attrs, inputs, proto_obj):
        if attrs.get("broadcast") == 1:
            op = _tu._fix_broadcast(mx_op, inputs, attrs["axis"], proto_obj)
            return op, {}, inputs
        return mx_op, {}, inputs
    fn.__doc__ = (f"``{mx_op}`` of two tensors; ONNX's old axis broadcast "
                  "(``broadcast=1, axis``) through ``_fix_broadcast``.")
    return fn


add = _binary("broadcast_add")
subtract = _binary("broadcast_sub")
multiply = _binary("broadcast_mul")
divide = _binary("broadcast_div")


def mean(attrs, inputs, proto_obj):
    """Mean of the inputs: stacked on a new axis 0 and averaged over it (a Symbol)."""
    s = _sym()
    stacked = s.concat(*[s.expand_dims(x, axis=0) for x in inputs], dim=0)
    return s.mean(stacked, axis=0), attrs, inputs


logical_and = _same("broadcast_logical_and")
logical_or = _same("broadcast_logical_or")
logical_xor = _same("broadcast_logical_xor")
logical_not = _same("logical_not")
absolute = _same("abs")
negative = _same("negative")
add_n = _same("add_n")


# -- sorting and searching -------------------------------------------------------------------
def _arg(which):
    def fn(attrs, inputs, proto_obj):
        y = getattr(_sym(), which)(inputs[0], axis=attrs.get("axis", 0),
                                   keepdims=attrs.get("keepdims", 1))
        # ONNX's indices are int64: the op is a cast of the arg-reduction
        return "cast", {"dtype": "int64"}, y
    fn.__doc__ = f"Indices of ``{which}`` along ``axis``, cast to int64."
    return fn


argmax = _arg("argmax")
argmin = _arg("argmin")


def _fold(which):
    def fn(attrs, inputs, proto_obj):
        op = getattr(_sym(), which)
        if len(inputs) == 1:
            return op(inputs[0], inputs[0]), attrs, inputs
        y = op(inputs[0], inputs[1])
        for x in inputs[2:]:
            y = op(y, x)
        return y, attrs, inputs
    fn.__doc__ = f"Elementwise ``{which}`` of the inputs, two at a time (a Symbol)."
    return fn


maximum = _fold("maximum")
minimum = _fold("minimum")
lesser = _same("broadcast_lesser")
greater = _same("broadcast_greater")
equal = _same("broadcast_equal")

tanh = _same("tanh")
ceil = _same("ceil")
floor = _same("floor")


def concat(attrs, inputs, proto_obj):
    """Concatenation along ``axis`` (MXNet's ``dim``)."""
    return "concat", _renamed(attrs, {"axis": "dim"}), inputs


# -- neural network layers -------------------------------------------------------------------
softsign = _same("softsign")
sigmoid = _same("sigmoid")
hardsigmoid = _same("hard_sigmoid")
relu = _same("relu")


def pad(attrs, inputs, proto_obj):
    """Pad: from opset 11 the pads (and the constant value) are initializer inputs."""
    attrs.setdefault("mode", "constant")
    if proto_obj.opset_version >= 11:
        pads = tuple(int(v) for v in _param(proto_obj, inputs[1]))
        new_attrs = _tu._add_extra_attributes(attrs, {"pad_width": pads})
        if len(inputs) == 3:
            value = _param(proto_obj, inputs[2])[0]
            new_attrs = _tu._add_extra_attributes(new_attrs, {"constant_value": value})
        new_attrs["pad_width"] = _tu._pad_sequence_fix(new_attrs.get("pad_width"))
        return "pad", new_attrs, inputs[0]
    new_attrs = _renamed(attrs, {"pads": "pad_width", "value": "constant_value"})
    new_attrs["pad_width"] = _tu._pad_sequence_fix(new_attrs.get("pad_width"))
    return "pad", new_attrs, inputs


matrix_multiplication = _same("linalg_gemm2")


def batch_norm(attrs, inputs, proto_obj):
    """BatchNorm with ``eps``; cuDNN off when eps is under its 1e-5 floor; ``fix_gamma``
    set only for a node marked ``is_test=0``."""
    new_attrs = _renamed(attrs, {"epsilon": "eps", "is_test": "fix_gamma"})
    new_attrs = _tu._remove_attributes(new_attrs, ["spatial", "consumed_inputs"])
    off = 0 if attrs.get("epsilon", 1e-5) >= 1e-5 else 1
    new_attrs = _tu._add_extra_attributes(new_attrs, {"cudnn_off": off})
    new_attrs["fix_gamma"] = not attrs.get("is_test", 1)
    return "BatchNorm", new_attrs, inputs


def instance_norm(attrs, inputs, proto_obj):
    """InstanceNorm with ``eps`` (1e-5 by default)."""
    new_attrs = _renamed(attrs, {"epsilon": "eps"})
    new_attrs["eps"] = attrs.get("epsilon", 1e-5)
    return "InstanceNorm", new_attrs, inputs


def leaky_relu(attrs, inputs, proto_obj):
    """LeakyReLU with ``alpha`` as ``slope`` (0.01 by default)."""
    if "alpha" in attrs:
        return "LeakyReLU", _renamed(attrs, {"alpha": "slope"}), inputs
    return "LeakyReLU", _tu._add_extra_attributes(attrs, {"slope": 0.01}), inputs


def _elu(attrs, inputs, proto_obj):
    """ELU as LeakyReLU ``act_type='elu'`` with ``alpha`` as ``slope`` (1.0 by default)."""
    if "alpha" in attrs:
        new_attrs = _renamed(attrs, {"alpha": "slope"})
    else:
        new_attrs = _tu._add_extra_attributes(attrs, {"slope": 1.0})
    return "LeakyReLU", _tu._add_extra_attributes(new_attrs, {"act_type": "elu"}), inputs


def _prelu(attrs, inputs, proto_obj):
    """PReLU as LeakyReLU ``act_type='prelu'`` (the slope is the second input)."""
    return "LeakyReLU", _tu._add_extra_attributes(attrs, {"act_type": "prelu"}), inputs


def _selu(attrs, inputs, proto_obj):
    """SELU as LeakyReLU ``act_type='selu'``."""
    return "LeakyReLU", _tu._add_extra_attributes(attrs, {"act_type": "selu"}), inputs


def softmax(attrs, inputs, proto_obj):
    """softmax over ``axis`` (-1 by default)."""
    if "axis" not in attrs:
        attrs = _tu._add_extra_attributes(attrs, {"axis": -1})
    return "softmax", attrs, inputs


log_softmax = _same("log_softmax")


def softplus(attrs, inputs, proto_obj):
    """Softplus as Activation ``act_type='softrelu'``."""
    return "Activation", _tu._add_extra_attributes(attrs, {"act_type": "softrelu"}), inputs


_CONV_NAMES = {"kernel_shape": "kernel", "strides": "stride", "pads": "pad",
               "dilations": "dilate", "group": "num_group"}


def _conv_attrs(op_name, attrs, inputs, proto_obj):
    new_attrs = _tu._add_extra_attributes(_renamed(attrs, _CONV_NAMES), {"num_group": 1})
    new_attrs = _tu._fix_bias(op_name, new_attrs, len(inputs))
    return _tu._fix_channels(op_name, new_attrs, inputs, proto_obj)


def conv(attrs, inputs, proto_obj):
    """Convolution (a Symbol); asymmetric pads become a Pad of zeros before it."""
    s = _sym()
    new_attrs = _conv_attrs("Convolution", attrs, inputs, proto_obj)
    kernel = new_attrs["kernel"]
    no_bias = new_attrs.get("no_bias", 0)
    bias = None if no_bias is True else inputs[2]
    width = _tu._pad_sequence_fix(new_attrs.get("pad", []), kernel_dim=len(kernel))
    begin, end = width[0::2], width[1::2]
    kw = dict(kernel=kernel, stride=new_attrs.get("stride", []),
              dilate=new_attrs.get("dilate", []), num_filter=new_attrs["num_filter"],
              num_group=new_attrs["num_group"], no_bias=no_bias)
    if begin != end:
        x = s.pad(inputs[0], mode="constant", pad_width=(0, 0, 0, 0) + width)
        y = s.Convolution(x, inputs[1], bias, **kw)
    else:
        y = s.Convolution(inputs[0], inputs[1], bias, pad=begin, **kw)
    return y, new_attrs, inputs


def deconv(attrs, inputs, proto_obj):
    """Deconvolution (a Symbol) after a Pad of zeros that carries ONNX's pads."""
    s = _sym()
    new_attrs = _conv_attrs("Deconvolution", attrs, inputs, proto_obj)
    kernel = new_attrs.get("kernel", [])
    no_bias = new_attrs.get("no_bias", False)
    bias = None if no_bias is True else inputs[2]
    width = (0, 0, 0, 0) + _tu._pad_sequence_fix(new_attrs.get("pad", []),
                                                 kernel_dim=len(kernel))
    x = s.pad(inputs[0], mode="constant", pad_width=width)
    y = s.Deconvolution(x, inputs[1], bias, kernel=kernel, stride=new_attrs.get("stride", []),
                        dilate=new_attrs.get("dilate", []),
                        num_filter=new_attrs["num_filter"], num_group=new_attrs["num_group"],
                        no_bias=no_bias)
    return y, new_attrs, inputs


def fully_connected(attrs, inputs, proto_obj):
    """FullyConnected (Caffe2's FC): ``no_bias`` and ``num_hidden`` from the inputs."""
    new_attrs = _tu._fix_bias("FullyConnected", _tu._remove_attributes(attrs, ["axis"]),
                              len(inputs))
    return "FullyConnected", _tu._fix_channels("FullyConnected", new_attrs, inputs,
                                               proto_obj), inputs


def _global_pool(kind):
    def fn(attrs, inputs, proto_obj):
        extra = {"global_pool": True, "kernel": (1, 1), "pool_type": kind}
        if kind == "lp":
            extra["p_value"] = attrs.get("p", 2)
        new_attrs = _tu._add_extra_attributes(attrs, extra)
        if kind == "lp":
            new_attrs = _tu._remove_attributes(new_attrs, ["p"])
        return "Pooling", new_attrs, inputs
    fn.__doc__ = f"Global {kind} pooling (Pooling with ``global_pool=True``)."
    return fn


global_maxpooling = _global_pool("max")
global_avgpooling = _global_pool("avg")
global_lppooling = _global_pool("lp")


def linalg_gemm(attrs, inputs, proto_obj):
    """Gemm as ``linalg_gemm2`` of the flattened A and B, plus ``beta * C`` (a Symbol)."""
    s = _sym()
    prod = s.linalg_gemm2(A=s.flatten(inputs[0]), B=inputs[1],
                          transpose_a=attrs.get("transA", 0),
                          transpose_b=attrs.get("transB", 0), alpha=attrs.get("alpha", 1))
    y = s.broadcast_add(prod, attrs.get("beta", 1) * inputs[2])
    new_attrs = _renamed(attrs, {"transA": "transpose_a", "transB": "transpose_b"})
    return y, _tu._remove_attributes(new_attrs, ["broadcast"]), inputs


def local_response_norm(attrs, inputs, proto_obj):
    """LRN with ``bias`` as ``knorm`` and ``size`` as ``nsize``."""
    return "LRN", _renamed(attrs, {"bias": "knorm", "size": "nsize"}), inputs


def dropout(attrs, inputs, proto_obj):
    """Dropout (``mode='always'`` for a node marked ``is_test=0``); from opset 12 the ratio
    may be an initializer input."""
    mode = "always" if attrs.get("is_test") == 0 else "training"
    new_attrs = _tu._add_extra_attributes(_tu._remove_attributes(attrs, ["is_test"]),
                                          {"mode": mode})
    if proto_obj.opset_version >= 12:
        new_attrs = _tu._remove_attributes(new_attrs, ["seed"])
        if len(inputs) == 2:
            ratio = _param(proto_obj, inputs[1])[0]
            new_attrs = _tu._add_extra_attributes(
                _tu._remove_attributes(new_attrs, ["p"]), {"p": ratio})
        elif len(inputs) == 1:
            new_attrs = _renamed(new_attrs, {"ratio": "p"})
        return "Dropout", new_attrs, inputs[0]
    return "Dropout", _renamed(new_attrs, {"ratio": "p"}), inputs


# -- shape and type --------------------------------------------------------------------------
def reshape(attrs, inputs, proto_obj):
    """reshape to the ``shape`` attribute, or (opset 5 on) to the initializer input."""
    if len(inputs) == 1:
        return "reshape", attrs, inputs[0]
    shape = [int(v) for v in _param(proto_obj, inputs[1])]
    return "reshape", {"shape": shape}, inputs[:1]


def cast(attrs, inputs, proto_obj):
    """cast to the NumPy dtype of ONNX's ``to``."""
    new_attrs = _renamed(attrs, {"to": "dtype"})
    new_attrs["dtype"] = _np_dtype(new_attrs["dtype"])
    return "cast", new_attrs, inputs


def split(attrs, inputs, proto_obj):
    """split into equal parts: as many as ``split`` lists, else as many as the model has
    outputs; unequal parts raise (MXNet's split cuts equal parts)."""
    parts = attrs.get("split", [])
    new_attrs = _renamed(attrs, {"split": "num_outputs"})
    if "axis" not in attrs:
        new_attrs = _tu._add_extra_attributes(new_attrs, {"axis": 0})
    if not parts:
        n = len(proto_obj.model_metadata.get("output_tensor_data"))
    elif len(set(parts)) == 1:
        n = len(parts)
    else:
        raise OnnxNotImplementedError(
            f"Operator split in MXNet does not support variable splits ({tuple(parts)}); "
            "see https://github.com/apache/incubator-mxnet/issues/11594")
    new_attrs["num_outputs"] = n
    return "split", new_attrs, inputs


def _slice(attrs, inputs, proto_obj):
    """Slice as one ``slice_axis`` per axis (a Symbol). An end at or past the dim of the
    model's first input (MXNet reads that input's shape) slices to the end."""
    shape = proto_obj.model_metadata.get("input_tensor_data")[0][1]
    if proto_obj.opset_version >= 10:
        begin = [int(v) for v in _param(proto_obj, inputs[1])]
        end = [int(v) for v in _param(proto_obj, inputs[2])]
        axes = tuple(int(v) for v in _param(proto_obj, inputs[3])) if len(inputs) >= 4 \
            else tuple(range(len(begin)))
        new_attrs = _tu._add_extra_attributes(attrs, {"axes": axes, "begin": tuple(begin),
                                                      "end": tuple(end)})
    else:
        new_attrs = _renamed(attrs, {"axes": "axis", "ends": "end", "starts": "begin"})
        begin = new_attrs.get("begin")
        end = list(new_attrs.get("end"))
        axes = new_attrs.get("axis", tuple(range(len(begin))))
    for k, ax in enumerate(axes):
        if end[k] >= shape[ax]:
            end[k] = None
    s = _sym()
    y = s.slice_axis(inputs[0], axis=axes[0], begin=begin[0], end=end[0])
    if len(axes) > 1:
        # MXNet's graph: after the first slice, every axis again (the first one twice);
        # from opset 10, where MXNet 1.9.1 fails, each axis is sliced once, as ONNX means
        first = 0 if proto_obj.opset_version < 10 else 1
        for k in range(first, len(axes)):
            y = s.slice_axis(y, axis=axes[k], begin=begin[k], end=end[k])
    return y, new_attrs, inputs


def transpose(attrs, inputs, proto_obj):
    """transpose with ``perm`` as ``axes``."""
    return "transpose", _renamed(attrs, {"perm": "axes"}), inputs


def squeeze(attrs, inputs, proto_obj):
    """squeeze with ``axes`` as ``axis``."""
    return "squeeze", _renamed(attrs, {"axes": "axis"}), inputs


def unsqueeze(attrs, inputs, cls):
    """One ``expand_dims`` per axis of ``axes``, in the given order (a Symbol)."""
    y = inputs[0]
    for ax in attrs["axes"]:
        y = _sym().expand_dims(y, axis=ax)
    return y, attrs, inputs


def flatten(attrs, inputs, proto_obj):
    """Flatten; only ``axis=1`` (MXNet's Flatten keeps the first axis)."""
    if "axis" in attrs and attrs["axis"] != 1:
        raise GpundaError(f"Flatten operator only supports axis=1 (got axis={attrs['axis']})")
    return "Flatten", _tu._remove_attributes(attrs, ["axis"]), inputs


def clip(attrs, inputs, proto_obj):
    """clip: bounds from the attributes (before opset 11) or the initializer inputs;
    a missing bound is infinite."""
    if proto_obj.opset_version >= 11:
        lo = _param(proto_obj, inputs[1])[0] if len(inputs) >= 2 else -np.inf
        hi = _param(proto_obj, inputs[2])[0] if len(inputs) >= 3 else np.inf
        new_attrs = _tu._add_extra_attributes(attrs, {"a_min": lo, "a_max": hi})
    else:
        new_attrs = _renamed(attrs, {"min": "a_min", "max": "a_max"})
        new_attrs = _tu._add_extra_attributes(new_attrs, {"a_max": np.inf})
        new_attrs = _tu._add_extra_attributes(new_attrs, {"a_min": -np.inf})
    return "clip", new_attrs, inputs[0]


gather = _same("take")

# -- powers ----------------------------------------------------------------------------------
reciprocal = _same("reciprocal")
squareroot = _same("sqrt")


def power(attrs, inputs, proto_obj):
    """Power: ``broadcast_power`` (an op name with ``broadcast=1``, a Symbol without the
    attribute), or ``pow`` for ``broadcast=0``."""
    s = _sym()
    new_attrs = _renamed(attrs, {"exponent": "exp"})
    if "broadcast" in attrs:
        new_attrs = _tu._remove_attributes(new_attrs, ["broadcast"])
        if attrs["broadcast"] == 1:
            return "broadcast_power", new_attrs, inputs
        return s.pow(inputs[0], inputs[1]), new_attrs, inputs
    return s.broadcast_power(inputs[0], inputs[1]), new_attrs, inputs


exponent = _same("exp")
_cos = _same("cos")
_sin = _same("sin")
_tan = _same("tan")
arccos = _same("arccos")
arcsin = _same("arcsin")
arctan = _same("arctan")
_log = _same("log")


# -- reductions ------------------------------------------------------------------------------
def _reduce(mx_op):
    def fn(attrs, inputs, proto_obj):
        return mx_op, _renamed(attrs, {"axes": "axis"}), inputs
    fn.__doc__ = (f"``{mx_op}`` over ``axes`` (MXNet's ``axis``); ONNX's default "
                  "keepdims=1 is not added, as in MXNet.")
    return fn


reduce_max = _reduce("max")
reduce_mean = _reduce("mean")
reduce_min = _reduce("min")
reduce_sum = _reduce("sum")
reduce_prod = _reduce("prod")
reduce_l2 = _reduce("norm")


def reduce_l1(attrs, inputs, proto_obj):
    """norm with ``ord=1`` over ``axes``."""
    new_attrs = _renamed(attrs, {"axes": "axis"})
    return "norm", _tu._add_extra_attributes(new_attrs, {"ord": 1}), inputs


def reduce_log_sum(attrs, inputs, proto_obj):
    """log of the sum over ``axes`` (a Symbol)."""
    s = _sym()
    keep = attrs.get("keepdims", True)
    return s.log(s.sum(inputs[0], axis=attrs.get("axes"), keepdims=keep)), attrs, inputs


def reduce_log_sum_exp(attrs, inputs, proto_obj):
    """log of the sum of exp over ``axes`` (a Symbol; not the stable form)."""
    s = _sym()
    keep = attrs.get("keepdims", True)
    y = s.sum(s.exp(inputs[0]), axis=attrs.get("axes"), keepdims=keep)
    return s.log(y), attrs, inputs


def reduce_sum_square(attrs, inputs, proto_obj):
    """Sum of squares over ``axes`` (a Symbol)."""
    s = _sym()
    y = s.sum(s.square(inputs[0]), axis=attrs.get("axes"), keepdims=attrs.get("keepdims"))
    return y, attrs, inputs


shape = _same("shape_array")
size = _same("size_array")


# -- pooling ---------------------------------------------------------------------------------
_POOL_NAMES = {"kernel_shape": "kernel", "strides": "stride", "pads": "pad"}


def avg_pooling(attrs, inputs, proto_obj):
    """Average pooling with the pads as a Pad of zeros first (``_fix_pooling``)."""
    new_attrs = _tu._add_extra_attributes(_renamed(attrs, _POOL_NAMES),
                                          {"pooling_convention": "valid"})
    return _tu._fix_pooling("avg", inputs, new_attrs), new_attrs, inputs


def lp_pooling(attrs, inputs, proto_obj):
    """Lp pooling with ``p`` as ``p_value`` (2 by default), pads as a Pad first."""
    p = attrs.get("p", 2)
    new_attrs = _tu._remove_attributes(_renamed(attrs, _POOL_NAMES), ["p"])
    new_attrs = _tu._add_extra_attributes(new_attrs, {"pooling_convention": "valid",
                                                      "p_value": p})
    return _tu._fix_pooling("lp", inputs, new_attrs), new_attrs, inputs


def max_pooling(attrs, inputs, proto_obj):
    """Max pooling with the pads as an edge-replicating Pad first."""
    new_attrs = _tu._add_extra_attributes(_renamed(attrs, _POOL_NAMES),
                                          {"pooling_convention": "valid"})
    return _tu._fix_pooling("max", inputs, new_attrs), new_attrs, inputs


def max_roi_pooling(attrs, inputs, proto_obj):
    """ROIPooling with ``pooled_shape`` as ``pooled_size``."""
    return "ROIPooling", _renamed(attrs, {"pooled_shape": "pooled_size"}), inputs


def depthtospace(attrs, inputs, proto_obj):
    """depth_to_space with ``blocksize`` as ``block_size``."""
    return "depth_to_space", _renamed(attrs, {"blocksize": "block_size"}), inputs


def spacetodepth(attrs, inputs, proto_obj):
    """space_to_depth with ``blocksize`` as ``block_size``."""
    return "space_to_depth", _renamed(attrs, {"blocksize": "block_size"}), inputs


def hardmax(attrs, inputs, proto_obj):
    """One-hot of the argmax over the dims from ``axis`` on (a Symbol), with the shape of
    the model's first input (MXNet reads that input's shape)."""
    s = _sym()
    in_shape = proto_obj.model_metadata.get("input_tensor_data")[0][1]
    axis = int(attrs.get("axis", 1))
    if axis < 0:
        axis += len(in_shape)
    if axis == len(in_shape) - 1:
        hot = s.one_hot(s.argmax(inputs[0], axis=-1), depth=in_shape[-1])
        return hot, attrs, inputs
    flat = (int(np.prod(in_shape[:axis])), int(np.prod(in_shape[axis:])))
    hot = s.one_hot(s.argmax(s.reshape(inputs[0], flat), axis=-1), depth=flat[-1])
    return s.reshape(hot, in_shape), attrs, inputs


def lpnormalization(attrs, inputs, proto_obj):
    """norm with ``p`` as ``ord`` over ``axis`` (-1 by default); ONNX's division by the
    norm is not done (MXNet maps it to ``norm``)."""
    new_attrs = _renamed(attrs, {"p": "ord"})
    new_attrs.update(axis=int(attrs.get("axis", -1)))
    return "norm", new_attrs, inputs


def topk(attrs, inputs, proto_obj):
    """topk giving values and int64 indices; from opset 10 ``k`` is an initializer."""
    new_attrs = _tu._add_extra_attributes(attrs, {"ret_typ": "both", "dtype": "int64"})
    if proto_obj.opset_version >= 10:
        k = int(_param(proto_obj, inputs[1]).reshape(-1)[0])
        return "topk", _tu._add_extra_attributes(new_attrs, {"k": k}), inputs[0]
    return "topk", new_attrs, inputs


def _name_the_shared():
    """Give the functions made by the factories above their MXNet names."""
    for name, fn in list(globals().items()):
        if callable(fn) and getattr(fn, "__name__", "") == "fn":
            fn.__name__ = fn.__qualname__ = name


_name_the_shared()
