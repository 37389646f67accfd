"""``mx.onnx.mx2onnx._op_translations``: MXNet's per-opset converter modules."""
from gpunda.onnx.mx2onnx._op_translations import _op_translations_opset12  # noqa: F401
from gpunda.onnx.mx2onnx._op_translations import _op_translations_opset13  # noqa: F401
