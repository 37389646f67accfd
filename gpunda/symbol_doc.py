"""MXNet's ``mxnet.symbol_doc``: extra docstrings of Symbol operators (``<op>Doc``
classes), a helper to read a Symbol's output shapes, and the docstring builder."""
from __future__ import annotations

from gpunda.ndarray_doc import _build_doc as _build

__all__ = []


class SymbolDoc:
    """Base of the ``<op>Doc`` classes; their docstrings extend the operator's."""

    @staticmethod
    def get_output_shape(sym, **input_shapes):
        """``{output name: shape}`` of ``sym`` for the given input shapes."""
        _, out_shapes, _ = sym.infer_shape(**input_shapes)
        return dict(zip(sym.list_outputs(), out_shapes))


class ActivationDoc(SymbolDoc):
    """Example: ``mx.sym.Activation(data, act_type='relu')``."""


class DropoutDoc(SymbolDoc):
    """Example: ``mx.sym.Dropout(data, p=0.5)``."""


class EmbeddingDoc(SymbolDoc):
    """Example: ``mx.sym.Embedding(data, input_dim=10, output_dim=4)``."""


class FlattenDoc(SymbolDoc):
    """Example: ``mx.sym.Flatten(data)`` keeps the first axis, joins the rest."""


class FullyConnectedDoc(SymbolDoc):
    """Example: ``mx.sym.FullyConnected(data, num_hidden=128)``."""


class ConcatDoc(SymbolDoc):
    """Example: ``mx.sym.Concat(a, b, dim=1)``."""


class BroadcastPlusDoc(SymbolDoc):
    """Example: ``mx.sym.broadcast_plus(a, b)`` adds with broadcasting."""


def _build_doc(func_name, desc, arg_names, arg_types, arg_desc, key_var_num_args=None,
               ret_type=None):
    """The docstring of Symbol operator ``func_name`` (see ``ndarray_doc._build_doc``)."""
    return _build(func_name, desc, arg_names, arg_types, arg_desc, key_var_num_args, ret_type,
                  _base=SymbolDoc, _kind="Symbol")
