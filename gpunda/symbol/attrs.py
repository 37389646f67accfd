"""Node attributes as MXNet keeps them: hidden keys stored as ``__key__``.

MXNet's C API (c_api_symbolic.cc) stores ``lr_mult``, ``wd_mult``, ``ctx_group``,
``force_mirroring`` and ``mirror_stage`` as ``__lr_mult__`` &c., finds them by
either spelling and lists both; ``__key__`` entries are attributes of the node and
never parameters of its operator.
"""
from __future__ import annotations

from gpunda.base import GpundaError

__all__ = ["HIDDEN_KEYS", "hidden_key", "is_dunder", "with_plain_keys"]

#: Attribute keys MXNet stores as ``__key__`` (c_api_symbolic.cc's kHiddenKeys)
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


def hidden_key(key, where):
    """``key`` as stored on a node: ``lr_mult`` -> ``__lr_mult__``; ``fc1_lr_mult``
    (a parameter's attribute set through its op) is refused as MXNet refuses it."""
    for k in HIDDEN_KEYS:
        if key.startswith(k):
            return f"__{key}__" if key == k else key
        if key.endswith(k) and len(key) > len(k) and not key.startswith("__"):
            raise GpundaError(
                f"{where}: setting variable attributes with {key} is deprecated; use "
                f"w = Variable('{key[:-len(k) - 1]}', {k}=...) and pass w to the operator")
    return key


def is_dunder(key):
    return len(key) > 4 and key.startswith("__") and key.endswith("__")


def with_plain_keys(attrs):
    """``attrs`` plus, for each hidden ``__key__``, its plain spelling (MXNet lists both)."""
    out = dict(attrs)
    for k in HIDDEN_KEYS:
        v = attrs.get(f"__{k}__")
        if v is not None:
            out[k] = v
    return out
