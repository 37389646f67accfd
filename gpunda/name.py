"""Automatic names for symbols (MXNet's ``mx.name``): ``fullyconnected0``, ``fullyconnected1``."""
from __future__ import annotations

import threading

__all__ = ["NameManager", "Prefix", "current"]


class _ClassProperty:
    def __init__(self, fget):
        self.fget = fget

    def __get__(self, obj, cls):
        return self.fget(cls)


class NameManager:
    """Hands out ``<hint><n>`` names; use as ``with NameManager():`` to start a fresh count."""

    _state = threading.local()

    @_ClassProperty
    def current(cls):  # noqa: N805  (MXNet's deprecated NameManager.current)
        import warnings
        warnings.warn("NameManager.current has been deprecated; use the `with` statement "
                      "with NameManager", DeprecationWarning, stacklevel=2)
        return current()

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


class Prefix(NameManager):
    """A NameManager that puts ``prefix`` before every name."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


_global = NameManager()


def current():
    """The NameManager in effect for this thread."""
    return getattr(NameManager._state, "current", None) or _global
