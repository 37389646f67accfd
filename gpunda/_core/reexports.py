"""Names a module shows because MXNet's module of that path has them, served from the gpunda
module that defines them, on first access (a module ``__getattr__``), so that importing the
module does not import its source (which may sit above it, or import it)."""
from __future__ import annotations

import importlib


def forwarding_getattr(module_name, names, source, fallback=None):
    """A module ``__getattr__`` for ``module_name``: each of ``names`` is ``source``'s
    attribute of that name (``source``: a dotted module name, imported on first use);
    another name goes to ``fallback(name)`` when given, else raises AttributeError."""
    wanted = frozenset(names)

    def __getattr__(name):
        if name in wanted:
            import sys
            value = getattr(importlib.import_module(source), name)
            setattr(sys.modules[module_name], name, value)     # served once
            return value
        if fallback is not None:
            return fallback(name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    return __getattr__


def optional_module_getattr(module_name, attr, package, missing=None):
    """A module ``__getattr__`` for ``module_name`` whose name ``attr`` is the optional
    package ``package`` (MXNet's module imports it at the top: ``cv2``, ``h5py``, ``pd``...),
    imported on first access so that importing the module does not load it; ``missing``
    stands for it when it is not installed. Other names raise AttributeError."""
    def __getattr__(name):
        if name != attr:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        import sys
        try:
            value = importlib.import_module(package)
        except ImportError:
            value = missing
        setattr(sys.modules[module_name], name, value)     # served once
        return value
    return __getattr__
