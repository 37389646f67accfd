"""Names of MXNet's modules that cannot work in gpunda, and the namespaces it builds whole.

MXNet code imports modules bound to its C library (``mxnet._ctypes``, ``mxnet.torch``)
at the top of files that mostly use other parts; the import must work, and a use must
say plainly why the name cannot work (``define_stubs``). A namespace gpunda builds whole
answers any other name with the AttributeError MXNet gives (``absent_module_getattr``).
"""
from __future__ import annotations

from gpunda.base import NotImplementedForGpunda


def absent_module_getattr(module_name, numpy_name=None):
    """A module ``__getattr__`` for a namespace gpunda builds whole (every name MXNet 1.9.1
    has): any other name is absent in MXNet too, so an AttributeError says so, and names
    NumPy's function of that name when there is one (``numpy_name``: its module)."""

    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        msg = f"module {module_name!r} has no attribute {name!r}"
        if numpy_name is not None:
            import importlib
            if hasattr(importlib.import_module(numpy_name), name):
                msg += (f": {numpy_name}.{name} exists, but MXNet 1.9.1's {module_name} does "
                        f"not have it either (call {numpy_name}.{name} on .asnumpy() data)")
        raise AttributeError(msg)
    return __getattr__


def _needs_c_library(qualname, reason):
    """The message of a stub: ``qualname`` cannot work, and why."""
    return f"{qualname} is not supported: {reason}"


def stub_function(module_name, name, reason):
    """A function standing in for MXNet's ``module_name.name``: every call raises
    NotImplementedForGpunda naming it and saying why (``reason``)."""
    qualname = f"{module_name}.{name}"

    def stub(*args, **kwargs):
        raise NotImplementedForGpunda(_needs_c_library(qualname, reason))
    stub.__name__ = stub.__qualname__ = name
    stub.__module__ = module_name
    stub.__doc__ = f"MXNet's {qualname}; in gpunda: {_needs_c_library(qualname, reason)}."
    return stub


def stub_class(module_name, name, reason):
    """A class standing in for MXNet's ``module_name.name`` (it subclasses, isinstance and
    repr fine); making one raises NotImplementedForGpunda naming it and saying why."""
    qualname = f"{module_name}.{name}"

    def __init__(self, *args, **kwargs):
        raise NotImplementedForGpunda(_needs_c_library(qualname, reason))
    return type(name, (), {"__init__": __init__, "__module__": module_name,
                           "__doc__": f"MXNet's {qualname}; in gpunda: "
                                      f"{_needs_c_library(qualname, reason)}."})


def define_stubs(namespace, functions=(), classes=(), reason="it needs MXNet's C++ library"):
    """Put stubs for MXNet's ``functions`` and ``classes`` into the module dict
    ``namespace`` (a stub module's ``globals()``), each raising when used."""
    module_name = namespace["__name__"]
    for name in functions:
        namespace[name] = stub_function(module_name, name, reason)
    for name in classes:
        namespace[name] = stub_class(module_name, name, reason)
