"""MXNet's ``mxnet.ndarray_doc``: extra docstrings of NDArray operators, kept as classes
named ``<op>Doc``, and the builder of an operator function's docstring."""
from __future__ import annotations

import re

__all__ = []


class NDArrayDoc:
    """Base of the ``<op>Doc`` classes: a subclass's docstring is appended to the
    documentation of the operator it names."""


class ReshapeDoc(NDArrayDoc):
    """
    Examples
    --------
    >>> x = mx.nd.array([1, 2, 3, 4])
    >>> x.reshape((2, 2)).shape
    (2, 2)
    """


class elemwise_addDoc(NDArrayDoc):
    """
    Examples
    --------
    >>> (mx.nd.ones((2,)) + mx.nd.ones((2,))).asnumpy()
    array([2., 2.], dtype=float32)
    """


class BroadcastToDoc(NDArrayDoc):
    """
    Examples
    --------
    >>> mx.nd.ones((1, 3)).broadcast_to((2, 3)).shape
    (2, 3)
    """


class StackDoc(NDArrayDoc):
    """
    Examples
    --------
    >>> mx.nd.stack(mx.nd.ones((2,)), mx.nd.zeros((2,))).shape
    (2, 2)
    """


class CustomDoc(NDArrayDoc):
    """
    Examples
    --------
    A ``mx.operator.CustomOp`` registered as 'sqr' runs as
    ``mx.nd.Custom(x, op_type='sqr')``.
    """


def _param_doc(arg_names, arg_types, arg_desc):
    lines = ["Parameters", "----------"]
    for name, typ, desc in zip(arg_names, arg_types, arg_desc):
        lines.append(f"{name} : {typ}" if typ else name)
        if desc:
            lines.append(f"    {desc}")
    return "\n".join(lines) + "\n"


def _build_doc(func_name, desc, arg_names, arg_types, arg_desc, key_var_num_args=None,
               ret_type=None, _base=NDArrayDoc, _kind="NDArray"):
    """The docstring of operator function ``func_name``: its description, its parameters,
    the ``out`` argument and return value, and the docstring of ``<func_name>Doc`` when
    that class exists."""
    doc = (f"{desc}\n\n{_param_doc(arg_names, arg_types, arg_desc)}"
           f"out : {_kind}, optional\n    The output {_kind} to hold the result.\n\n"
           f"Returns\n-------\nout : {_kind} or list of {_kind}s\n"
           f"    The output of this function.")
    extra = [c.__doc__ or "" for c in _base.__subclasses__() if c.__name__ == f"{func_name}Doc"]
    if extra:
        doc += "\n" + re.sub("    ", "", "\n".join(extra))
    return doc.replace("NDArray-or-Symbol", _kind)
