"""The helpers MXNet's per-opset converter modules share, written for gpunda.

The attribute parsers (``parse_helper``, ``transform_padding``, ``convert_string_to_list``,
``get_boolean_attribute_value``) and the node/tensor builders work on MXNet's JSON node
dicts (``{"name", "op", "attrs", "inputs": [[node, out, 0]]}``) and its converter keyword
arguments (``outputs_lookup``, ``initializer``) as MXNet 1.9.1's do. MXNet's per-op
``convert_*`` names take the same arguments and run gpunda's converter for the node's op
(``gpunda.onnx._mxconv.run_builtin``); each is registered in ``MXNetGraph.registry_`` for
the ops MXNet registers it for.
"""
import ast
import re

import numpy as np


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
    """An ONNX Transpose of ``input_node`` (reversing its axes) named ``node_name``."""
    return _onnx().helper.make_node("Transpose", [input_node], [node_name], name=node_name)


def transpose_last_two_dim(name, kwargs):
    """ONNX nodes that swap the last two axes of tensor ``name`` whatever its rank (up to
    8): the tensor is padded to rank 8 with leading ones, transposed, and reshaped back.
    The result is ``name + "_transposed"``; three int64 constants go to the initializer."""
    make = _onnx().helper.make_node
    init = kwargs["initializer"]
    create_tensor([0], name + "_0", init)
    create_tensor([1], name + "_1", init)
    create_tensor([8], name + "_8", init)
    perm = list(range(6)) + [7, 6]
    return [
        make("Shape", [name], [name + "_shape"]),
        make("Shape", [name + "_shape"], [name + "_dim"]),
        make("Sub", [name + "_8", name + "_dim"], [name + "_sub"]),
        make("Concat", [name + "_sub", name + "_0"], [name + "_concat"], axis=0),
        make("Pad", [name + "_shape", name + "_concat", name + "_1"], [name + "_shape_8_dim"]),
        make("Reshape", [name, name + "_shape_8_dim"], [name + "_data_8_dim"]),
        make("Transpose", [name + "_data_8_dim"], [name + "_data_t"], perm=perm),
        make("Shape", [name + "_data_t"], [name + "_new_shape_"]),
        make("Slice", [name + "_new_shape_", name + "_sub", name + "_8", name + "_0"],
             [name + "_new_shape"]),
        make("Reshape", [name + "_data_t", name + "_new_shape"], [name + "_transposed"]),
    ]


_FOLD = {"Mul": lambda a, s, r: a * s, "Add": lambda a, s, r: a + s,
         "Sub": lambda a, s, r: s - a if r else a - s,
         "Div": lambda a, s, r: s / a if r else a / s, "Pow": lambda a, s, r: a ** s}


def scalar_op_helper(node, op_name, **kwargs):
    """ONNX ``op_name`` (Mul/Add/Sub/Div/Pow) of the node's input and its ``scalar`` attr.

    As MXNet's: an input that is an initializer is folded into a new initializer named as
    the node (returns its ValueInfo); otherwise the scalar becomes the initializer
    ``"scalar_op" + str(idx)`` and one node computes the result (the scalar first for
    ``_rminusscalar``/``_rdivscalar`` nodes). Returns ``[ValueInfo, ...]`` as MXNet does."""
    onnx = _onnx()
    from onnx import numpy_helper
    name, inputs, attrs = get_inputs(node, kwargs)
    dtype = np.dtype(get_input_dtypes(node, kwargs)[0])
    ttype = onnx.helper.np_dtype_to_tensor_dtype(dtype)
    value = float(attrs.get("scalar", "1"))
    if dtype.kind in "iu":
        value = int(value)
    rev = name.startswith("_rminusscalar") or name.startswith("_rdivscalar")
    init = kwargs["initializer"]
    src = next((t for t in init if t.name == inputs[0]), None)
    if src is not None and op_name in _FOLD:
        arr = np.asarray(_FOLD[op_name](numpy_helper.to_array(src), value, rev))
        folded = numpy_helper.from_array(arr, name)
        init.append(folded)
        return [onnx.helper.make_tensor_value_info(name, folded.data_type, arr.shape)]
    const = f"scalar_op{kwargs['idx']}"
    stored = np.asarray([value], dtype=dtype)
    init.append(_tensor(const, stored, (1,)))
    pair = [const, inputs[0]] if ("_rminusscalar" in name or "_rdivscalar" in name) \
        else [inputs[0], const]
    return [onnx.helper.make_tensor_value_info(const, ttype, (1,)),
            onnx.helper.make_node(op_name, pair, [name], name=name)]


def convert_weights_and_inputs(node, **kwargs):
    """MXNet's converter of ``null`` nodes: a graph input (``is_input``: a ValueInfo of
    ``in_shape``/``in_type``) or a weight (a ValueInfo plus its initializer from
    ``weights``). Returns ``([ValueInfo], (numpy dtype,))``."""
    onnx = _onnx()
    name = node["name"]
    if kwargs["is_input"] is False:
        arr = np.asarray(kwargs["weights"][name])
        ttype = onnx.helper.np_dtype_to_tensor_dtype(arr.dtype)
        kwargs["initializer"].append(_tensor(name, arr, arr.shape))
        return [onnx.helper.make_tensor_value_info(name, ttype, arr.shape)], (arr.dtype,)
    ttype = kwargs["in_type"]
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(ttype))
    return [onnx.helper.make_tensor_value_info(name, ttype, kwargs["in_shape"])], (dtype,)


def define_converters(namespace, table, opset_version):
    """Put MXNet's per-node converter names into a module's dict: ``table`` (text, one
    ``convert_name: Op1 Op2 ...`` line each) gives each name and the MXNet ops MXNet
    registers it for at ``opset_version``. Each runs gpunda's converter for the node's op
    (``_mxconv.run_builtin``) and is registered for those ops in ``MXNetGraph.registry_``,
    as MXNet's module does at import. The module also gets MXNet's ``onnx`` and ``mx_op``
    names, loaded on first use."""
    from gpunda.onnx import _mxconv
    table = {line.split(":")[0].strip(): line.split(":")[1].split()
             for line in table.strip().splitlines()}
    namespace["__getattr__"] = _opset_module_getattr(namespace["__name__"])
    for name, ops in table.items():
        if name == "convert_weights_and_inputs":
            fn = _mxconv.mark_builtin(convert_weights_and_inputs)
        else:
            def fn(node, _name=name, **kwargs):
                from gpunda.onnx._mxconv import run_builtin
                return run_builtin(_name, node, kwargs)
            fn.__name__ = fn.__qualname__ = name
            fn.__module__ = namespace["__name__"]
            fn.__doc__ = (f"MXNet's ``{name}(node, **kwargs)`` for op(s) {', '.join(ops)}: "
                          "the ONNX nodes of gpunda's converter, outputs named as the node.")
            _mxconv.mark_builtin(fn)
        namespace[name] = fn
        for op in ops:
            _mxconv.register(op, opset_version, fn)


def _opset_module_getattr(module_name):
    def __getattr__(name):
        if name == "onnx":                   # MXNet's module holds the onnx package as a name
            from gpunda.onnx.export import _onnx
            return _onnx()
        if name == "mx_op":                  # MXNet's name for MXNetGraph in these modules
            from gpunda.onnx.mx2onnx._export_onnx import MXNetGraph
            return MXNetGraph
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    return __getattr__
