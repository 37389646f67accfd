"""``mx.contrib.onnx.onnx2mx``: MXNet's package path of the ONNX importer.

``import_model``, ``import_to_gluon`` and ``get_model_metadata`` are gpunda's importer
(``gpunda.contrib.onnx``). ``import_onnx.GraphProto``, ``_import_helper._convert_map`` (ONNX op
type -> translation function), ``_op_translations`` and ``_translation_utils`` are MXNet's
per-op convention (``fn(attrs, inputs, proto_obj)``), as MXNet 1.9.1 has them.
"""
from gpunda.contrib.onnx.onnx2mx import (  # noqa: F401
    _import_helper, _op_translations, _translation_utils, import_model, import_onnx,
    import_to_gluon)
