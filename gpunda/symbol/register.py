"""MXNet's ``mxnet.symbol.register``: the machinery that turns registered operators into the
functions of ``mx.sym``.

gpunda makes those functions from its own registry (``symbol/creation.py``);
``_make_symbol_function`` hands out the same function for an op name, and the two
``_verify_*`` checks raise MXNet's TypeError when a Symbol of the other front end reaches an
op. ``_generate_symbol_function_code`` (Python source MXNet ``exec``s from the C op registry)
is not built: it raises a GpundaError saying so.
"""
from __future__ import annotations

from gpunda.base import GpundaTypeError, NotImplementedForGpunda


def _verify_np_symbol(op_name, func_name, sym):
    """TypeError unless ``sym`` is a NumPy-front-end Symbol (``op_name`` is known in Python
    as ``func_name``)."""
    from gpunda.symbol.numpy import _Symbol as np_symbol
    if not isinstance(sym, np_symbol):
        raise GpundaTypeError(
            f"Operator `{op_name}` registered in backend is known as `{func_name}` in Python. "
            f"This is a numpy operator which can only accept MXNet numpy ndarrays, while "
            f"received a legacy ndarray. Activate numpy semantics with `npx.set_np()`, or call "
            f"`as_np_ndarray()` on the legacy symbol before feeding it to this operator.")


def _verify_legacy_symbol(op_name, func_name, sym):
    """TypeError if ``sym`` is a NumPy-front-end Symbol given to a legacy operator."""
    from gpunda.symbol.numpy import _Symbol as np_symbol
    if isinstance(sym, np_symbol):
        raise GpundaTypeError(
            f"Operator `{op_name}` registered in backend is known as `{func_name}` in Python. "
            f"This is a legacy operator which can only accept legacy ndarrays, while received "
            f"an MXNet numpy ndarray. Call `as_nd_ndarray()` on the numpy symbol to convert it "
            f"to a legacy one before feeding it to this operator.")


def _make_symbol_function(handle, name, func_name):
    """The ``mx.sym`` function of registered op ``name`` (``handle``, MXNet's C op handle, is
    not needed: gpunda looks ops up by name), named ``func_name``."""
    from gpunda.symbol import creation
    fn = creation.lookup(name)
    if func_name == name:
        return fn

    def renamed(*args, **kwargs):
        return fn(*args, **kwargs)
    renamed.__name__ = renamed.__qualname__ = func_name
    renamed.__doc__ = fn.__doc__
    renamed.__module__ = "gpunda.symbol"
    return renamed


def _generate_symbol_function_code(handle, op_name, func_name, signature_only=False):
    """Not supported: MXNet writes each op function's Python source from its C registry."""
    raise NotImplementedForGpunda(
        "mxnet.symbol.register._generate_symbol_function_code is not supported: gpunda makes "
        "mx.sym's op functions from its own registry, not from generated source; "
        "_make_symbol_function(None, op_name, func_name) gives the function itself")
