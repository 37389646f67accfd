"""``mx.onnx.mx2onnx``: MXNet's package path of the ONNX exporter.

``export_model`` and ``get_operator_support`` are gpunda's exporter (``gpunda.onnx``); the
submodules carry MXNet's module paths (``_export_model``, ``_export_helper.load_module``,
``_export_onnx.MXNetGraph``, ``_op_translations``).
"""
from gpunda.onnx.mx2onnx._export_model import export_model, get_operator_support  # noqa: F401
from gpunda.onnx.mx2onnx import _export_helper, _export_onnx, _op_translations  # noqa: F401

__all__ = ["export_model", "get_operator_support"]
