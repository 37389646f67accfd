"""``mx.contrib.onnx.mx2onnx``: MXNet's older module path of the exporter."""
from __future__ import annotations

from gpunda.contrib.onnx import export_model, get_operator_support  # noqa: F401

__all__ = ["export_model", "get_operator_support"]
