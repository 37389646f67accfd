"""MXNet's ``KVStoreBase``: the interface every key-value store implements, and the
registry ``kv.create(name)`` consults first, so user stores plug in by name."""
from __future__ import annotations

import warnings

from .base import NotImplementedForGpunda

__all__ = ["KVStoreBase", "KVStoreServer"]


class KVStoreBase:
    """An abstract key-value store for data-parallel training.

    Subclass it, implement the methods, and decorate the class with
    ``KVStoreBase.register``; ``mx.kv.create('<classname in lower case>')`` then
    builds one.
    """

    OPTIMIZER = "optimizer"     # capability: the store can run the optimizer itself
    kv_registry = {}

    def broadcast(self, key, value, out, priority=0):
        """Set ``key`` from ``value`` everywhere and write it into ``out``."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        """Reduce ``value`` across devices/workers into ``out`` (``value`` when None)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer):
        """Run ``optimizer`` on pushed gradients inside the store."""
        raise NotImplementedError()

    def is_capable(self, capability):
        """Whether the store supports ``capability`` (``KVStoreBase.OPTIMIZER``, ...)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Save the optimizer state the store keeps."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        """Load optimizer state saved by ``save_optimizer_states``."""
        raise NotImplementedError()

    @property
    def type(self):
        """The store's type string."""
        raise NotImplementedError()

    @property
    def rank(self):
        """This worker's rank."""
        raise NotImplementedError()

    @property
    def num_workers(self):
        """How many workers there are."""
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Class decorator: make ``klass`` creatable as ``kv.create(klass.__name__.lower())``."""
        if not isinstance(klass, type):
            raise TypeError(f"KVStoreBase.register: {klass!r} must be a class")
        name = klass.__name__.lower()
        old = KVStoreBase.kv_registry.get(name)
        if old is not None:
            warnings.warn(f"WARNING: New kvstore {klass.__module__}.{klass.__name__} is overriding "
                          f"existing kvstore {old.__module__}.{old.__name__}")
        KVStoreBase.kv_registry[name] = klass
        return klass


class KVStoreServer:
    """MXNet's parameter-server process. gpunda's dist stores are MPI collectives and
    have no servers, so this is not supported."""

    def __init__(self, kvstore):
        raise NotImplementedForGpunda("KVStoreServer is not supported yet: gpunda's dist "
                                      "kvstores all-reduce over MPI and run no server processes")

    def run(self):
        """Not supported (see the class)."""
        raise NotImplementedForGpunda("KVStoreServer.run is not supported yet")
