"""``mx.contrib.onnx.onnx2mx._translation_utils``: the helpers of MXNet's per-op ONNX
translation functions (``_op_translations``), as MXNet 1.9.1's behave: attribute-dict
edits, and the Symbol-building fixes (``_fix_pooling``, ``_fix_broadcast``, ``_fix_gemm``)
that read the importer object (``import_onnx.GraphProto``) passed as ``proto_obj``.
"""
from gpunda.base import GpundaError, GpundaValueError


class OnnxNotImplementedError(GpundaError, NotImplementedError):
    """An ONNX node MXNet's importer cannot translate (MXNet raises NotImplementedError)."""


def _fix_attribute_names(attrs, change_map):
    """A copy of ``attrs`` with each key in ``change_map`` renamed to its value."""
    return {change_map.get(k, k): v for k, v in attrs.items()}


def _remove_attributes(attrs, remove_list):
    """A copy of ``attrs`` without the keys in ``remove_list``."""
    return {k: v for k, v in attrs.items() if k not in remove_list}


def _add_extra_attributes(attrs, extra_attr_map):
    """``attrs`` (changed in place) with the entries of ``extra_attr_map`` it lacks."""
    for k, v in extra_attr_map.items():
        attrs.setdefault(k, v)
    return attrs


def _pad_sequence_fix(attr, kernel_dim=None):
    """ONNX pads (all begins, then all ends) as MXNet's pad_width (begin, end per axis),
    padded with zeros to ``kernel_dim`` axes; ``()`` for an odd-length sequence."""
    attr = tuple(attr)
    if len(attr) % 2:
        return ()
    half = len(attr) // 2
    out = tuple(v for i in range(half) for v in (attr[i], attr[i + half]))
    if kernel_dim is not None and len(out) < 2 * kernel_dim:
        out += (0, 0) * (kernel_dim - len(out) // 2)
    return out


def _fix_pooling(pool_type, inputs, new_attr):
    """Pooling of ``inputs[0]`` with ONNX's (possibly asymmetric) pads as an explicit Pad
    first: edge-replicated for max pooling, zeros otherwise; a 1-d pooling is padded as
    2-d (a dummy axis 2 added, then split away)."""
    from gpunda import symbol
    kernel = tuple(new_attr.get("kernel"))
    nk = len(kernel)
    stride = new_attr.get("stride")
    stride = (1,) * nk if stride is None else stride
    pads = new_attr.get("pad")
    pads = (0,) * (2 * nk) if pads is None else tuple(pads)
    if nk == 1:
        width = (0, 0, 0, 0) + _pad_sequence_fix((0, pads[0], 0, pads[1]), kernel_dim=2)
        padded = symbol.pad(symbol.expand_dims(inputs[0], axis=2), mode="edge",
                            pad_width=width)
        padded = symbol.split(padded, axis=2, num_outputs=1, squeeze_axis=1)
    else:
        width = (0, 0, 0, 0) + _pad_sequence_fix(pads, kernel_dim=nk)
        padded = symbol.pad(inputs[0], mode="edge" if pool_type == "max" else "constant",
                            pad_width=width)
    kw = {"p_value": new_attr.get("p_value")} if pool_type == "lp" else {}
    return symbol.Pooling(padded, pool_type=pool_type, stride=stride, kernel=kernel, **kw)


def _fix_bias(op_name, attrs, num_inputs):
    """``attrs`` (changed in place) with ``no_bias`` set from the number of inputs (3: a
    bias, 2: none); another count is a GpundaValueError naming ``op_name``."""
    if num_inputs not in (2, 3):
        raise GpundaValueError(f"Unexpected number of inputs for: {op_name} "
                               f"({num_inputs}; 2 or 3 expected)")
    attrs["no_bias"] = num_inputs == 2
    return attrs


def _fix_broadcast(op_name, inputs, broadcast_axis, proto_obj):
    """ONNX's old axis-aligned broadcast (``broadcast=1, axis=k``): when the model has
    parameters, ``inputs[1]`` is reshaped to ones but ``-1`` at ``broadcast_axis`` of
    ``inputs[0]``'s rank and ``op_name`` is applied (a Symbol); otherwise ``op_name``."""
    if not proto_obj._params:
        return op_name
    from gpunda import symbol
    if len(list(inputs)) != 2:
        raise GpundaValueError(f"{op_name} with broadcast: 2 inputs expected, got "
                               f"{len(list(inputs))}")
    shape = [1] * len(get_input_shape(inputs[0], proto_obj))
    shape[broadcast_axis] = -1
    rhs = symbol.reshape(inputs[1], shape=tuple(shape))
    return getattr(symbol, op_name)(inputs[0], rhs)


def _fix_channels(op_name, attrs, inputs, proto_obj):
    """``attrs`` (changed in place) with the number of outputs read from the weight's
    shape in ``proto_obj._params``: ``num_hidden`` (FullyConnected, dim 0), ``num_filter``
    (Convolution dim 0, Deconvolution dim 1)."""
    name = inputs[1].name
    if name not in proto_obj._params:
        raise GpundaValueError(f"Unable to get channels/units attr from onnx graph: the "
                               f"weight {name!r} of {op_name} is not a parameter")
    wshape = proto_obj._params[name].shape
    if len(wshape) < 2:
        raise GpundaValueError(f"Weights shape is invalid: {wshape}")
    if op_name == "FullyConnected":
        attrs["num_hidden"] = wshape[0]
    elif op_name == "Convolution":
        attrs["num_filter"] = wshape[0]
    elif op_name == "Deconvolution":
        attrs["num_filter"] = wshape[1]
    return attrs


def _fix_gemm(op_name, inputs, old_attr, proto_obj):
    """ONNX's Gemm as ``op_name`` (FullyConnected): returns ``(the symbol function,
    {'num_hidden': C's length}, [alpha*A, B, beta*C])`` with A and B transposed into
    FullyConnected's layout. ``inputs`` is changed in place, as in MXNet."""
    from gpunda import symbol
    fn = getattr(symbol, op_name, None)
    alpha = float(old_attr.get("alpha", 1.0))
    beta = float(old_attr.get("beta", 1.0))
    if int(old_attr.get("transA", 0)):
        inputs[0] = symbol.transpose(inputs[0], axes=(1, 0))
    if not int(old_attr.get("transB", 0)):
        inputs[1] = symbol.transpose(inputs[1], axes=(1, 0))
    new_inputs = [alpha * inputs[0], inputs[1], beta * inputs[2]]
    return fn, {"num_hidden": proto_obj._params[inputs[2].name].shape[0]}, new_inputs


def get_input_shape(sym, proto_obj):
    """The shape of ``sym``'s first output when the model's inputs (from
    ``proto_obj.model_metadata``) are ones: runs it in a Module on the CPU with the
    parameters ``proto_obj.arg_dict``/``aux_dict``, as MXNet does."""
    from gpunda import context, io, module
    from gpunda import ndarray as nd
    meta = proto_obj.model_metadata.get("input_tensor_data")
    names = [m[0] for m in meta]
    data = [nd.ones(shape=m[1]) for m in meta]
    mod = module.Module(symbol=sym, data_names=names, context=context.cpu(),
                        label_names=None)
    mod.bind(for_training=False, data_shapes=[(n, d.shape) for n, d in zip(names, data)],
             label_shapes=None)
    mod.set_params(arg_params=proto_obj.arg_dict, aux_params=proto_obj.aux_dict)
    mod.forward(io.DataBatch(data))
    return mod.get_outputs()[0].asnumpy().shape
