"""Name -> class registries with ``register``/``alias``/``create`` (MXNet 1.x ``mx.registry``).

MXNet builds its metric, optimizer and initializer factories from these helpers:
a registry per base class, keyed by lower-case name; ``create`` accepts a name,
an instance (returned as is), a dict of constructor arguments holding the
nickname key, or the JSON forms ``'["name", {kwargs}]'`` and ``'{"nickname": ...}'``.
"""
from __future__ import annotations

import warnings

from gpunda.base import GpundaAssertionError

__all__ = ["get_registry", "get_register_func", "get_alias_func", "get_create_func"]

_REGISTRY = {}


def _table(base_class):
    return _REGISTRY.setdefault(base_class, {})


def get_registry(base_class):
    """A copy of the name -> class table registered for ``base_class``."""
    return dict(_table(base_class))


def get_register_func(base_class, nickname):
    """``register(klass, name=None)`` adding subclasses of ``base_class`` to its registry."""
    table = _table(base_class)

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise GpundaAssertionError(f"{nickname}.register: {klass!r} is not a subclass of "
                              f"{base_class.__name__}")
        key = (name or klass.__name__).lower()
        old = table.get(key)
        if old is not None and old is not klass:
            warnings.warn(f"new {nickname} {klass.__module__}.{klass.__name__} registered as "
                          f"{key!r} overrides {old.__module__}.{old.__name__}", UserWarning,
                          stacklevel=2)
        table[key] = klass
        return klass
    register.__doc__ = f"Register a {nickname} class under its lower-case name (or ``name``)."
    return register


def get_alias_func(base_class, nickname):
    """``alias(*names)``: a class decorator registering the class under extra names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def decorate(klass):
            for a in aliases:
                register(klass, a)
            return klass
        return decorate
    alias.__doc__ = f"Class decorator: register a {nickname} under the given names too."
    return alias


def get_create_func(base_class, nickname):
    """``create(name_or_instance_or_config, *args, **kwargs)`` for ``base_class``'s registry."""
    table = _table(base_class)

    def create(*args, **kwargs):
        if args:
            spec, args = args[0], args[1:]
        elif nickname in kwargs:
            spec = kwargs.pop(nickname)
        else:
            raise GpundaAssertionError(f"{nickname}.create: no {nickname} given (a name, an instance "
                              f"or a config)")
        if isinstance(spec, base_class):
            if args or kwargs:
                raise GpundaAssertionError(f"{nickname}.create: {spec!r} is already an instance; extra "
                                  f"arguments {args!r} {kwargs!r} are invalid")
            return spec
        if isinstance(spec, dict):
            return create(**spec)
        if not isinstance(spec, str):
            raise GpundaAssertionError(f"{nickname}.create: {nickname}={spec!r} must be a name, an "
                              f"instance of {base_class.__name__} or a config")
        if spec.startswith("[") or spec.startswith("{"):
            if args or kwargs:
                raise GpundaAssertionError(f"{nickname}.create: a JSON config takes no extra arguments")
            import json     # on first use: `import gpunda` stays lean
            parsed = json.loads(spec)
            if isinstance(parsed, list):
                return create(parsed[0], **parsed[1])
            return create(**parsed)
        klass = table.get(spec.lower())
        if klass is None:
            raise GpundaAssertionError(f"{nickname}.create: unknown {nickname} {spec!r}; registered: "
                              f"{', '.join(sorted(table))}")
        return klass(*args, **kwargs)
    create.__doc__ = (f"A {nickname} from a registered name, an instance (returned as is) or "
                      f"a config dict / JSON string.")
    return create
