"""MXNet's ``KVStoreBase``: the interface every key-value store implements, and the
registry ``kv.create(name)`` consults first, so user stores plug in by name."""
from __future__ import annotations

import warnings

from gpunda._core.not_built import define_stubs
from gpunda.base import GpundaError

__all__ = ["KVStoreBase", "KVStoreServer", "TestStore"]


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
    """MXNet's parameter-server process (``KVStoreServer(kv).run()`` serves pushes and
    pulls until the workers stop it). gpunda starts no server processes: a 'dist_async'
    store runs its server as a thread of rank 0 of the workers' MPI job, and 'dist_sync'
    needs none, so ``run`` says what to launch instead."""

    def __init__(self, kvstore):
        self.kvstore = kvstore
        self.init_logginig = False   # MXNet's attribute (sic)

    def run(self):
        """Raise: there is no server process to run (see the class)."""
        raise GpundaError("KVStoreServer.run: gpunda has no parameter-server processes; a "
                          "'dist_async' store serves from a thread of rank 0 of the workers' "
                          "MPI job. Launch the workers only: mpiexec -n N python train.py")


@KVStoreBase.register
class TestStore(KVStoreBase):
    """MXNet's ``teststore``: a single-process store that sums values over devices and
    cannot run optimizers (Trainer then updates on the workers)."""

    def broadcast(self, key, value, out, priority=0):
        """Write ``value`` into every array of ``out``."""
        for o in (out if isinstance(out, list) else [out]):
            o[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        """Sum the list ``value`` and write the sum into ``out`` (``value`` when None)."""
        if not isinstance(value, (list, tuple)):
            if out is not None:
                for o in (out if isinstance(out, list) else [out]):
                    o[:] = value
            return
        ctx = value[0].context
        total = value[0].as_in_context(ctx).copy()
        for v in value[1:]:
            total += v.as_in_context(ctx)
        for o in (list(value) if out is None else (out if isinstance(out, list) else [out])):
            o[:] = total.as_in_context(o.context)

    @staticmethod
    def is_capable(capability):
        """Only the 'optimizer' capability is known, and a TestStore lacks it."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    @property
    def type(self):
        """'teststore'."""
        return "teststore"

    @property
    def rank(self):
        """Always 0."""
        return 0

    @property
    def num_workers(self):
        """Always 1."""
        return 1

    def set_optimizer(self, optimizer):
        """Not available: a TestStore runs no optimizer."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Not available: a TestStore runs no optimizer."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        """Not available: a TestStore runs no optimizer."""
        raise NotImplementedError()


def create(name="local"):
    """A key-value store by name: a store registered with ``KVStoreBase.register`` first,
    else one of the built-in types (``kvstore.create``)."""
    from gpunda.kvstore.kvstore import create as _create
    return _create(name)


# MXNet packs keys and values into C arrays for its library here
define_stubs(globals(), functions=("_ctype_key_value", "_ctype_dict"),
             reason="it builds C arrays of NDArray handles for MXNet's C++ library, which "
                    "gpunda does not have (its stores take the NDArrays themselves)")
