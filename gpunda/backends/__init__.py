"""Array libraries behind one interface; the only place that imports CuPy or NVML.

``cpu_backend()`` is NumPy + SciPy. ``gpu_backend(i)`` is CuPy + cupyx for CUDA
ordinal ``i``; it raises ``GpundaError`` when no GPU is usable. Ops never branch
on the device: they receive ``xp`` (numpy or cupy) and write one body.
"""
from __future__ import annotations

import sys as _sys

import numpy as _np

from gpunda.base import GpundaError
from gpunda.backends._numpy import NumpyBackend

__all__ = ["Backend", "cpu_backend", "gpu_backend", "backend_of_xp", "array_module", "discovery"]

_cpu = NumpyBackend()
_gpus = {}


def cpu_backend():
    """The NumPy/SciPy backend (a singleton)."""
    return _cpu


def gpu_backend(device_id):
    """The CuPy backend bound to CUDA ordinal ``device_id``."""
    b = _gpus.get(device_id)
    if b is None:
        from gpunda.backends import discovery
        n, why = discovery.probe()
        if n == 0:
            raise GpundaError(f"gpu({device_id}) is not usable: {why}")
        if device_id >= n:
            raise GpundaError(f"gpu({device_id}) does not exist: {n} GPU(s) visible (0..{n - 1})")
        if discovery.standin_active():
            from gpunda.backends._standin import StandinBackend   # test-only: GPUNDA_TEST_STANDIN_GPU
            b = _gpus[device_id] = StandinBackend(device_id)
            return b
        from gpunda.backends._cupy import CupyBackend
        b = _gpus[device_id] = CupyBackend(device_id)
    return b


def backend_of_xp(xp):
    """The backend whose array module is ``xp`` (device 0 for CuPy)."""
    if xp is _cpu.xp:
        return _cpu
    return gpu_backend(xp.cuda.Device().id)


def array_module(a):
    """numpy, cupy or the test stand-in's module: whichever owns array ``a``."""
    if isinstance(a, _np.ndarray):
        return _np
    st = _sys.modules.get("gpunda.backends._standin")
    if st is not None and type(a) is st.ndarray:
        return st.xp
    import cupy
    return cupy


from gpunda.backends._numpy import Backend  # noqa: E402


def __getattr__(name):
    # GPU discovery loads on first use: ``import gpunda`` reaches this package for the
    # random generators (generators.py) and should not pay for probing code it may never run
    if name == "discovery":
        import importlib
        return importlib.import_module(f"{__name__}.discovery")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
