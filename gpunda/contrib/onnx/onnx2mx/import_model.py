"""``mx.contrib.onnx.onnx2mx.import_model``: ``import_model`` and ``get_model_metadata``."""
from gpunda.contrib.onnx import get_model_metadata, import_model  # noqa: F401

__all__ = ["import_model", "get_model_metadata"]
