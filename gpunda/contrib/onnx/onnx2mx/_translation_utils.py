"""``mx.contrib.onnx.onnx2mx._translation_utils``: the attribute helpers of MXNet's importer.

The attribute-dict helpers work as MXNet 1.9.1's do. The ones that build Symbols for
MXNet's per-op translation functions (``_fix_pooling``, ``_fix_bias``, ``_fix_broadcast``,
``_fix_channels``, ``_fix_gemm``) and ``get_input_shape`` (which runs a model on MXNet's
importer object) raise: gpunda's importer does that work inside its own converters.
"""
from gpunda._core.not_built import define_stubs


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


define_stubs(globals(),
             functions=("_fix_pooling", "_fix_bias", "_fix_broadcast", "_fix_channels",
                        "_fix_gemm", "get_input_shape"),
             reason="gpunda's ONNX importer converts whole models (mx.contrib.onnx."
                    "import_model), not through MXNet's per-op translation helpers")
