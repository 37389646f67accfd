"""MXNet's ``mx.registry``: name -> class factories (``register``/``alias``/``create``)
for a base class, as optimizers, initializers and metrics use them in MXNet."""
from __future__ import annotations

import json
import warnings

from .base import GpundaError

__all__ = ["get_registry", "get_register_func", "get_alias_func", "get_create_func"]

_REGISTRY = {}      # base class -> {lower-case name: class}


def _table(base_class):
    return _REGISTRY.setdefault(base_class, {})


def get_registry(base_class):
    """A copy of the name -> class table registered for ``base_class``."""
    return dict(_table(base_class))


def get_register_func(base_class, nickname):
    """``register(klass, name=None)``: file a subclass of ``base_class`` under ``name``
    (default: the class name), case-insensitively."""
    registry = _table(base_class)

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise GpundaError(f"{nickname}.register: can only register subclasses of "
                              f"{base_class.__name__}, got {klass!r}")
        name = (klass.__name__ if name is None else name).lower()
        old = registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"New {nickname} {klass.__module__}.{klass.__name__} registered with "
                          f"name {name} is overriding existing {nickname} "
                          f"{old.__module__}.{old.__name__}", UserWarning, stacklevel=2)
        registry[name] = klass
        return klass
    register.__doc__ = f"Register {nickname} to the {nickname} factory"
    return register


def get_alias_func(base_class, nickname):
    """``@alias('a', 'b')``: register the decorated class under extra names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return reg
    return alias


def get_create_func(base_class, nickname):
    """``create(name_or_instance, *args, **kwargs)``: an instance of the registered class.

    ``name`` may also be a dict of keyword arguments (with ``nickname`` naming the
    class), or the JSON of ``[name, kwargs]`` or of such a dict; an instance of
    ``base_class`` passes through.
    """
    registry = _table(base_class)

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        elif nickname in kwargs:
            name = kwargs.pop(nickname)
        else:
            raise GpundaError(f"{nickname}.create: give the {nickname} name as the first "
                              f"argument or as {nickname}=...")
        if isinstance(name, base_class):
            if args or kwargs:
                raise GpundaError(f"{nickname}.create: {name!r} is already an instance; "
                                  f"additional arguments are invalid")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise GpundaError(f"{nickname}.create: {nickname} must be a string, got "
                              f"{type(name).__name__}")
        if name.startswith("[") or name.startswith("{"):
            if args or kwargs:
                raise GpundaError(f"{nickname}.create: a JSON {nickname} takes no other arguments")
            spec = json.loads(name)
            if isinstance(spec, dict):
                return create(**spec)
            return create(spec[0], **spec[1])
        key = name.lower()
        if key not in registry:
            raise GpundaError(f"{nickname}.create: {name!r} is not registered; register it with "
                              f"{nickname}.register first (known: {', '.join(sorted(registry))})")
        return registry[key](*args, **kwargs)
    create.__doc__ = f"Create a {nickname} instance from config."
    return create
