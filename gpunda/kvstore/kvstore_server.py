"""MXNet's ``mx.kvstore.kvstore_server``: the parameter-server process of ``dist_async``
training. gpunda starts no server processes (``dist_async`` serves from a thread of
rank 0, ``_async.py``); what MXNet's launcher variables (DMLC_ROLE, DMLC_NUM_WORKER)
ask for is answered here with the command to run instead."""
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


def _check_launcher_env(size):
    """MXNet's launcher (tools/launch.py) describes the job in DMLC_* variables and
    starts the processes itself; gpunda's workers are the ranks of one MPI job. A worker
    whose DMLC_NUM_WORKER disagrees with the MPI job it is in was started by such a
    launcher: say what to run instead of training alone."""
    want = os.environ.get("DMLC_NUM_WORKER")
    if want is None:
        return
    try:
        want = int(want)
    except ValueError:
        raise GpundaError(f"kvstore: DMLC_NUM_WORKER={want!r} is not an integer") from None
    if want != size:
        raise GpundaError(
            f"kvstore: DMLC_NUM_WORKER={want} asks for {want} workers but this process is one "
            f"of {size} MPI rank(s). gpunda's distributed stores do not use MXNet's "
            f"launcher (tools/launch.py, ps-lite, DMLC_PS_ROOT_URI, server processes); run "
            f"the workers as one MPI job instead: mpiexec -n {want} python train.py")


# as MXNet's module does on import, so a server/scheduler process stops here
_init_kvstore_server_module()
