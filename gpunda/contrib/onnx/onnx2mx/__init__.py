"""``mx.contrib.onnx.onnx2mx``: MXNet's package path of the ONNX importer.

The modules re-export gpunda's importer (``gpunda.contrib.onnx``) under MXNet's names:
``import_model``, ``import_to_gluon``, ``import_onnx.GraphProto``, ``_import_helper._convert_map``
(ONNX op type -> gpunda's converter).
"""
from gpunda.contrib.onnx.onnx2mx import (  # noqa: F401
    _import_helper, _op_translations, _translation_utils, import_model, import_onnx,
    import_to_gluon)
