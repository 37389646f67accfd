"""Automatic names for symbols (MXNet's ``mx.name``): ``fullyconnected0``, ``fullyconnected1``."""
from __future__ import annotations

import threading

from gpunda.base import _ClassPropertyMeta, classproperty, with_metaclass

__all__ = ["NameManager", "Prefix", "current"]


class NameManager(with_metaclass(_ClassPropertyMeta, object)):
    """Hands out ``<hint><n>`` names; use as ``with NameManager():`` to start a fresh count."""

    _state = threading.local()

    def __init__(self):
        self._counter = {}
        self._old = None

    def get(self, name, hint):
        """``name`` if given, else the next automatic name for ``hint``."""
        if name:
            return name
        # the hint is used as given (MXNet's callers lower-case operator names themselves)
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self):
        self._old = current()
        NameManager._state.current = self
        return self

    def __exit__(self, *exc):
        NameManager._state.current = self._old
        return False

    @classproperty
    def current(cls):
        """The NameManager in effect for this thread (deprecated in MXNet; assignable)."""
        _deprecated("NameManager")
        return current()

    @current.setter
    def current(cls, value):
        _deprecated("NameManager")
        NameManager._state.current = value


class Prefix(NameManager):
    """A NameManager that puts ``prefix`` before every name."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def _deprecated(cls_name):
    import warnings
    warnings.warn(f"{cls_name}.current has been deprecated; use the `with` statement with "
                  f"{cls_name}", DeprecationWarning, stacklevel=4)


_global = NameManager()


def current():
    """The NameManager in effect for this thread."""
    return getattr(NameManager._state, "current", None) or _global
