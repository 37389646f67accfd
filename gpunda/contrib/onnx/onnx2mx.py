"""``mx.contrib.onnx.onnx2mx``: MXNet's module path of the ONNX importer."""
from __future__ import annotations

from . import import_model, import_to_gluon, get_model_metadata  # noqa: F401
from ._importer import OnnxImporter as GraphProto  # noqa: F401

__all__ = ["import_model", "import_to_gluon", "get_model_metadata", "GraphProto"]
