"""Key-value stores (MXNet's ``mx.kvstore`` package): ``KVStore`` in ``kvstore``, the
``KVStoreBase`` interface and registry in ``base``, ``KVStoreServer`` in
``kvstore_server``."""
from gpunda.kvstore import base, kvstore, kvstore_server  # noqa: F401
from gpunda.kvstore.kvstore import *  # noqa: F401,F403
from gpunda.kvstore.kvstore import __all__  # noqa: F401
from gpunda.kvstore.base import KVStoreBase  # noqa: F401
from gpunda.kvstore.kvstore_server import KVStoreServer  # noqa: F401
