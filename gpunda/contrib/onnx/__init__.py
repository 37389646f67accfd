"""``mx.contrib.onnx``: ONNX models into MXNet (``import_model``, ``import_to_gluon``,
``get_model_metadata``) and MXNet's older path to the exporter (``export_model``).

The onnx package is imported when a function is called (``pip install 'gpunda[onnx]'``).
Converters are keyed by ONNX op type (``_import_ops.IMPORTERS``, filled by
``_import_ops``, ``_import_math`` and ``_import_tensor``); the graph walk is
``_importer.OnnxImporter``.
"""
from __future__ import annotations

import os

from gpunda.base import GpundaError

__all__ = ["import_model", "import_to_gluon", "get_model_metadata", "export_model",
           "onnx2mx", "mx2onnx", "get_operator_support"]


def _onnx():
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401
        import onnx.shape_inference  # noqa: F401
    except ImportError as e:
        raise ImportError("mx.contrib.onnx needs the onnx package: pip install "
                          "'gpunda[onnx]'") from e
    return onnx


def _load(model_file):
    onnx = _onnx()
    if not isinstance(model_file, (str, os.PathLike)):
        return onnx, model_file     # already a ModelProto
    try:
        return onnx, onnx.load(os.fspath(model_file))
    except OSError as e:
        raise GpundaError(f"import_model: cannot read ONNX file {os.fspath(model_file)!r}: "
                          f"{e.strerror or e}") from None
    except Exception as e:  # noqa: BLE001 -- a protobuf DecodeError
        raise GpundaError(f"import_model: {os.fspath(model_file)!r} is not an ONNX model: "
                          f"{e}") from None


def _importers():
    from gpunda.contrib.onnx import _import_math, _import_tensor  # noqa: F401 -- they register
    from gpunda.contrib.onnx._import_ops import IMPORTERS
    return IMPORTERS


def import_model(model_file):
    """Import an ONNX model as ``(sym, arg_params, aux_params)``.

    Args:
        model_file: path of a ``.onnx`` file (or an ``onnx.ModelProto``).

    Returns:
        The Symbol, and dicts name -> NDArray of its arguments and auxiliary states.

    Raises:
        GpundaError: an op or opset that cannot be imported (naming node and op).

    Example:
        >>> sym, arg_params, aux_params = mx.contrib.onnx.import_model("net.onnx")
    """
    from gpunda import ndarray as nd
    from gpunda.contrib.onnx._importer import OnnxImporter
    onnx, model = _load(model_file)
    from gpunda.name import NameManager
    imp = OnnxImporter(onnx, model)
    with NameManager():   # the names of an import do not depend on what came before
        sym = imp.run(_importers())
    args = set(sym.list_arguments())
    auxs = set(sym.list_auxiliary_states())
    arg_params = {k: nd.array(v, dtype=v.dtype) for k, v in imp.params.items() if k in args}
    aux_params = {k: nd.array(v, dtype=v.dtype) for k, v in imp.params.items() if k in auxs}
    return sym, arg_params, aux_params


def get_model_metadata(model_file):
    """The model's inputs and outputs, as MXNet gives them.

    Returns:
        ``{'input_tensor_data': [(name, shape, onnx_elem_type)], 'output_tensor_data':
        [(name, shape)]}``; inputs with an initializer are left out, and a symbolic
        (dynamic) dim reads 0.
    """
    _, model = _load(model_file)
    g = model.graph
    inits = {i.name for i in g.initializer}

    def shape(vi):
        return tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
    return {"input_tensor_data": [(vi.name, shape(vi), vi.type.tensor_type.elem_type)
                                  for vi in g.input if vi.name not in inits],
            "output_tensor_data": [(vi.name, shape(vi)) for vi in g.output]}


def import_to_gluon(model_file, ctx):
    """Import an ONNX model as a ``gluon.SymbolBlock`` with its parameters on ``ctx``."""
    from gpunda import symbol
    from gpunda.gluon import SymbolBlock
    sym, arg_params, aux_params = import_model(model_file)
    names = [t[0] for t in get_model_metadata(model_file)["input_tensor_data"]]
    net = SymbolBlock(sym, [symbol.var(n) for n in names])
    params = dict(arg_params)
    params.update(aux_params)
    for name, p in net.collect_params().items():
        if name not in params:
            raise GpundaError(f"import_to_gluon: the model has no value for parameter {name!r}")
        p._load_init(params[name], ctx)
    return net


def export_model(*args, **kwargs):
    """MXNet's older name of :func:`gpunda.onnx.export_model`."""
    from gpunda.onnx import export_model as _export
    return _export(*args, **kwargs)


def get_operator_support(opset_version=None):
    """The MXNet ops ``export_model`` converts (see ``mx.onnx.get_operator_support``)."""
    from gpunda.onnx import get_operator_support as _support
    return _support(opset_version)


# MXNet's names of the functions above without its deprecation notice
import_model_ = import_model
get_model_metadata_ = get_model_metadata
import_to_gluon_ = import_to_gluon
export_model_ = export_model


def __getattr__(name):
    if name in ("onnx2mx", "mx2onnx"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
