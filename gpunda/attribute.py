"""Attribute scopes for symbols (MXNet's ``mx.attribute.AttrScope``)."""
from __future__ import annotations

import threading

from .name import _ClassProperty

__all__ = ["AttrScope", "current"]


class AttrScope:
    """Attach string attributes to every symbol created inside ``with AttrScope(k=v):``."""

    _state = threading.local()

    @_ClassProperty
    def current(cls):  # noqa: N805  (MXNet's deprecated AttrScope.current)
        import warnings
        warnings.warn("AttrScope.current has been deprecated; use the `with` statement with "
                      "AttrScope", DeprecationWarning, stacklevel=2)
        return current()

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            if not isinstance(v, str):
                # MXNet raises ValueError here
                raise ValueError(f"AttrScope: attribute {k}={v!r} must be a string")
        self._attr = kwargs
        self._old = None

    def get(self, attr):
        """Scope attributes merged with ``attr`` (which wins)."""
        if not self._attr:
            return dict(attr) if attr else {}
        out = dict(self._attr)
        if attr:
            out.update(attr)
        return out

    def __enter__(self):
        self._old = current()
        merged = AttrScope()
        merged._attr = dict(self._old._attr)
        merged._attr.update(self._attr)
        AttrScope._state.current = merged
        return self

    def __exit__(self, *exc):
        AttrScope._state.current = self._old
        return False


_global = AttrScope()


def current():
    """The AttrScope in effect for this thread."""
    return getattr(AttrScope._state, "current", None) or _global
