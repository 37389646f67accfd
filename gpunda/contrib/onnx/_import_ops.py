"""ONNX op -> gpunda Symbol converters, keyed by ONNX op type (``IMPORTERS``).

A converter is ``fn(imp, node, attrs, inputs)`` returning the Symbol of each output;
``imp`` is the ``OnnxImporter`` (``imp.get(name)`` a Symbol, ``imp.const(name)`` a
constant value, ``imp.unsupported(why)`` the error naming the node).
"""
from __future__ import annotations

IMPORTERS: dict = {}
_INT_BIG = 2 ** 62


def importer(*op_types):
    def deco(fn):
        for t in op_types:
            IMPORTERS[t] = fn
        return fn
    return deco


def _op(imp, name, *args, **kw):
    return getattr(imp.sym, name)(*args, name=imp.op_name(), **kw)


def _axes(imp, attrs, inputs, pos):
    """An ``axes`` given as attribute (older opsets) or as input ``pos`` (newer)."""
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    if len(inputs) > pos and inputs[pos]:
        return [int(a) for a in imp.need_const(inputs[pos], "axes")]
    return None


def _sym_pads(imp, pads, nd):
    pads = list(pads or [0] * (2 * nd))
    if pads[:nd] != pads[nd:]:
        raise imp.unsupported(f"asymmetric pads {pads}")
    return tuple(pads[:nd])


def _check_auto_pad(imp, attrs):
    if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise imp.unsupported(f"auto_pad={attrs['auto_pad']!r}")


# -- convolutions, pooling -----------------------------------------------------------------
@importer("Conv")
def conv(imp, node, attrs, ins):
    _check_auto_pad(imp, attrs)
    w = imp.const(ins[1])
    wshape = w.shape if w is not None else None
    kernel = tuple(attrs.get("kernel_shape") or (wshape[2:] if wshape else ()))
    if not kernel:
        raise imp.unsupported("kernel_shape is unknown")
    nd = len(kernel)
    args = [imp.get(i) for i in ins[:3] if i]
    num_filter = wshape[0] if wshape else None
    if num_filter is None:
        raise imp.unsupported("the weight must be a constant")
    return _op(imp, "Convolution", *args, kernel=kernel,
               stride=tuple(attrs.get("strides", [1] * nd)),
               dilate=tuple(attrs.get("dilations", [1] * nd)),
               pad=_sym_pads(imp, attrs.get("pads"), nd), num_filter=num_filter,
               num_group=attrs.get("group", 1), no_bias=len(args) < 3)


@importer("ConvTranspose")
def conv_transpose(imp, node, attrs, ins):
    _check_auto_pad(imp, attrs)
    if "output_shape" in attrs:
        raise imp.unsupported("output_shape")
    w = imp.need_const(ins[1], "the weight")
    kernel = tuple(attrs.get("kernel_shape") or w.shape[2:])
    nd = len(kernel)
    group = attrs.get("group", 1)
    pads = list(attrs.get("pads") or [0] * (2 * nd))
    adj = list(attrs.get("output_padding") or [0] * nd)
    # MXNet pads both sides equally; extra padding at the end is less output_padding
    begin, end = pads[:nd], pads[nd:]
    for k in range(nd):
        if end[k] != begin[k]:
            adj[k] -= end[k] - begin[k]
            if adj[k] < 0:
                raise imp.unsupported(f"pads {pads} with output_padding "
                                      f"{attrs.get('output_padding')}")
    args = [imp.get(i) for i in ins[:3] if i]
    return _op(imp, "Deconvolution", *args, kernel=kernel,
               stride=tuple(attrs.get("strides", [1] * nd)),
               dilate=tuple(attrs.get("dilations", [1] * nd)), pad=tuple(begin),
               adj=tuple(adj), num_filter=w.shape[1] * group, num_group=group,
               no_bias=len(args) < 3)


@importer("MaxPool", "AveragePool", "LpPool")
def pool(imp, node, attrs, ins):
    _check_auto_pad(imp, attrs)
    if len(node.output) > 1 and node.output[1]:
        raise imp.unsupported("the Indices output")
    if attrs.get("dilations") and any(d != 1 for d in attrs["dilations"]):
        raise imp.unsupported(f"dilations {attrs['dilations']}")
    kernel = tuple(attrs["kernel_shape"])
    nd = len(kernel)
    kind = {"MaxPool": "max", "AveragePool": "avg", "LpPool": "lp"}[node.op_type]
    kw = dict(kernel=kernel, pool_type=kind, stride=tuple(attrs.get("strides", [1] * nd)),
              pad=_sym_pads(imp, attrs.get("pads"), nd),
              pooling_convention="full" if attrs.get("ceil_mode", 0) else "valid")
    if kind == "avg":
        kw["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
    if kind == "lp":
        kw["p_value"] = int(attrs.get("p", 2))
    return _op(imp, "Pooling", imp.get(ins[0]), **kw)


@importer("MaxRoiPool")
def max_roi_pool(imp, node, attrs, ins):
    return _op(imp, "ROIPooling", imp.get(ins[0]), imp.get(ins[1]),
               pooled_size=tuple(attrs["pooled_shape"]),
               spatial_scale=float(attrs.get("spatial_scale", 1.0)))


@importer("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def global_pool(imp, node, attrs, ins):
    kind = {"GlobalAveragePool": "avg", "GlobalMaxPool": "max", "GlobalLpPool": "lp"}
    kw = {"p_value": int(attrs.get("p", 2))} if node.op_type == "GlobalLpPool" else {}
    nd = max(imp.ranks.get(ins[0], 4) - 2, 1)
    return _op(imp, "Pooling", imp.get(ins[0]), kernel=(1,) * nd, global_pool=True,
               pool_type=kind[node.op_type], **kw)


@importer("Resize")
def resize(imp, node, attrs, ins):
    mode = attrs.get("mode", "nearest")
    coord = attrs.get("coordinate_transformation_mode", "half_pixel")
    scales = imp.const(ins[2]) if len(ins) > 2 and ins[2] else None
    sizes = imp.const(ins[3]) if len(ins) > 3 and ins[3] else None
    x = imp.get(ins[0])
    if mode == "nearest" and scales is not None and scales.size == 4:
        s = [float(v) for v in scales]
        if s[:2] == [1.0, 1.0] and s[2] == s[3] and s[2] == int(s[2]) and \
                coord == "asymmetric":
            return _op(imp, "UpSampling", x, scale=int(s[2]), sample_type="nearest",
                       num_args=1)
    if mode == "linear" and sizes is not None and sizes.size == 4 and \
            coord in ("align_corners", "half_pixel"):
        return _op(imp, "_contrib_BilinearResize2D", x, height=int(sizes[2]),
                   width=int(sizes[3]), align_corners=coord == "align_corners")
    raise imp.unsupported(f"mode={mode!r} with coordinate_transformation_mode={coord!r}")


@importer("DepthToSpace")
def depth_to_space(imp, node, attrs, ins):
    if attrs.get("mode", "DCR") != "DCR":
        raise imp.unsupported(f"mode={attrs['mode']!r}")
    return _op(imp, "depth_to_space", imp.get(ins[0]), block_size=attrs["blocksize"])


@importer("SpaceToDepth")
def space_to_depth(imp, node, attrs, ins):
    return _op(imp, "space_to_depth", imp.get(ins[0]), block_size=attrs["blocksize"])


# -- normalisation ---------------------------------------------------------------------
@importer("BatchNormalization")
def batch_norm(imp, node, attrs, ins):
    if attrs.get("training_mode", 0):
        raise imp.unsupported("training_mode=1")
    args = [imp.get(i) for i in ins[:5]]
    return _op(imp, "BatchNorm", *args, eps=float(attrs.get("epsilon", 1e-5)),
               momentum=float(attrs.get("momentum", 0.9)), fix_gamma=False,
               use_global_stats=True)


@importer("LayerNormalization")
def layer_norm(imp, node, attrs, ins):
    axis = int(attrs.get("axis", -1))
    if axis != -1 and axis != imp.rank(ins[0]) - 1:
        raise imp.unsupported(f"axis={axis} (MXNet's LayerNorm normalises one axis)")
    if len(ins) < 3 or not ins[2]:
        raise imp.unsupported("no bias input")
    return _op(imp, "LayerNorm", imp.get(ins[0]), imp.get(ins[1]), imp.get(ins[2]), axis=-1,
               eps=float(attrs.get("epsilon", 1e-5)))


@importer("InstanceNormalization")
def instance_norm(imp, node, attrs, ins):
    return _op(imp, "InstanceNorm", *[imp.get(i) for i in ins[:3]],
               eps=float(attrs.get("epsilon", 1e-5)))


@importer("LRN")
def lrn(imp, node, attrs, ins):
    return _op(imp, "LRN", imp.get(ins[0]), alpha=float(attrs.get("alpha", 1e-4)),
               beta=float(attrs.get("beta", 0.75)), knorm=float(attrs.get("bias", 1.0)),
               nsize=int(attrs["size"]))


# -- activations, softmax ----------------------------------------------------------------
_ACT = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softrelu",
        "Softsign": "softsign"}


@importer(*_ACT)
def activation(imp, node, attrs, ins):
    return _op(imp, "Activation", imp.get(ins[0]), act_type=_ACT[node.op_type])


@importer("LeakyRelu", "Elu", "Selu", "Gelu")
def leaky(imp, node, attrs, ins):
    x = imp.get(ins[0])
    t = node.op_type
    if t == "LeakyRelu":
        return _op(imp, "LeakyReLU", x, act_type="leaky", slope=float(attrs.get("alpha", 0.01)))
    if t == "Elu":
        return _op(imp, "LeakyReLU", x, act_type="elu", slope=float(attrs.get("alpha", 1.0)))
    if t == "Gelu":
        if attrs.get("approximate", "none") != "none":
            raise imp.unsupported("approximate='tanh'")
        return _op(imp, "LeakyReLU", x, act_type="gelu")
    if abs(attrs.get("alpha", 1.67326) - 1.6732632) > 1e-5 or \
            abs(attrs.get("gamma", 1.0507) - 1.0507010) > 1e-5:
        raise imp.unsupported("Selu with other constants than MXNet's")
    return _op(imp, "LeakyReLU", x, act_type="selu")


@importer("PRelu")
def prelu(imp, node, attrs, ins):
    slope = imp.const(ins[1])
    if slope is not None:
        # MXNet's gamma is one value per channel
        if slope.size == 1:
            gamma = imp.new_param(ins[1], slope.reshape(1))
        elif slope.ndim >= 1 and slope.shape[0] == slope.size:
            gamma = imp.new_param(ins[1], slope.reshape(-1))
        else:
            raise imp.unsupported(f"slope of shape {slope.shape}")
    else:
        gamma = imp.get(ins[1])
    return _op(imp, "LeakyReLU", imp.get(ins[0]), gamma, act_type="prelu")


@importer("HardSigmoid")
def hard_sigmoid(imp, node, attrs, ins):
    return _op(imp, "hard_sigmoid", imp.get(ins[0]), alpha=float(attrs.get("alpha", 0.2)),
               beta=float(attrs.get("beta", 0.5)))


@importer("Softmax", "LogSoftmax")
def softmax(imp, node, attrs, ins):
    axis = int(attrs.get("axis", -1 if imp.opset >= 13 else 1))
    if imp.opset < 13 and axis not in (-1, imp.rank(ins[0]) - 1):
        raise imp.unsupported(f"opset {imp.opset} softmax over the dims from axis {axis}")
    name = "softmax" if node.op_type == "Softmax" else "log_softmax"
    return _op(imp, name, imp.get(ins[0]), axis=axis)


@importer("Dropout", "Identity")
def identity(imp, node, attrs, ins):
    if len(node.output) > 1 and node.output[1]:
        raise imp.unsupported("the mask output of Dropout")
    return _op(imp, "identity", imp.get(ins[0]))
