"""The helpers MXNet's per-opset converter modules share, written for gpunda.

The attribute parsers (``parse_helper``, ``transform_padding``, ``convert_string_to_list``,
``get_boolean_attribute_value``) and the node/tensor builders work on MXNet's JSON node
dicts (``{"name", "op", "attrs", "inputs": [[node, out, 0]]}``) and its converter keyword
arguments (``outputs_lookup``, ``initializer``) as MXNet 1.9.1's do. MXNet's per-op
``convert_*`` functions are not built: gpunda converts whole Symbols with its own
converters (``gpunda.onnx._registry``); each name raises saying so.
"""
import ast
import re

import numpy as np

from gpunda.base import NotImplementedForGpunda

_TUPLE = re.compile(r"\([0-9L|, ]+\)")


def _onnx():
    from gpunda.onnx.export import _onnx as load
    return load()


def parse_helper(attrs, attrs_name, alt_value=None):
    """The tuple written in ``attrs[attrs_name]`` (``"(3, 3)"``), else ``alt_value``."""
    text = None if not attrs or attrs.get(attrs_name) is None else str(attrs[attrs_name])
    if text is None:
        return alt_value
    m = _TUPLE.search(text)
    if m is None:
        return alt_value
    if m.span() != (0, len(text)):
        raise AttributeError(f"Malformed {attrs_name} dimensions: {text}")
    return ast.literal_eval(text.replace("L", ""))


def transform_padding(pad_width):
    """MXNet's pad_width (begin, end per axis, interleaved) as ONNX's pads (all begins, then
    all ends)."""
    pads = list(pad_width)
    return pads[0::2] + pads[1::2]


def convert_string_to_list(string_val):
    """``"(1, None, 3L)"`` -> ``[1, None, 3]``."""
    out = []
    for part in string_val.split(","):
        v = part.strip()
        for ch in "()L[]":
            v = v.replace(ch, "")
        if v == "None":
            out.append(None)
        elif v:
            out.append(int(v))
    return out


def get_boolean_attribute_value(attrs, attr_name):
    """1 when ``attrs[attr_name]`` is ``"True"`` or ``"1"``, else 0."""
    return 1 if attrs.get(attr_name, 0) in ("True", "1") else 0


def get_inputs(node, kwargs):
    """``(name, input node names, attrs)`` of a JSON node."""
    lookup = kwargs["outputs_lookup"]
    names = [lookup[i[0]][i[1]].name for i in node["inputs"]]
    return node["name"], names, node.get("attrs", {})


def get_input_dtypes(node, kwargs):
    """The dtypes of a JSON node's inputs."""
    lookup = kwargs["outputs_lookup"]
    return [lookup[i[0]][i[1]].dtype for i in node["inputs"]]


def create_basic_op_node(op_name, node, kwargs):
    """``[onnx NodeProto]``: ONNX op ``op_name`` on the node's inputs, named as the node."""
    name, inputs, _ = get_inputs(node, kwargs)
    return [_onnx().helper.make_node(op_name, inputs, [name], name=name)]


def _tensor(name, value, dims):
    onnx = _onnx()
    value = np.asarray(value)
    ttype = onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
    if value.dtype == np.float16:
        value = value.view(np.uint16)
    return onnx.helper.make_tensor(name, ttype, dims, value.flatten().tolist())


def create_const_scalar_node(input_name, value, kwargs):
    """Append a scalar initializer ``input_name`` of ``value`` (a NumPy scalar)."""
    kwargs["initializer"].append(_tensor(input_name, value, ()))


def create_const_node(input_name, value, kwargs):
    """Append an initializer ``input_name`` holding the array ``value``."""
    kwargs["initializer"].append(_tensor(input_name, value, np.shape(value)))


def create_tensor(tensor_list, tensor_name, initializer, dtype="int64"):
    """Append an initializer ``tensor_name`` of ``tensor_list`` as ``dtype``."""
    arr = np.array(tensor_list, dtype=dtype)
    initializer.append(_tensor(tensor_name, arr, arr.shape))


def create_helper_trans_node(node_name, input_node):
    """An ONNX Transpose of ``input_node`` swapping its last two axes (named ``node_name``)."""
    return _onnx().helper.make_node("Transpose", [input_node], [node_name], perm=[0, 2, 1],
                                    name=node_name)


def scalar_op_helper(node, op_name, **kwargs):
    """Not built (MXNet's per-node converter convention); see the module docstring."""
    raise NotImplementedForGpunda(_per_node_message("scalar_op_helper"))


def _per_node_message(name):
    return (f"mx.onnx.mx2onnx's {name} is not supported: gpunda converts whole Symbols with "
            "its own converters (mx.onnx.export_model; gpunda.onnx._registry), not MXNet's "
            "per-node converter functions")


def define_converters(namespace, names):
    """Put MXNet's per-node converter names into a module's dict, each raising when called."""
    for name in names:
        def convert(node=None, _name=name, **kwargs):
            raise NotImplementedForGpunda(_per_node_message(_name))
        convert.__name__ = convert.__qualname__ = name
        convert.__module__ = namespace["__name__"]
        namespace[name] = convert
