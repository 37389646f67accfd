"""``mx.onnx``: export MXNet models (Symbol + parameters) to ONNX.

``export_model`` and ``get_operator_support`` as in MXNet 1.9.1; the onnx package is
imported only when one of them is called (``pip install 'gpunda[onnx]'``). The converters
are in ``ops_*.py``, one file per op family, registered by MXNet op name in
``_registry.CONVERTERS``. Import (ONNX -> MXNet) is ``mx.contrib.onnx``.
"""
from __future__ import annotations

__all__ = ["export_model", "get_operator_support"]


def export_model(*args, **kwargs):
    """See :func:`gpunda.onnx.export.export_model`."""
    from gpunda.onnx.export import export_model as _export
    return _export(*args, **kwargs)


def get_operator_support(opset_version=None):
    """Sorted MXNet op names that ``export_model`` converts."""
    from gpunda.onnx.export import get_operator_support as _support
    return _support(opset_version)


def __getattr__(name):
    if name == "mx2onnx":                 # MXNet's package path of the exporter, loaded lazily
        import importlib
        return importlib.import_module(f"{__name__}.mx2onnx")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
