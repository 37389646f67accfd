"""``mxnet.numpy_op_signature``: the ``mx.np`` function behind each built-in ``_np_*``
operator, and NumPy-style signatures for them (from ``_numpy_op_doc``)."""
from __future__ import annotations

import inspect

__all__ = []

_SUBMODULES = ("_linalg_", "_random_")


def _get_builtin_op(op_name):
    """The ``mx.np`` (``_np_*``) or ``mx.npx`` (``_npx_*``) function of ``op_name``;
    None for other names; ValueError when no function implements the op."""
    from gpunda import numpy as mx_np
    from gpunda import numpy_extension as mx_npx
    if op_name.startswith("_np_"):
        root, rest = mx_np, op_name[len("_np_"):]
    elif op_name.startswith("_npx_"):
        root, rest = mx_npx, op_name[len("_npx_"):]
    else:
        return None
    module = root
    for sub in _SUBMODULES:
        if rest.startswith(sub):
            module = getattr(root, sub[1:-1], None)
            if module is None:
                raise ValueError(f"Cannot find submodule {sub[1:-1]} in module {root.__name__}")
            rest = rest[len(sub):]
            break
    op = getattr(module, rest, None)
    if op is None:
        raise ValueError(f"Cannot find operator {rest} in module {root.__name__}")
    return op


def _register_op_signatures():
    from gpunda import _numpy_op_doc
    for name in dir(_numpy_op_doc):
        try:
            op = _get_builtin_op(name)
        except ValueError:
            continue
        if op is not None:
            op.__signature__ = inspect.signature(getattr(_numpy_op_doc, name))


_register_op_signatures()
