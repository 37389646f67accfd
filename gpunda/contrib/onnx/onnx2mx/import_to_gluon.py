"""``mx.contrib.onnx.onnx2mx.import_to_gluon``: an ONNX model as a Gluon SymbolBlock."""
from gpunda.contrib.onnx import import_to_gluon  # noqa: F401

__all__ = ["import_to_gluon"]
