"""``mx.contrib.onnx.onnx2mx._import_helper``: ``_convert_map``, ONNX op type -> converter.

The converters are gpunda's (``fn(importer, node, attrs, input_names)``, see
``gpunda.contrib.onnx._import_ops``); the table is filled when first read.
"""


def __getattr__(name):
    if name == "_convert_map":
        from gpunda.contrib.onnx import _importers
        return _importers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
