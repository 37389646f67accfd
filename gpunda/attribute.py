"""Attribute scopes for symbols (MXNet's ``mx.attribute.AttrScope``)."""
from __future__ import annotations

import collections
import threading

from gpunda.base import _ClassPropertyMeta, classproperty, with_metaclass
from gpunda.name import _deprecated

__all__ = ["AttrScope", "current"]


class AttrScope(with_metaclass(_ClassPropertyMeta, object)):
    """Attach string attributes to every symbol created inside ``with AttrScope(k=v):``."""

    _state = threading.local()
    # uses of each control-flow subgraph name, to number them (symbol/control_flow.py)
    _subgraph_names = collections.defaultdict(int)

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

    @classproperty
    def current(cls):
        """The AttrScope in effect for this thread (deprecated in MXNet; assignable)."""
        _deprecated("AttrScope")
        return current()

    @current.setter
    def current(cls, value):
        _deprecated("AttrScope")
        AttrScope._state.current = value


_global = AttrScope()


def current():
    """The AttrScope in effect for this thread."""
    return getattr(AttrScope._state, "current", None) or _global
