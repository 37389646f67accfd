"""``mx.contrib.onnx.onnx2mx``: MXNet's module path of the ONNX importer."""
from __future__ import annotations

from gpunda.contrib.onnx import import_model, import_to_gluon, get_model_metadata  # noqa: F401
from gpunda.contrib.onnx._importer import OnnxImporter as GraphProto  # noqa: F401

__all__ = ["import_model", "import_to_gluon", "get_model_metadata", "GraphProto"]
