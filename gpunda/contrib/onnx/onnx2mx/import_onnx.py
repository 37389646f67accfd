"""``mx.contrib.onnx.onnx2mx.import_onnx``: ``GraphProto`` (the graph walk) and ``convert_map``."""
from gpunda.contrib.onnx._importer import OnnxImporter as GraphProto  # noqa: F401

__all__ = ["GraphProto"]


def __getattr__(name):
    if name == "convert_map":
        from gpunda.contrib.onnx import _importers
        return _importers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
