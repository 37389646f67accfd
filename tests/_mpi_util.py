"""The MPI launcher for tests that start several ranks (one helper for every such file)."""
import os
import shutil
import sys

import pytest


def mpiexec_or_skip():
    """The path of mpiexec (on PATH, or beside this interpreter as a venv installs it), or
    skip the test with a reason when it or mpi4py is missing."""
    exe = shutil.which("mpiexec") or shutil.which("mpiexec", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("mpiexec not found (pip install mpich mpi4py)")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py not installed (pip install mpich mpi4py)")
    return exe
