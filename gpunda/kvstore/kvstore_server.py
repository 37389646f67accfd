"""MXNet's ``mx.kvstore.kvstore_server``: the parameter-server process of ``dist_async``
training, which gpunda does not run (its distributed stores are MPI/NCCL ranks)."""
from __future__ import annotations

import os

from gpunda.base import GpundaError
from gpunda.kvstore.base import KVStoreServer

__all__ = ["KVStoreServer"]


def _init_kvstore_server_module():
    """MXNet starts a parameter server here when ``DMLC_ROLE`` is ``server`` (or
    ``scheduler``) and exits; gpunda has no parameter server, so such a process is told
    so instead of quietly going on as a worker."""
    role = os.environ.get("DMLC_ROLE", "worker")
    if role in ("server", "scheduler"):
        raise GpundaError(f"kvstore_server: DMLC_ROLE={role!r} asks for a parameter-server "
                          f"process (MXNet's tools/launch.py starts them); gpunda starts none: "
                          f"'dist_async' runs its server as a thread of rank 0. Launch only the "
                          f"workers, as one MPI job: mpiexec -n N python train.py (unset "
                          f"DMLC_ROLE)")


# as MXNet's module does on import, so a server/scheduler process stops here
_init_kvstore_server_module()
