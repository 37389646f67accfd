"""``mx.onnx.mx2onnx._export_model``: ``export_model`` and ``get_operator_support``."""
from gpunda.onnx import export_model, get_operator_support  # noqa: F401

__all__ = ["export_model", "get_operator_support"]
