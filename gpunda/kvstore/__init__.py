"""Key-value stores (MXNet's ``mx.kvstore`` package): ``KVStore`` in ``kvstore``, the
``KVStoreBase`` interface and registry in ``base``, ``KVStoreServer`` in
``kvstore_server``."""
from . import base, kvstore, kvstore_server  # noqa: F401
from .kvstore import *  # noqa: F401,F403
from .kvstore import __all__  # noqa: F401
from .base import KVStoreBase  # noqa: F401
from .kvstore_server import KVStoreServer  # noqa: F401
